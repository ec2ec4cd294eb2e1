"""The live terminal view of a run, and the summary printed at its end.

`ConsoleView` is the runner's observer. On a terminal it keeps a `rich.live.Live` area with
one panel per running conversation (scenario, trial n/N, its latest messages, verdicts as
they arrive) and an overall progress line; finished trials leave the area and print one
permanent line each. Elsewhere (CI logs, pipes) it prints plain lines, one per event that
matters, without ANSI codes, flushed as they happen. Both end with `print_summary`.

Work per event is O(1): events only update small records; the live area is redrawn by rich's
refresh thread a few times per second, never per event.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from sparring.events import (
    Event,
    JudgeStarted,
    MessageAdded,
    RunFinished,
    RunStarted,
    ScenarioFinished,
    TrialFinished,
    TrialStarted,
    VerdictAdded,
)
from sparring.reports import (
    REPLAYED_HISTORY,
    not_judged,
    one_line,
    plural,
    subtest_verdicts,
    trial_size,
)
from sparring.reports.console_summary import (
    ASCII,
    STYLE,
    SYMBOLS,
    VERDICT_SYMBOL,
    print_summary,
    scenario_line,
    status_text,
    verdict_text,
)
from sparring.reports.insights import gate_verdicts, trial_facts
from sparring.reports.outcome import verdict_what
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.transcript import Message

_LINE_CHARS = 160
_PANEL_LINES = 6
"""Height of one conversation panel: borders, up to 3 messages, the verdict line."""


@dataclass(slots=True)
class _Running:
    """What the live area shows for one running trial."""

    name: str
    trial: int
    trials: int | None
    turn: int = 0
    lines: deque[tuple[str, str]] = field(default_factory=lambda: deque(maxlen=3))
    verdicts: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])


def default_console(*, stderr: bool = False) -> Console:
    """A console on stdout (or `stderr`, when stdout carries a report); CI logs (not a
    terminal, no COLUMNS) get 120 columns instead of rich's 80."""
    console = Console(stderr=stderr)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(stderr=stderr, width=120)
    return console


