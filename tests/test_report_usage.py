"""Usage totals (model calls, tokens, cost, the target's tokens) in every report."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

from rich.console import Console

from sparring.reports import usage_text
from sparring.reports.console import print_summary
from sparring.reports.json import load_json, render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, TrialResult, Usage, UsageTotals
from sparring.transcript import Message, Transcript


def _chat(*tokens: tuple[int | None, int | None]) -> Transcript:
    messages: list[Message] = []
    for input_tokens, output_tokens in tokens:
        messages += [
            Message(role="user", content="hi"),
            Message(
                role="agent",
                content="hello",
                input_tokens=input_tokens,
                output_tokens=output_tokens,
            ),
        ]
    return Transcript(messages=tuple(messages))


def _run() -> RunResult:
    """Two scenarios: one with a priced and an unpriced trial and a target that reports
    tokens on some replies; one whose target reports none."""
    priced = TrialResult(
        scenario_id="a",
        trial=1,
        status="passed",
        end_reason="max_turns",
        usage=Usage(model_calls=3, input_tokens=3000, output_tokens=300, cost_usd=0.0021),
        transcript=_chat((100, 20), (None, None), (150, 30)),
    )
    unpriced = TrialResult(
        scenario_id="a",
        trial=2,
        status="passed",
        end_reason="max_turns",
        usage=Usage(model_calls=2, input_tokens=1000, output_tokens=100, unpriced_calls=2),
        transcript=_chat((50, 10)),
    )
    quiet = TrialResult(
        scenario_id="b",
        trial=1,
        status="passed",
        end_reason="max_turns",
        usage=Usage(model_calls=1, input_tokens=10, output_tokens=1, cost_usd=0.5),
        transcript=_chat((None, None)),
    )
    return RunResult(
        sparring_version="0",
        run_id="r1",
        started_at="2025-01-01T00:00:00+00:00",
        scenarios=[
            ScenarioResult(
                scenario_id="a", name="a", kind="simulated", threshold=1, trials=[priced, unpriced]
            ),
            ScenarioResult(
                scenario_id="b", name="b", kind="simulated", threshold=1, trials=[quiet]
            ),
        ],
    )


RUN_TOTALS = UsageTotals(
    model_calls=6,
    input_tokens=4010,
    output_tokens=401,
    cost_usd=0.5021,
    unpriced_calls=2,
    target_input_tokens=300,
    target_output_tokens=60,
)


def test_totals_add_trials_and_target_tokens_from_the_transcript() -> None:
    run = _run()
    assert run.usage_totals() == RUN_TOTALS
    quiet = run.scenarios[1].trials[0].usage_totals()
    assert (quiet.target_input_tokens, quiet.target_output_tokens) == (None, None)


def test_json_report_has_totals_per_run_scenario_and_trial_and_reads_back() -> None:
    text = render_json(_run())
    data = json.loads(text)
    assert data["usage_totals"] == RUN_TOTALS.model_dump()
    a = data["scenarios"][0]
    assert a["usage_totals"]["target_input_tokens"] == 300
    assert a["usage_totals"]["unpriced_calls"] == 2
    assert a["trials"][0]["usage"]["cost_usd"] == 0.0021
    assert a["trials"][0]["usage_totals"]["target_output_tokens"] == 50
    assert data["scenarios"][1]["trials"][0]["usage_totals"]["target_input_tokens"] is None
    assert load_json(text).usage_totals() == RUN_TOTALS  # derived keys are dropped on load


def test_markdown_has_a_usage_line_naming_unpriced_calls() -> None:
    text = render_markdown(_run())
    assert (
        "Usage: 6 model calls, 4,010 input + 401 output tokens, $0.50 + 2 unpriced calls"
        " (set prices in [tool.sparring.prices]) · target 300 input + 60 output tokens"
    ) in text


def test_junit_scenarios_carry_usage_properties() -> None:
    root = ET.fromstring(render_junit(_run()))
    props = {
        suite.get("name"): {p.get("name"): p.get("value") for p in suite.iter("property")}
        for suite in root.iter("testsuite")
    }
    assert props["a"]["model_calls"] == "5"
    assert props["a"]["cost_usd"] == "0.002100"
    assert props["a"]["unpriced_calls"] == "2"
    assert props["a"]["target_input_tokens"] == "300"
    assert props["b"]["target_input_tokens"] == ""  # unknown, not 0


def test_console_summary_has_the_usage_line() -> None:
    out = io.StringIO()
    print_summary(_run(), console=Console(file=out, force_terminal=False, width=200))
    assert "usage: 6 model calls, 4,010 input + 401 output tokens, $0.50 + 2" in out.getvalue()


def test_usage_text_cases() -> None:
    assert usage_text(UsageTotals()) is None
    assert usage_text(UsageTotals(model_calls=2, unpriced_calls=2)) == (
        "2 model calls, 0 input + 0 output tokens, cost unknown (2 unpriced calls: set "
        "prices in [tool.sparring.prices])"
    )
    assert usage_text(
        UsageTotals(model_calls=1, input_tokens=5, output_tokens=1, cost_usd=0.00042)
    ) == ("1 model call, 5 input + 1 output tokens, $0.0004")
    assert usage_text(UsageTotals(model_calls=1)) == "1 model call, 0 input + 0 output tokens, $0"
    assert usage_text(UsageTotals(target_output_tokens=7)) == "target 0 input + 7 output tokens"
