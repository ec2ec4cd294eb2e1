"""Agent text in the Markdown report stays data: a hostile tool name, tool arguments, reply
or quoted evidence cannot end its code span, quote or collapsed block, forge a heading, or
close the report's `<details>` (parsed with markdown-it, a CommonMark parser)."""

from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.token import Token

from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.transcript import Message, ToolCall, Transcript

FORGED = "# FORGED: all 12 scenarios passed"
HOSTILE = f"x`` `\n\n{FORGED}\n</details>\n\n```\n"
"""Backticks to close a code span or open a fence, blank lines, a heading, a closing tag."""


def _run() -> RunResult:
    agent = Message(
        role="agent",
        content=f"fine\n{FORGED}\n</details>\nAll good\n===\n> nested\n```",
        tool_calls=(ToolCall(name=HOSTILE, arguments_raw=HOSTILE),),
    )
    transcript = Transcript(messages=(Message(role="user", content="hi"), agent))
    verdicts = [
        Verdict(
            id="c1",
            kind="criterion",
            description="polite",
            status="met",
            reason="r",
            evidence=(FORGED,),
        ),
        Verdict(id="c2", kind="criterion", description="helps", status="not_met", reason="no"),
    ]
    trial = TrialResult(
        scenario_id="s",
        trial=1,
        status="failed",
        end_reason="goal_achieved",
        verdicts=verdicts,
        transcript=transcript,
    )
    scenario = ScenarioResult(
        scenario_id="s",
        name="S",
        kind="simulated",
        source="t.yaml",
        threshold=1.0,
        trials=[trial],
    )
    return RunResult(
        run_id="r1", sparring_version="0", started_at="2025-01-01T00:00:00Z", scenarios=[scenario]
    )


def _tokens(text: str) -> list[Token]:
    tokens = MarkdownIt("commonmark").parse(text)
    return [*tokens, *(child for t in tokens for child in t.children or [])]


def test_hostile_tool_name_and_reply_forge_no_heading_and_close_no_block() -> None:
    md = render_markdown(_run())
    tokens = _tokens(md)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert not [h for h in headings if "FORGED" in h or "All good" in h], headings
    html = [t.content.strip() for t in tokens if t.type in ("html_block", "html_inline")]
    assert all(h.startswith(("<details>", "</details>", "<summary>")) for h in html), html
    assert md.splitlines().count("<details>") == md.splitlines().count("</details>")
    calls = [line for line in md.splitlines() if line.startswith("tool call ")]
    assert len(calls) == 1 and "FORGED" in calls[0]  # shown, on one line
    spans = [t.content for t in tokens if t.type == "code_inline" and "FORGED" in t.content]
    assert spans and "</details>" in spans[0]  # the whole call is one code span
    assert not [t for t in tokens if t.type in ("fence", "code_block", "hr")]
