"""The summary printed at the end of a run, and the symbols and styles the console shares.

`print_summary` prints, in order: the scenario table (what passed against what each
threshold needs), failures, errors, invalid trials and what failed as expected (identical
problems of several trials on one line, `trials 1-3`), explanations, the criteria and gates
a scenario of several trials did not meet in every trial (with the 95% interval), skipped
work grouped by why, the totals, the models' settings, usage, the group gates when there
are some, and the exit code with its causes.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sparring.reports import one_line as _one_line
from sparring.reports import (
    percent,
    plural,
    scenario_not_judged,
    shown_pass_rate,
    shown_status,
    stopped_by_fail_fast,
    usage_text,
)
from sparring.reports.insights import EXPLANATION_LABEL, override_text, score_text
from sparring.reports.outcome import (
    Problem,
    cited_turns,
    exit_meaning,
    model_text,
    overridden_mark,
    problems,
    run_rate_text,
    trial_ranges,
    verdict_what,
)
from sparring.reports.rates import unsteady_rates, with_interval
from sparring.results import RunResult, ScenarioResult, Verdict
from sparring.runner.code import failed_as_expected

SYMBOLS = {
    "passed": "✔",
    "failed": "✘",
    "error": "⚠",
    "timed_out": "⚠",
    "skipped": "⏭",
    "not_run": "⏭",
    "invalid": "⊘",
    "undecided": "?",
    "done": "○",
    "interrupted": "⚠",
    "start": "▶",
    "scenario": "■",
}
"""Status symbols on a UTF-8 console."""
ASCII = {
    "passed": "+",
    "failed": "x",
    "error": "!",
    "timed_out": "!",
    "skipped": "-",
    "not_run": "-",
    "invalid": "?",
    "undecided": "?",
    "done": "o",
    "interrupted": "!",
    "start": ">",
    "scenario": "#",
}
"""Status symbols elsewhere."""
VERDICT_SYMBOL = {"met": "passed", "not_met": "failed", "error": "error", "skipped": "skipped"}
"""The `SYMBOLS` key of a verdict status."""
STYLE: dict[str, str] = {
    "passed": "green",
    "met": "green",
    "failed": "red",
    "not_met": "red",
    "error": "yellow",
    "timed_out": "yellow",
    "skipped": "dim",
    "not_run": "dim",
    "invalid": "magenta",
    "undecided": "yellow",
    "done": "cyan",
    "interrupted": "yellow",
}
"""rich styles of statuses."""
_LINE = 1000
"""Characters of one summary line."""


def status_text(status: str) -> str:
    """A status as words: `not met`, `timed out`, `not run`; others as they are."""
    return {"not_met": "not met", "timed_out": "timed out", "not_run": "not run"}.get(
        status, status
    )


def verdict_text(v: Verdict, *, reason: bool = True) -> str:
    """`t1.check1 (turn 1) contains "x"`, then `: <reason>` (with `reason`, when it has
    one) and the cited turns; `[overridden by ana ...]` after the id when a person
    corrected it."""
    at = f" (turn {v.turn})" if v.turn is not None else ""
    fixed = f" [{override_text(v.override)}]" if v.override is not None else ""
    text = f"{v.id}{at}{fixed} {_one_line(verdict_what(v), 200)}"
    return f"{text}: {v.reason}{cited_turns(v)}" if reason and v.reason else text


def scenario_line(s: ScenarioResult, sym: dict[str, str]) -> Text:
    """`■ refund: failed, pass rate 33.3% (1 of 3 passed, needs 3; threshold 80%)`; `■ faq:
    passed (1 not judged), pass rate ...` when steps went unjudged."""
    status = shown_status(s)
    passes, out_of = s.needed
    counts = f"{s.passed_trials} of {out_of} passed, needs {passes}; " if out_of else ""
    line = (
        f"{sym['scenario']} {s.scenario_id}: {status_text(status)}{scenario_not_judged(s)}, "
        "pass rate "
        f"{with_interval(shown_pass_rate(s), s)} ({counts}threshold {percent(s.threshold)})"
    )
    score = s.score
    line += "" if score is None else f", score {score_text(score)}"
    return Text(line, style=f"bold {STYLE[status]}")


def print_summary(
    result: RunResult,
    *,
    console: Console,
    symbols: dict[str, str] | None = None,
    table: bool = True,
    gate_lines: Sequence[str] = (),
    exit_status: tuple[int, str] | None = None,
) -> None:
    """Print the end-of-run summary (see the module docstring).

    Args:
        result: The finished run.
        console: Where to print.
        symbols: `SYMBOLS` or `ASCII` (default `SYMBOLS`).
        table: Print the scenario table (`--quiet` has printed a line per scenario).
        gate_lines: The group gate summary (`sparring.gates.GateReport.lines()`).
        exit_status: `(code, meaning)` to state instead of the run's own exit code, when
            the gates decided it.
    """
    sym = symbols or SYMBOLS
    console.print()
    if table:
        console.print(_scenario_table(result, sym))
    failures, errors, invalid, expected = _problem_lines(result, sym)
    titles = (
        ("Failures", failures, "red"),
        ("Errors", errors, "yellow"),
        ("Invalid: the simulated user failed, the agent was not judged", invalid, "magenta"),
        ("Failed as expected", expected, "green"),
    )
    for title, lines, style in titles:
        if lines:
            _line(console, f"{title} ({len(lines)})", f"bold {style}")
            for line in lines:
                _line(console, line, style)
    _explanations(console, result)
    rates = _unsteady_lines(result)
    if rates:
        _line(console, "Not met in every trial", "bold")
        for line in rates:
            _line(console, line, "")
    for line in _skipped_lines(result, sym):
        _line(console, line, "dim")
    for line in _tail_lines(result, sym):
        _line(console, line, "yellow" if line.startswith(sym["not_run"]) else "")
    if gate_lines:
        _line(console, "Group gates", "bold")
        for line in gate_lines:
            _line(console, line, "")
    code, meaning = exit_status or (result.exit_code, exit_meaning(result))
    _line(console, f"exit code {code}: {meaning}", "bold " + ("green" if code == 0 else "red"))


def _explanations(console: Console, result: RunResult) -> None:
    """`explain_failures`' explanations of failed trials, one line each, under a title."""
    explained = [
        f"{s.scenario_id} · trial {t.trial}: {t.explanation}"
        for s in result.scenarios
        for t in s.trials
        if t.explanation
    ]
    if explained:
        _line(console, EXPLANATION_LABEL.capitalize(), "bold")
        for line in explained:
            _line(console, _one_line(line, _LINE), "")


