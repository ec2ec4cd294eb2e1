"""What was not judged is never shown as a plain pass: the run's pass rate counts the passes
that left steps unjudged, a run where nothing ran says so, every report marks a scenario
`passed (1 not judged)` and a corrected verdict `overridden` (console, Markdown, HTML,
JUnit, JSON, the dashboard's conversation list)."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from sparring.dashboard.pages import _environment  # pyright: ignore[reportPrivateUsage]
from sparring.dashboard.views import conversation_rows
from sparring.judging.should import NO_MODEL_HINT
from sparring.reports.console import print_summary
from sparring.reports.console_summary import SYMBOLS, scenario_line
from sparring.reports.html import render_html
from sparring.reports.json import render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.reports.outcome import exit_meaning
from sparring.results import Override, RunResult, ScenarioResult, TrialResult, Verdict
from sparring.transcript import Message, Transcript

MET = Verdict(id="check1", kind="check", description='contains "order"', status="met")
UNJUDGED = Verdict(
    id="t1.should1", kind="should", description="ask for the number", status="skipped",
    reason=NO_MODEL_HINT,
)  # fmt: skip
FIXED = MET.model_copy(
    update={
        "override": Override(
            value="met", reason="it did say it", author="ana", at="2026-01-01", original="not_met"
        )
    }
)
TALK = Transcript(
    messages=(Message(role="user", content="Hi"), Message(role="agent", content="Your order?"))
)


def trial(
    scenario_id: str, status: str, *verdicts: Verdict, error: str | None = None
) -> TrialResult:
    return TrialResult(
        scenario_id=scenario_id,
        trial=1,
        status=status,  # type: ignore[arg-type]
        end_reason="skipped" if status == "skipped" else "script_done",
        transcript=TALK,
        verdicts=list(verdicts),
        error=error,
    )


def run_of(*trials: TrialResult, fail_on_skip: bool = False) -> RunResult:
    scenarios = [
        ScenarioResult(
            scenario_id=t.scenario_id,
            name=t.scenario_id,
            kind="scripted",
            threshold=1.0,
            trials=[t],
        )  # fmt: skip
        for t in trials
    ]
    return RunResult(
        sparring_version="0",
        run_id="r1",
        started_at="2026-01-01T00:00:00Z",
        scenarios=scenarios,
        fail_on_skip=fail_on_skip,
    )


def console_text(result: RunResult) -> str:
    out = io.StringIO()
    print_summary(result, console=Console(file=out, width=300))
    return out.getvalue()


# --- 1. the run's pass rate says how many passes left steps unjudged ----------------------


def test_the_pass_rate_counts_passes_with_unjudged_steps_in_every_report() -> None:
    result = run_of(trial("a", "passed", MET, UNJUDGED), trial("b", "passed", MET))
    rate = "2/2 passed, 100% [34%, 100%] (1 passed with steps not judged)"
    meaning = "every scenario that ran passed; 1 passed trial had steps not judged"
    assert result.exit_code == 0  # the exit code is unchanged: README's "not judged"
    assert f"pass rate {rate}" in console_text(result)
    assert f"exit code 0: {meaning}" in console_text(result)
    md = render_markdown(result)
    assert f"pass rate {rate} ·" in md and f"**exit code 0**: {meaning}" in md
    page = render_html(result)
    assert "2 of 2 trials passed (1 passed with steps not judged)" in page
    assert meaning in page
    data = json.loads(render_json(result))
    assert data["passed_with_unjudged_steps"] == 1 and data["pass_rate"] == 1
    assert [s["passed_with_unjudged_steps"] for s in data["scenarios"]] == [1, 0]
    suites = ET.fromstring(render_junit(result)).findall("testsuite")
    not_judged = [s.find("properties/property[@name='not_judged']") for s in suites]
    assert [p.get("value") for p in not_judged if p is not None] == ["1", "0"]


def test_fail_on_skip_still_makes_such_a_run_exit_3() -> None:
    result = run_of(trial("a", "passed", MET, UNJUDGED), fail_on_skip=True)
    assert result.exit_code == 3
    assert exit_meaning(result) == "steps were skipped under --fail-on-skip"


def test_a_pass_with_everything_judged_reads_as_before() -> None:
    result = run_of(trial("a", "passed", MET))
    assert exit_meaning(result) == "every scenario that ran passed"
    assert "not judged" not in console_text(result) + render_markdown(result)


# --- 2. a run where nothing ran does not say that everything passed ----------------------


def test_a_run_of_skipped_scenarios_says_nothing_was_judged_and_why() -> None:
    result = run_of(
        trial("sim", "skipped", error=NO_MODEL_HINT),
        trial("should", "skipped", error=NO_MODEL_HINT),
    )
    meaning = f"nothing was judged: 2 scenarios skipped ({NO_MODEL_HINT})"
    assert result.exit_code == 0 and exit_meaning(result) == meaning
    assert f"exit code 0: {meaning}" in console_text(result)
    assert f"**exit code 0**: {meaning}" in render_markdown(result)
    assert meaning in render_html(result)
    assert "every scenario that ran passed" not in console_text(result) + render_markdown(result)


def test_skipped_scenarios_beside_passed_ones_are_named_with_why() -> None:
    result = run_of(trial("a", "passed", MET), trial("b", "skipped", error="no Chromium"))
    assert (
        exit_meaning(result) == "every scenario that ran passed; 1 scenario skipped (no Chromium)"
    )


def test_several_reasons_of_skipping_are_counted() -> None:
    result = run_of(trial("a", "skipped", error="x"), trial("b", "skipped", error="y"))
    assert exit_meaning(result) == "nothing was judged: 2 scenarios skipped (x; and 1 other reason)"


# --- 3. a skipped trial that talked is not "no trial ran" --------------------------------


def test_a_skipped_trial_that_talked_is_not_said_to_have_never_run() -> None:
    md = render_markdown(run_of(trial("a", "skipped", error=NO_MODEL_HINT)))
    assert "pass rate - (no trial judged: 1 skipped)" in md and "no trial ran" not in md


# --- 4. "not judged" in the Markdown table, HTML rows and the dashboard's list ------------


def test_the_not_judged_mark_is_in_the_markdown_table_and_the_html_rows() -> None:
    result = run_of(trial("a", "passed", MET, UNJUDGED))
    md = render_markdown(result)
    assert "| ✅ passed (1 not judged) |" in md
    assert "- Trial 1 of 1: ✅ passed (1 not judged) ·" in md
    page = render_html(result)
    assert 'passed</span> (1 not judged) <span class="s-name">' in page
    assert 'passed</span> (1 not judged) <span class="t-name">' in page


def test_the_quiet_line_of_a_scenario_marks_what_was_not_judged() -> None:
    (scenario,) = run_of(trial("a", "passed", MET, UNJUDGED)).scenarios
    assert scenario_line(scenario, SYMBOLS).plain.startswith(
        "■ a: passed (1 not judged), pass rate"
    )


def test_the_dashboards_conversation_list_marks_what_was_not_judged() -> None:
    result = run_of(trial("a", "passed", MET, UNJUDGED), trial("b", "passed", MET))
    rows = conversation_rows([result], running=set())
    suite = {"id": 1, "runs": [result]}
    page = (
        _environment()
        .get_template("transcripts.html.j2")
        .render(rows=rows, chosen=None, suite=suite, runs_shown=20, detail=None)
    )
    assert page.count("1 not judged") == 1


# --- 5. an override shows in Markdown, HTML and JUnit -------------------------------------


def test_an_overridden_verdict_is_marked_in_every_report() -> None:
    result = run_of(trial("a", "passed", FIXED))
    md = render_markdown(result)
    assert "| ✅ passed (overridden) |" in md
    assert "- Trial 1 of 1: ✅ passed (overridden) ·" in md
    assert "(overridden by ana (was not_met): it did say it)" in md
    assert "│ a        │ ✔ passed (overridden) │" in console_text(result)
    page = render_html(result)
    assert 'passed</span> (overridden) <span class="s-name">' in page
    suite = ET.fromstring(render_junit(result)).find("testsuite")
    assert suite is not None
    prop = suite.find("testcase/properties/property[@name='override']")
    assert prop is not None
    assert prop.get("value") == "overridden by ana (was not_met): it did say it"
