"""Record and replay a run (`sparring run --record DIR`, `--replay DIR`): the cassettes of
every role opened for the run, and the wrappers that answer from them or keep what is
said (`replay_cassettes` has the file format and how requests are matched).

Roles: `agent` (the target), `user` (the simulated user's model), `judge` (the judge's
model). Each is replayed or live on its own (`ReplayOptions.live`), and every role is
recorded when recording.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.errors import UserError
from sparring.events import Observer
from sparring.models.base import Model
from sparring.runner.replay_cassettes import (
    ROLES,
    Cassette,
    CassetteWriter,
    Role,
    Tape,
    observe,
)
from sparring.runner.replay_models import ModelSource, ReplayModel
from sparring.runner.replay_targets import ReplayTarget, Unbuilt
from sparring.runner.settings import AnyRunnable
from sparring.targets.base import Target

__all__ = ["ROLES", "Replay", "ReplayOptions", "Role"]


@dataclass(frozen=True, kw_only=True)
class ReplayOptions:
    """What to record and replay: `record` and `replay` are cassette directories (either,
    both, or the same one: it is read before it is written again); `live` the roles not
    replayed; with `strict`, a replayed role's miss makes the trial `error` (and a trial is
    answered only with its own recording)."""

    record: Path | None = None
    replay: Path | None = None
    live: frozenset[Role] = frozenset()
    strict: bool = False
    rerun: Mapping[str, Collection[int]] | None = None
    """A `--resume`: the trial numbers it runs again, per scenario id. `record`'s
    cassettes then keep the answers of every other trial (those the store already has)."""
    option_prefix: str = "--"
    """How messages spell the options: `--record` (`sparring run`), or `--sparring-record`
    (the pytest plugin's `--sparring-`)."""

    @property
    def active(self) -> bool:
        """Whether anything is recorded or replayed."""
        return self.record is not None or self.replay is not None

    def replays(self, role: Role) -> bool:
        """Whether `role` is answered from the cassettes."""
        return self.replay is not None and role not in self.live

    def flag(self, name: str) -> str:
        """Option `name` (`record`, `live-role`...) as the user spells it (`option_prefix`)."""
        return self.option_prefix + name


class Replay:
    """One run's record and replay: the roles' tapes and the wrappers using them.

    Build it before the run (it reads the cassettes to replay), wrap the models (`model`),
    the targets (`targets`) and the observer (`observe`); `start` it as the run starts (it
    empties the cassettes to record, which may be the ones replayed), run, then `close` it.

    Raises:
        UserError: `options.replay` is not a directory, a cassette cannot be read or is
            damaged, or `options.record` is not a writable directory.
    """

    def __init__(self, options: ReplayOptions, *, scrub: Callable[[str], str]) -> None:
        self.options, self._scrub = options, scrub
        flag = options.flag
        if options.replay is not None and not options.replay.is_dir():
            raise UserError(
                f"{flag('replay')} {options.replay}: no such directory; record one first with "
                f"`{flag('record')} {options.replay}`"
            )
        if options.record is not None:
            _check_writable(options.record, flag("record"))
        self.tapes: dict[Role, Tape] = {
            r: Tape(role=r, strict=options.strict, option_prefix=options.option_prefix)
            for r in ROLES
        }
        for role, tape in self.tapes.items():
            if options.replay is not None and options.replays(role):
                tape.source = Cassette.load(role, options.replay)
        self._targets: dict[int, ReplayTarget] = {}

    def start(self) -> None:
        """Start recording: each role's cassette in `options.record` made anew (keeping,
        for a `--resume`, the answers of the trials it does not run again).

        Raises:
            UserError: a cassette cannot be written, or one to keep cannot be read.
        """
        record, rerun = self.options.record, self.options.rerun
        if record is None:
            return

        def kept(entry: dict[str, Any]) -> bool:  # not a trial run again
            assert rerun is not None
            return entry.get("trial") not in rerun.get(str(entry.get("scenario")), ())

        keep = None if rerun is None else kept
        for tape in self.tapes.values():
            tape.sink = CassetteWriter(tape.role, record, scrub=self._scrub, keep=keep)

    def model(self, role: Role, live: ModelSource, *, spec: str | None) -> Model | None:
        """The model playing `role` (`user` or `judge`): `live` wrapped in a `ReplayModel`
        named `spec` (else as `live` is, else as the model its cassette was recorded from);
        `None` when there is none (no model configured, none recorded), except for a role
        replayed strictly: its every request is then a miss, so the trial is `error`."""
        source = self.tapes[role].source
        name = spec or getattr(live, "name", None)
        name = name or (source.model_name if source is not None else None)
        if name is None and source is not None and self.options.strict:
            name = "none recorded"  # never skipped as unconfigured: a strict miss
        if name is None or (live is None and source is None):
            return None
        return ReplayModel(self.tapes[role], live, name=name, scrub=self._scrub)

    def targets(self, targets: Callable[[AnyRunnable], Target]) -> Callable[[AnyRunnable], Target]:
        """`targets` (scenario -> target), each target wrapped once in a `ReplayTarget`.
        When the agent is replayed, a target that cannot be built (a secret not set, in a
        hermetic replay) is needed only by a miss, which is then its trial's error.

        Raises:
            UserError: a target cannot be built and the agent is live.
        """
        tape = self.tapes["agent"]

        def replayed(scenario: AnyRunnable) -> Target:
            try:
                inner = targets(scenario)
            except UserError as e:
                if tape.source is None:
                    raise
                name = tape.source.target_name(scenario.id) or scenario.id
                return ReplayTarget(Unbuilt(name, str(e)), tape, scrub=self._scrub)
            if id(inner) not in self._targets:  # the wrapper holds `inner`: ids stay unique
                self._targets[id(inner)] = ReplayTarget(inner, tape, scrub=self._scrub)
            return self._targets[id(inner)]

        return replayed

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after it tells the tapes which trial each task plays."""
        return observe(observer)

    def counts(self) -> dict[str, list[int]]:
        """Per role: how many requests were asked, replayed and missed (JSON values, for
        another process to `add_counts`)."""
        return {r: [t.asked, t.replayed, t.missed] for r, t in self.tapes.items()}

    def add_counts(self, counts: Mapping[str, Sequence[int]]) -> None:
        """Count in `summary` what another process of the run (a pytest-xdist worker)
        asked, replayed and missed (its `counts`)."""
        for role, tape in self.tapes.items():
            asked, replayed, missed = counts.get(role, (0, 0, 0))
            tape.asked, tape.replayed = tape.asked + asked, tape.replayed + replayed
            tape.missed += missed

    def summary(self) -> str:
        """One line per role that was asked anything: how many requests were replayed,
        answered live, or missed."""
        lines: list[str] = []
        for tape in self.tapes.values():
            if tape.asked:
                live = tape.asked - tape.replayed - tape.missed
                missed = f", {tape.missed} missed" if tape.missed else ""
                lines.append(f"{tape.role}: {tape.replayed} replayed, {live} live{missed}")
        where = f"; recorded to {self.options.record}" if self.options.record else ""
        if dropped := self.dropped():
            where += (
                f" ({dropped} recorded answers this run did not use were dropped: it keeps "
                "exactly what it used; refresh with every test selected to keep them)"
            )
        return "replay: " + "; ".join(lines or ["nothing asked"]) + where

    def dropped(self) -> int:
        """How many answers of the replayed cassettes the recorded ones lack: with `record`
        the same directory as `replay`, a run of fewer tests (`-k`) than were recorded
        keeps only what it used. 0 when recording elsewhere (the replayed ones stay), or
        when the recording cannot be read."""
        record, replay = self.options.record, self.options.replay
        if record is None or replay is None or record.resolve() != replay.resolve():
            return 0
        lost = 0
        for role, tape in self.tapes.items():
            if tape.source is None:
                continue
            try:
                kept = Counter(str(e["key"]) for e in Cassette.load(role, record).entries)
            except UserError:
                return 0
            lost += (Counter(str(e["key"]) for e in tape.source.entries) - kept).total()
        return lost

    def close(self) -> None:
        """Close every cassette being written."""
        for tape in self.tapes.values():
            if tape.sink is not None:
                tape.sink.close()


def _check_writable(directory: Path, flag: str) -> None:
    """Make `directory` (and its parents) if missing; `flag` names the option given it.

    Raises:
        UserError: it cannot be made, or is not a writable directory.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = e.strerror or e
        raise UserError(f"{flag} {directory}: {why}; give a writable directory") from None
    if not os.access(directory, os.W_OK):
        raise UserError(f"{flag} {directory}: not writable; give a writable directory")
