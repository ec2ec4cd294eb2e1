"""Reports a reader can trust at a glance (issue 9, items 6, 13, 15, 17): failures first,
passed details cut first, identical failures once, no repeated words, what a threshold
needs, the models' settings, the scenario's labels and why the exit code is 3."""

from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from rich.console import Console

from sparring.reports.console import ConsoleView, print_summary
from sparring.reports.junit import render_junit
from sparring.reports.markdown import MAX_REPORT_CHARS, render_markdown
from sparring.reports.outcome import exit_meaning, trial_ranges, verdict_what
from sparring.results import (
    ModelSettings,
    RunResult,
    ScenarioResult,
    TrialResult,
    TrialStatus,
    Verdict,
    trial_status,
)
from sparring.transcript import Message, Transcript

RESTRICTION = Verdict(
    id="r1",
    kind="restriction",
    description="restriction (must not happen): Never asks for the card number.",
    status="not_met",
    reason="It asked for the card number.",
    evidence=("What is your card number?",),
    turns=(1,),
)
ASSERT = Verdict(
    id="assert",
    kind="check",
    description="assert in the test body",
    status="not_met",
    reason="assertion failed at tests/test_x.py:9: assert reply.ok",
)
SHOULD = Verdict(
    id="t1.should1",
    kind="should",
    description="should greet the customer",
    status="met",
    turn=1,
    turns=(1,),
)


def _trial(sid: str, n: int, verdicts: list[Verdict], **fields: object) -> TrialResult:
    fields.setdefault("status", trial_status(verdicts))
    chat = Transcript(
        messages=(
            Message(role="user", content="Hi"),
            Message(role="agent", content="What is your card number?", latency_ms=5),
        )
    )
    fields.setdefault("transcript", chat)
    fields.setdefault("end_reason", "script_done")
    return TrialResult(scenario_id=sid, trial=n, verdicts=verdicts, **fields)  # type: ignore[arg-type]


def _scenario(sid: str, trials: list[TrialResult], **fields: object) -> ScenarioResult:
    fields.setdefault("kind", "scripted")
    fields.setdefault("threshold", 1.0)
    return ScenarioResult(scenario_id=sid, name=sid, trials=trials, **fields)  # type: ignore[arg-type]


def _run(*scenarios: ScenarioResult, **fields: object) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
        **fields,  # type: ignore[arg-type]
    )


def _passed(sid: str) -> ScenarioResult:
    return _scenario(sid, [_trial(sid, 1, [SHOULD])])


def _failing() -> ScenarioResult:
    return _scenario(
        "card",
        [_trial("card", n, [SHOULD, RESTRICTION]) for n in (1, 2, 3)],
        threshold=0.66,
        tags=["safety", "pci"],
        description="The agent never asks for card details.",
        category="payments",
        topic="cards",
        behavior="refuses",
    )


def test_markdown_puts_failures_first_in_the_table_and_the_sections() -> None:
    md = render_markdown(_run(_passed("ok"), _failing(), _passed("fine")))
    rows = [line.split(" | ")[0] for line in md.splitlines() if line.startswith("| ")][2:5]
    assert rows == ["| card", "| ok", "| fine"]
    assert md.index("## ❌ card") < md.index("## ✅ ok") < md.index("## ✅ fine")


def test_identical_failures_across_trials_are_listed_once() -> None:
    md = render_markdown(_run(_failing()))
    line = (
        "- trials 1-3: ❌ **r1** restriction (must not happen): Never asks for the card "
        "number: It asked for the card number. (turns 1)"
    )
    assert md.count(line) == 1
    assert md.count("  > What is your card number?") == 1  # the quote once, too
    assert md.count("### Trial ") == 3  # each trial still shows its transcript
    assert "Trial 2 of 3" in md and md.count("**r1**") == 1


def test_no_word_is_said_twice_in_a_row() -> None:
    run = _run(_failing(), _scenario("py", [_trial("py", 1, [ASSERT])], kind="python"))
    md = render_markdown(run)
    out = io.StringIO()
    print_summary(run, console=Console(file=out, width=300))
    for text in (md, out.getvalue(), render_junit(run)):
        assert "restriction: restriction" not in text
        assert "restriction restriction" not in text
        assert "assert assert" not in text
        assert "should should" not in text
    assert "- trial 1: ❌ **assert** in the test body: assertion failed at" in md
    assert "- ✅ **t1.should1** (turn 1) should greet the customer\n" in md  # no "(turns 1)"
    assert "✘ py · trial 1 · assert in the test body: assertion failed at" in out.getvalue()


def test_a_tolerated_failure_is_noted_once_in_junit() -> None:
    trials = [_trial("card", 1, [RESTRICTION]), _trial("card", 2, [SHOULD])]
    run = _run(_scenario("card", trials, threshold=0.5))
    notes = [e.text or "" for e in ET.fromstring(render_junit(run)).iter("system-out")]
    assert len(notes) == 1
    assert notes[0].count("It asked for the card number.") == 1


def test_reports_say_what_a_threshold_needs() -> None:
    run = _run(_failing())
    md = render_markdown(run)
    assert "pass rate 0% [0%, 56%] (0 of 3 passed, needs 2) · threshold 66%" in md
    out = io.StringIO()
    console = Console(file=out, width=300)
    with ConsoleView(console=console, live=False) as view:
        view.summary(run)
    assert "0 of 3 (needs 2)" in out.getvalue()
    junit = render_junit(run)
    assert "is below the threshold 66%: 0 of 3 passed, needs 2" in junit


