"""HTML report: one self-contained page to read transcripts next to their verdicts.

Layout: the run's facts (models, exit code and why, failed hooks, group gates); summary
cards (scenarios by status, the trial pass rate with its 95% Wilson confidence interval,
cost, duration); filters (status, tag, category, text search); then one collapsible section
per scenario, failures first, and in it one per trial, failures first: the trial's verdicts
(failures first), then the transcript turn by turn, the simulated user and the agent
labelled, tool calls with their arguments and results, each reply's latency, and beside each
turn the judge's note and score on the reply and the verdicts that cite the turn. Clicking a
verdict marks its quoted evidence in the transcript (`sparring.reports.evidence`). A
website chat's screenshots are links with small thumbnails (`sparring.reports.screenshots`).

The page works offline from `file://`: CSS and vanilla JS are inline, nothing is fetched
(a Content-Security-Policy allows no request and only the page's own script, by hash).
Text from agents, users, judges and test files is HTML-escaped by Jinja2's autoescape, so a
reply holding `<script>` shows as text and never runs.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.resources import files
from itertools import count
from pathlib import Path
from typing import Any

from jinja2 import Environment, StrictUndefined, Template
from markupsafe import Markup

from sparring.judging.statistics import wilson_interval
from sparring.redteam import summarize
from sparring.reports import (
    REPLAYED_HISTORY,
    not_judged,
    percent,
    plural,
    reply_timing,
    scenario_not_judged,
    shown_status,
    subtest_verdicts,
    trial_not_judged,
    trial_size,
    unjudged_note,
    usage_text,
    usd,
    why_not_run,
    write_report_text,
)
from sparring.reports.evidence import evidence_spans, marked_pieces, message_turns
from sparring.reports.insights import (
    gate_text,
    ordered,
    override_text,
    score_text,
    trial_facts,
    value_text,
)
from sparring.reports.outcome import (
    Problem,
    exit_meaning,
    model_text,
    overridden_mark,
    passed_text,
    problems,
    trial_ranges,
    verdict_what,
)
from sparring.reports.rates import CriterionRate, rates_across_trials
from sparring.reports.screenshots import Screenshots, ScreenshotView
from sparring.results import (
    InsightResult,
    ReplyNote,
    RunResult,
    ScenarioResult,
    SubtestResult,
    TrialResult,
    UsageTotals,
    Verdict,
    usage_totals,
)
from sparring.transcript import Message, ToolCall, Transcript

_ASSETS = "html_assets"
_SCENARIO_RANK = {"failed": 0, "error": 1, "interrupted": 1, "invalid": 2, "not_run": 2}
_TRIAL_RANK = {"failed": 0, "error": 1, "timed_out": 1, "invalid": 2, "skipped": 3}
_VERDICT_RANK = {"not_met": 0, "error": 1, "skipped": 2}
"""Failures first; anything not named (passed, met) comes last, in its own order."""
STATUS_TEXT = {"not_met": "not met", "timed_out": "timed out", "not_run": "not run"}


@dataclass(frozen=True)
class Piece:
    """Part of a message's text; `keys` are the verdicts (space-separated keys) whose
    evidence it is, `""` when none."""

    text: str
    keys: str


@dataclass(frozen=True)
class ToolCallView:
    """A tool call as shown: arguments and result as indented JSON (the raw text when
    the arguments did not parse), with why they did not."""

    name: str
    arguments: str
    arguments_error: str | None
    result: str | None


@dataclass(frozen=True)
class MessageView:
    """One message: who spoke (`label`), its text in `pieces`, latency, tool calls, the
    states the agent reported."""

    role: str
    label: str
    pieces: list[Piece]
    latency: str | None
    tool_calls: list[ToolCallView]
    states: str
    files: list[str] = field(default_factory=list[str])
    """Each attached file as `name (type, N bytes)`."""


@dataclass(frozen=True)
class VerdictView:
    """A verdict as shown; `key` names it in the page. `misquoted`: the judge quoted
    evidence and none of it is in the transcript (a check's evidence is sparring's own
    account, never a quote, so it is never misquoted)."""

    key: str
    id: str
    kind: str
    status: str
    what: str
    reason: str
    evidence: list[str]
    turns: list[int]
    turns_text: str
    misquoted: bool
    override: str = ""


@dataclass
class TurnView:
    """One turn: its messages, the judge's note on the reply, the verdicts citing it."""

    number: int
    messages: list[MessageView] = field(default_factory=list[MessageView])
    note: ReplyNote | None = None
    verdicts: list[VerdictView] = field(default_factory=list[VerdictView])


