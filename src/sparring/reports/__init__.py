"""Reports rendered from a `RunResult`: JSON (canonical), JUnit XML, Markdown; the live console.

Every renderer is a pure function `render_<format>(result) -> str` with a `write_<format>(result,
path)` beside it, in its own module (`sparring.reports.json`, `.junit`, `.markdown`); the live
terminal view is `sparring.reports.console.ConsoleView`. This package imports nothing heavy, so
importing one renderer does not pull in the others (or rich).

The small text helpers below are shared by the renderers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sparring.results import (
        RunResult,
        ScenarioResult,
        SubtestResult,
        TrialResult,
        UsageTotals,
        Verdict,
    )
    from sparring.transcript import Message

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_SPACES = re.compile(r"\s+")


def write_report_text(path: Path, text: str) -> None:
    """Write `text` to `path` as UTF-8, creating missing parent folders.

    Raises:
        OSError: the file cannot be written (permissions, a folder in the way).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", newline="\n")


def strip_control(text: str) -> str:
    """Remove control characters other than tab and newline (ANSI escapes lose their ESC)."""
    return _CONTROL.sub("", text)


def reply_timing(message: Message) -> str | None:
    """A reply's times as reports show them: `"820 ms"`, and for a voice reply
    `"820 ms · audio 2,400 ms · first audio 310 ms"`; `None` when none is known."""
    parts = [
        f"{label}{value:,.0f} ms"
        for label, value in (
            ("", message.latency_ms),
            ("audio ", message.audio_ms),
            ("first audio ", message.first_audio_ms),
        )
        if value is not None
    ]
    return " · ".join(parts) or None


def one_line(text: str, limit: int = 120) -> str:
    """`text` on one line: controls removed, whitespace runs collapsed, at most `limit` chars.

    A shortened text ends with `…` (counted in `limit`).
    """
    flat = _SPACES.sub(" ", strip_control(text)).strip()
    if len(flat) <= limit:
        return flat
    return flat[: max(0, limit - 1)].rstrip() + "…"


def plural(count: int, word: str) -> str:
    """`1 turn`, `2 turns`: `count` and `word`, with an `s` unless `count` is 1."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def trial_size(trial: TrialResult) -> str:
    """How much a trial talked: `3 turns` of its main conversation, and its sub-tests
    (`session.unfold` steps, each a conversation of its own): `2 sub-tests`, or
    `1 turn, 2 sub-tests` when it had both."""
    turns, subtests = trial.transcript.user_turns, len(trial.subtests)
    parts = [plural(turns, "turn")] if turns or not subtests else []
    return ", ".join(parts + ([plural(subtests, "sub-test")] if subtests else []))


REPLAYED_HISTORY = "history replayed (the agent's own replies)"
"""Said of a sub-test whose target replayed the written history (`SubtestResult.history`)."""


def subtest_verdicts(trial: TrialResult, sub: SubtestResult) -> list[Verdict]:
    """The verdicts of `trial` that belong to its sub-test `sub`: ids under `sub.id`
    (`unfold1.step4.should1` for `unfold1.step4`), in the trial's order."""
    prefix = f"{sub.id}."
    return [v for v in trial.verdicts if v.id.startswith(prefix)]


def not_judged(status: str, verdicts: Iterable[Verdict], *, pending: int = 0) -> str:
    """` (2 not judged)` to follow `status` when some of `verdicts` were `skipped` (a
    `should` with no judge model, a check after the trial had already failed) or `pending`
    trials' evaluation gates were never judged (`TrialResult.not_judged`), so a `passed`
    never hides what went unchecked; `""` when none were, or `status` is `skipped` (which
    says it already)."""
    skipped = status != "skipped" and sum(v.status == "skipped" for v in verdicts) + pending
    return f" ({skipped} not judged)" if skipped else ""


def trial_not_judged(trial: TrialResult) -> str:
    """`not_judged` for one trial: ` (1 not judged)` after its status, or `""`."""
    pending = int(trial.evaluations_passed == "pending")
    return not_judged(trial.status, trial.verdicts, pending=pending)


def scenario_not_judged(scenario: ScenarioResult) -> str:
    """`not_judged` for a scenario, after `shown_status(scenario)`: what its counted
    trials (`ScenarioResult.counted`) left unjudged, ` (3 not judged)`, or `""`."""
    counted = scenario.counted
    pending = sum(t.evaluations_passed == "pending" for t in counted)
    verdicts = (v for t in counted for v in t.verdicts)
    return not_judged(shown_status(scenario), verdicts, pending=pending)