def _unsteady_lines(result: RunResult) -> list[str]:
    """`refund · c1: 3/6 met, 50% [19%, 81%]`: each criterion, `should`, check and gating
    insight of a scenario with several trials that was not met in every trial that
    decided it (`sparring.reports.rates.unsteady_rates`)."""
    return [
        _one_line(f"{s.scenario_id} · {c.id}: {c.text}", _LINE)
        for s in result.scenarios
        for c in unsteady_rates(s)
    ]


def _line(console: Console, text: str, style: str) -> None:
    console.print(Text(text, style=style), highlight=False, soft_wrap=True)


def _tail_lines(result: RunResult, sym: dict[str, str]) -> list[str]:
    """Totals, why the run stopped early, the models' settings and usage."""
    out = [_totals(result)]
    if stopped_by_fail_fast(result):
        missing = sum(s.missing_trials for s in result.scenarios)
        out.append(
            f"{sym['not_run']} the run stopped early because of --fail-fast: "
            f"{plural(missing, 'planned trial')} did not run"
        )
    if result.models:
        out.append("models: " + " · ".join(model_text(m) for m in result.models))
    usage = usage_text(result.usage_totals())
    return [*out, f"usage: {usage}"] if usage else out


def _scenario_table(result: RunResult, sym: dict[str, str]) -> Table:
    table = Table(title="sparring results", title_justify="left", expand=False)
    scored = any(t.score is not None for s in result.scenarios for t in s.trials)
    columns = ("Scenario", "Status", "Pass rate", "Passed", "Threshold", "Score")
    for column in columns if scored else columns[:-1]:
        table.add_column(column, justify="left" if column in ("Scenario", "Status") else "right")
    for s in result.scenarios:
        shown = shown_status(s)
        status = f"{sym[shown]} {status_text(shown)}{scenario_not_judged(s)}"
        status += overridden_mark(s.trials)
        passes, out_of = s.needed
        table.add_row(
            Text(s.scenario_id, overflow="fold"),
            Text(status, style=STYLE[shown]),
            with_interval(shown_pass_rate(s), s),
            f"{s.passed_trials} of {out_of} (needs {passes})" if out_of else "-",
            percent(s.threshold),
            *([score_text(s.score)] if scored else []),
        )
    return table


