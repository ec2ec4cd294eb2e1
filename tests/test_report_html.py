"""The HTML report (`--html`): one offline page, transcripts beside their verdicts.

Rendered from a real run (tests/support/report_run.py) and from hand-built results; what
the page does in a browser is tested in test_report_html_browser.py.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from sparring.reports.evidence import Span, evidence_spans, marked_pieces
from sparring.reports.html import render_html, write_html
from sparring.results import RunResult, ScenarioResult, SubtestResult, TrialResult, Verdict
from sparring.transcript import Message, Transcript
from tests.support.report_run import CARD_EVIDENCE, XSS_REPLY, report_run


@cache
def page() -> str:
    return render_html(report_run())


def _verdict(id: str, status: str = "met", **extra: object) -> Verdict:
    return Verdict(id=id, kind="criterion", description=f"about {id}", status=status, **extra)  # type: ignore[arg-type]


def _chat(*texts: str) -> list[Message]:
    roles = ["user", "agent"] * len(texts)
    return [Message(role=r, content=t) for r, t in zip(roles, texts, strict=False)]  # type: ignore[arg-type]


def test_the_page_is_self_contained_and_runs_only_its_own_script() -> None:
    html = page()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html
    scripts = re.findall(r"<script>(.*?)</script>", html, re.S)
    assert len(scripts) == 1
    digest = base64.b64encode(hashlib.sha256(scripts[0].encode()).digest()).decode()
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "default-src 'none'" in policy.group(1)


def test_agent_text_is_escaped_so_markup_in_a_reply_never_runs() -> None:
    html = page()
    assert html.count("<script") == 1  # the page's own
    assert "<img" not in html
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;&#34;&gt;&lt;img src=x" in html
    assert XSS_REPLY not in html


def test_summary_gives_counts_pass_rates_with_wilson_intervals_and_cost() -> None:
    html = page()
    assert "exit code 1</strong>: at least one scenario failed" in html
    assert ">1 failed</span>" in html and ">1 error</span>" in html
    assert ">1 passed</span>" in html
    assert "2 of 4 trials passed · 95% CI 15–85%" in html  # errors count as not passed
    assert "1 of 2 passed, needs 2 · 50% (95% CI 9–91%)" in html
    assert "0 of 1 passed, needs 1 · 0% (95% CI 0–79%)" in html
    assert '<div class="card-value">$0</div>' in html
    assert "5 model calls" in html
    assert "simulated user scripted:judge, temperature 0.7" in html


def test_failures_come_first_scenarios_and_trials() -> None:
    html = page()
    order = re.findall(r'<details class="scenario st-(\w+)"', html)
    assert order == ["failed", "error", "passed"]
    refund = html.split('data-status="failed"', 1)[1].split('<details class="scenario', 1)[0]
    assert re.findall(r"Trial (\d) of 2", refund) == ["2", "1"]
    assert '<details class="scenario st-failed" open' in html  # failures shown open
    assert '<details class="scenario st-passed" data-status' in html


def test_the_transcript_labels_speakers_and_shows_tools_latency_and_judge_notes() -> None:
    html = page()
    assert '<span class="who">simulated user</span>' in html
    assert '<span class="who">user</span>' in html  # scripted turns are not simulated
    assert '<span class="who">agent</span>' in html
    assert "tool call <code>lookup_order</code>" in html
    assert "&#34;order_id&#34;: &#34;10234&#34;" in html  # arguments, indented JSON
    assert "&#34;eta_days&#34;: 2" in html  # the tool's result
    assert '<span class="latency" title="reply time">1,210 ms</span>' in html
    assert "Reply 2 ignores the customer." in html and "score 0.20" in html
    assert "could not connect to http://127.0.0.1:9/chat" in html  # the trial's error


def test_clickable_verdicts_sit_beside_the_turns_they_cite_and_their_evidence_is_marked() -> None:
    html = page()
    card = re.search(
        r'<div class="verdict st-not_met" role="button" tabindex="0"\s+'
        r'data-verdict="(v\d+)" data-turns="2"[^>]*>\s*<div class="v-head">.*?'
        r'<code class="v-id">r1</code>',
        html,
        re.S,
    )
    assert card is not None
    key = card.group(1)
    assert f'<mark class="ev" data-v="{key}">{CARD_EVIDENCE}</mark>' in html
    turn_two = html.split('<div class="turn" data-turn="2">')[1].split('<div class="turn"')[0]
    assert f'data-verdict="{key}"' in turn_two  # beside turn 2, compact
    assert "verdict st-not_met compact" in turn_two


def test_a_quote_that_is_not_in_the_transcript_is_said_to_be_missing() -> None:
    trial = TrialResult(
        scenario_id="s",
        trial=1,
        status="failed",
        end_reason="max_turns",
        transcript=Transcript(messages=tuple(_chat("Hi", "Hello there"))),
        verdicts=[_verdict("c1", "not_met", evidence=("words nobody said",), turns=(1,))],
    )
    html = render_html(_run(_scenario(trial)))
    assert "This quote is not in the transcript." in html
    assert '<mark class="ev"' not in html


def test_sub_tests_get_their_own_transcript_and_verdicts() -> None:
    sub = SubtestResult(
        id="unfold1.step2",
        name="asks for the order",
        status="failed",
        transcript=Transcript(messages=tuple(_chat("Hi", "Which order?", "10234", "Gone"))),
        history="replayed",
    )
    verdict = _verdict("unfold1.step2.should1", "not_met", evidence=("Gone",), turns=(2,))
    trial = TrialResult(
        scenario_id="py",
        trial=1,
        status="failed",
        end_reason="script_done",
        verdicts=[verdict],
        subtests=[sub],
    )
    html = render_html(_run(_scenario(trial, kind="python")))
    section = html.split('<section class="subtest">', 1)[1]
    assert "sub-test <code>unfold1.step2</code> asks for the order" in section
    assert "history replayed" in section
    assert re.search(r'<mark class="ev" data-v="v\d+">Gone</mark>', section)


def test_an_empty_run_and_a_scenario_that_never_ran_render() -> None:
    assert "0 of 0 scenarios" in render_html(_run())
    html = render_html(_run(ScenarioResult(scenario_id="n", name="n", kind="x", threshold=1)))
    assert "No trial ran." in html


def test_gates_and_an_overridden_exit_status_are_shown(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "r.html"
    write_html(
        report_run(), path, exit_status=(0, "gates passed"), gate_lines=["group smoke: 2/2 <ok>"]
    )
    html = path.read_text(encoding="utf-8")
    assert "exit code 0</strong>: gates passed" in html
    assert "group smoke: 2/2 &lt;ok&gt;" in html


def test_evidence_is_found_despite_case_and_spacing_and_inside_a_checks_quote() -> None:
    messages = _chat("Where is it?", "It   SHIPPED\nyesterday.")
    loose = _verdict("c1", evidence=("it shipped yesterday",), turns=(1,))
    assert evidence_spans(loose, messages) == [Span(1, 0, 22)]
    check = _verdict("k1", evidence=('turn 1: "SHIPPED\nyesterday"',), turn=1)
    assert evidence_spans(check, messages) == [Span(1, 5, 22)]
    assert evidence_spans(_verdict("c2", evidence=("a",)), messages) == []  # too short


def test_evidence_is_looked_for_in_the_cited_turns_first() -> None:
    messages = _chat("refund", "No refund.", "refund please", "Refund issued.")
    cited = _verdict("c1", evidence=("refund",), turns=(2,))
    assert evidence_spans(cited, messages) == [Span(2, 0, 6)]  # not turn 1's "refund"
    uncited = _verdict("c1", evidence=("Refund issued",), turns=(1,))
    assert evidence_spans(uncited, messages) == [Span(3, 0, 13)]


def test_overlapping_evidence_of_two_verdicts_is_cut_into_pieces() -> None:
    pieces = marked_pieces("abcdefgh", [(1, 5, "v1"), (3, 7, "v2")])
    assert pieces == [("a", []), ("bc", ["v1"]), ("de", ["v1", "v2"]), ("fg", ["v2"]), ("h", [])]
    assert marked_pieces("", []) == []


def test_sparring_run_writes_the_html_report_and_the_exports(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(
        "target: {type: callable, ref: 'sparring.demo.agent:chat'}\n"
        "scenarios:\n  - id: asks-number\n    turns:\n"
        "      - user: Hi, where is my order?\n        checks: [{contains: order number}]\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    args = ["--html", "out/r.html", "--xlsx", "out/r.xlsx", "--csv", "out/r.zip"]
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "suite.yaml", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    for label, name in (("HTML", "r.html"), ("xlsx", "r.xlsx"), ("CSV zip", "r.zip")):
        assert f"{label} report: out/{name}" in done.stderr
        assert (tmp_path / "out" / name).stat().st_size > 0
    assert "asks-number" in (tmp_path / "out" / "r.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("option", ["--html", "--xlsx", "--csv"])
def test_the_page_and_the_exports_cannot_go_to_standard_output(option: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "nothing.yaml", option, "-"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "cannot go to standard output (`-`)" in done.stderr


def _scenario(*trials: TrialResult, kind: str = "simulated") -> ScenarioResult:
    return ScenarioResult(
        scenario_id=trials[0].scenario_id,
        name=trials[0].scenario_id,
        kind=kind,
        threshold=1.0,
        trials=list(trials),
    )


def _run(*scenarios: ScenarioResult) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r1",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
    )
