"""What issue 9 adds to test files: no threshold of 0, the default goal criterion, `should`
grammar warnings at the file's line, `end_reason` / `not_regex` / `allow_empty_replies` /
`judge_after_failed_checks` keys, and the JSON Schema that describes them."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import jsonschema
import pytest

from sparring.errors import ConfigError, UserError
from sparring.judging.should import ConditionGrammarWarning
from sparring.loaders import load_paths, test_file_json_schema
from sparring.loaders._parse import parse_documents
from sparring.scenario import Criterion, SimulatedScenario

TARGET = "target: {url: http://127.0.0.1:8787/chat}\n"


def write(directory: Path, text: str) -> Path:
    path = directory / "t.yaml"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_paths([path])
    return str(info.value)


# --- threshold 0 ---------------------------------------------------------------------------

ZERO_HINT = (
    "a threshold of 0 passes even when every trial fails; did you mean 1 (every trial "
    "must pass, the default) or a pass rate such as 0.8 (80%)?"
)


@pytest.mark.parametrize("zero", ["0", "0.0", '"0%"', "'0'"])
def test_a_threshold_of_zero_is_a_load_error_with_a_hint(tmp_path: Path, zero: str) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET}
        scenarios:
          - id: a
            turns: [{{user: hi, checks: [{{contains: x}}]}}]
            threshold: {zero}
        """,
    )
    assert load_error(path) == f"{path}:6:16: scenarios[0].threshold: {ZERO_HINT}"


def test_suite_scenario_refuses_a_threshold_of_zero() -> None:
    from sparring import Suite

    with pytest.raises(UserError, match=r"threshold: a threshold of 0 passes even when"):
        Suite().scenario(threshold=0)
    Suite().scenario(threshold=0.01)  # any pass rate above 0 is a choice


def test_the_json_schema_refuses_a_threshold_of_zero() -> None:
    schema = test_file_json_schema()
    scenario = {"id": "a", "prompt": "p", "should": "answer", "target": {"url": "http://x"}}
    jsonschema.validate({**scenario, "threshold": 0.5}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**scenario, "threshold": 0}, schema)


# --- the default goal criterion ------------------------------------------------------------


def test_a_simulated_scenario_without_criteria_is_judged_on_its_goal(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET}
        scenarios:
          - id: by-goal
            goal: Get a refund for order 10234
          - id: by-description
            description: Change the delivery address
        """,
    )
    by_goal, by_description = load_paths([path])
    assert isinstance(by_goal, SimulatedScenario) and isinstance(by_description, SimulatedScenario)
    assert by_goal.criteria == []  # derived, not written into the spec
    assert by_goal.all_criteria == [
        Criterion(
            id="goal",
            text="The assistant helps the user achieve their goal: Get a refund for order 10234",
        )
    ]
    assert by_description.user_goal == "Change the delivery address"
    assert by_description.all_criteria[0].text.endswith("goal: Change the delivery address")


def test_criteria_restrictions_or_checks_replace_the_default_criterion() -> None:
    for given in (
        {"criteria": ["Apologises"]},
        {"restrictions": ["Asks for a card number"]},
        {"checks": [{"contains": "refund"}]},
    ):
        scenario = SimulatedScenario.model_validate({"id": "s", "goal": "g", **given})
        assert all(c.id != "goal" for c in scenario.all_criteria), given


def test_a_long_goal_is_clipped_to_a_criterion_the_judge_takes() -> None:
    scenario = SimulatedScenario(id="s", goal="x" * 2000)
    [criterion] = scenario.all_criteria
    assert len(criterion.text) == 500 and criterion.text.endswith("x…")


def test_a_simulated_scenario_without_goal_or_description_is_still_an_error(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, f"{TARGET}scenarios:\n  - id: lost\n    persona: Someone\n")
    assert "needs a `goal` (or a `description`)" in load_error(path)


def test_empty_reply_is_a_reserved_criterion_id() -> None:
    with pytest.raises(ValueError, match="'empty_reply' is reserved for checks"):
        Criterion(id="empty_reply", text="x")


# --- should grammar warnings, at the file's line -------------------------------------------


def test_should_grammar_warnings_point_at_the_line_of_the_condition(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET}
        scenarios:
          - id: s
            turns:
              - user: hi
                should: greeted the customer
              - user: and?
                should:
                  - say goodbye
                  - a farewell
          - id: q
            prompt: Can I pay by card?
            should: [The message should say no]
        """,
    )
    with pytest.warns(ConditionGrammarWarning) as caught:
        load_paths([path])
    assert [(w.filename, w.lineno) for w in caught] == [
        (str(path), 7),
        (str(path), 11),
        (str(path), 14),
    ]
    texts = [str(w.message) for w in caught]
    assert "'greeted the customer' starts in the past tense" in texts[0]
    assert "'a farewell' is a noun phrase" in texts[1]
    assert "repeats 'should'" in texts[2] and "write 'say no'" in texts[2]


def test_shoulds_written_as_verb_phrases_load_without_a_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{TARGET}scenarios:\n  - id: q\n    prompt: Hi\n    should: [greet them, need no id]\n",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_paths([path])


def test_sparring_run_prints_grammar_warnings_with_file_and_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{TARGET}scenarios:\n  - id: q\n    prompt: Hi\n    should: greeted the user\n",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "--list", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert f"warning: {path}:5: condition 'greeted the user' starts in the past tense" in (
        done.stderr
    )
    assert "q  [single_turn, 1 trial]" in done.stdout


# --- new keys and checks -------------------------------------------------------------------


def test_an_end_reason_check_in_a_turn_is_a_load_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET}
        scenarios:
          - id: s
            turns:
              - user: hi
                checks: [{{end_reason: script_done}}]
        """,
    )
    assert load_error(path) == (
        f"{path}:7:17: scenarios[0].turns[0].checks: an end_reason check looks at how the "
        "conversation ended, which a turn's reply cannot know; move it to the scenario's "
        "`checks:`"
    )


def test_new_keys_and_checks_load_and_match_the_json_schema(tmp_path: Path) -> None:
    text = f"""
        {TARGET}
        scenarios:
          - id: sim
            goal: Get a refund
            allow_empty_replies: true
            judge_after_failed_checks: true
            checks:
              - end_reason: goal_achieved
              - end_reason: [goal_achieved, user_gave_up]
              - not_regex: "\\\\b\\\\d{{16}}\\\\b"
              - {{type: not_regex, pattern: sorry, ignore_case: true, turn: -1}}
        """
    path = write(tmp_path, text)
    [scenario] = load_paths([path])
    assert scenario.allow_empty_replies and scenario.judge_after_failed_checks
    assert [c.type for c in scenario.checks] == [
        "end_reason",
        "end_reason",
        "not_regex",
        "not_regex",
    ]
    [document] = parse_documents(path.read_text(), path=str(path))
    jsonschema.validate(document.data, test_file_json_schema())


def test_an_unknown_end_reason_names_the_ones_there_are(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"{TARGET}scenarios:\n  - id: s\n    goal: g\n    checks: [{{end_reason: done}}]\n",
    )
    assert "expected one of goal_achieved, user_gave_up, max_turns, script_done" in (
        load_error(path)
    )
