"""Markdown report, fit for a pull-request comment (GitHub-flavoured).

Layout: a title with the run's date; one line of run facts, the models' settings, usage
(model calls, tokens, cost; the target's tokens) and the exit code with its causes; the group
gate summary when there are gates; a summary table (scenario, kind, trials, passed, pass
rate, threshold, status with ✅ ❌ ⚠️ ⏭ ⛔, tags); then a section per scenario, failures first:
its facts (what passed against what the threshold needs, source, tags, category, topic,
behavior, pass^k explained), its description, what went wrong with identical problems of
several trials listed once (`trials 1-3: ...`), and per trial the met verdicts and the
transcript in a collapsed `<details>` block (turns numbered, agent replies with latency in ms
and the judge's note on the reply). Passed trials get one line. A report longer than
`MAX_REPORT_CHARS` loses the sections of passed scenarios first, then of skipped ones, and
only then is cut, so it fits a GitHub comment.

Text from agents and judges is data: control characters are removed, `<` is escaped so a
reply cannot open HTML, `](`, `][`, `]:` and `![` are escaped (and a backslash that could
undo that) and a zero-width space follows each `@`, so a reply cannot show an image (which
a PR comment would load), a link under other text or an @mention (which would notify a
team), `|` is escaped inside tables, a line of a reply or a quote cannot start a Markdown
block (`_line`), and a tool call is one inline code span with a fence longer than any run of
backticks in it (`_code`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from sparring.redteam import render_rates, summarize
from sparring.reports import (
    REPLAYED_HISTORY,
    not_judged,
    one_line,
    percent,
    plural,
    reply_timing,
    scenario_not_judged,
    shown_pass_rate,
    shown_status,
    strip_control,
    subtest_verdicts,
    trial_not_judged,
    trial_size,
    usage_text,
    why_not_run,
)
from sparring.reports import write_report_text as _write
from sparring.reports.insights import (
    EXPLANATION_LABEL,
    gate_text,
    ordered,
    override_text,
    score_text,
    trial_facts,
    value_text,
)
from sparring.reports.outcome import (
    NOTHING_TO_JUDGE,
    PASS_HAT_K,
    Problem,
    cited_turns,
    exit_meaning,
    model_text,
    overridden_mark,
    passed_text,
    problems,
    run_rate_text,
    trial_ranges,
    verdict_what,
)
from sparring.reports.rates import rates_across_trials, run_counts, with_interval
from sparring.results import ReplyNote, RunResult, ScenarioResult, TrialResult, Verdict, pass_hat_k
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
    "undecided": "❔",
    "done": "☑️",
}
UNSTABLE_JUDGE = "unstable judge"
"""Leads the reason of a verdict whose repeated judge answers differed (`sparring rejudge
--repeat K`): the judge, not only the agent, is noisy on that item."""
_STATUS_TEXT = {"not_met": "not met", "timed_out": "timed out", "not_run": "not run"}


def _red_team(result: RunResult) -> list[str]:
    """Attack success per plugin and strategy, for a run with red-team attacks."""
    attacks = summarize(result)
    if not attacks.plugins:
        return []
    return ["", "## Red team", "", *render_rates(attacks), "", attacks.outcome()]


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
        exit_status: `(code, meaning)` to state instead of `result.exit_code`, when
            something beyond the run decides the exit code (group gates, the pytest plugin).
        gate_lines: The group gate summary (`sparring.gates.GateReport.lines()`), shown
            verbatim under "Group gates" after the header; nothing when empty.
    """
    scenarios = sorted(result.scenarios, key=lambda s: _RANK.get(shown_status(s), 0))
    head = "\n".join(
        [
            *_header(result, exit_status),
            *_gates(gate_lines),
            *_summary_table(scenarios),
            *_red_team(result),
        ]
    )
    sections = [
        (
            _RANK.get(shown_status(s), 0),
            "\n".join(_scenario_section(s, why_not_run(result), max_chars=max_message_chars)),
        )
        for s in scenarios
    ]
    return _fit(head, sections)


