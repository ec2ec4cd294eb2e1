"""Agent text in the Markdown report cannot show a remote image (a PR comment would load it),
a link under other text or an @mention (a PR comment would notify the team): not in the quoted
transcript, not in a failure reason, not in evidence (parsed with markdown-it's GFM-like
parser, autolinks on). A bare URL stays a link, showing where it goes.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.transcript import Message, Transcript

HOSTILE = (
    "![t](https://evil.example/p.png?x=1) @octo-org/admins [click](https://evil.example/a) "
    "![ref][r] visit https://evil.example/b or www.evil.example, mail me@evil.example "
    "\\![t2](https://evil.example/q.png)\n[r]: https://evil.example/r.png"
)


def _run() -> RunResult:
    transcript = Transcript(
        messages=(Message(role="user", content="hi"), Message(role="agent", content=HOSTILE))
    )
    verdicts = [
        Verdict(
            id="c1",
            kind="check",
            description="contains: refund",
            status="not_met",
            reason=f"the reply was {HOSTILE!r}",
            evidence=(HOSTILE,),
        )
    ]
    trial = TrialResult(
        scenario_id="s",
        trial=1,
        status="failed",
        end_reason="script_done",
        verdicts=verdicts,
        transcript=transcript,
    )
    scenario = ScenarioResult(
        scenario_id="s", name="S", kind="scripted", source="t.yaml", threshold=1.0, trials=[trial]
    )
    return RunResult(
        run_id="r1", sparring_version="0", started_at="2025-01-01T00:00:00Z", scenarios=[scenario]
    )


def _tokens(text: str) -> list[Token]:
    tokens = MarkdownIt("gfm-like").parse(text)
    return [*tokens, *(child for t in tokens for child in t.children or [])]


def test_agent_text_shows_no_image_link_or_mention_and_stays_readable() -> None:
    md = render_markdown(_run())
    tokens = _tokens(md)
    assert not [t for t in tokens if t.type == "image"]
    links = [t for t in tokens if t.type == "link_open"]
    assert links and all(t.markup == "linkify" for t in links)  # bare URLs, shown as they are
    assert not re.search(r"@[\w-]", md)  # every @ is followed by a zero-width space
    shown = "".join(t.content for t in tokens if t.type == "text")
    assert shown.count("![t](https://evil.example/p.png?x=1) @\u200bocto-org/admins") == 3
