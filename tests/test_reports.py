"""JSON, JUnit XML and Markdown reports rendered from hand-built RunResults."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from sparring.errors import UserError
from sparring.reports.json import load_json, read_json, render_json, write_json
from sparring.reports.junit import render_junit, write_junit
from sparring.reports.markdown import MAX_REPORT_CHARS, render_markdown, write_markdown
from sparring.results import (
    ReplyNote,
    RunResult,
    ScenarioResult,
    SubtestResult,
    TrialResult,
    Verdict,
    trial_status,
    undecided_text,
)
from sparring.transcript import Message, ToolCall, Transcript

NO_MODEL = "no model configured: set SPARRING_MODEL=openai:gpt-4o-mini or pass --model"
NASTY_REASON = "Said \x00sorry\x07 \x1b[31mlate]]> | not <b>early</b>\ufffe"
CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff]")


def _chat(*pairs: tuple[str, str], latency_ms: float = 812) -> Transcript:
    messages: list[Message] = []
    for user, agent in pairs:
        messages.append(Message(role="user", content=user))
        messages.append(Message(role="agent", content=agent, latency_ms=latency_ms))
    return Transcript(messages=tuple(messages))


def _v(
    id: str,
    status: str,
    *,
    kind: str = "criterion",
    desc: str = "",
    reason: str = "",
    **extra: object,
) -> Verdict:
    return Verdict(
        id=id,
        kind=kind,
        description=desc or f"description of {id}",  # type: ignore[arg-type]
        status=status,
        reason=reason,
        **extra,
    )  # type: ignore[arg-type]


def _trial(scenario: str, n: int, verdicts: list[Verdict], **fields: object) -> TrialResult:
    fields.setdefault("status", trial_status(verdicts))
    fields.setdefault("end_reason", "goal_achieved")
    return TrialResult(scenario_id=scenario, trial=n, verdicts=verdicts, **fields)  # type: ignore[arg-type]


def sample_run() -> RunResult:
    """Four scenarios: failed (passed/failed/timed-out trials), error, skipped, passed."""
    apologise = "The assistant apologises"
    refund = ScenarioResult(
        scenario_id="refund",
        name="Refund flow",
        kind="simulated",
        source="tests/refund.yaml",
        threshold=0.8,
        trials=[
            _trial(
                "refund",
                1,
                [
                    _v("c1", "met", desc=apologise, reason="it said sorry"),
                    _v("s1", "met", kind="should", desc="greet the user", turn=1),
                    _v("k1", "met", kind="check", desc="tool lookup_order called"),
                ],
                transcript=_chat(
                    ("Hi, my order is late", "Sorry! Let me check."), ("Order 42", "Refund issued.")
                ),
                reply_notes=[ReplyNote(turn=1, note="polite and on topic", score=0.9)],
                duration_ms=1234,
            ),
            _trial(
                "refund",
                2,
                [
                    _v("c2", "met", desc="Offers a refund"),
                    _v(
                        "c1",
                        "not_met",
                        desc=apologise,
                        reason=NASTY_REASON,
                        evidence=("I will not say sorry",),
                        turns=(2,),
                    ),
                    _v(
                        "r1",
                        "error",
                        kind="restriction",
                        desc="Never asks for the card number",
                        reason="judge answer unparseable after one retry",
                    ),
                ],
                end_reason="max_turns",
                transcript=_chat(("Where is it?", "I will not say sorry"), ("Please", "")),
                duration_ms=1500,
            ),
            _trial(
                "refund",
                3,
                [],
                status="timed_out",
                end_reason="timeout",
                error="conversation exceeded 600 s",
                transcript=_chat(("Hello?", "...")),
            ),
        ],
    )
    faq = ScenarioResult(
        scenario_id="faq",
        name="faq",
        kind="single_turn",
        threshold=1.0,
        trials=[
            _trial(
                "faq",
                1,
                [],
                status="error",
                end_reason="target_error",
                error="http://127.0.0.1:9/chat answered HTTP 500",
            )
        ],
    )
    nomodel = ScenarioResult(
        scenario_id="nomodel",
        name="Needs a model",
        kind="simulated",
        threshold=0.5,
        trials=[
            _trial(
                "nomodel",
                n,
                [_v("c1", "skipped", reason=NO_MODEL)],
                end_reason="skipped",
                error=NO_MODEL,
            )
            for n in (1, 2)
        ],
    )
    tool = Message(
        role="agent",
        content="Done <script>",
        latency_ms=40,
        tool_calls=(ToolCall.from_arguments("lookup", {"id": 1}),),
    )
    pipes = ScenarioResult(
        scenario_id="pipes",
        name="pipes|name",
        kind="scripted",
        threshold=1.0,
        trials=[
            _trial(
                "pipes",
                1,
                [_v("k1", "met", kind="check"), _v("c1", "skipped", reason=NO_MODEL)],
                end_reason="script_done",
                transcript=Transcript(
                    messages=(Message(role="user", content="a | b\nsecond line"), tool)
                ),
            )
        ],
    )
    return RunResult(
        sparring_version="0.1.0",
        run_id="run-1",
        started_at="2024-05-01T12:00:00+00:00",
        duration_ms=4321,
        user_model="openai:gpt-4o-mini",
        judge_model="openai:gpt-4o",
        scenarios=[refund, faq, nomodel, pipes],
    )


def unfold_run() -> RunResult:
    """A Python test whose body only used `unfold`: no main transcript, two sub-tests, one
    left undecided by the judge (so the trial is `error` because of that verdict)."""
    verdicts = [
        _v("unfold1.step2.should1", "met", kind="should", desc="should greet"),
        _v(
            "unfold1.step4.should1",
            "error",
            kind="should",
            desc="should say bye",
            reason="the judge's answer could not be read",
        ),
    ]
    subtests = [
        SubtestResult(
            id=f"unfold1.step{k}",
            name=f"step {k}",
            status=status,
            transcript=_chat(("hi", "hello")),
        )
        for k, status in ((2, "passed"), (4, "error"))
    ]
    trial = _trial(
        "py",
        1,
        verdicts,
        end_reason="script_done",
        subtests=subtests,
        error=undecided_text(verdicts),
    )
    return RunResult(
        sparring_version="0.1.0",
        run_id="run-2",
        started_at="2024-05-01T12:00:00+00:00",
        scenarios=[
            ScenarioResult(
                scenario_id="py", name="py", kind="python", threshold=1.0, trials=[trial]
            )
        ],
    )


def cut_short_run(*, interrupted: bool = False) -> RunResult:
    """A run that stopped early: `bad` failed, `partial` ran 1 of 3 trials, `never` none of
    its 2 (fail-fast, or Ctrl-C with `interrupted`)."""
    ok = _v("c1", "met")
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        interrupted=interrupted,
        scenarios=[
            ScenarioResult(
                scenario_id="bad",
                name="bad",
                kind="scripted",
                threshold=1.0,
                planned_trials=1,
                trials=[_trial("bad", 1, [_v("c1", "not_met")])],
            ),
            ScenarioResult(
                scenario_id="partial",
                name="partial",
                kind="scripted",
                threshold=1.0,
                planned_trials=3,
                trials=[_trial("partial", 1, [ok])],
            ),
            ScenarioResult(
                scenario_id="never", name="never", kind="scripted", threshold=1.0, planned_trials=2
            ),
        ],
    )


def interrupted_run() -> RunResult:
    """One scenario whose 3 trials were all cut off by Ctrl-C."""
    cut = "the run was interrupted before this trial finished"
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        interrupted=True,
        scenarios=[
            ScenarioResult(
                scenario_id="cut",
                name="cut",
                kind="simulated",
                threshold=1.0,
                planned_trials=3,
                trials=[
                    _trial("cut", n, [], status="error", end_reason="interrupted", error=cut)
                    for n in (1, 2, 3)
                ],
            )
        ],
    )


def test_sample_run_statuses() -> None:
    run = sample_run()
    assert [s.status for s in run.scenarios] == ["failed", "error", "skipped", "passed"]
    assert run.exit_code == 1


# --- JSON ---------------------------------------------------------------------------------


def test_json_round_trips_and_carries_derived_numbers(tmp_path: Path) -> None:
    run = sample_run()
    text = render_json(run)
    data = json.loads(text)
    assert list(data)[:3] == ["schema_version", "sparring_version", "run_id"]
    assert data["schema_version"] == "1"
    assert data["exit_code"] == 1
    assert data["counts"] == {"failed": 1, "error": 1, "skipped": 1, "passed": 1}
    refund = data["scenarios"][0]
    assert refund["pass_hat_k"] == {"1": pytest.approx(1 / 3), "2": 0.0, "3": 0.0}
    assert refund["trials"][1]["failures"] == ["c1", "r1"]
    assert refund["trials"][1]["verdicts"][1]["reason"] == NASTY_REASON
    assert load_json(text) == run
    assert render_json(load_json(text)) == text  # stable key order

    path = tmp_path / "out" / "report.json"
    write_json(run, path)
    assert path.read_bytes() == text.encode("utf-8")
    assert read_json(path) == run


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not a JSON report"),
        ("[1]", "is an object"),
        ('{"schema_version": "99"}', "schema_version '99' is not supported"),
        ('{"schema_version": "1", "run_id": 3}', "not a valid sparring report"),
    ],
)
def test_load_json_rejects_what_is_not_a_report(text: str, match: str) -> None:
    with pytest.raises(UserError, match=match):
        load_json(text, source="r.json")


# --- JUnit --------------------------------------------------------------------------------


def _suites(xml: str) -> dict[str, ET.Element]:
    root = ET.fromstring(xml)
    assert root.tag == "testsuites"
    return {s.get("name", ""): s for s in root.findall("testsuite")}


def test_junit_parses_with_counts_per_suite() -> None:
    xml = render_junit(sample_run())
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>')
    suites = _suites(xml)
    counts = {
        name: tuple(int(s.get(k, "-1")) for k in ("tests", "failures", "errors", "skipped"))
        for name, s in suites.items()
    }
    # single-trial scenarios have no separate pass-rate testcase
    assert counts == {
        "refund": (8, 2, 2, 0),
        "faq": (1, 0, 1, 0),
        "nomodel": (3, 0, 0, 3),
        "pipes": (2, 0, 0, 1),
    }
    root = ET.fromstring(xml)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("14", "2", "3")
    assert suites["refund"].get("time") == "2.734"
    props = {p.get("name"): p.get("value") for p in suites["refund"].iter("property")}
    assert props["threshold"] == "80%" and props["status"] == "failed"


def test_junit_failure_texts_and_names() -> None:
    suites = _suites(render_junit(sample_run()))
    cases = {c.get("name"): c for c in suites["refund"].iter("testcase")}
    assert all(c.get("classname") == "refund" for c in cases.values())
    failure = cases["trial 2 / c1: The assistant apologises"].find("failure")
    assert failure is not None and failure.text is not None
    assert "late]]> | not <b>early</b>" in failure.text
    assert "> I will not say sorry" in failure.text and "turns: 2" in failure.text
    assert failure.get("message") == "Said sorry [31mlate]]> | not <b>early</b>"
    assert cases["trial 1 / s1 @ turn 1: greet the user"].find("failure") is None
    error = cases["trial 2 / r1: Never asks for the card number"].find("error")
    assert error is not None and "unparseable" in (error.get("message") or "")
    timeout = cases["trial 3 / conversation"].find("error")
    assert timeout is not None and timeout.get("type") == "timeout"
    assert "conversation exceeded 600 s" in (timeout.text or "")
    assert "end reason: timeout" in (timeout.text or "")
    threshold = cases["pass rate 1/3 = 33.3% (threshold 80%)"].find("failure")
    assert threshold is not None and threshold.get("type") == "threshold"
    assert cases["trial 1 / c1: The assistant apologises"].get("time") == "1.234"
    assert cases["trial 1 / s1 @ turn 1: greet the user"].get("time") == "0.000"


def test_junit_errors_and_skips() -> None:
    suites = _suites(render_junit(sample_run()))
    faq = {c.get("name"): c for c in suites["faq"].iter("testcase")}
    error = faq["trial 1 / conversation"].find("error")
    assert error is not None and error.get("type") == "target_error"
    assert "HTTP 500" in (error.get("message") or "")
    skipped = [c.find("skipped") for c in suites["nomodel"].iter("testcase")]
    assert all(s is not None for s in skipped)
    assert [s.get("message") for s in skipped if s is not None][:2] == [NO_MODEL, NO_MODEL]


def test_junit_lists_trials_that_never_ran_as_skipped_with_the_reason() -> None:
    suites = _suites(render_junit(cut_short_run()))
    never = suites["never"]
    assert [never.get(k) for k in ("tests", "failures", "errors", "skipped")] == [
        "2",
        "0",
        "0",
        "2",
    ]
    names = [c.get("name") for c in never.iter("testcase")]
    assert names == ["trial 1 / not run", "trial 2 / not run"]
    reasons = {c.find("skipped").get("message") for c in never.iter("testcase")}  # type: ignore[union-attr]
    assert reasons == {"not run: --fail-fast stopped the run"}
    partial = {c.get("name"): c for c in suites["partial"].iter("testcase")}
    assert {"trial 2 / not run", "trial 3 / not run"} <= set(partial)
    threshold = partial["pass rate 1/1 = 100% (threshold 100%)"].find("error")
    assert threshold is not None and "never ran" in (threshold.get("message") or "")
    cut = _suites(render_junit(cut_short_run(interrupted=True)))["never"]
    assert cut.find("testcase/skipped").get("message") == (  # type: ignore[union-attr]
        "not run: the run was interrupted"
    )


def test_junit_has_no_control_characters(tmp_path: Path) -> None:
    xml = render_junit(sample_run())
    assert not CONTROL.search(xml)
    path = tmp_path / "junit.xml"
    write_junit(sample_run(), path)
    assert ET.parse(path).getroot().get("tests") == "14"


# --- Markdown -----------------------------------------------------------------------------


def test_markdown_summary_table() -> None:
    md = render_markdown(sample_run())
    assert md.startswith("# sparring run, 2024-05-01 12:00 UTC\n")
    assert "❌ **exit code 1**" in md
    assert "| Scenario | Kind | Trials | Passed | Pass rate | Threshold | Status | Tags |" in md
    assert (
        "| Refund flow (refund) | simulated | 3 | 1 | 33.3% [6%, 79%] | 80% | ❌ failed |  |"
    ) in md
    assert "| faq | single_turn | 1 | 0 | 0% [0%, 79%] | 100% | ⚠️ error |  |" in md
    assert "| Needs a model (nomodel) | simulated | 2 | 0 | - | 50% | ⏭ skipped |  |" in md
    assert (
        "| pipes\\|name (pipes) | scripted | 1 | 1 | 100% [21%, 100%] | 100% | ✅ passed (1 not "
        "judged) |  |" in md
    )


def test_markdown_trials_verdicts_and_transcripts() -> None:
    md = render_markdown(sample_run())
    refund = md[md.index("## ❌ Refund flow") : md.index("- Trial 1 of 3")]
    assert "pass rate 33.3% [6%, 79%] (1 of 3 passed, needs 3) · threshold 80%" in refund
    problems = [line for line in refund.splitlines() if line.startswith("- ")]
    assert problems[0] == "- trial 3: ⚠️ timed out: conversation exceeded 600 s"
    assert problems[1].startswith("- trial 2: ❌ **c1** The assistant apologises: Said sorry")
    assert "late]]> | not &lt;b>early&lt;/b>" in problems[1]
    assert problems[1].endswith(" (turns 2)")
    assert problems[2] == (
        "- trial 2: ⚠️ **r1** restriction: Never asks for the card number: judge answer "
        "unparseable after one retry"
    )
    assert "  > I will not say sorry" in refund
    trial2 = md[md.index("### Trial 2 of 3: ❌ failed") : md.index("### Trial 3 of 3")]
    assert "end reason `max_turns`" in trial2
    assert [line for line in trial2.splitlines() if line.startswith("- ")] == [
        "- ✅ **c2** Offers a refund"  # its failures are listed above, once
    ]
    assert "**2 · Agent** · 812 ms" in trial2 and "> (empty reply)" in trial2
    assert "- Trial 1 of 3: ✅ passed · end reason" in md  # passed trials: one line
    detailed = sample_run()  # the same run with every trial failed shows every transcript
    for scenario in detailed.scenarios:
        for trial in scenario.trials:
            trial.status = "failed" if trial.status == "passed" else trial.status
    md = render_markdown(detailed)
    assert "_Judge: polite and on topic (score 0.90)_" in md
    assert "- trial 3: ⚠️ timed out: conversation exceeded 600 s" in md
    assert "- trial 1: ⚠️ error: http://127.0.0.1:9/chat answered HTTP 500" in md
    assert "> a | b\n> second line" in md
    assert "Done &lt;script>" in md and 'tool call `lookup({"id": 1})`' in md
    assert (
        "pass^k (the chance that k trials in a row all pass): k=1: 0.33, k=2: 0.00, k=3: 0.00"
    ) in render_markdown(sample_run())
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", md)


def test_markdown_counts_sub_tests_and_names_an_undecided_verdict_once() -> None:
    md = render_markdown(unfold_run())
    assert "end reason `script_done` · 2 sub-tests · 0.0 s" in md
    assert "0 turns" not in md
    assert md.count("unfold1.step4.should1") == 1  # the verdict line, not the trial error too
    assert "- trial 1: ⚠️ **unfold1.step4.should1** should say bye" in md


def test_markdown_says_a_sub_test_replayed_its_history() -> None:
    run = unfold_run()
    sub = run.scenarios[0].trials[0].subtests[1]
    run.scenarios[0].trials[0].subtests[1] = sub.model_copy(update={"history": "replayed"})
    md = render_markdown(run)
    assert (
        "<summary>Sub-test unfold1.step4: ⚠️ error · history replayed (the agent's own "
        "replies) · step 4</summary>"
    ) in md
    assert md.count("history replayed") == 1  # not on the sub-test given as written


def test_markdown_says_why_trials_did_not_run() -> None:
    md = render_markdown(cut_short_run())
    assert "_No trial ran: --fail-fast stopped the run._" in md
    assert "_2 planned trials did not run: --fail-fast stopped the run._" in md
    assert "_No trial ran: the run was interrupted._" in render_markdown(
        cut_short_run(interrupted=True)
    )


def test_markdown_shows_a_scenario_cut_off_in_every_trial_as_interrupted() -> None:
    md = render_markdown(interrupted_run())
    assert "| cut | simulated | 3 | 0 | - | 100% | ⚠️ interrupted |  |" in md
    assert "## ⚠️ cut (interrupted)" in md and "pass rate - (0 of 3 passed, needs 3)" in md
    assert " 0%" not in md


def test_markdown_cuts_long_messages(tmp_path: Path) -> None:
    run = sample_run()
    long = run.model_copy(deep=True)
    long.scenarios[0].trials[1].transcript = _chat(("x" * 50, "y" * 30))
    md = render_markdown(long, max_message_chars=20)
    assert "> " + "x" * 20 + "\n> … (30 more characters)" in md
    path = tmp_path / "report.md"
    write_markdown(run, path)
    huge = run.model_copy(deep=True)
    huge.scenarios[0].trials[1].transcript = _chat(*[("q" * 3000, "a" * 3000)] * 30)
    cut = render_markdown(huge)
    assert len(cut) <= MAX_REPORT_CHARS
    assert cut.rstrip().endswith("in the JSON report (`--output`)._")
    assert "| Scenario" in cut  # the summary table comes first
    assert cut.count("<details>") == cut.count("</details>")  # no block left open
    many = run.model_copy(deep=True)
    many.scenarios = [
        s.model_copy(update={"scenario_id": f"{'x' * 80}-{i}"})
        for i in range(700)
        for s in run.scenarios[:1]
    ]
    assert len(render_markdown(many)) <= MAX_REPORT_CHARS  # even the table is cut
    assert path.read_text(encoding="utf-8") == render_markdown(run)


def test_junit_tolerates_trial_failures_when_the_threshold_is_met() -> None:
    ok = Verdict(id="c1", kind="criterion", description="Apologises", status="met")
    bad = ok.model_copy(update={"status": "not_met", "reason": "no apology"})
    flaky = ScenarioResult(
        scenario_id="flaky",
        name="flaky",
        kind="scripted",
        threshold=0.66,
        trials=[_trial("flaky", 1, [ok]), _trial("flaky", 2, [bad]), _trial("flaky", 3, [ok])],
    )
    run = RunResult(
        sparring_version="0", run_id="r", started_at="2026-01-01T00:00:00+00:00", scenarios=[flaky]
    )
    assert run.exit_code == 0
    root = ET.fromstring(render_junit(run))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "0", "0")
    note = next(c for c in root.iter("testcase") if c.get("name", "").startswith("trial 2"))
    assert "tolerated" in (note.findtext("system-out") or "")
    assert "no apology" in (note.findtext("system-out") or "")