def _problem_lines(result: RunResult, sym: dict[str, str]) -> tuple[list[str], ...]:
    """(failures, errors, invalid trials, failed as expected): one line per problem of a
    scenario, the same problem of several trials once (`trials 1-3`); failed suite hooks
    are errors. What failed in the trials of an `expect_failure` test that failed is
    listed once, as expected (not as failures, nor their "failed as expected" as errors)."""
    failures: list[str] = []
    errors: list[str] = []
    invalid: list[str] = []
    expected: list[str] = []
    for s in result.scenarios:
        wanted = {t.trial for t in s.trials if failed_as_expected(t)}
        found = problems(s, skipped=False)
        said = {n for p in found if p.verdict is not None for n in p.trials}
        for p in found:
            where = f"{s.scenario_id} · {trial_ranges(p.trials)}"
            if wanted and set(p.trials) <= wanted:
                if p.verdict is None and set(p.trials) <= said:
                    continue  # "failed as expected": the checks that failed say how
                expected.append(_problem_line(p, where, sym["passed"]))
            elif p.verdict is not None:
                target = failures if p.status == "not_met" else errors
                target.append(_problem_line(p, where, sym[VERDICT_SYMBOL[p.status]]))
            else:
                target = {"invalid": invalid, "failed": failures}.get(p.status, errors)
                target.append(_problem_line(p, where, sym.get(p.status, sym["error"])))
    errors += [_one_line(f"{sym['error']} {e}", _LINE) for e in result.hook_errors]
    return failures, errors, invalid, expected


def _problem_line(p: Problem, where: str, symbol: str) -> str:
    """`✘ refund · trial 2 · c1 The assistant ...: <reason>`, or `⚠ refund · trial 2: <error>`."""
    if p.verdict is None:
        return _one_line(f"{symbol} {where}: {p.text}", _LINE)
    text = verdict_text(p.verdict, reason=False)
    text += f": {p.text or '(no reason given)'}{cited_turns(p.verdict)}"
    return _one_line(f"{symbol} {where} · {text}", _LINE)


def _skipped_lines(result: RunResult, sym: dict[str, str]) -> list[str]:
    """Skipped work grouped by its message, so "no model configured" shows up once."""
    groups: dict[str, list[int]] = {}
    for s in result.scenarios:
        for t in s.trials:
            skipped = [v for v in t.verdicts if v.status == "skipped"]
            if t.status == "skipped":
                message = t.error or next((v.reason for v in skipped if v.reason), "skipped")
                groups.setdefault(message, [0, 0])[0] += 1
            else:
                for v in skipped:
                    groups.setdefault(v.reason or "skipped", [0, 0])[1] += 1
    lines: list[str] = []
    pending = sum(
        t.evaluations_passed == "pending" and t.status != "skipped"
        for s in result.scenarios
        for t in s.trials
    )
    if pending:
        lines.append(
            f"{sym['skipped']} not judged: the evaluation gates of {plural(pending, 'trial')}"
        )
    for message, (trials, verdicts) in groups.items():
        what = [plural(n, unit) for n, unit in ((trials, "trial"), (verdicts, "verdict")) if n]
        lines.append(f"{sym['skipped']} skipped {' and '.join(what)}: {_one_line(message, 600)}")
    return lines


def _totals(result: RunResult) -> str:
    counts = result.counts()
    scenario_part = ", ".join(f"{n} {status_text(s)}" for s, n in counts.items())
    trials: dict[str, int] = {}
    for s in result.scenarios:
        for t in s.trials:
            trials[t.status] = trials.get(t.status, 0) + 1
    trial_part = ", ".join(f"{n} {status_text(s)}" for s, n in trials.items())
    total_trials = sum(trials.values())
    text = f"{plural(len(result.scenarios), 'scenario')} ({scenario_part or 'none'})"
    text += f" · {plural(total_trials, 'trial')} ({trial_part or 'none'})"
    if any(s.counted for s in result.scenarios):
        text += f" · pass rate {run_rate_text(result)}"
    return text + f" · {result.duration_ms / 1000:.1f} s"
