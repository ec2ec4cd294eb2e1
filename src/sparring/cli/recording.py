"""`sparring run`'s results store: every run kept as it happens (`--store`, `--no-store`),
`--resume` of an interrupted run and `--rerun-failed` of a finished one.

The runner never imports the store: `Recording.observe` wraps the CLI's observer, writes
each event's news to the store and passes the events on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sparring.config import Settings, load_settings
from sparring.errors import UserError
from sparring.events import (
    Event,
    Observer,
    RunFinished,
    RunStarted,
    TrialFinished,
)
from sparring.results import RunResult
from sparring.secrets import MASK, mask_url

if TYPE_CHECKING:
    from sparring.runner import AnyRunnable
    from sparring.store.database import Store
    from sparring.store.writer import RunRecord, RunWriter

RERUN_STATUSES = ("failed", "error")
"""Scenario statuses `--rerun-failed` runs again."""


@dataclass(kw_only=True)
class RunCall:
    """What `sparring run` runs: the options as given, or, for `--resume` and
    `--rerun-failed`, completed with what the stored run was given."""

    paths: tuple[str, ...]
    pattern: str | None
    tags: tuple[str, ...]
    settings: Settings
    recording: Recording


def prepare_run(
    *,
    paths: tuple[str, ...],
    pattern: str | None,
    tags: tuple[str, ...],
    options: Mapping[str, Any],
    setting_names: Sequence[str],
) -> RunCall:
    """Settings and the store for `sparring run`; `options` holds the command's options
    (`no_store`, `list_only`, `resume` and `rerun_failed` among them: `""` means the
    default run). A listing of a new run opens no store.

    Raises:
        UserError: `--no-store` with `--resume` or `--rerun-failed`, both of those, a
            store that cannot be opened, or a run that cannot be resumed or rerun.
    """
    given = {k: options.get(k) for k in setting_names}
    settings = load_settings(given)
    resume, rerun = options.get("resume"), options.get("rerun_failed")
    _check_shard_options(options)
    if resume is not None and rerun is not None:
        raise UserError("give --resume or --rerun-failed, not both")
    listing = options.get("list_only") and resume is None and rerun is None
    if options.get("no_store") or listing:  # a listing keeps nothing
        if resume is not None or rerun is not None:
            raise UserError("--resume and --rerun-failed read the results store: drop --no-store")
        return RunCall(
            paths=paths, pattern=pattern, tags=tags, settings=settings, recording=Recording()
        )
    from sparring.store.database import open_store
    from sparring.store.location import store_url

    store = open_store(store_url(settings.store, cwd=Path.cwd()))
    if options.get("shard") is not None:
        return _shard_call(
            store, options, given=given, settings=settings, current=(paths, pattern, tags)
        )
    if resume is None and rerun is None:
        invocation = _invocation(paths, pattern, tags, given)
        return RunCall(
            paths=paths,
            pattern=pattern,
            tags=tags,
            settings=settings,
            recording=Recording(store=store, record=_record(invocation, settings)),
        )
    return _stored_call(
        store, resume=resume, rerun=rerun, given=given, current=(paths, pattern, tags)
    )


def _check_shard_options(options: Mapping[str, Any]) -> None:
    """Refuse `--shard` without `--run-id` (or the other way round), or with an option that
    cannot be sliced.

    Raises:
        UserError: what goes with what, and why.
    """
    shard, run_id = options.get("shard"), options.get("run_id")
    if (shard is None) != (run_id is None):
        raise UserError(
            "--shard K/N and --run-id ID go together: every slice runs into the run ID names "
            "(in CI, e.g. --run-id ${{ github.run_id }})"
        )
    clash = [
        name
        for name, key in (
            ("--resume", "resume"),
            ("--rerun-failed", "rerun_failed"),
            ("--no-store", "no_store"),
            ("--adaptive", "adaptive"),
        )
        if options.get(key) not in (None, False)
    ]
    if shard is not None and clash:
        raise UserError(
            f"--shard cannot go with {', '.join(clash)}: the slices meet in the results store "
            "and each runs a fixed set of trials"
        )


def parse_shard(text: str) -> tuple[int, int]:
    """`"K/N"` -> `(K, N)`, 1 <= K <= N.

    Raises:
        UserError: not two whole numbers K/N with 1 <= K <= N.
    """
    number, _, of = text.partition("/")
    if not (number.isdigit() and of.isdigit() and 1 <= int(number) <= int(of)):
        raise UserError(f"--shard {text!r}: give K/N with 1 <= K <= N, e.g. --shard 2/3")
    return int(number), int(of)


def _shard_call(
    store: Store,
    options: Mapping[str, Any],
    *,
    given: dict[str, Any],
    settings: Settings,
    current: tuple[tuple[str, ...], str | None, tuple[str, ...]],
) -> RunCall:
    """The call that runs one slice (`--shard K/N`) into run `--run-id` of `store`: the
    options as given, each scenario's trial count fixed here (`Recording.chosen` slices).

    Raises:
        UserError: the slice cannot join the run (`sparring.store.shards.check_shard`).
    """
    from sparring.store.shards import check_shard

    shard, run_id = parse_shard(str(options["shard"])), str(options["run_id"])
    check_shard(store, run_id, shard)
    paths, pattern, tags = current
    recording = Recording(
        store=store,
        record=_record(_invocation(paths, pattern, tags, given), settings),
        shard=shard,
        shard_run_id=run_id,
        trials=settings.trials,
    )
    settings = settings.model_copy(update={"trials": None})
    return RunCall(paths=paths, pattern=pattern, tags=tags, settings=settings, recording=recording)


def _stored_call(
    store: Store,
    *,
    resume: str | None,
    rerun: str | None,
    given: dict[str, Any],
    current: tuple[tuple[str, ...], str | None, tuple[str, ...]],
) -> RunCall:
    """The call that resumes or reruns a stored run: its invocation, overridden by what
    was given now."""
    from sparring.store.reading import run_invocation

    if resume is not None:
        run_id, plan = _resume_plan(store, resume or None)
        recording = Recording(store=store, resumed=run_id, missing=plan)
    else:
        run_id, failed = _failed_scenarios(store, rerun or None)
        recording = Recording(store=store, only=failed)
    stored = run_invocation(store, run_id)
    if "suite_id" in stored:  # run by `sparring serve`: its test cases live in the store
        raise UserError(
            f"run {run_id} is a run of the dashboard's test suite {stored['suite_id']}: resume "
            "it from the dashboard (Resume on the suite's page, or POST "
            f"/api/suites/{stored['suite_id']}/resume), or Rerun it there"
        )
    if stored.get("cwd") != str(Path.cwd()):
        raise UserError(
            f"run {run_id} ran in {stored.get('cwd')}; run this from there (its test paths "
            "are relative to it)"
        )
    paths, pattern, tags = current
    paths, pattern = paths or tuple(stored["paths"]), pattern or stored.get("pattern")
    tags = tags or tuple(stored.get("tags", ()))
    options, masked = _unmasked(stored.get("options", {}))
    merged = {**options, **{k: v for k, v in given.items() if v is not None}}
    settings = load_settings(merged)
    _say_masked(run_id, masked, settings)
    if resume is not None:  # the stored plan says how many trials each scenario has
        settings = settings.model_copy(update={"trials": None})
    else:
        recording.record = _record(
            _invocation(paths, pattern, tags, merged), settings, parent=run_id
        )
    return RunCall(paths=paths, pattern=pattern, tags=tags, settings=settings, recording=recording)


def _resume_plan(store: Store, ref: str | None) -> tuple[str, dict[str, list[int]]]:
    """The run to resume, claimed for this process (`claim_run`), and per scenario id its
    trial numbers without a result.

    Raises:
        UserError: no such run, a run still running or finished, nothing missing, or
            another process claimed the run first (`claim_run`).
    """
    from sparring.store.provenance import current_provenance
    from sparring.store.reading import find_run, finished_trials, load_run
    from sparring.store.writer import claim_run

    run = find_run(store, ref, where=lambda r: r.status == "interrupted", what="interrupted run")
    if run.status != "interrupted":
        raise UserError(
            f"run {run.id} is {run.status}, so there is nothing to resume"
            + ("" if run.status == "running" else "; --rerun-failed runs its failures again")
        )
    done = finished_trials(store, run.id)
    planned = {
        s.scenario_id: s.planned_trials or len(s.trials) for s in load_run(store, run.id).scenarios
    }
    missing = {
        sid: [n for n in range(1, count + 1) if n not in done.get(sid, set())]
        for sid, count in planned.items()
    }
    missing = {sid: numbers for sid, numbers in missing.items() if numbers}
    if not missing:
        raise UserError(f"run {run.id} has a result for every trial; `sparring show {run.id}`")
    if not claim_run(store, run.id, provenance=current_provenance(Path.cwd())):
        raise UserError(
            f"run {run.id} is being resumed by another sparring process; wait for it to end "
            "(`sparring runs` shows its status)"
        )
    return run.id, missing


def _failed_scenarios(store: Store, ref: str | None) -> tuple[str, set[str]]:
    """The run to rerun (default: the newest that is not running) and the ids of its
    scenarios that failed or erred.

    Raises:
        UserError: no such run, or none of its scenarios failed or erred.
    """
    from sparring.store.reading import find_run, load_run

    run = find_run(store, ref, where=lambda r: r.status != "running", what="finished run")
    failed = {
        s.scenario_id for s in load_run(store, run.id).scenarios if s.status in RERUN_STATUSES
    }
    if not failed:
        raise UserError(f"no scenario failed or erred in run {run.id}; nothing to rerun")
    return run.id, failed


_URL_OPTIONS = ("base_url",)
"""Setting options that are URLs: kept as reports show them (`mask_url`: no user name,
password, query or fragment), so a credential in one is never stored."""


def _unmasked(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """A stored run's `options` without the URLs kept masked, and those URLs by option
    name: the current settings give them again (command line, environment, config)."""
    masked = {k: str(v) for k, v in options.items() if k in _URL_OPTIONS and MASK in str(v)}
    return {k: v for k, v in options.items() if k not in masked}, masked


def _say_masked(run_id: str, masked: Mapping[str, str], settings: Settings) -> None:
    """Tell which URLs of run `run_id` were stored masked, and what is used instead."""
    for name, shown in masked.items():
        now = getattr(settings, name)
        option = "--" + name.replace("_", "-")
        instead = (
            f"using {mask_url(now)} from the current settings"
            if now
            else f"no {name} is set now: give {option} again"
        )
        click.secho(
            f"note: run {run_id} was given {option} {shown}, stored masked (it may hold a "
            f"credential); {instead}",
            fg="yellow",
            err=True,
        )


def _invocation(
    paths: tuple[str, ...], pattern: str | None, tags: tuple[str, ...], given: Mapping[str, Any]
) -> dict[str, Any]:
    """What `sparring run` was given, to run it again (the store URL left out: it is how
    the run is found, and may hold a password; URL options masked, see `_URL_OPTIONS`)."""
    options = {
        k: mask_url(v) if k in _URL_OPTIONS else v
        for k, v in given.items()
        if v is not None and k != "store"
    }
    return {
        "cwd": str(Path.cwd()),
        "paths": list(paths),
        "pattern": pattern,
        "tags": list(tags),
        "options": options,
    }


def _record(
    invocation: dict[str, Any], settings: Settings, *, parent: str | None = None
) -> RunRecord:
    from sparring.store.recorder import run_record

    return run_record(invocation, settings, cwd=Path.cwd(), parent=parent)


@dataclass(kw_only=True)
class Recording:
    """Keeps one `sparring run` in the store (or does nothing, with no `store`).

    `resumed` is the stored run a `--resume` completes, `missing` its trial numbers to run
    per scenario id; `only` the scenario ids a `--rerun-failed` runs. `shard` is the slice
    `(K, N)` of the trials this process runs into run `shard_run_id` (`missing` then holds
    its trial numbers, `trials` the `--trials` override, `planned` every scenario's count).
    """

    store: Store | None = None
    record: RunRecord | None = None
    resumed: str | None = None
    missing: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    only: set[str] | None = None
    shard: tuple[int, int] | None = None
    shard_run_id: str | None = None
    trials: int | None = None
    planned: dict[str, int] = field(default_factory=dict[str, int])
    _writer: RunWriter | None = None

    def chosen(self, runnables: list[AnyRunnable]) -> list[AnyRunnable]:
        """The scenarios and Python tests to run: for `--rerun-failed` those that failed
        or erred; for `--resume` those with missing trials, each with as many trials as
        are missing (numbered as in the stored run by `observe`).

        Raises:
            UserError: a scenario of the stored run is no longer in the test files.
        """
        if self.shard is not None:
            return self._slice(runnables)
        wanted = self.only if self.only is not None else set(self.missing) if self.resumed else None
        if wanted is None:
            return runnables
        found = {r.id for r in runnables}
        if lost := sorted(wanted - found):
            raise UserError(
                f"scenarios of the stored run are no longer in the test files: {', '.join(lost)}"
            )
        kept = [r for r in runnables if r.id in wanted]
        if not self.resumed:
            return kept
        return [_with_trials(r, len(self.missing[r.id])) for r in kept]

    def _slice(self, runnables: list[AnyRunnable]) -> list[AnyRunnable]:
        """Slice K of N: every N-th of the (scenario, trial number) pairs in load order,
        starting at the K-th, so the N slices hold every trial once; each scenario with as
        many trials as its slice holds (numbered as in the whole run by `observe`).

        Raises:
            UserError: a scenario has a trial range (`trials: {min, max}`).
        """
        assert self.shard is not None
        number, of = self.shard
        for r in runnables:
            count = self.trials or r.trials
            if not isinstance(count, int):
                raise UserError(
                    f"scenario {r.id} has trials {{min, max}}: --shard slices a fixed number "
                    "of trials; give --trials N"
                )
            self.planned[r.id] = count
        pairs = [(r.id, n) for r in runnables for n in range(1, self.planned[r.id] + 1)]
        for scenario_id, trial in pairs[number - 1 :: of]:
            self.missing.setdefault(scenario_id, []).append(trial)
        return [_with_trials(r, len(self.missing[r.id])) for r in runnables if r.id in self.missing]

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after each event was kept in the store (trial numbers of a resumed
        run are renumbered first, so every observer sees the stored run's numbers)."""
        if self.store is None:
            return observer

        def recorded(event: Event) -> None:
            event = self._renumbered(event)
            if isinstance(event, RunStarted) and event.run is not None:
                self._start(event.run)
            elif isinstance(event, TrialFinished) and self._writer is not None:
                self._writer.add(event.result)
            elif isinstance(event, RunFinished):
                event = RunFinished(self._finished(event.result))
            observer(event)

        return recorded

    def close(self, result: RunResult, *, exit_code: int) -> None:
        """Write the run's end with `exit_code`, the one `sparring run` exits with (group
        gates and a report that could not be written included), and say where it is kept,
        or what the store could not keep."""
        writer = self._writer
        if writer is None or self.store is None:
            return
        writer.finish(result, exit_code=exit_code)
        self.store.close()
        if writer.errors:
            click.secho(
                f"warning: the results store could not keep all of run {writer.run_id}: "
                f"{writer.errors[0]}",
                fg="yellow",
                err=True,
            )
        elif self.shard is not None:
            click.echo(
                f"Stored slice {self.shard[0]}/{self.shard[1]} in run {writer.run_id} "
                f"(`sparring report {writer.run_id}` has every slice that ended)",
                err=True,
            )
        else:
            click.echo(f"Stored as run {writer.run_id} (`sparring show {writer.run_id}`)", err=True)

    def _start(self, planned: RunResult) -> None:
        from sparring.store.provenance import current_provenance
        from sparring.store.writer import RunWriter

        assert self.store is not None
        self._writer = RunWriter(self.store)
        if self.resumed:
            self._writer.reopen(self.resumed, provenance=current_provenance(Path.cwd()))
        elif self.shard is not None and self.shard_run_id is not None:
            assert self.record is not None
            whole = [
                s.model_copy(update={"planned_trials": self.planned.get(s.scenario_id, 0)})
                for s in planned.scenarios
            ]
            planned = planned.model_copy(update={"run_id": self.shard_run_id, "scenarios": whole})
            self._writer.join(
                planned, record=self.record, shard=self.shard, order=list(self.planned)
            )
        else:
            assert self.record is not None
            self._writer.start(planned.model_copy(deep=True), record=self.record)

    def _finished(self, result: RunResult) -> RunResult:
        """Flush the trials; a resumed run's result is the whole stored run."""
        if self._writer is None:
            return result
        self._writer.flush()
        if self.shard_run_id is not None:
            return result.model_copy(update={"run_id": self.shard_run_id})
        if not self.resumed or self.store is None:
            return result
        from sparring.store.reading import load_run
        from sparring.store.recorder import completed_run

        return completed_run(load_run(self.store, self.resumed), result)

    def _renumbered(self, event: Event) -> Event:
        """`event` with trial numbers of the stored run (a resumed run's k-th trial of a
        scenario is its k-th missing one; see `sparring.store.recorder.renumbered`)."""
        if not self.resumed and self.shard is None:
            return event
        from sparring.store.recorder import renumbered

        return renumbered(event, self.missing)


def _with_trials(runnable: AnyRunnable, trials: int) -> AnyRunnable:
    from sparring.runner.code import CodeScenario

    if isinstance(runnable, CodeScenario):
        return dataclasses.replace(runnable, trials=trials)
    return runnable.model_copy(update={"trials": trials})