_RANK = {"skipped": 5, "passed": 6}
"""Failures first: scenarios that failed, errored, were invalid, interrupted or not run
(rank 0, in file order), then skipped ones, then passed ones."""


def _fit(head: str, sections: list[tuple[int, str]]) -> str:
    """`head` and the scenario sections (with their `_RANK`), fit into `MAX_REPORT_CHARS`:
    when they do not fit, the sections of passed scenarios are left out first, then those of
    skipped ones (each with a note), and only then is the text cut (`_cut`)."""
    notes: list[str] = []
    for rank, what in ((_RANK["passed"], "passed"), (_RANK["skipped"], "skipped")):
        text = _joined(head, [body for _, body in sections], notes)
        if len(text) <= MAX_REPORT_CHARS:
            return text
        left_out = sum(r == rank for r, _ in sections)
        sections = [(r, body) for r, body in sections if r != rank]
        if left_out:
            notes.append(
                f"_The details of {plural(left_out, f'{what} scenario')} were left out to fit "
                "a pull-request comment; they are in the JSON report (`--output`)._\n"
            )
    text = _joined(head, [body for _, body in sections], notes)
    return text if len(text) <= MAX_REPORT_CHARS else _cut(text)


def _joined(head: str, bodies: list[str], notes: list[str]) -> str:
    return "\n".join([head, *bodies, *notes]).rstrip() + "\n"


def _cut(text: str) -> str:
    """`text` cut at a line boundary to fit `MAX_REPORT_CHARS`, collapsed blocks closed, and
    a note saying where the rest is."""
    room = MAX_REPORT_CHARS - len(_CUT_NOTE) - 200  # the closing tags and blank lines
    kept = text[:room].rsplit("\n", 1)[0]
    lines = kept.splitlines()  # the report's own tags stand alone on their lines
    unclosed = lines.count("<details>") - lines.count("</details>")
    return kept + "\n" + "</details>\n" * unclosed + "\n" + _CUT_NOTE + "\n"


MAX_REPORT_CHARS = 60_000
"""GitHub comments hold 65,536 characters; longer reports lose the details of passed, then
skipped scenarios, then are cut."""
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


def _run_rate(result: RunResult) -> str:
    """`7/10 passed, 70% [40%, 89%]`; `- (nothing to judge)` when the only trials that ran
    were `done`."""
    counted = run_counts(result)[1]
    done = any(t.status == "done" for s in result.scenarios for t in s.trials)
    return f"- ({NOTHING_TO_JUDGE})" if done and not counted else run_rate_text(result)


