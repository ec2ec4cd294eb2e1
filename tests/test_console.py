"""ConsoleView driven by runner events: plain lines for CI logs, live mode on a terminal."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from sparring.events import (
    Event,
    MessageAdded,
    RunFinished,
    RunStarted,
    ScenarioFinished,
    TrialFinished,
    TrialStarted,
    VerdictAdded,
)
from sparring.reports.console import ConsoleView, print_summary
from sparring.results import RunResult, Verdict
from tests.test_reports import (
    NO_MODEL,
    cut_short_run,
    interrupted_run,
    sample_run,
    unfold_run,
)


def run_events(run: RunResult) -> list[Event]:
    """The events a runner would emit for `run`, one trial after another."""
    events: list[Event] = [
        RunStarted(
            scenarios=len(run.scenarios),
            trials=sum(len(s.trials) for s in run.scenarios),
            user_model=run.user_model,
            judge_model=run.judge_model,
        )
    ]
    for s in run.scenarios:
        for t in s.trials:
            events.append(TrialStarted(s.scenario_id, s.name, t.trial, len(s.trials)))
            events += [MessageAdded(s.scenario_id, t.trial, m) for m in t.transcript.messages]
            events += [VerdictAdded(s.scenario_id, t.trial, v) for v in t.verdicts]
            events.append(TrialFinished(t))
        events.append(ScenarioFinished(s))
    return [*events, RunFinished(run)]


def _plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=False, width=100), out


def test_plain_mode_prints_one_line_per_event_and_the_summary() -> None:
    console, out = _plain_console()
    with ConsoleView(console=console) as view:
        for event in run_events(sample_run()):
            view(event)
    text = out.getvalue()
    assert "\x1b" not in text
    lines = text.splitlines()
    assert lines[0] == (
        "sparring: 4 scenarios, 7 trials · user model openai:gpt-4o-mini · "
        "judge model openai:gpt-4o"
    )
    assert lines[1] == "▶ refund: trial 1/3 started"
    assert lines[2] == "  refund #1 t1 user: Hi, my order is late"
    assert lines[3] == "  refund #1 t1 agent (812 ms): Sorry! Let me check."
    assert "  refund #2 t2 agent (812 ms): (empty reply)" in lines
    assert "  refund #1 ✔ c1 met: The assistant apologises" in lines
    assert (
        "  refund #2 ✘ c1 not met: The assistant apologises: Said sorry [31mlate]]> | not "
        "<b>early</b>\ufffe"
    ) in lines
    assert (
        "  refund #2 ⚠ r1 error: restriction: Never asks for the card number: judge answer "
        "unparseable after one retry"
    ) in lines
    assert "✔ refund: trial 1/3 passed (goal_achieved, 2 turns, 1.2 s)" in lines
    assert (
        "✘ refund: trial 2/3 failed (max_turns, 2 turns, 1.5 s): c1 The assistant "
        "apologises: Said sorry [31mlate]]> | not <b>early</b>\ufffe"
    ) in lines
    assert (
        "⚠ refund: trial 3/3 timed out (timeout, 1 turn, 0.0 s): conversation exceeded 600 s"
    ) in lines
    assert "⏭ nomodel: trial 2/2 skipped (skipped, 0 turns, 0.0 s)" in lines
    assert (
        "■ refund: failed, pass rate 33.3% [6%, 79%] (1 of 3 passed, needs 3; threshold 80%)"
    ) in lines
    assert "  pipes #1 t1 agent (40 ms): Done <script> [tools: lookup]" in lines
    assert "  pipes #1 t1 user: a | b second line" in lines


def test_summary_lists_failures_errors_skips_once_and_the_exit_code() -> None:
    console, out = _plain_console()
    with ConsoleView(console=console) as view:
        for event in run_events(sample_run()):
            view(event)
    text = out.getvalue()
    summary = text[text.index("sparring results") :]
    row = next(line for line in summary.splitlines() if "refund" in line)
    assert [c.strip() for c in row.split("│")[1:-1]] == [
        "refund",
        "✘ failed",
        "33.3% [6%, 79%]",
        "1 of 3 (needs 3)",
        "80%",
    ]
    assert "Failures (1)" in summary
    assert (
        "✘ refund · trial 2 · c1 The assistant apologises: Said sorry [31mlate]]> | not "
        "<b>early</b>"
    ) in summary
    assert "Errors (3)" in summary
    assert "⚠ refund · trial 3: conversation exceeded 600 s" in summary
    assert "⚠ faq · trial 1: http://127.0.0.1:9/chat answered HTTP 500" in summary
    assert "⚠ refund · trial 2 · r1 restriction: Never asks for the card number: judge" in summary
    assert text.count(NO_MODEL) == 1  # skipped work is summarised once, never per verdict
    assert f"⏭ skipped 2 trials and 1 verdict: {NO_MODEL}" in summary
    assert (
        "4 scenarios (1 failed, 1 error, 1 skipped, 1 passed) · 7 trials (2 passed, "
        "1 failed, 1 timed out, 1 error, 2 skipped) · pass rate 2/5 passed, 40% [12%, 77%] "
        "(1 passed with steps not judged) · 4.3 s"
    ) in summary
    assert summary.rstrip().endswith(
        "exit code 1: at least one scenario failed: the agent did not meet its criteria"
    )


def test_sub_tests_are_counted_and_an_undecided_verdict_is_listed_once() -> None:
    console, out = _plain_console()
    with ConsoleView(console=console) as view:
        for event in run_events(unfold_run()):
            view(event)
    text = out.getvalue()
    assert "⚠ py: trial 1/1 error (script_done, 2 sub-tests, 0.0 s): unfold1.step4.should1" in text
    summary = text[text.index("sparring results") :]
    assert "Errors (1)" in summary
    assert summary.count("unfold1.step4.should1") == 1


def test_without_with_the_summary_prints_when_the_run_finishes() -> None:
    console, out = _plain_console()
    view = ConsoleView(console=console, show_messages=False)
    for event in run_events(sample_run()):
        view(event)
    text = out.getvalue()
    assert "t1 user:" not in text
    assert text.count("sparring results") == 1
    assert text.rstrip().endswith("did not meet its criteria")


def test_interrupted_run_says_how_far_it_got() -> None:
    console, out = _plain_console()
    run = sample_run()
    events = run_events(run)
    second_done = [i for i, e in enumerate(events) if isinstance(e, TrialFinished)][1]
    with pytest.raises(KeyboardInterrupt), ConsoleView(console=console) as view:
        for event in events[: second_done + 3]:  # and the third trial started
            view(event)
        raise KeyboardInterrupt
    text = out.getvalue()
    assert "sparring results" not in text
    assert text.splitlines()[-1] == "run interrupted: 2/7 trials finished (1 passed, 1 failed)"


def test_ascii_symbols_when_the_output_is_not_unicode() -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="replace", write_through=True)
    console = Console(file=stream, force_terminal=False, width=100)
    view = ConsoleView(console=console, show_messages=False)
    for event in run_events(sample_run()):
        view(event)
    text = raw.getvalue().decode("ascii")
    assert "+ refund: trial 1/3 passed" in text and "x refund: trial 2/3 failed" in text


def test_live_mode_runs_and_ends_with_the_summary() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100, height=40)
    events = run_events(sample_run())
    with ConsoleView(console=console, refresh_per_second=8) as view:
        for event in events[:4]:  # RunStarted, TrialStarted, two messages of trial 1
            view(event)
        frame = io.StringIO()
        Console(file=frame, width=100, force_terminal=False).print(view.render())
        for event in events[4:]:
            view(event)
    shown = frame.getvalue()
    assert "Refund flow · trial 1/3 · turn 1" in shown
    assert "t1 user: Hi, my order is late" in shown
    assert "0/7 trials · 0 passed · 0 failed · 0 error" in shown
    text = out.getvalue()
    assert "✔ refund: trial 1/3 passed" in text  # permanent line per finished trial
    assert "▶ refund: trial 1/3 started" not in text  # plain-mode lines stay out
    assert "sparring results" in text
    assert "exit code 1" in text.split("sparring results")[1]


def test_live_area_shows_verdicts_and_only_the_panels_that_fit() -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=80, height=15)
    run = sample_run()
    refund = run.scenarios[0]
    with ConsoleView(console=console) as view:
        view(RunStarted(scenarios=1, trials=3, user_model=None, judge_model=None))
        for t in refund.trials:
            view(TrialStarted("refund", "Refund flow", t.trial, 3))
        for v in refund.trials[1].verdicts:
            view(VerdictAdded("refund", 2, v))
        frame = io.StringIO()
        Console(file=frame, width=80, force_terminal=False).print(view.render())
    shown = frame.getvalue()
    assert shown.count("Refund flow · trial") == 2
    assert "… and 1 more running" in shown
    assert "c2 c1 r1" in shown
    assert "run interrupted: 0/3 trials finished (none finished)" in out.getvalue()


def test_print_summary_alone() -> None:
    console, out = _plain_console()
    print_summary(sample_run(), console=console)
    assert "Failures (1)" in out.getvalue()


def test_a_sub_test_that_replayed_its_history_says_so() -> None:
    run = unfold_run()
    sub = run.scenarios[0].trials[0].subtests[1]
    run.scenarios[0].trials[0].subtests[1] = sub.model_copy(update={"history": "replayed"})
    console, out = _plain_console()
    with ConsoleView(console=console) as view:
        for event in run_events(run):
            view(event)
    lines = [line.strip() for line in out.getvalue().splitlines()]
    assert "⚠ unfold1.step4 error, history replayed (the agent's own replies): step 4" in lines
    assert "✔ unfold1.step2 passed: step 2" in lines


def test_summary_says_fail_fast_stopped_the_run() -> None:
    console, out = _plain_console()
    print_summary(cut_short_run(), console=console)
    text = out.getvalue()
    assert "⏭ the run stopped early because of --fail-fast: 4 planned trials did not run" in text
    console, out = _plain_console()
    print_summary(cut_short_run(interrupted=True), console=console)
    assert "--fail-fast" not in out.getvalue()


def test_a_scenario_cut_off_in_every_trial_shows_as_interrupted() -> None:
    console, out = _plain_console()
    with ConsoleView(console=console) as view:
        for event in run_events(interrupted_run()):
            view(event)
    text = out.getvalue()
    assert "■ cut: interrupted, pass rate - (0 of 3 passed, needs 3; threshold 100%)" in text
    row = next(line for line in text.splitlines() if line.startswith("│ cut"))
    assert "⚠ interrupted" in row and " - " in row and "error" not in row


def test_a_display_bug_never_reaches_the_runner() -> None:
    console, out = _plain_console()
    odd = Verdict.model_construct(
        id="c9",
        kind="criterion",
        description="d",
        status="odd",
        reason="",
        evidence=(),
        turns=(),
        turn=None,
    )
    run = sample_run()
    with ConsoleView(console=console) as view:
        view(VerdictAdded("refund", 1, odd))  # an unknown status breaks the view ...
        view(TrialStarted("refund", "Refund flow", 1, 3))  # ... which then stays quiet
        view(RunFinished(run))
    text = out.getvalue()
    assert "the console view failed" in text
    assert "trial 1/3 started" not in text
    assert text.rstrip().endswith("did not meet its criteria")
