"""A voice reply's audio length and time to first audio are shown beside its latency in
the Markdown and HTML reports."""

from __future__ import annotations

from sparring.reports import reply_timing
from sparring.reports.html import render_html
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult
from sparring.transcript import Message


def run_with(reply: Message) -> RunResult:
    trial = {
        "scenario_id": "voice",
        "trial": 1,
        "status": "failed",  # the Markdown report shows the transcripts of failed trials
        "end_reason": "script_done",
        "transcript": {
            "messages": [{"role": "user", "content": "hi"}, reply.model_dump(mode="json")]
        },
    }
    return RunResult.model_validate(
        {
            "run_id": "r",
            "sparring_version": "0",
            "started_at": "2026-12-01T00:00:00Z",
            "scenarios": [
                {"scenario_id": "voice", "name": "voice", "kind": "scripted", "threshold": 1,
                 "trials": [trial]}
            ],
        }
    )  # fmt: skip


def test_voice_reply_times_are_shown_in_markdown_and_html() -> None:
    spoken = Message(
        role="agent", content="Hello", latency_ms=820, audio_ms=2400, first_audio_ms=310
    )
    assert reply_timing(spoken) == "820 ms · audio 2,400 ms · first audio 310 ms"
    result = run_with(spoken)
    assert "820 ms · audio 2,400 ms · first audio 310 ms" in render_markdown(result)
    assert "820 ms · audio 2,400 ms · first audio 310 ms" in render_html(result)


def test_a_text_reply_shows_its_latency_only() -> None:
    assert reply_timing(Message(role="agent", content="x", latency_ms=1234.4)) == "1,234 ms"
    assert reply_timing(Message(role="user", content="x")) is None