def _header(result: RunResult, exit_status: tuple[int, str] | None) -> list[str]:
    trials = sum(len(s.trials) for s in result.scenarios)
    facts = [
        f"run `{_inline(result.run_id)}`",
        plural(len(result.scenarios), "scenario"),
        plural(trials, "trial"),
        f"pass rate {_run_rate(result)}",
        f"{result.duration_ms / 1000:.1f} s",
    ]
    if not result.models:  # a report without the models' settings names them at least
        facts += [
            f"{label} model `{_inline(name)}`"
            for label, name in (("user", result.user_model), ("judge", result.judge_model))
            if name
        ]
    models = " · ".join(model_text(m) for m in result.models)
    usage = usage_text(result.usage_totals())
    code, meaning = exit_status or (result.exit_code, exit_meaning(result))
    icon = "✅" if code == 0 else "❌" if code == 1 else "⚠️"
    return [
        f"# sparring run, {_date(result.started_at)}",
        "",
        " · ".join(facts),
        "",
        *([f"Models: {_text(models)}", ""] if models else []),
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


def _summary_table(scenarios: list[ScenarioResult]) -> list[str]:
    rows = [
        "| Scenario | Kind | Trials | Passed | Pass rate | Threshold | Status | Tags |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for s in scenarios:
        cells = [
            _scenario_label(s),
            s.kind,
            str(len(s.trials)),
            str(s.passed_trials),
            with_interval(shown_pass_rate(s), s),
            percent(s.threshold),
            _status(shown_status(s)) + scenario_not_judged(s) + overridden_mark(s.trials),
            ", ".join(s.tags),
        ]
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [*rows, ""]


def _scenario_label(s: ScenarioResult) -> str:
    return s.name if s.name == s.scenario_id else f"{s.name} ({s.scenario_id})"


def _scenario_section(s: ScenarioResult, why_not_run: str, *, max_chars: int) -> list[str]:
    """The scenario's heading, facts, description and problems (the same in several trials
    once), then its trials; `why_not_run` explains planned trials that never started."""
    status = shown_status(s)
    out = [
        f"## {STATUS_ICON[status]} {_text(one_line(s.name, 200))}"
        + (" (interrupted)" if status == "interrupted" else ""),
        "",
        " · ".join(_facts(s)),
        "",
    ]
    if s.description:
        out += [f"> {_text(one_line(s.description, 1000))}", ""]
    out += _criterion_table(s)
    listed = problems(s)
    out.extend(line for problem in listed for line in _problem_lines(problem))
    if listed:
        out.append("")
    if not s.trials:
        out += [f"_No trial ran: {why_not_run}._" if s.missing_trials else "_No trial ran._", ""]
    elif s.missing_trials:
        out += [f"_{plural(s.missing_trials, 'planned trial')} did not run: {why_not_run}._", ""]
    for trial in s.trials:
        out.extend(_trial_section(trial, of=len(s.trials), max_chars=max_chars))
    return out


def _facts(s: ScenarioResult) -> list[str]:
    """The scenario's facts line: id, kind, what passed against what the threshold needs,
    source, labels from its file, invalid trials, pass^k."""
    facts = [
        f"`{_inline(s.scenario_id)}`",
        s.kind,
        f"pass rate {with_interval(shown_pass_rate(s), s)} ({passed_text(s)})",
        f"threshold {percent(s.threshold)}",
    ]
    if s.invalid_trials:  # apart: not the agent's failure, not in the pass rate
        facts.append(f"{plural(s.invalid_trials, 'invalid trial')} (the simulated user failed)")
    if unstable := sorted(
        {v.id for t in s.trials for v in t.verdicts if v.reason.startswith(UNSTABLE_JUDGE + ":")}
    ):
        facts.append(f"{UNSTABLE_JUDGE}: " + ", ".join(f"`{_inline(i)}`" for i in unstable))
    if s.source:
        facts.append(f"source `{_inline(s.source)}`")
    if s.tags:
        facts.append("tags " + ", ".join(f"`{_inline(t)}`" for t in s.tags))
    labels = (("category", s.category), ("topic", s.topic), ("behavior", s.behavior))
    facts += [f"{name} `{_inline(value)}`" for name, value in labels if value]
    if (score := s.score) is not None:
        facts.append(f"score {score_text(score)}")
    hat = pass_hat_k(s.passed_trials, len(s.counted))
    if len(hat) > 1:
        facts.append(f"{PASS_HAT_K}: " + ", ".join(f"k={k}: {v:.2f}" for k, v in hat.items()))
    return facts


def _criterion_table(s: ScenarioResult) -> list[str]:
    """Each criterion, `should`, check and gating insight: met in how many of the trials
    that decided it, with the 95% interval (a flaky one shows); nothing for one trial."""
    rows = [
        f"| `{_inline(c.id)}` | {c.kind} | {_cell(one_line(c.description, 120))} | {c.text} |"
        for c in rates_across_trials(s)
    ]
    if not rows:
        return []
    return ["| Id | Kind | What | Met across trials |", "| --- | --- | --- | --- |", *rows, ""]


def _problem_lines(problem: Problem) -> list[str]:
    """`- trials 1-3: ❌ **c1** criterion: ...: reason` (the judge's quotes below), `- trial
    2: ⚠️ error: <the trial's error>` or `- trial 1: ⏭ skipped **s1**, **s2**: <why>`."""
    where = trial_ranges(problem.trials)
    if problem.verdict is not None:
        return _verdict_lines(problem.verdict, prefix=f"{where}: ")
    ids = ", ".join(f"**{_text(i)}**" for i in problem.skipped_ids)
    text = _text(one_line(problem.text or "skipped", 2000))
    return [f"- {where}: {_status(problem.status)}{' ' + ids if ids else ''}: {text}"]


def _trial_section(trial: TrialResult, *, of: int, max_chars: int) -> list[str]:
    """A passed trial in one line; any other trial with what its scenario's problem list
    does not show: its met verdicts, transcript and sub-tests (nothing if it has none)."""
    facts = [
        f"end reason `{trial.end_reason}`",
        trial_size(trial),
        f"{trial.duration_ms / 1000:.1f} s",
        *trial_facts(trial),
    ]
    if trial.status == "passed":  # details are for what went wrong; keep the rest short
        status = _status(trial.status) + trial_not_judged(trial) + overridden_mark([trial])
        fixed = [line for v in trial.verdicts if v.override for line in _verdict_lines(v)]
        return [
            f"- Trial {trial.trial} of {of}: {status} · " + " · ".join(facts),
            *[f"  {line}" for line in fixed],
            "",
            *_insight_table(trial),
        ]
    met = [line for v in trial.verdicts if v.status == "met" for line in _verdict_lines(v)]
    if not (met or trial.transcript.messages or trial.subtests or trial.insights):
        return []  # its problems, listed above, say it all
    out = [f"### Trial {trial.trial} of {of}: {_status(trial.status)}", "", " · ".join(facts), ""]
    if trial.explanation:
        out += [
            f"**{EXPLANATION_LABEL.capitalize()}:** {_text(one_line(trial.explanation, 2000))}",
            "",
        ]
    out += _insight_table(trial)
    out += [*met, ""] if met else []
    if trial.transcript.messages:
        out.extend(
            _transcript(
                trial.transcript,
                trial.reply_notes,
                summary=f"Transcript ({len(trial.transcript.messages)} messages)",
                max_message_chars=max_chars,
            )
        )
    for sub in trial.subtests:  # in the order they were written
        status = _status(sub.status) + not_judged(sub.status, subtest_verdicts(trial, sub))
        summary = f"Sub-test {_text(sub.id)}: {status} · "
        if sub.history == "replayed":
            summary += f"{_text(REPLAYED_HISTORY)} · "
        summary += _text(one_line(sub.name, 300))
        if sub.error:
            summary += f" · {_text(one_line(sub.error, 500))}"
        out.extend(_transcript(sub.transcript, [], summary=summary, max_message_chars=max_chars))
    return out


def _insight_table(trial: TrialResult) -> list[str]:
    """The trial's insights, the featured one first (⭐): value (and override), whether a
    gating one passed, reasoning, evidence; nothing without insights."""
    if not trial.insights:
        return []
    rows = [
        "| Insight | Value | Passed | Reasoning | Evidence |",
        "| --- | --- | --- | --- | --- |",
    ]
    for i in ordered(trial.insights):
        value = value_text(i) + (f" ({override_text(i.override)})" if i.override else "")
        quotes = "; ".join(f"“{q}”" for q in i.evidence)
        cells = [value, gate_text(i), i.reasoning, quotes]
        star = "⭐ " if i.featured else ""
        group = f" ({_cell(i.group)})" if i.group else ""
        rows.append(
            f"| {star}`{_inline(i.id)}`{group} | " + " | ".join(_cell(c) for c in cells) + " |"
        )
    return [*rows, ""]


def _verdict_lines(v: Verdict, *, prefix: str = "") -> list[str]:
    """`- <prefix>✅ **t1.check1** (turn 1) contains "x": reason`, quotes below (those the
    reason already holds, such as the reply a `not_regex` check found, only there)."""
    at = f" (turn {v.turn})" if v.turn is not None else ""
    head = f"- {prefix}{STATUS_ICON[v.status]} **{_text(v.id)}**{at} "
    head += _text(one_line(verdict_what(v), 300))
    reason = one_line(v.reason, 2000)
    if reason:
        head += f": {_text(reason)}"
    head += cited_turns(v)
    if v.override is not None:
        head += f" ({_text(one_line(override_text(v.override), 500))})"
    quotes = (one_line(quote, 500) for quote in v.evidence)
    return [head, *(f"  > {_line(_text(quote))}" for quote in quotes if quote not in reason)]


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
    if (timing := reply_timing(message)) is not None:
        head += f" · {timing}"
    content = message.content
    if len(content) > max_message_chars:
        left = len(content) - max_message_chars
        content = content[:max_message_chars] + f"\n… ({left} more characters)"
    body = _text(content) if content.strip() else "(empty reply)"
    out = [head, "", *(f"> {_line(line)}".rstrip() for line in body.splitlines()), ""]
    for call in message.tool_calls:
        out += [f"tool call {_code(call.name + '(' + call.arguments_raw + ')')}", ""]
    for f in message.files:
        out += [f"attached file {_code(f.name)} ({_text(f.mime_type)}, {f.size:,} bytes)", ""]
    return out


def _status(status: str) -> str:
    return f"{STATUS_ICON.get(status, '')} {_STATUS_TEXT.get(status, status)}".strip()


_MARKUP = re.compile(r"[&<@]|\\(?=[!-/:-@\[-`{-~])|\](?=[(\[:])|!(?=\[)")
_MARKUP_AS_TEXT = {"&": "&amp;", "<": "&lt;", "@": "@&#8203;"}


def _text(text: str) -> str:
    r"""Free text in Markdown: controls removed, `<` escaped (no HTML from agents), a `]`
    before `(`, `[` or `:`, a `!` before `[` and a `\` before punctuation escaped (no
    link, image or link reference definition; `[0%, 56%]` stays as it is), and a zero-width
    space after each `@` (no @mention or e-mail link). A bare URL stays a link: it shows
    where it goes, and a zero-width space in it would break it when copied."""
    return _MARKUP.sub(_as_text, strip_control(text))


def _as_text(match: re.Match[str]) -> str:
    found = match.group()
    return _MARKUP_AS_TEXT.get(found, "\\" + found)


def _cell(text: str) -> str:
    return _text(one_line(text, 300)).replace("|", "\\|")


def _inline(text: str) -> str:
    return one_line(text, 200).replace("`", "'")


_BLOCK = re.compile(r"[#>=`~|]|[*+_-](?:\s|$)|([*_-])(?:\1|\s)*$")
"""What starts a Markdown block (heading, quote, setext underline, fence, table; a list
item; a rule) at the beginning of a line; `**bold**` does not."""


def _line(text: str) -> str:
    r"""A line of agent text inside a quote: a leading block mark escaped (`\#`), so no
    line can become a heading, rule, fence or table of the report's own."""
    body = text.lstrip()
    if _BLOCK.match(body):
        return text[: len(text) - len(body)] + "\\" + body
    return text


def _code(text: str) -> str:
    """`text` on one line (at most 600 characters) as an inline code span whose fence is
    longer than any run of backticks in it: nothing in it can close the span early, and
    code spans show `<`, `#` and the rest literally."""
    flat = one_line(text, 600)
    longest = max((len(run) for run in re.findall(r"`+", flat)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {flat} {fence}" if longest else f"`{flat}`"  # spaces: a ` may end it
