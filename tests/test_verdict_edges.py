"""Verdict edge cases: a tiny threshold needs a pass, one definition of an empty reply, an
empty `should` is bad input, a reply too deep for `json_schema` is the agent's failure, and
text checks see through Unicode disguises."""

from __future__ import annotations

import anyio
import pytest

from sparring.api import open_session
from sparring.authoring.steps import parse_check
from sparring.errors import ConfigError, UserError
from sparring.judging.checks import empty_reply_verdict, run_check
from sparring.judging.judge import NO_REPLY, no_reply_reason
from sparring.judging.should import Condition, JudgeSettings, judge_shoulds
from sparring.loaders import load_text
from sparring.models.scripted import ScriptedModel
from sparring.results import ScenarioResult, TrialResult, TrialStatus, passes_needed
from sparring.transcript import Message, Transcript


def scenario(threshold: float, statuses: list[TrialStatus]) -> ScenarioResult:
    trials = [
        TrialResult(scenario_id="s", trial=i, status=status, end_reason="script_done")
        for i, status in enumerate(statuses, start=1)
    ]
    return ScenarioResult(
        scenario_id="s", name="s", kind="scripted", threshold=threshold, trials=trials
    )


@pytest.mark.parametrize("threshold", [1.0e-20, 1e-12, 0.01])
def test_a_positive_threshold_however_tiny_needs_one_pass(threshold: float) -> None:
    failing = scenario(threshold, ["failed", "failed", "failed"])
    assert failing.status == "failed"
    assert failing.needed == (1, 3)
    assert not failing.can_still_pass(0) and failing.can_still_pass(1)
    assert scenario(threshold, ["failed", "passed", "failed"]).status == "passed"
    assert passes_needed(threshold, 3) == 1 and passes_needed(threshold, 0) == 0


def test_a_zero_threshold_needs_no_pass() -> None:
    assert passes_needed(0.0, 3) == 0
    assert scenario(0.0, ["failed", "failed"]).status == "passed"


# --- one definition of an empty reply; an empty `should` is bad input ---------------------


@pytest.mark.parametrize("reply", ["", "  \n", "\u200b", "\ufeff \u200d"])
def test_a_should_on_a_reply_the_empty_reply_check_calls_empty_is_not_met_unasked(
    reply: str,
) -> None:
    transcript = Transcript(
        messages=(Message(role="user", content="Hi"), Message(role="agent", content=reply))
    )
    [verdict] = anyio.run(
        lambda: judge_shoulds(
            [Condition("t1.should1", "greet the customer")],
            transcript=transcript,
            turn=1,
            judge=JudgeSettings(model=ScriptedModel([])),  # asking it would be an error
        )
    )
    assert (verdict.status, verdict.reason) == ("not_met", NO_REPLY)
    assert no_reply_reason(transcript, 1) == NO_REPLY
    empty = empty_reply_verdict(transcript)
    assert empty is not None and empty.status == "not_met"


@pytest.mark.parametrize("should", ['""', '"  "', '["greet", " "]'])
@pytest.mark.parametrize("kind", ["scripted", "single_turn"])
def test_an_empty_should_is_a_load_error_at_its_line(should: str, kind: str) -> None:
    body = (
        "    turns:\n      - user: hi\n        should: "
        if kind == "scripted"
        else ("    prompt: hi\n    should: ")
    )
    text = f"scenarios:\n  - id: s\n    kind: {kind}\n{body}{should}\n"
    with pytest.raises(ConfigError, match=r"a\.yaml:[56]:\d+: .*a `should` is empty"):
        load_text(text, path="a.yaml")


def hello(history: list[dict[str, str]]) -> str:
    return "Hello"


def test_response_should_with_an_empty_condition_is_a_user_error() -> None:
    async def main() -> None:
        async with open_session(hello, model=ScriptedModel([])) as session:
            response = await session.send("Hi")
            for condition in ["", "   ", ["greet the customer", "\n"]]:
                with pytest.raises(UserError, match="the condition is empty"):
                    await response.should(condition)

    anyio.run(main)


# --- a reply too deep to parse is the agent's failure ---------------------------------------


@pytest.mark.parametrize("depth", [101, 5_000, 100_000])
def test_a_json_schema_check_on_a_reply_nested_too_deep_is_not_met(depth: int) -> None:
    reply = "[" * depth + "]" * depth
    transcript = Transcript(
        messages=(Message(role="user", content="Hi"), Message(role="agent", content=reply))
    )
    verdict = run_check(parse_check({"json_schema": {"type": "array"}}), transcript, check_id="c")
    assert verdict.status == "not_met"
    assert "nested more than 100 levels deep" in verdict.reason


# --- text checks see through Unicode disguises ---------------------------------------------


def reply(text: str) -> Transcript:
    return Transcript(
        messages=(Message(role="user", content="Hi"), Message(role="agent", content=text))
    )


@pytest.mark.parametrize(
    "said",
    [
        "A re\u00adfund is on its way",
        "A r\u200befund is on its way",
        "Ａ Ｒｅｆｕｎｄ is on its way",
    ],
)
def test_not_contains_sees_a_disguised_word(said: str) -> None:
    verdict = run_check(parse_check({"not_contains": "refund"}), reply(said), check_id="c")
    assert verdict.status == "not_met"
    word = said.split()[1]  # the evidence quotes the reply as it was, disguise included
    assert word in verdict.reason and word in verdict.evidence[0]


@pytest.mark.parametrize(
    ("said", "needle", "quoted"),
    [
        ("Send it to STRASSE 5, please", "straße", "STRASSE"),
        ("Send it to Straße 5", "STRASSE", "Straße"),
        ("Café opens", "cafe\u0301", "Café"),
        ("ﬁle the claim", "file", "ﬁle"),
        ("Your re\u00adfund!", "Re\u200bfund", "re\u00adfund"),
    ],
)
def test_contains_matches_after_nfkc_and_casefold(said: str, needle: str, quoted: str) -> None:
    verdict = run_check(parse_check({"contains": needle}), reply(said), check_id="c")
    assert verdict.status == "met"
    assert verdict.evidence == (f'turn 1: "{said}"',)
    assert quoted in verdict.evidence[0]


def test_case_sensitive_text_checks_compare_exactly() -> None:
    spec = {"contains": "refund", "case_sensitive": True}
    assert run_check(parse_check(spec), reply("re\u00adfund"), check_id="c").status == "not_met"
    assert run_check(parse_check(spec), reply("a refund"), check_id="c").status == "met"


def test_the_evidence_of_a_folded_match_points_at_the_original_text() -> None:
    said = "\u200b" * 300 + "x" * 300 + " Ｓｔｒａße " + "y" * 300
    verdict = run_check(parse_check({"contains": "STRASSE"}), reply(said), check_id="c")
    assert verdict.status == "met"
    [evidence] = verdict.evidence
    assert evidence.startswith('turn 1: "…x') and evidence.endswith('y…"')
    assert " Ｓｔｒａße " in evidence