def test_pass_hat_k_is_explained_where_it_is_shown() -> None:
    md = render_markdown(_run(_failing()))
    assert "pass^k (the chance that k trials in a row all pass): k=1: 0.00" in md


def test_markdown_shows_the_scenario_labels() -> None:
    md = render_markdown(_run(_failing()))
    assert "| card | scripted | 3 | 0 | 0% [0%, 56%] | 66% | ❌ failed | safety, pci |" in md
    assert "tags `safety`, `pci` · category `payments` · topic `cards` · behavior `refuses`" in md
    assert "> The agent never asks for card details." in md


def test_the_models_settings_are_shown_in_markdown_the_console_and_junit() -> None:
    models = [
        ModelSettings(
            role="user",
            spec="openai:gpt-4o-mini",
            provider="openai",
            model="gpt-4o-mini",
            temperature=0.7,
        ),
        ModelSettings(
            role="judge",
            spec="openai:gpt-4o-mini",
            provider="openai",
            model="gpt-4o-mini",
            temperature=0,
            seed=0,
            max_tokens=1024,
        ),
    ]
    run = _run(_passed("ok"), models=models, judge_model="openai:gpt-4o-mini")
    said = (
        "simulated user openai:gpt-4o-mini, temperature 0.7 · judge openai:gpt-4o-mini, "
        "temperature 0, seed 0, max tokens 1024"
    )
    assert f"Models: {said}" in render_markdown(run)
    out = io.StringIO()
    print_summary(run, console=Console(file=out, width=300))
    assert f"models: {said}" in out.getvalue()
    junit = render_junit(run)
    assert (
        '<property name="model.judge" value="judge openai:gpt-4o-mini, temperature 0, seed 0, '
        'max tokens 1024" />' in junit
    )
    assert '<property name="model.user" value="simulated user openai:gpt-4o-mini' in junit


def test_markdown_cuts_passed_details_first_and_keeps_every_failure() -> None:
    long_chat = Transcript(
        messages=(Message(role="user", content="q" * 3000), Message(role="agent", content="a"))
    )
    skipped = [
        _scenario(f"idle{i}", [_trial(f"idle{i}", 1, [], status="skipped", transcript=long_chat)])
        for i in range(8)
    ]
    passed = [_passed(f"passed-{i}") for i in range(400)]
    failing = _failing()
    md = render_markdown(_run(*passed, *skipped, failing))
    assert len(md) <= MAX_REPORT_CHARS
    assert "## ❌ card" in md and "## ⏭ idle7" in md  # failures and skips kept whole
    assert "## ✅ " not in md
    assert "_The details of 400 passed scenarios were left out to fit a pull-request" in md
    assert "The report was cut here" not in md
    smaller = render_markdown(_run(*passed[:10], *skipped, failing))
    assert "## ✅ " in smaller and "left out" not in smaller  # nothing cut when it fits


def _errored(
    sid: str, error: str, status: TrialStatus = "error", **fields: object
) -> ScenarioResult:
    return _scenario(sid, [_trial(sid, 1, [], status=status, error=error, **fields)])


def test_the_exit_code_3_message_names_its_causes() -> None:
    run = _run(
        _errored("a", "could not connect to http://127.0.0.1:9/chat", end_reason="target_error"),
        _errored("b", "the judge's model failed: HTTP 500", end_reason="model_error"),
        _errored("d", "the test raised KeyError: 'x'", end_reason="script_done"),
        _errored("c", "conversation exceeded 600 s", "timed_out", end_reason="timeout"),
        _passed("ok"),
        hook_errors=["after_all hook close() raised OSError"],
    )
    assert run.exit_code == 3
    assert exit_meaning(run) == (
        "4 scenarios errored: target unreachable (a), model call failed (b), the test raised "
        "KeyError: 'x' (d), timed out (c); 1 suite hook failed"
    )
    assert "⚠️ **exit code 3**: 4 scenarios errored: target unreachable (a)" in render_markdown(run)


def test_an_undecided_verdict_is_named_as_the_cause() -> None:
    undecided = Verdict(id="c1", kind="criterion", description="d", status="error", reason="x")
    trial = _trial("u", 1, [undecided], error="c1 could not be decided: x")
    assert exit_meaning(_run(_scenario("u", [trial]))) == (
        "1 scenario errored: the judge could not decide (u)"
    )


def test_trial_ranges_and_verdict_wording() -> None:
    assert trial_ranges([2]) == "trial 2"
    assert trial_ranges([3, 1, 2]) == "trials 1-3"
    assert trial_ranges([1, 3, 4, 6]) == "trials 1, 3-4, 6"
    assert verdict_what(ASSERT) == "in the test body"
    assert (
        verdict_what(RESTRICTION) == "restriction (must not happen): Never asks for the card number"
    )
    bare = RESTRICTION.model_copy(update={"description": "Never asks for it"})
    assert verdict_what(bare) == "restriction: Never asks for it"
    criterion = Verdict(id="c1", kind="criterion", description="Apologises.", status="met")
    assert verdict_what(criterion) == "Apologises"
