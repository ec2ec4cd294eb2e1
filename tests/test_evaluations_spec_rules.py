"""Evaluation specs that could never work are load errors saying why: a score's pass rule
no 0-1 score can meet (or every one meets), and category options given twice (letter case
and spaces aside, as the judge's answer is read)."""

from __future__ import annotations

import pytest

from sparring.errors import ConfigError
from sparring.loaders import load_text
from sparring.scenario.evaluations import Evaluation


def suite(insight: str) -> str:
    return (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - id: a\n"
        "    goal: g\n"
        "    evaluations:\n"
        "      - name: quality\n"
        "        prompt: assess\n"
        "        insights:\n"
        f"          - {insight}\n"
    )


def load_error(insight: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load_text(suite(insight), path="t.yaml", library=[])
    return str(caught.value)


@pytest.mark.parametrize(
    ("rule", "why"),
    [
        (">= 1.5", "a score is 0 to 1 and 1.5 is not, so it can never pass"),
        ("> 2", "a score is 0 to 1 and 2 is not, so it can never pass"),
        ("== 7", "a score is 0 to 1 and 7 is not, so it can never pass"),
        ("< -0.5", "a score is 0 to 1 and -0.5 is not, so it can never pass"),
        ("<= 1.5", "a score is 0 to 1 and 1.5 is not, so every score passes it"),
        ("> -1", "a score is 0 to 1 and -1 is not, so every score passes it"),
        ("< 0", "no score (0 to 1) is < 0, so it can never pass"),
        ("> 1", "no score (0 to 1) is > 1, so it can never pass"),
    ],
)
def test_a_score_rule_outside_0_to_1_is_a_load_error_saying_why(rule: str, why: str) -> None:
    error = load_error(f"{{name: tone, type: score, pass_when: '{rule}'}}")
    assert error.startswith("t.yaml:9:")
    assert f"insight 'tone': pass_when '{rule}': {why}; compare with a number from 0 to 1" in error


@pytest.mark.parametrize("rule", [">= 0", ">= 0.7", "> 0", "< 1", "<= 1", "== 1", "== 0"])
def test_score_rules_within_0_to_1_load(rule: str) -> None:
    insight = {"name": "tone", "type": "score", "pass_when": rule}
    Evaluation.model_validate({"name": "q", "prompt": "p", "insights": [insight]})


@pytest.mark.parametrize(
    ("options", "repeated"),
    [("[a, a, A]", "['a', 'A']"), ("[Refund, refund]", "['refund']"), ("[x, ' x ']", "[' x ']")],
)
def test_category_options_given_twice_are_a_load_error(options: str, repeated: str) -> None:
    error = load_error(f"{{name: outcome, type: category, options: {options}}}")
    assert error.startswith("t.yaml:9:")
    assert f"insight 'outcome': options {repeated} repeat another option" in error
    assert "list each option once" in error


def test_distinct_category_options_load() -> None:
    insight = {"name": "outcome", "type": "category", "options": ["refund", "refunded", "none"]}
    Evaluation.model_validate({"name": "q", "prompt": "p", "insights": [insight]})
