"""A run's outcome in words, shared by the Markdown report and the console summary.

What a threshold needs ("needs 2 of 3"), why the exit code is 3 ("2 scenarios errored:
target unreachable (a), judge could not decide (b)"), what went wrong with identical
problems of several trials merged ("trials 1-3: ..."), what a verdict is about without
repeating its id or kind, and the models' settings ("judge openai:gpt-4o-mini, temperature
0, seed 0"). Plain text; each renderer escapes it for its format.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from sparring.reports import (
    EXIT_CODE_MEANING,
    one_line,
    plural,
    shown_status,
    unjudged_note,
    unjudged_passes,
    why_not_run,
)
from sparring.reports.insights import gate_verdicts
from sparring.reports.rates import rate_text, run_counts
from sparring.results import (
    ModelSettings,
    RunResult,
    ScenarioResult,
    TrialResult,
    Verdict,
    undecided_text,
)

PASS_HAT_K = "pass^k (the chance that k trials in a row all pass)"
"""How reports name pass^k where they show it."""
_ROLE = {"user": "simulated user", "judge": "judge"}
_CAUSE = {
    "target_error": "target failed",
    "model_error": "model call failed",
    "internal_error": "internal error (a sparring bug: see the traceback in the JSON report)",
    "test_error": "the test or a hook raised",
    "timeout": "conversation timed out",
    "interrupted": "interrupted",
}
_SHOWN_IDS = 5
"""Scenario ids named per cause; more are counted."""


def passed_text(scenario: ScenarioResult) -> str:
    """`2 of 3 passed, needs 3`: passed trials out of those that decide the status, and
    what the threshold needs; `nothing to judge: 2 conversations done` when the trials
    that ran were `done`; `no trial judged: 1 skipped, 1 invalid` when the trials there are
    decide nothing (a skipped trial may have talked: no model to judge it); `no trial ran`
    when there is none."""
    passes, out_of = scenario.needed
    done = sum(t.status == "done" for t in scenario.trials)
    if out_of:
        return f"{scenario.passed_trials} of {out_of} passed, needs {passes}"
    if done:
        return f"{NOTHING_TO_JUDGE}: {plural(done, 'conversation')} done"
    counts = Counter(t.status for t in scenario.trials)
    return (
        "no trial judged: " + ", ".join(f"{n} {s}" for s, n in counts.items())
        if counts
        else "no trial ran"
    )


def run_rate_text(result: RunResult) -> str:
    """The run's pass rate, `94/94 passed, 100% [96%, 100%]`, then how many of its passes
    left steps not judged, ` (60 passed with steps not judged)`, so a pass with nothing
    judged never reads as a plain one (`sparring.reports.rates.run_counts`)."""
    trials = (t for s in result.scenarios if shown_status(s) != "interrupted" for t in s.trials)
    return rate_text(*run_counts(result)) + unjudged_note(trials)


NOTHING_TO_JUDGE = "nothing to judge"
"""How reports say that conversations ran with no criterion, check, `should`, tool-argument
rubric or evaluation gate to pass or fail (status `done`)."""


def _zero_meaning(result: RunResult) -> str:
    """Exit code 0's meaning, never claiming more than happened: `every scenario that ran
    passed`, then what that leaves out (`1 scenario had nothing to judge (done)`, `2
    scenarios skipped (<why>)`, `60 passed trials had steps not judged`); with no scenario
    passed, what happened instead: `nothing to judge: 3 conversations ran and ended done
    (...)`, `nothing was judged: 2 scenarios skipped (<why>)`."""
    done = [s for s in result.scenarios if s.status == "done"]
    skipped = [s for s in result.scenarios if s.status == "skipped"]
    notes = [f"{plural(len(skipped), 'scenario')} skipped ({_skip_reason(skipped)})"]
    notes = notes if skipped else []
    if not any(s.status == "passed" for s in result.scenarios):
        if done:
            ran = sum(t.status == "done" for s in done for t in s.trials)
            head = (
                f"{NOTHING_TO_JUDGE}: {plural(ran, 'conversation')} ran and ended done (no "
                "criterion, check, should, tool-argument rubric or evaluation gate to pass or fail)"
            )
            return "; ".join([head, *notes])
        return f"nothing was judged: {notes[0]}" if notes else EXIT_CODE_MEANING[0]
    if done:
        notes.insert(0, f"{plural(len(done), 'scenario')} had {NOTHING_TO_JUDGE} (done)")
    if unjudged := unjudged_passes(t for s in result.scenarios for t in s.trials):
        notes.append(f"{plural(unjudged, 'passed trial')} had steps not judged")
    return "; ".join([EXIT_CODE_MEANING[0], *notes])


def _skip_reason(skipped: list[ScenarioResult]) -> str:
    """Why `skipped` scenarios' trials were skipped: the first reason, and how many others."""
    reasons = list(dict.fromkeys(t.error or "skipped" for s in skipped for t in s.trials))
    if len(reasons) <= 1:
        return reasons[0] if reasons else "skipped"
    return f"{reasons[0]}; and {plural(len(reasons) - 1, 'other reason')}"


def overridden_ids(trial: TrialResult) -> list[str]:
    """The ids of `trial`'s verdicts, then insights, that a person corrected (`sparring
    override`), in the trial's order."""
    verdicts = [v.id for v in trial.verdicts if v.override is not None]
    return verdicts + [i.id for i in trial.insights if i.override is not None]


def overridden_mark(trials: Iterable[TrialResult]) -> str:
    """` (overridden)` after a status some of `trials` had corrected by a person, or `""`."""
    return " (overridden)" if any(overridden_ids(t) for t in trials) else ""


def trial_ranges(numbers: Iterable[int]) -> str:
    """`trial 2`, `trials 1-3`, `trials 1, 3-4`: 1-based trial numbers, runs joined."""
    ordered = sorted(set(numbers))
    runs: list[list[int]] = []
    for n in ordered:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    text = ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
    return f"trial {text}" if len(ordered) == 1 else f"trials {text}"


def model_text(model: ModelSettings) -> str:
    """`judge openai:gpt-4o-mini, temperature 0, seed 0, max tokens 1024` (the seed and
    the answer limit only when sent)."""
    parts = [
        f"{_ROLE.get(model.role, model.role)} {model.spec}",
        f"temperature {model.temperature:g}",
    ]
    if model.seed is not None:
        parts.append(f"seed {model.seed}")
    if model.max_tokens is not None:
        parts.append(f"max tokens {model.max_tokens}")
    return ", ".join(parts)


def exit_meaning(result: RunResult, code: int | None = None) -> str:
    """What exit code `code` (default `result.exit_code`) means for `result`; for 1, what
    the agent did not meet (`...: the agent did not meet its checks`); for 3, its causes by
    scenario (see `exit_causes`)."""
    code = result.exit_code if code is None else code
    if code == 3:
        return exit_causes(result) or EXIT_CODE_MEANING[3]
    if code == 1 and (missed := _missed(result)):
        return f"{EXIT_CODE_MEANING[1]}: the agent did not meet its {missed}"
    if code == 0:
        return _zero_meaning(result)
    return EXIT_CODE_MEANING.get(code, "unknown")


def _missed(result: RunResult) -> str:
    """What failed trials of failed scenarios did not meet: `criteria`, `checks`,
    `evaluation gates`, joined (`criteria and checks`); `""` for none of them (a Python
    test's assertion)."""
    kinds: set[str] = set()
    for trial in (t for s in result.scenarios if s.status == "failed" for t in s.trials):
        if trial.status != "failed":
            continue
        kinds |= {
            "checks" if v.kind == "check" else "criteria"
            for v in trial.verdicts
            if v.status == "not_met"
        }
        if any(i.gating and i.status == "ok" and not i.passed for i in trial.insights):
            kinds.add("evaluation gates")
    named = [k for k in ("criteria", "checks", "evaluation gates") if k in kinds]
    return " and ".join([", ".join(named[:-1]), named[-1]] if len(named) > 1 else named)


def exit_causes(result: RunResult) -> str:
    """Why the run is not decided, `; `-joined: scenarios by status and cause (`2 scenarios
    errored: target unreachable (a), judge could not decide (b)`), failed suite hooks, and
    skipped work under `--fail-on-skip`; `""` when nothing is."""
    by_status: dict[str, dict[str, list[str]]] = {}
    for s in result.scenarios:
        status = s.status
        if status in ("error", "invalid", "not_run", "undecided"):
            cause = _cause(s, why_not_run(result))
            by_status.setdefault(status, {}).setdefault(cause, []).append(s.scenario_id)
    words = {
        "error": "errored",
        "invalid": "invalid",
        "not_run": "not run",
        "undecided": "undecided",
    }
    parts = [
        f"{plural(sum(map(len, causes.values())), 'scenario')} {words[status]}: "
        + ", ".join(f"{cause} ({_ids(ids)})" for cause, ids in causes.items())
        for status, causes in by_status.items()
    ]
    if result.hook_errors:
        parts.append(f"{plural(len(result.hook_errors), 'suite hook')} failed")
    if result.fail_on_skip and result.skipped_anything():
        parts.append("steps were skipped under --fail-on-skip")
    return "; ".join(parts)


def _ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_IDS])
    return shown if len(ids) <= _SHOWN_IDS else f"{shown} and {len(ids) - _SHOWN_IDS} more"


def _cause(scenario: ScenarioResult, why_not_run: str) -> str:
    """The first reason `scenario` stayed undecided, in a few words."""
    if scenario.status == "invalid":
        return "the simulated user failed"
    if scenario.status == "undecided":
        return f"{len(scenario.trials)} trials left the pass rate's 95% interval around threshold"
    trial = next((t for t in scenario.trials if t.status in ("error", "timed_out")), None)
    if trial is None:
        return "not run" if not scenario.trials else f"cut short: {why_not_run}"
    return _trial_cause(trial)


def _trial_cause(trial: TrialResult) -> str:
    if trial.status == "timed_out":
        return "timed out"
    first = next((v for v in _verdicts(trial) if v.status == "error"), None)
    if first is not None and trial.error in (None, undecided_text(trial.verdicts, trial.insights)):
        return "a check could not run" if first.kind == "check" else "the judge could not decide"
    if trial.end_reason == "target_error" and "could not connect" in (trial.error or ""):
        return "target unreachable"
    return _CAUSE.get(trial.end_reason) or one_line(trial.error or trial.end_reason, 80)


def _verdicts(trial: TrialResult) -> list[Verdict]:
    """The trial's verdicts, then its gating insights that did not pass (`gate_verdicts`)."""
    return [*trial.verdicts, *gate_verdicts(trial.insights)]


def verdict_what(verdict: Verdict) -> str:
    """What `verdict` is about, to follow its id, naming its kind once: the description
    (`The assistant apologises`, `should ...`, `restriction (must not happen): ...`, `contains
    "x"`) less a leading id (verdict `assert`, "assert in the test body" -> "in the test
    body") and a final full stop, after `<kind>: ` when neither the description nor the id
    says the kind of a verdict that is not a criterion (`restriction: Never asks ...`)."""
    text = verdict.description.strip().removesuffix(".")
    if text.lower().startswith(verdict.id.lower() + " "):
        return text[len(verdict.id) + 1 :]
    kind = verdict.kind
    if kind == "criterion" or text.lower().startswith(kind) or kind in verdict.id.lower():
        return text
    return f"{kind}: {text}"


def cited_turns(verdict: Verdict) -> str:
    """` (turns 2, 3)`: the turns the judge cited, when they say more than `verdict.turn`."""
    if not verdict.turns or verdict.turns == (verdict.turn,):
        return ""
    return " (turns " + ", ".join(str(t) for t in verdict.turns) + ")"


@dataclass(frozen=True)
class Problem:
    """One thing that went wrong (or was skipped) in some trials of a scenario, the same in
    each: a trial's own error (`text`), a `not_met` or `error` verdict, or the verdicts
    skipped for one reason (`skipped_ids`, `text` the reason)."""

    status: str
    """The trial's status for a trial error; the verdict's (`not_met`, `error`,
    `skipped`) for verdicts."""
    text: str
    verdict: Verdict | None = None
    trials: list[int] = field(default_factory=list[int])
    skipped_ids: list[str] = field(default_factory=list[str])


def problems(scenario: ScenarioResult, *, skipped: bool = True) -> list[Problem]:
    """What went wrong in `scenario`'s trials, identical problems of several trials merged
    (`Problem.trials`): each trial's error (unless its verdicts are the story), then its
    `not_met`, `error` and (with `skipped`) `skipped` verdicts (unless the trial's error
    already says why), in order of first appearance."""
    merged: dict[tuple[object, ...], Problem] = {}
    for trial in scenario.trials:
        for key, problem in _trial_problems(trial, skipped=skipped):
            kept = merged.setdefault(key, problem)
            if trial.trial not in kept.trials:
                kept.trials.append(trial.trial)
            kept.skipped_ids.extend(i for i in problem.skipped_ids if i not in kept.skipped_ids)
    return sorted(merged.values(), key=_problem_rank)


def _problem_rank(problem: Problem) -> int:
    """Trial errors first, then `not_met`, `error` and skipped verdicts."""
    if problem.verdict is None:
        return 3 if problem.skipped_ids else 0
    return 1 if problem.status == "not_met" else 2


def _trial_problems(
    trial: TrialResult, *, skipped: bool
) -> list[tuple[tuple[object, ...], Problem]]:
    out: list[tuple[tuple[object, ...], Problem]] = []
    if trial.error and trial.error != undecided_text(trial.verdicts, trial.insights):
        if skipped or trial.status != "skipped":
            out.append(((trial.status, trial.error), Problem(trial.status, trial.error)))
    for v in _verdicts(trial):
        if v.status in ("not_met", "error"):
            key = (v.status, v.id, v.kind, v.turn, v.description, v.reason, v.evidence, v.turns)
            out.append((key, Problem(v.status, v.reason, v)))
        elif skipped and v.status == "skipped" and v.reason != trial.error:
            out.append((("skipped", v.reason), Problem("skipped", v.reason, skipped_ids=[v.id])))
    return out
