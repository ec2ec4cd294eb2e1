"""Every report shows evaluations: insight values with reasoning and evidence (the featured
one first), scores, gating insights that did not pass, `done`, explanations and overrides."""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
import zipfile

from rich.console import Console

from sparring.reports.console import print_summary
from sparring.reports.exports import export_sheets, render_csv_zip
from sparring.reports.html import render_html
from sparring.reports.json import render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.results import (
    InsightResult,
    Override,
    RunResult,
    ScenarioResult,
    TrialResult,
    Verdict,
)
from sparring.transcript import Message, Transcript

CHAT = Transcript(
    messages=(
        Message(role="user", content="My parcel never came."),
        Message(role="agent", content="I can send a replacement parcel tomorrow."),
    )
)
EXPLANATION = "The agent never offered a refund; tell it to offer one for lost parcels."
OVERRIDE = Override(
    value="met",
    reason="the quote was right",
    author="ana",
    at="2026-12-01T10:00:00Z",
    original="not_met",
)


def insight(name: str, **fields: object) -> InsightResult:
    base: dict[str, object] = {
        "evaluation": "support",
        "insight": name,
        "type": "boolean",
        "status": "ok",
        "reasoning": f"reasoning of {name}",
    }
    return InsightResult.model_validate(base | fields)


INSIGHTS = [
    insight(
        "resolved",
        value=False,
        passed=False,
        score=0.0,
        gating=True,
        evidence=("send a replacement parcel",),
        turns=(1,),
    ),
    insight("tone", type="score", value=0.75, score=0.75, group="manner"),
    insight(
        "outcome",
        type="category",
        value="replacement",
        featured=True,
        evidence=("a replacement parcel",),
        override=Override(
            value="refund",
            reason="policy",
            author="bo",
            at="2026-12-01T11:00:00Z",
            original="replacement",
        ),
    ),
    insight("summary", type="text", status="error", error="its value is 3, not text"),
]


def result() -> RunResult:
    verdict = Verdict(
        id="c1",
        kind="criterion",
        description="Offers a refund",
        status="met",
        reason="It offers one.",
        evidence=("send a replacement",),
        override=OVERRIDE,
    )
    failed = TrialResult(
        scenario_id="lost-parcel",
        trial=1,
        status="failed",
        end_reason="script_done",
        transcript=CHAT,
        verdicts=[verdict],
        insights=INSIGHTS,
        score=0.375,
        evaluations_passed="no",
        explanation=EXPLANATION,
    )
    done = TrialResult(
        scenario_id="small-talk",
        trial=1,
        status="done",
        end_reason="script_done",
        transcript=CHAT,
        insights=[insight("tone", type="score", value=0.5, score=0.5)],
        score=0.5,
    )
    return RunResult(
        sparring_version="0",
        run_id="run-1",
        started_at="2026-12-01T09:00:00+00:00",
        scenarios=[
            ScenarioResult(
                scenario_id="lost-parcel",
                name="lost-parcel",
                kind="scripted",
                threshold=1.0,
                trials=[failed],
            ),
            ScenarioResult(
                scenario_id="small-talk",
                name="small-talk",
                kind="scripted",
                threshold=1.0,
                trials=[done],
            ),
        ],
    )


def test_json_has_insights_score_explanation_and_overrides() -> None:
    data = json.loads(render_json(result()))
    trial = data["scenarios"][0]["trials"][0]
    assert [i["insight"] for i in trial["insights"]] == ["resolved", "tone", "outcome", "summary"]
    assert trial["score"] == 0.375 and trial["evaluations_passed"] == "no"
    assert trial["explanation"] == EXPLANATION
    assert trial["insights"][2]["override"]["author"] == "bo"
    assert trial["verdicts"][0]["override"]["original"] == "not_met"
    assert data["scenarios"][0]["score"] == 0.375
    assert data["scenarios"][1]["status"] == "done" and data["exit_code"] == 1
    assert data["counts"] == {"failed": 1, "done": 1}


def test_console_summary_shows_scores_gates_done_and_explanations() -> None:
    out = io.StringIO()
    print_summary(result(), console=Console(file=out, width=200, force_terminal=False))
    text = out.getvalue()
    assert "Score" in text and "0.38" in text and "0.50" in text
    assert "○ done" in text
    assert "lost-parcel · trial 1 · support.resolved insight = false" in text
    assert "reasoning of resolved" in text
    assert "Why it failed (explain_failures)" in text and EXPLANATION in text