@dataclass(frozen=True)
class ConversationView:
    """A transcript turn by turn with its verdicts (all of them, failures first)."""

    turns: list[TurnView]
    verdicts: list[VerdictView]


@dataclass(frozen=True)
class SubtestView:
    """A sub-test (`session.unfold` step) with its own conversation."""

    id: str
    name: str
    status: str
    not_judged: str
    """` (1 not judged)` after the status when some of its verdicts were skipped, or `""`."""
    notes: list[str]
    conversation: ConversationView


@dataclass(frozen=True)
class InsightView:
    """An insight's value as shown: `gate` says whether a gating one passed, `override` a
    person's correction; `featured` ones come first."""

    id: str
    type: str
    status: str
    value: str
    gate: str
    reasoning: str
    evidence: list[str]
    turns_text: str
    featured: bool
    override: str
    group: str = ""


@dataclass(frozen=True)
class TrialView:
    """One trial: facts line, error, traceback, explanation, insights, conversation,
    sub-tests."""

    number: int
    of: int
    status: str
    facts: list[str]
    error: str | None
    traceback: str | None
    conversation: ConversationView
    subtests: list[SubtestView]
    explanation: str | None = None
    insights: list[InsightView] = field(default_factory=list[InsightView])
    screenshots: list[ScreenshotView] = field(default_factory=list[ScreenshotView])
    marks: str = ""
    """` (1 not judged)`, ` (overridden)` after the status, or `""`."""


@dataclass(frozen=True)
class ScenarioView:
    """One scenario: its summary line, facts, what went wrong, trials (failures first)."""

    id: str
    name: str
    kind: str
    status: str
    tags: list[str]
    tags_json: str
    category: str
    rate: str
    facts: list[str]
    description: str | None
    problems: list[str]
    not_run: str | None
    trials: list[TrialView]
    criteria: list[CriterionRate] = field(default_factory=list[CriterionRate])
    """Each criterion, `should`, check and gating insight met across trials (with more
    than one trial), with its 95% interval."""
    marks: str = ""
    """` (3 not judged)`, ` (overridden)` after the status, or `""`."""


