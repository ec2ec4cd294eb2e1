"""Markdown report, fit for a pull-request comment (GitHub-flavoured).

Layout: a title with the run's date; one line of run facts, one of usage (model calls,
tokens, cost; the target's tokens) and the exit code; the group gate summary when the
caller gives one (pytest plugin); a summary
table (scenario, kind, trials, passed, pass rate, threshold, status with ✅ ❌ ⚠️ ⏭); then per
scenario and per trial: status, end reason, every verdict with its reason (failures first),
errors, and the transcript in a collapsed `<details>` block (turns numbered, agent replies
with latency in ms and the judge's note on the reply). Passed trials get one line; the
report is cut at `MAX_REPORT_CHARS` so it fits a GitHub comment.

Text from agents and judges is data: control characters are removed, `<` is escaped so a
reply cannot open HTML, and `|` is escaped inside tables.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sparring.reports import (
    EXIT_CODE_MEANING,
    REPLAYED_HISTORY,
    one_line,
    percent,
    plural,
    shown_pass_rate,
    shown_status,
    strip_control,
    trial_size,
    usage_text,
    why_not_run,
)
from sparring.reports import write_report_text as _write
from sparring.results import (
    ReplyNote,
    RunResult,
    ScenarioResult,
    TrialResult,
    Verdict,
    pass_hat_k,
    undecided_text,
)
from sparring.transcript import Message, Transcript

STATUS_ICON: dict[str, str] = {
    "passed": "✅",
    "met": "✅",
    "failed": "❌",
    "not_met": "❌",
    "error": "⚠️",
    "timed_out": "⚠️",
    "skipped": "⏭",
    "not_run": "⏭",
    "interrupted": "⚠️",
    "invalid": "⛔",
}
_VERDICT_ORDER = {"not_met": 0, "error": 1, "met": 2, "skipped": 3}
_STATUS_TEXT = {"not_met": "not met", "timed_out": "timed out", "not_run": "not run"}


def render_markdown(
    result: RunResult,
    *,
    max_message_chars: int = 4000,
    exit_status: tuple[int, str] | None = None,
    gate_lines: Sequence[str] = (),
) -> str:
    """The Markdown report as text.

    Args:
        result: The run to render.
        max_message_chars: Longer transcript messages are cut there, with a marker saying
            how much was left out (PR comments are limited to 65,536 characters).
        exit_status: `(code, meaning)` to state instead of `result.exit_code`, when the run
            is part of a larger session that decides the exit code (the pytest plugin).
        gate_lines: The group gate summary (`sparring.gates.GateReport.lines()`), shown
            verbatim under "Group gates" after the header; nothing when empty.
    """
    head = "\n".join([*_header(result, exit_status), *_gates(gate_lines), *_summary_table(result)])
    details = "\n".join(
        line
        for scenario in result.scenarios
        for line in _scenario_section(
            scenario, why_not_run(result), max_message_chars=max_message_chars
        )
    )
    text = f"{head}\n{details}".rstrip() + "\n"
    return text if len(text) <= MAX_REPORT_CHARS else _cut(text)


def _cut(text: str) -> str:
    """`text` cut at a line boundary to fit `MAX_REPORT_CHARS`, collapsed blocks closed, and
    a note saying where the rest is."""
    room = MAX_REPORT_CHARS - len(_CUT_NOTE) - 200  # the closing tags and blank lines
    kept = text[:room].rsplit("\n", 1)[0]
    unclosed = kept.count("<details>") - kept.count("</details>")
    return kept + "\n" + "</details>\n" * unclosed + "\n" + _CUT_NOTE + "\n"


MAX_REPORT_CHARS = 60_000
"""GitHub comments hold 65,536 characters; longer reports are cut, details last."""
_CUT_NOTE = (
    "_The report was cut here to fit a pull-request comment; every transcript and "
    "verdict is in the JSON report (`--output`)._"
)


def write_markdown(
    result: RunResult,
    path: Path,
    *,
    max_message_chars: int = 4000,
    exit_status: tuple[int, str] | None = None,
    gate_lines: Sequence[str] = (),
) -> None:
    """Write `render_markdown(result, ...)` to `path` (UTF-8), creating parent folders.

    Raises:
        OSError: the file cannot be written.
    """
    _write(
        path,
        render_markdown(
            result,
            max_message_chars=max_message_chars,
            exit_status=exit_status,
            gate_lines=gate_lines,
        ),
    )


def _header(result: RunResult, exit_status: tuple[int, str] | None) -> list[str]:
    trials = sum(len(s.trials) for s in result.scenarios)
    facts = [
        f"run `{_inline(result.run_id)}`",
        plural(len(result.scenarios), "scenario"),
        plural(trials, "trial"),
        f"{result.duration_ms / 1000:.1f} s",
    ]
    if result.user_model:
        facts.append(f"user model `{_inline(result.user_model)}`")
    if result.judge_model:
        facts.append(f"judge model `{_inline(result.judge_model)}`")
    usage = usage_text(result.usage_totals())
    code, meaning = exit_status or (
        result.exit_code,
        EXIT_CODE_MEANING.get(result.exit_code, "unknown"),
    )
    icon = "✅" if code == 0 else "❌" if code == 1 else "⚠️"
    return [
        f"# sparring run, {_date(result.started_at)}",
        "",
        " · ".join(facts),
        "",
        *([f"Usage: {usage}", ""] if usage else []),
        f"{icon} **exit code {code}**: {_text(meaning)}",
        "",
        *[
            line
            for error in result.hook_errors
            for line in (f"⚠️ **hook error**: {_text(error)}", "")
        ],
    ]


def _gates(lines: Sequence[str]) -> list[str]:
    """The group gate summary as on the terminal, in a code block."""
    if not lines:
        return []
    text = [strip_control(line) for line in lines]
    longest = max((len(run) for line in text for run in re.findall(r"`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return ["## Group gates", "", fence + "text", *text, fence, ""]


def _date(started_at: str) -> str:
    try:
        when = datetime.fromisoformat(started_at)
    except ValueError:
        return _text(started_at)
    offset = when.utcoffset()
    zone = "" if offset is None else " UTC" if not offset else when.strftime(" %z")
    return when.strftime("%Y-%m-%d %H:%M") + zone


def _summary_table(result: RunResult) -> list[str]:
    rows = [
        "| Scenario | Kind | Trials | Passed | Pass rate | Threshold | Status |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for s in result.scenarios:
        passed = s.passed_trials
        cells = [
            _scenario_label(s),
            s.kind,
            str(len(s.trials)),
            str(passed),
            shown_pass_rate(s),
            percent(s.threshold),
            _status(shown_status(s)),
        ]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [*rows, ""]


def _scenario_label(s: ScenarioResult) -> str:
    return s.name if s.name == s.scenario_id else f"{s.name} ({s.scenario_id})"


def _scenario_section(s: ScenarioResult, why_not_run: str, *, max_message_chars: int) -> list[str]:
    """The scenario's heading, facts and trials; `why_not_run` explains planned trials that
    never started."""
    passed = s.passed_trials
    facts = [
        f"`{_inline(s.scenario_id)}`",
        s.kind,
        f"pass rate {shown_pass_rate(s)} ({passed}/{len(s.counted)})",
        f"threshold {percent(s.threshold)}",
    ]
    if s.invalid_trials:  # apart: not the agent's failure, not in the pass rate
        facts.append(f"{plural(s.invalid_trials, 'invalid trial')} (the simulated user failed)")
    if s.source:
        facts.append(f"source `{_inline(s.source)}`")
    hat = pass_hat_k(passed, len(s.counted))
    if len(hat) > 1:
        facts.append("pass^k " + ", ".join(f"k={k}: {v:.2f}" for k, v in hat.items()))
    status = shown_status(s)
    out = [
        f"## {STATUS_ICON[status]} {_text(one_line(s.name, 200))}"
        + (" (interrupted)" if status == "interrupted" else ""),
        "",
        " · ".join(facts),
        "",
    ]
    if not s.trials:
        out += [f"_No trial ran: {why_not_run}._" if s.missing_trials else "_No trial ran._", ""]
    elif s.missing_trials:
        out += [f"_{plural(s.missing_trials, 'planned trial')} did not run: {why_not_run}._", ""]
    for trial in s.trials:
        out.extend(_trial_section(trial, of=len(s.trials), max_message_chars=max_message_chars))
    return out


def _trial_section(trial: TrialResult, *, of: int, max_message_chars: int) -> list[str]:
    facts = [
        f"end reason `{trial.end_reason}`",
        trial_size(trial),
        f"{trial.duration_ms / 1000:.1f} s",
    ]
    if trial.status == "passed":  # details are for what went wrong; keep the rest short
        return [
            f"- Trial {trial.trial} of {of}: {_status(trial.status)} · " + " · ".join(facts),
            "",
        ]
    out = [f"### Trial {trial.trial} of {of}: {_status(trial.status)}", "", " · ".join(facts), ""]
    if trial.error and trial.error != undecided_text(trial.verdicts):  # else: its verdicts
        out += [f"> **{_status(trial.status)}**: {_text(one_line(trial.error, 2000))}", ""]
    verdicts = sorted(
        (
            v
            for v in trial.verdicts  # a skip the trial error explains: once
            if not (v.status == "skipped" and v.reason == trial.error)
        ),
        key=lambda v: _VERDICT_ORDER[v.status],
    )
    out.extend(line for v in verdicts for line in _verdict_lines(v))
    if verdicts:
        out.append("")
    if trial.transcript.messages:
        out.extend(
            _transcript(
                trial.transcript,
                trial.reply_notes,
                summary=f"Transcript ({len(trial.transcript.messages)} messages)",
                max_message_chars=max_message_chars,
            )
        )
    for sub in trial.subtests:  # in the order they were written
        summary = f"Sub-test {_text(sub.id)}: {_status(sub.status)} · "
        if sub.history == "replayed":
            summary += f"{_text(REPLAYED_HISTORY)} · "
        summary += _text(one_line(sub.name, 300))
        if sub.error:
            summary += f" · {_text(one_line(sub.error, 500))}"
        out.extend(
            _transcript(sub.transcript, [], summary=summary, max_message_chars=max_message_chars)
        )
    return out


def _verdict_lines(v: Verdict) -> list[str]:
    at = f" (turn {v.turn})" if v.turn is not None else ""
    head = (
        f"- {STATUS_ICON[v.status]} **{_text(v.id)}** {v.kind}{at}: "
        f"{_text(one_line(v.description, 300))}"
    )
    if v.reason:
        head += f": {_text(one_line(v.reason, 2000))}"
    if v.turns:
        head += " (turns " + ", ".join(str(t) for t in v.turns) + ")"
    return [head, *(f"  > {_text(one_line(quote, 500))}" for quote in v.evidence)]


def _transcript(
    transcript: Transcript, reply_notes: list[ReplyNote], *, summary: str, max_message_chars: int
) -> list[str]:
    notes: dict[int, ReplyNote] = {n.turn: n for n in reply_notes}
    out = ["<details>", f"<summary>{summary}</summary>", ""]
    turn = 0
    for message in transcript.messages:
        if message.role == "user":
            turn += 1
        out.extend(_message(message, turn, max_message_chars=max_message_chars))
        note = notes.pop(turn, None) if message.role == "agent" else None
        if note is not None:
            score = f" (score {note.score:.2f})" if note.score is not None else ""
            out += [f"_Judge: {_text(one_line(note.note, 1000))}{score}_", ""]
    return [*out, "</details>", ""]


def _message(message: Message, turn: int, *, max_message_chars: int) -> list[str]:
    head = f"**{turn} · {message.role.capitalize()}**"
    if message.latency_ms is not None:
        head += f" · {message.latency_ms:.0f} ms"
    content = message.content
    if len(content) > max_message_chars:
        left = len(content) - max_message_chars
        content = content[:max_message_chars] + f"\n… ({left} more characters)"
    body = _text(content) if content.strip() else "(empty reply)"
    out = [head, "", *(f"> {line}".rstrip() for line in body.splitlines()), ""]
    for call in message.tool_calls:
        out += [f"tool call {_code(call.name + '(' + one_line(call.arguments_raw, 500) + ')')}", ""]
    return out


def _status(status: str) -> str:
    return f"{STATUS_ICON.get(status, '')} {_STATUS_TEXT.get(status, status)}".strip()


def _text(text: str) -> str:
    """Free text in Markdown: controls removed, `<` escaped (no HTML from agents)."""
    return strip_control(text).replace("&", "&amp;").replace("<", "&lt;")


def _cell(text: str) -> str:
    return _text(one_line(text, 300)).replace("|", "\\|")


def _inline(text: str) -> str:
    return one_line(text, 200).replace("`", "'")


def _code(text: str) -> str:
    fence = "``" if "`" in text else "`"
    return f"{fence} {text} {fence}" if fence == "``" else f"`{text}`"