def unjudged_passes(trials: Iterable[TrialResult]) -> int:
    """How many of `trials` passed with something not judged (`TrialResult.not_judged`: a
    skipped `should` or check, pending evaluation gates), so a pass rate can say how many
    of its passes were not fully checked (as `RunResult.skipped_anything` counts them)."""
    return sum(t.status == "passed" and t.not_judged > 0 for t in trials)


def unjudged_note(trials: Iterable[TrialResult]) -> str:
    """` (60 passed with steps not judged)` to follow a pass rate over `trials`, or `""`."""
    count = unjudged_passes(trials)
    return f" ({count} passed with steps not judged)" if count else ""


def shown_status(scenario: ScenarioResult) -> str:
    """The status reports show for `scenario`: `interrupted` when every trial that ran was
    cut off by Ctrl-C / SIGTERM (end reason `interrupted`), so none was decided; else
    `scenario.status` (which counts such trials as errors)."""
    trials = scenario.trials
    if trials and all(t.end_reason == "interrupted" for t in trials):
        return "interrupted"
    return scenario.status


def shown_pass_rate(scenario: ScenarioResult) -> str:
    """`scenario`'s pass rate as `percent` shows it; `-` when it is shown as `interrupted`
    (no trial was decided, so 0% would be wrong)."""
    return percent(None if shown_status(scenario) == "interrupted" else scenario.pass_rate)


def why_not_run(result: RunResult) -> str:
    """Why planned trials of `result` never started: the run was interrupted, or else (the
    runner leaves trials out for no other reason) fail-fast stopped it."""
    return "the run was interrupted" if result.interrupted else "--fail-fast stopped the run"


def stopped_by_fail_fast(result: RunResult) -> bool:
    """Whether fail-fast left planned trials unrun (see `why_not_run`)."""
    return not result.interrupted and any(s.missing_trials for s in result.scenarios)


def percent(fraction: float | None) -> str:
    """`0.8` -> `80%`, `2/3` -> `66.7%`; `None` -> `-`."""
    if fraction is None:
        return "-"
    value = round(fraction * 100, 1)
    return f"{value:g}%"


EXIT_CODE_MEANING: dict[int, str] = {
    0: "every scenario that ran passed",
    1: "at least one scenario failed",
    3: "some scenarios could not run or stayed undecided (errors, timeouts, invalid trials "
    "whose simulated user failed), a suite hook failed, or steps were skipped under "
    "--fail-on-skip",
    130: "the run was interrupted; the reports hold the trials that finished",
}
"""What `RunResult.exit_code` means, for summaries (`reports.outcome.exit_meaning` adds
what failed to 1 and the causes to 3)."""


def usage_text(totals: UsageTotals) -> str | None:
    """One line on what a run (or scenario) spent, `None` when it spent nothing measurable:
    `40 model calls, 12,345 input + 2,345 output tokens, $0.0123 · target 5,000 input + 800
    output tokens`. Calls at unknown prices are named, with where to set prices (`$0.0123 + 3
    unpriced calls (set prices in [tool.sparring.prices])`), so a partial sum is never shown
    as the whole cost."""
    parts: list[str] = []
    if totals.model_calls:
        parts.append(
            f"{plural(totals.model_calls, 'model call')}, {totals.input_tokens:,} "
            f"input + {totals.output_tokens:,} output tokens, {_cost_text(totals)}"
        )
    if totals.target_input_tokens is not None or totals.target_output_tokens is not None:
        parts.append(
            f"target {totals.target_input_tokens or 0:,} input + "
            f"{totals.target_output_tokens or 0:,} output tokens"
        )
    return " · ".join(parts) or None


def _cost_text(totals: UsageTotals) -> str:
    unpriced = plural(totals.unpriced_calls, "unpriced call")
    if totals.unpriced_calls == totals.model_calls:
        return f"cost unknown ({unpriced}: {_PRICES_FIX})"
    if totals.unpriced_calls:
        return f"{usd(totals.cost_usd)} + {unpriced} ({_PRICES_FIX})"
    return usd(totals.cost_usd)


_PRICES_FIX = "set prices in [tool.sparring.prices]"


def usd(amount: float) -> str:
    """`$0`, `$0.0042` below one cent, `$1.23` from there on."""
    if amount == 0:
        return "$0"
    return f"${amount:.4f}" if amount < 0.01 else f"${amount:,.2f}"