def render_html(
    result: RunResult,
    *,
    exit_status: tuple[int, str] | None = None,
    gate_lines: Sequence[str] = (),
    screenshots: Screenshots | None = None,
) -> str:
    """The HTML report as one self-contained page (see the module docstring).

    Args:
        result: The run to render.
        exit_status: `(code, meaning)` to state instead of `result.exit_code`, when
            something beyond the run decides the exit code (group gates, the pytest plugin).
        gate_lines: The group gate summary, shown verbatim after the run's facts.
        screenshots: How browser screenshots are linked and inlined
            (`sparring.reports.screenshots`); default: absolute links, no thumbnails.
    """
    script = _asset("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    keys = (f"v{n}" for n in count(1))
    shots = screenshots or Screenshots()
    why = why_not_run(result)
    views = [_scenario(s, why, keys, shots) for s in _in_rank_order(result.scenarios)]
    return _template().render(
        result=result,
        header=_header(result, exit_status),
        cards=_cards(result),
        gate_lines=list(gate_lines),
        red_team=_red_team(result),
        scenarios=views,
        filters=_filters(views),
        status_text=STATUS_TEXT,
        css=Markup(_asset("report.css")),
        script=Markup(script),
        script_hash=f"sha256-{digest}",
    )


def _red_team(result: RunResult) -> dict[str, object] | None:
    """Attack success per plugin (with severity) and per strategy, for a red-team run."""
    attacks = summarize(result)
    if not attacks.plugins:
        return None
    return {
        "plugins": [(p, attacks.severities[p], r.text()) for p, r in attacks.plugins.items()],
        "strategies": [(s, r.text()) for s, r in attacks.strategies.items()],
        "findings": len(attacks.findings),
        "not_judged": attacks.not_judged_note(),
    }


def write_html(
    result: RunResult,
    path: Path,
    *,
    exit_status: tuple[int, str] | None = None,
    gate_lines: Sequence[str] = (),
) -> None:
    """Write `render_html(result, ...)` to `path` (UTF-8), creating parent folders; its
    screenshots linked relative to `path`, with thumbnails (`Screenshots.for_report`).

    Raises:
        OSError: the file cannot be written.
    """
    shots = Screenshots.for_report(path)
    page = render_html(result, exit_status=exit_status, gate_lines=gate_lines, screenshots=shots)
    write_report_text(path, page)


@cache
def _asset(name: str) -> str:
    return files("sparring.reports").joinpath(_ASSETS, name).read_text(encoding="utf-8")


@cache
def _template() -> Template:
    env = Environment(autoescape=True, undefined=StrictUndefined, keep_trailing_newline=True)
    return env.from_string(_asset("report.html.j2"))


def pass_rate_text(passed: int, counted: int) -> str:
    """`50% (95% CI 24–76%)`: a pass rate with its 95% Wilson interval; `-` for no trial."""
    if not counted:
        return "-"
    return f"{percent(passed / counted)} ({interval_text(passed, counted)})"


def interval_text(passed: int, counted: int) -> str:
    """`95% CI 24–76%`: the 95% Wilson interval of `passed` of `counted` (>= 1) trials,
    in whole percent."""
    low, high = wilson_interval(passed, counted)
    return f"95% CI {low * 100:.0f}–{high * 100:.0f}%"


def _header(result: RunResult, exit_status: tuple[int, str] | None) -> dict[str, Any]:
    code, meaning = exit_status or (result.exit_code, exit_meaning(result))
    models = [model_text(m) for m in result.models] or [
        f"{label} model {name}"
        for label, name in (("user", result.user_model), ("judge", result.judge_model))
        if name
    ]
    return {
        "code": code,
        "meaning": meaning,
        "models": models,
        "usage": usage_text(result.usage_totals()),
        "trials": sum(len(s.trials) for s in result.scenarios),
        "duration": f"{result.duration_ms / 1000:.1f} s",
    }


def _cards(result: RunResult) -> dict[str, Any]:
    trials = [t for s in result.scenarios for t in s.counted]
    passed = sum(t.status == "passed" for t in trials)
    counts = {shown_status(s): 0 for s in _in_rank_order(result.scenarios)}
    for s in result.scenarios:
        counts[shown_status(s)] += 1
    return {
        "counts": counts,
        "passed": passed,
        "counted": len(trials),
        "rate": percent(passed / len(trials)) if trials else "-",
        "interval": interval_text(passed, len(trials)) if trials else "",
        "not_judged": unjudged_note(trials),
        "cost": _cost(result.usage_totals()),
    }


def _in_rank_order(scenarios: Sequence[ScenarioResult]) -> list[ScenarioResult]:
    return sorted(scenarios, key=lambda s: _SCENARIO_RANK.get(shown_status(s), 9))


def _cost(totals: UsageTotals) -> str:
    """`$0.0123`, `$0.0123 + 2 unpriced calls`, `unknown` (every call unpriced), `$0`."""
    if totals.model_calls and totals.unpriced_calls == totals.model_calls:
        return "unknown"
    more = f" + {totals.unpriced_calls} unpriced" if totals.unpriced_calls else ""
    return usd(totals.cost_usd) + more


def _filters(views: list[ScenarioView]) -> dict[str, list[tuple[str, int]]]:
    """Each filter's values with how many scenarios have them, in order of appearance."""
    out: dict[str, dict[str, int]] = {"status": {}, "tag": {}, "category": {}}
    for v in views:
        out["status"][v.status] = out["status"].get(v.status, 0) + 1
        for tag in dict.fromkeys(v.tags):
            out["tag"][tag] = out["tag"].get(tag, 0) + 1
        if v.category:
            out["category"][v.category] = out["category"].get(v.category, 0) + 1
    return {name: list(values.items()) for name, values in out.items()}


def _scenario(
    s: ScenarioResult, why_not_run: str, keys: Iterator[str], shots: Screenshots
) -> ScenarioView:
    trials = sorted(s.trials, key=lambda t: (_TRIAL_RANK.get(t.status, 9), t.trial))
    not_run = "No trial ran." if not s.trials else None
    if s.missing_trials:
        not_run = f"{plural(s.missing_trials, 'planned trial')} did not run: {why_not_run}."
    return ScenarioView(
        id=s.scenario_id,
        name=s.name,
        kind=s.kind,
        status=shown_status(s),
        tags=s.tags,
        tags_json=json.dumps(s.tags, ensure_ascii=False),
        category=s.category or "",
        rate=f"{passed_text(s)} · {pass_rate_text(s.passed_trials, len(s.counted))}",
        facts=_scenario_facts(s),
        description=s.description,
        problems=[_problem_text(p) for p in problems(s, skipped=False)],
        not_run=not_run,
        trials=[_trial(t, len(s.trials), _user_label(s), keys, shots) for t in trials],
        criteria=rates_across_trials(s),
        marks=scenario_not_judged(s) + overridden_mark(s.trials),
    )


def _scenario_facts(s: ScenarioResult) -> list[str]:
    facts = [f"threshold {percent(s.threshold)}", f"cost {_cost(usage_totals(s.trials))}"]
    if (score := s.score) is not None:
        facts.append(f"score {score_text(score)}")
    if s.invalid_trials:
        facts.append(f"{s.invalid_trials} invalid (the simulated user failed)")
    labels = (("source", s.source), ("category", s.category), ("topic", s.topic))
    facts += [f"{name} {value}" for name, value in (*labels, ("behavior", s.behavior)) if value]
    return facts


def _problem_text(problem: Problem) -> str:
    where = trial_ranges(problem.trials)
    verdict = problem.verdict
    if verdict is None:
        return f"{where}: {STATUS_TEXT.get(problem.status, problem.status)}: {problem.text}"
    status = STATUS_TEXT.get(verdict.status, verdict.status)
    return f"{where}: {verdict.id} {status}: {verdict_what(verdict)}: {problem.text}"


def _user_label(s: ScenarioResult) -> str:
    return "simulated user" if s.kind == "simulated" else "user"


def _trial(
    trial: TrialResult, of: int, user_label: str, keys: Iterator[str], shots: Screenshots
) -> TrialView:
    own = tuple(f"{sub.id}." for sub in trial.subtests)
    main = [v for v in trial.verdicts if not v.id.startswith(own)]
    facts = [
        f"end reason {trial.end_reason}",
        trial_size(trial),
        f"{trial.duration_ms / 1000:.1f} s",
        f"cost {_cost(trial.usage_totals())}",
        *trial_facts(trial),
        *([f"page {trial.page_url}"] if trial.page_url else []),
    ]
    featured = next((i for i in trial.insights if i.featured), None)
    if featured is not None:
        facts.insert(0, f"{featured.insight}: {value_text(featured)}")
    subtests = [_subtest(sub, subtest_verdicts(trial, sub), keys) for sub in trial.subtests]
    return TrialView(
        number=trial.trial,
        of=of,
        status=trial.status,
        facts=facts,
        error=trial.error,
        traceback=trial.traceback,
        conversation=conversation_view(
            trial.transcript, main, trial.reply_notes, user_label=user_label, keys=keys
        ),
        subtests=subtests,
        explanation=trial.explanation,
        insights=[_insight(i) for i in ordered(trial.insights)],
        screenshots=shots.views(trial.artifacts),
        marks=trial_not_judged(trial) + overridden_mark([trial]),
    )


def _insight(insight: InsightResult) -> InsightView:
    turns = ", ".join(map(str, insight.turns))
    return InsightView(
        id=insight.id,
        type=insight.type,
        status=insight.status,
        value=value_text(insight),
        gate=gate_text(insight),
        reasoning=insight.reasoning,
        evidence=list(insight.evidence),
        turns_text=f"turns {turns}" if turns else "",
        featured=insight.featured,
        override=override_text(insight.override),
        group=insight.group or "",
    )


def _subtest(sub: SubtestResult, verdicts: list[Verdict], keys: Iterator[str]) -> SubtestView:
    replayed = REPLAYED_HISTORY if sub.history == "replayed" else None
    return SubtestView(
        id=sub.id,
        name=sub.name,
        status=sub.status,
        not_judged=not_judged(sub.status, verdicts),
        notes=[n for n in (replayed, sub.error) if n],
        conversation=conversation_view(sub.transcript, verdicts, [], user_label="user", keys=keys),
    )


def conversation_view(
    transcript: Transcript,
    verdicts: list[Verdict],
    notes: list[ReplyNote],
    *,
    user_label: str,
    keys: Iterator[str],
) -> ConversationView:
    """The transcript turn by turn, evidence marked, verdicts beside the turns they cite."""
    messages = transcript.messages
    by_rank = sorted(verdicts, key=lambda v: _VERDICT_RANK.get(v.status, 9))
    marks: dict[int, list[tuple[int, int, str]]] = {}
    views: list[VerdictView] = []
    for verdict in by_rank:
        key = next(keys)
        spans = evidence_spans(verdict, messages)
        for span in spans:
            marks.setdefault(span.message, []).append((span.start, span.end, key))
        views.append(_verdict(verdict, key, found=bool(spans)))
    by_note = {n.turn: n for n in notes}
    turns: dict[int, TurnView] = {}
    for index, (message, number) in enumerate(zip(messages, message_turns(messages), strict=True)):
        turn = turns.setdefault(number, TurnView(number, note=by_note.get(number)))
        turn.messages.append(_message(message, marks.get(index, []), user_label))
    for view in views:
        for number in view.turns:
            if number in turns:
                turns[number].verdicts.append(view)
    return ConversationView(turns=list(turns.values()), verdicts=views)


def _verdict(verdict: Verdict, key: str, *, found: bool) -> VerdictView:
    turns = list(verdict.turns or (() if verdict.turn is None else (verdict.turn,)))
    numbers = ", ".join(map(str, turns))
    return VerdictView(
        key=key,
        id=verdict.id,
        kind=verdict.kind,
        status=verdict.status,
        what=verdict_what(verdict),
        reason=verdict.reason,
        evidence=list(verdict.evidence),
        turns=turns,
        turns_text=f"turn {numbers}" if len(turns) == 1 else f"turns {numbers}" if turns else "",
        misquoted=bool(verdict.evidence) and not found and verdict.kind != "check",
        override=override_text(verdict.override),
    )


def _message(message: Message, marks: list[tuple[int, int, str]], user_label: str) -> MessageView:
    label = {"user": user_label}.get(message.role, message.role)
    latency = reply_timing(message)
    return MessageView(
        role=message.role,
        label=label,
        pieces=[Piece(text, " ".join(k)) for text, k in marked_pieces(message.content, marks)],
        latency=latency,
        tool_calls=[_tool_call(c) for c in message.tool_calls],
        states=" → ".join(e.state for e in message.status_events),
        files=[f"{f.name} ({f.mime_type}, {f.size:,} bytes)" for f in message.files],
    )


def _tool_call(call: ToolCall) -> ToolCallView:
    arguments = call.arguments_raw if call.arguments is None else _json(call.arguments)
    result = None if call.result is None else _json(call.result)
    return ToolCallView(call.name, arguments, call.arguments_error, result)


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