def test_console_marks_an_overridden_verdict() -> None:
    run = result()
    trial = run.scenarios[0].trials[0]
    trial.verdicts = [trial.verdicts[0].model_copy(update={"status": "not_met"})]
    out = io.StringIO()
    print_summary(run, console=Console(file=out, width=300, force_terminal=False))
    assert "c1 [overridden by ana (was not_met): the quote was right] Offers a refund" in (
        out.getvalue()
    )


def test_markdown_shows_the_insight_table_featured_first_and_overrides() -> None:
    text = render_markdown(result())
    table = text[text.index("| Insight | Value |") :]
    rows = [line for line in table.splitlines() if line.startswith("| ")][2:6]
    assert rows[0].startswith("| ⭐ `support.outcome` | replacement (overridden by bo (was ")
    assert "| `support.resolved` | false | not passed | reasoning of resolved |" in rows[1]
    assert "“send a replacement parcel”" in rows[1]
    assert "error: its value is 3, not text" in text
    assert "| `support.tone` (manner) | 0.75 |" in text
    assert f"**Why it failed (explain_failures):** {EXPLANATION}" in text
    assert "overridden by ana (was not_met): the quote was right" in text
    assert "score 0.38" in text and "evaluations passed no" in text
    assert "☑️ done" in text
    assert "❌ **support.resolved** insight = false (pass rule of evaluation support)" in text


def test_junit_has_evaluation_properties_gate_failures_and_the_explanation() -> None:
    root = ET.fromstring(render_junit(result()))
    suite = root.find("testsuite")
    assert suite is not None
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    gate = cases["trial 1 / support.resolved: insight = false (pass rule of evaluation support)"]
    failure = gate.find("failure")
    assert failure is not None and failure.get("message") == "reasoning of resolved"
    assert EXPLANATION in (failure.text or "")
    props = {p.get("name"): p.get("value") for p in cases["trial 1 / evaluations"].iter("property")}
    assert props["score"] == "0.38" and props["evaluations_passed"] == "no"
    assert props["insight.support.resolved"] == "false · not passed · reasoning of resolved"
    assert list(props)[2] == "insight.support.outcome"  # the featured one first
    assert "overridden by bo" in (props["insight.support.outcome"] or "")
    assert suite.get("failures") == "1"
    done = [s for s in root.iter("testsuite") if s.get("name") == "small-talk"][0]
    assert done.get("failures") == "0" and done.get("errors") == "0"


def test_html_shows_the_insight_table_featured_first_with_reasoning_and_evidence() -> None:
    page = render_html(result())
    table = page[page.index('<table class="insights">') :]
    table = table[: table.index("</table>")]
    assert table.index("support.outcome") < table.index("support.resolved")
    assert "reasoning of resolved" in table and "send a replacement parcel" in table
    assert "overridden by bo (was replacement): policy" in table
    assert "error: its value is 3, not text" in table
    assert "score · manner" in table
    assert EXPLANATION in page and "overridden by ana" in page
    assert "outcome: replacement" in page  # the featured output leads the trial's facts
    assert "score 0.38" in page


def test_exports_have_insight_columns_and_rows() -> None:
    runs, insights, _, _ = export_sheets(result())
    assert runs.columns[-4:] == (
        "support.outcome",
        "support.resolved",
        "support.summary",
        "support.tone",  # grouped insights after the ungrouped ones
    )
    first = runs.rows[0]
    assert first["support.resolved"] == "false" and first["support.outcome"] == "replacement"
    assert first["score"] == 0.375 and first["evaluations passed"] == "no"
    assert first["explanation"] == EXPLANATION
    rows = [r for r in insights.rows if r["kind"] != "criterion"]
    assert [r["id"] for r in rows[:2]] == ["support.outcome", "support.resolved"]
    assert rows[1]["passed"] is False and rows[1]["reasoning"] == "reasoning of resolved"
    assert rows[1]["evidence"] == "send a replacement parcel"
    assert rows[0]["override"] == "overridden by bo (was replacement): policy"
    criterion = next(r for r in insights.rows if r["id"] == "c1")
    assert criterion["override"] == "overridden by ana (was not_met): the quote was right"
    with zipfile.ZipFile(io.BytesIO(render_csv_zip(result()))) as archive:
        header = next(csv.reader(io.StringIO(archive.read("runs.csv").decode("utf-8-sig"))))
    assert "support.resolved" in header