class ConsoleView:
    """Shows a run as it happens; pass it to the runner as `observer`.

    Use it as a context manager around the run: `__enter__` starts the live area (terminal
    only), `__exit__` stops it and prints the summary of the finished run. Used without
    `with`, it prints plain lines and prints the summary when the run finishes.

    Args:
        console: Where to print; default `default_console()` (stdout).
        live: `None` = live area when the console is an interactive terminal (rich's
            detection; `TTY_INTERACTIVE=0` turns it off); `False` = plain lines always;
            `True` = live area even when rich does not detect a terminal.
        refresh_per_second: Redraws of the live area per second.
        show_messages: Print a plain line per user/agent message (plain mode).
        quiet: Print only one line per finished scenario, then the summary without its
            table (no live area).
        summary_at_exit: Print the summary when the run finishes; `False` when the caller
            prints it with `summary` (with the group gates).
    """

    def __init__(
        self,
        *,
        console: Console | None = None,
        live: bool | None = None,
        refresh_per_second: float = 6,
        show_messages: bool = True,
        quiet: bool = False,
        summary_at_exit: bool = True,
    ) -> None:
        self.console = console or default_console()
        self._want_live = not quiet and (self.console.is_interactive if live is None else live)
        self._refresh_per_second = refresh_per_second
        self._show_messages = show_messages
        self._quiet = quiet
        self._summary_at_exit = summary_at_exit
        utf = self.console.encoding.lower().startswith("utf")
        self._sym = SYMBOLS if utf else ASCII
        self._lock = threading.Lock()
        self._live: Live | None = None
        self._entered = False
        self._running: dict[tuple[str, int], _Running] = {}
        self._trials_of: dict[str, int | None] = {}
        self._turns: dict[tuple[str, int], int] = {}
        self._counts: dict[str, int] = {}
        self._total = 0
        self._done = 0
        self._started = time.monotonic()
        self._result: RunResult | None = None
        self._places: dict[str, int] = {}
        """`quiet`: each scenario's place in the run, so its line prints in file order."""
        self._waiting: dict[int, Text] = {}
        self._next_place = 0
        self._summary_printed = False
        self._broken = False

    # --- context manager -----------------------------------------------------------------

    def __enter__(self) -> ConsoleView:
        self._entered = True
        self._started = time.monotonic()
        if self._want_live:
            self._live = Live(
                _LiveArea(self),
                console=self.console,
                transient=True,
                refresh_per_second=self._refresh_per_second,
            )
            self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop_live()
        self._print_waiting(every=True)
        if self._result is not None:
            self._print_summary_once()
        elif self._total:
            self._emit(
                Text(
                    f"run interrupted: {self._done}/{self._total} trials finished "
                    f"({self._count_text()})",
                    style="yellow",
                )
            )
        self._entered = False

    # --- events ----------------------------------------------------------------------------

    def __call__(self, event: Event) -> None:
        """Handle one runner event; never raises (a display bug must not stop a run)."""
        if self._broken:
            if isinstance(event, RunFinished):
                self._result = event.result
            return
        try:
            self._handle(event)
        except Exception as e:  # the observer contract forbids raising
            self._broken = True
            self._stop_live()
            self.console.print(
                Text(
                    f"sparring: the console view failed ({e!r}); the run goes on without it",
                    style="yellow",
                )
            )

    def _handle(self, event: Event) -> None:
        match event:
            case RunStarted():
                self._on_run_started(event)
            case TrialStarted():
                self._on_trial_started(event)
            case MessageAdded():
                self._on_message(event)
            case VerdictAdded():
                self._on_verdict(event)
            case TrialFinished():
                self._on_trial_finished(event.result)
            case ScenarioFinished():
                self._on_scenario_finished(event.result)
            case RunFinished():
                self._result = event.result
                self._print_waiting(every=True)
                if not self._entered:
                    self._print_summary_once()
            case JudgeStarted():  # the live view shows a trial running until it finished
                pass

    def _on_run_started(self, event: RunStarted) -> None:
        with self._lock:
            self._total = event.trials
            self._started = time.monotonic()
        models = [
            f"{label} model {name}"
            for label, name in (("user", event.user_model), ("judge", event.judge_model))
            if name
        ]
        if self._quiet:
            scenarios = event.run.scenarios if event.run is not None else []
            self._places = {s.scenario_id: place for place, s in enumerate(scenarios)}
            return
        self._emit(
            Text(
                " · ".join(
                    [
                        f"sparring: {plural(event.scenarios, 'scenario')}, "
                        f"{plural(event.trials, 'trial')}",
                        *models,
                    ]
                ),
                style="bold",
            )
        )

    def _on_trial_started(self, event: TrialStarted) -> None:
        key = (event.scenario_id, event.trial)
        with self._lock:
            self._trials_of[event.scenario_id] = event.trials
            self._turns[key] = 0
            if self._live is not None:
                self._running[key] = _Running(event.name, event.trial, event.trials)
        if self._plain:
            label = self._trial_label(event.scenario_id, event.trial)
            self._emit(Text(f"{self._sym['start']} {label} started"))

    def _on_message(self, event: MessageAdded) -> None:
        key = (event.scenario_id, event.trial)
        message = event.message
        with self._lock:
            turn = self._turns.get(key, 0) + (message.role == "user")
            self._turns[key] = turn
            running = self._running.get(key)
            if running is not None:
                running.turn = turn
                running.lines.append((message.role, _message_text(message, turn)))
        if self._plain and self._show_messages:
            prefix = f"  {event.scenario_id} #{event.trial} "
            self._emit(Text(prefix + _message_text(message, turn)))

    def _on_verdict(self, event: VerdictAdded) -> None:
        verdict = event.verdict
        with self._lock:
            running = self._running.get((event.scenario_id, event.trial))
            if running is not None:
                running.verdicts.append((verdict.id, verdict.status))
        if self._plain and verdict.status != "skipped":
            symbol = self._sym[VERDICT_SYMBOL[verdict.status]]
            text = one_line(
                f"{event.scenario_id} #{event.trial} {symbol} {_verdict_line(verdict)}",
                2 * _LINE_CHARS,
            )
            self._emit(Text(f"  {text}", style=STYLE[verdict.status]))

    def _on_trial_finished(self, trial: TrialResult) -> None:
        key = (trial.scenario_id, trial.trial)
        with self._lock:
            self._running.pop(key, None)
            self._turns.pop(key, None)
            self._done += 1
            self._counts[trial.status] = self._counts.get(trial.status, 0) + 1
        if self._quiet:
            return
        label = self._trial_label(trial.scenario_id, trial.trial)
        facts = f"{trial.end_reason}, {trial_size(trial)}, {trial.duration_ms / 1000:.1f} s"
        facts = ", ".join([facts, *trial_facts(trial)])
        line = f"{self._sym[trial.status]} {label} {status_text(trial.status)} ({facts})"
        reason = _first_problem(trial)
        if reason:
            line += f": {reason}"
        self._emit(Text(one_line(line, 2 * _LINE_CHARS), style=STYLE[trial.status]))
        for sub in trial.subtests:  # unfold steps, in the order they were written
            replayed = f", {REPLAYED_HISTORY}" if sub.history == "replayed" else ""
            text = (
                f"  {self._sym[sub.status]} {sub.id} {status_text(sub.status)}"
                f"{not_judged(sub.status, subtest_verdicts(trial, sub))}{replayed}: "
                f"{sub.name}"
            )
            self._emit(
                Text(
                    one_line(text + (f": {sub.error}" if sub.error else ""), 2 * _LINE_CHARS),
                    style=STYLE[sub.status],
                )
            )

    def _on_scenario_finished(self, result: ScenarioResult) -> None:
        """Print the scenario's line; `quiet` prints them in the run's (file) order, each
        once it and every scenario before it finished."""
        line = scenario_line(result, self._sym)
        place = self._places.get(result.scenario_id)
        if place is None:  # not quiet, or the run's order is unknown: as they finish
            self._emit(line)
            return
        with self._lock:
            self._waiting[place] = line
        self._print_waiting()

    def _print_waiting(self, *, every: bool = False) -> None:
        """Print the waiting scenario lines up to the first scenario still running, or
        `every` one (the run ended, maybe with scenarios left unfinished)."""
        with self._lock:
            ready: list[Text] = []
            for place in sorted(self._waiting):
                if place > self._next_place and not every:
                    break
                ready.append(self._waiting.pop(place))
                self._next_place = place + 1
        for line in ready:
            self._emit(line)

    @property
    def _plain(self) -> bool:
        """Print a line per event: no live area, and not `quiet`."""
        return self._live is None and not self._quiet

    # --- output ----------------------------------------------------------------------------

    def _emit(self, text: Text) -> None:
        """Print one permanent line (above the live area when it runs); rich flushes it."""
        self.console.print(text, soft_wrap=self._live is None, highlight=False)

    def _trial_label(self, scenario_id: str, trial: int) -> str:
        of = self._trials_of.get(scenario_id)
        return f"{scenario_id}: trial {trial}/{of}" if of else f"{scenario_id}: trial {trial}"

    def _count_text(self) -> str:
        order = ("passed", "failed", "error", "timed_out", "invalid", "skipped", "done")
        parts = [f"{self._counts[s]} {status_text(s)}" for s in order if self._counts.get(s)]
        return ", ".join(parts) or "none finished"

    def _stop_live(self) -> None:
        live, self._live = self._live, None
        if live is not None:
            live.stop()
        with self._lock:
            self._running.clear()

    def _print_summary_once(self) -> None:
        if self._result is not None and self._summary_at_exit:
            self.summary(self._result)

    def summary(
        self,
        result: RunResult,
        *,
        gate_lines: Sequence[str] = (),
        exit_status: tuple[int, str] | None = None,
    ) -> None:
        """Print the summary of `result` (see `print_summary`), once: later calls do
        nothing. Without `summary_at_exit`, the caller calls it after the run."""
        if self._summary_printed:
            return
        self._summary_printed = True
        print_summary(
            result,
            console=self.console,
            symbols=self._sym,
            table=not self._quiet,
            gate_lines=gate_lines,
            exit_status=exit_status,
        )

    # --- live area (called from rich's refresh thread) -----------------------------------

    def render(self) -> RenderableType:
        """The live area as a rich renderable: a panel per running trial (as many as fit),
        then the progress line. Thread-safe; rich calls it from its refresh thread."""
        with self._lock:
            running = list(self._running.values())
            done, total, counts = self._done, self._total, dict(self._counts)
        room = max(1, (self.console.size.height - 3) // _PANEL_LINES)
        panels: list[RenderableType] = [_panel(r) for r in running[:room]]
        if len(running) > room:
            panels.append(Text(f"… and {len(running) - room} more running", style="dim"))
        return Group(*panels, self._progress(done, total, counts))

    def _progress(self, done: int, total: int, counts: dict[str, int]) -> RenderableType:
        elapsed = time.monotonic() - self._started
        errors = counts.get("error", 0) + counts.get("timed_out", 0)
        text = Text(f" {done}/{total} trials · ")
        text.append(f"{counts.get('passed', 0)} passed", style="green")
        text.append(" · ")
        text.append(f"{counts.get('failed', 0)} failed", style="red")
        text.append(" · ")
        text.append(f"{errors} error", style="yellow")
        if counts.get("invalid"):
            text.append(f" · {counts['invalid']} invalid", style="magenta")
        text.append(f" · {elapsed:.0f} s")
        grid = Table.grid()
        grid.add_row(ProgressBar(total=max(total, 1), completed=done, width=30), text)
        return grid


class _LiveArea:
    """Renders the view's current state whenever rich draws the live area: on its refresh
    tick, and when a permanent line is printed above it (so that redraw is never stale)."""

    def __init__(self, view: ConsoleView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.view.render()


def _panel(r: _Running) -> Panel:
    of = f"/{r.trials}" if r.trials else ""
    body = [
        Text(line, style="cyan" if role == "user" else "", no_wrap=True, overflow="ellipsis")
        for role, line in r.lines
    ]
    verdicts = Text()
    for verdict_id, status in r.verdicts:
        verdicts.append(f"{verdict_id} ", style=STYLE[status])
    if verdicts:
        body.append(verdicts)
    failed = any(status == "not_met" for _, status in r.verdicts)
    return Panel(
        Group(*body) if body else Text("starting…", style="dim"),
        title=f"{one_line(r.name, 60)} · trial {r.trial}{of} · turn {r.turn}",
        title_align="left",
        border_style="red" if failed else "blue",
    )


# --- shared text --------------------------------------------------------------------------


def _message_text(message: Message, turn: int) -> str:
    latency = f" ({message.latency_ms:.0f} ms)" if message.latency_ms is not None else ""
    content = one_line(message.content[: 2 * _LINE_CHARS], _LINE_CHARS)
    content = content or ("(empty reply)" if message.role == "agent" else "(empty)")
    tools = ""
    if message.tool_calls:
        tools = " [tools: " + ", ".join(c.name for c in message.tool_calls[:5]) + "]"
    return f"t{turn} {message.role}{latency}: {content}{tools}"


def _verdict_line(v: Verdict) -> str:
    """`t1.check1 @ turn 1 not met: contains "x": <reason>` (a met one without reason)."""
    at = f" @ turn {v.turn}" if v.turn is not None else ""
    text = f"{v.id}{at} {status_text(v.status)}: {one_line(verdict_what(v), 120)}"
    return f"{text}: {v.reason}" if v.reason and v.status != "met" else text


def _first_problem(trial: TrialResult) -> str:
    if trial.status in ("error", "timed_out", "invalid") and trial.error:
        return trial.error
    order = {"not_met": 0, "error": 1}
    gates = gate_verdicts(trial.insights)
    failures = sorted([*trial.failures, *gates], key=lambda v: order[v.status])
    if failures:
        v = failures[0]
        return f"{verdict_text(v, reason=False)}: {v.reason or status_text(v.status)}"
    return ""
