"""`sparring run`'s record and replay: `--record DIR`, `--replay DIR`, `--replay-strict`,
`--live-role ROLE` (`sparring.runner.replay`) and `--replay-users RUN`
(`sparring.runner.replay_users`, read from the results store).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.config import Settings
from sparring.errors import ModelError, UserError
from sparring.events import Observer
from sparring.models.base import Model
from sparring.runner import AnyRunnable
from sparring.scenario import AnyScenario
from sparring.targets.base import Target

if TYPE_CHECKING:
    from sparring.results import RunResult
    from sparring.runner.replay import Replay, ReplayOptions, Role
    from sparring.runner.replay_models import ModelSource
    from sparring.runner.replay_users import StoredUsers
    from sparring.secrets import Secrets
    from sparring.store.database import Store

_NOT_WITH_USERS = (("--resume", "resume"), ("--shard", "shard"), ("--trials", "trials"))
"""Options `--replay-users` refuses: it runs one trial per stored conversation, numbered
as in the stored run."""


@dataclass(kw_only=True)
class Replaying:
    """What a run records and replays (nothing, by default): the cassettes (`replay`), the
    stored simulated users (`users`), and the models built for it (closed by `aclose`)."""

    settings: Settings
    replay: Replay | None = None
    users: StoredUsers | None = None
    _built: dict[str, Model] = field(default_factory=dict[str, Model])

    @classmethod
    def prepare(
        cls,
        options: Mapping[str, Any],
        *,
        settings: Settings,
        secrets: Secrets,
        rerun: Mapping[str, list[int]] | None = None,
    ) -> Replaying:
        """Check the options, read the stored run of `--replay-users` and the cassettes of
        `--replay` (those of `--record` are written from `start` on; for a `--resume`,
        `rerun` holds the trial numbers run again per scenario id, and the other trials'
        recorded answers are kept).

        Raises:
            UserError: options that do not go together, an unknown stored run, or a
                cassette directory that cannot be read or written.
        """
        replaying = cls(settings=settings)
        replay_options = _replay_options(options, rerun)
        ref = options.get("replay_users")
        if ref is not None:
            _check_users_options(options)
            replaying.users = _stored_users(str(ref), settings)
        if replay_options is not None:
            from sparring.runner.replay import Replay

            replaying.replay = Replay(replay_options, scrub=secrets.scrub)
        return replaying

    def models(self) -> tuple[Model | None, Model | None]:
        """The simulated user's and the judge's model: the stored users for
        `--replay-users`; wrapped for replay (built when first needed) or recording.

        Raises:
            UserError: a live role's model cannot be built (as `model_from_settings`).
        """
        settings, users = self.settings, self.users
        if users is None:
            user = self._model("user", settings.resolved_user_model)
        else:  # recorded when recording: a later --replay needs no store
            user = users if self.replay is None else self.replay.model("user", users, spec=None)
        return user, self._model("judge", settings.resolved_judge_model)

    def _model(self, role: Role, spec: str | None) -> Model | None:
        """The model playing `role`: built from `spec` when nothing is replayed or
        recorded; else wrapped, and built only at the first miss when `role` is replayed."""
        replay = self.replay
        if replay is None:
            return None if spec is None else self._build(spec)
        live: ModelSource = None
        if spec is not None:
            live = self._lazy(spec) if replay.options.replays(role) else self._build(spec)
        return replay.model(role, live, spec=spec)

    def scenarios(self, scenarios: list[AnyScenario]) -> list[AnyScenario]:
        """`scenarios` as `--replay-users` plays them (`StoredUsers.scenarios`).

        Raises:
            UserError: as `StoredUsers.scenarios`.
        """
        return scenarios if self.users is None else self.users.scenarios(scenarios)

    def targets(self, targets: Callable[[AnyRunnable], Target]) -> Callable[[AnyRunnable], Target]:
        """`targets`, replayed and recorded when asked to."""
        return targets if self.replay is None else self.replay.targets(targets)

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after what replay learns from the events (which trial each task
        plays, how many messages each trial's user sent)."""
        from sparring.runner.replay_cassettes import observe

        if self.users is not None:
            observer = self.users.observe(observer)
        return observe(observer) if self.replay is not None or self.users is not None else observer

    def start(self) -> None:
        """Start recording, as the run starts (`Replay.start`).

        Raises:
            UserError: a cassette cannot be written.
        """
        if self.replay is not None:
            self.replay.start()

    def summary(self) -> str | None:
        """What was replayed, answered live and recorded, per role (`None`: no replay)."""
        return None if self.replay is None else self.replay.summary()

    async def aclose(self) -> None:
        """Close the cassettes being written and the models built here."""
        if self.replay is not None:
            self.replay.close()
        for model in self._built.values():
            await model.aclose()

    def _build(self, spec: str) -> Model:
        """The model `spec` names, built once (the user and the judge may share it).

        Raises:
            UserError: as `model_from_settings`.
        """
        from sparring.models.registry import model_from_settings

        if spec not in self._built:
            self._built[spec] = model_from_settings(spec, self.settings)
        return self._built[spec]

    def _lazy(self, spec: str) -> Callable[[], Model]:
        """`_build(spec)` when first called, for a replayed role: a miss then needs the
        model (a hermetic replay never builds it, so needs no API key)."""

        def build() -> Model:
            try:
                return self._build(spec)
            except UserError as e:
                raise ModelError(f"the live model {spec} cannot be used: {e}", requests=0) from e

        return build


def _replay_options(
    options: Mapping[str, Any], rerun: Mapping[str, list[int]] | None
) -> ReplayOptions | None:
    """The `ReplayOptions` the options ask for (`None`: no --record or --replay).

    Raises:
        UserError: --replay-strict or --live-role without --replay.
    """
    from sparring.runner.replay import ReplayOptions

    record, replay = options.get("record"), options.get("replay")
    live: frozenset[Role] = frozenset(options.get("live_roles") or ())
    for name, given in (("--replay-strict", options.get("replay_strict")), ("--live-role", live)):
        if given and replay is None:
            raise UserError(f"{name} goes with --replay DIR: it says how DIR's cassettes answer")
    if record is None and replay is None:
        return None
    if options.get("replay_users"):  # the stored run's users speak, not the cassette's
        live = live.union(("user",))
    return ReplayOptions(
        record=None if record is None else Path(record),
        replay=None if replay is None else Path(replay),
        live=live,
        strict=bool(options.get("replay_strict")),
        rerun=rerun,
    )


def _check_users_options(options: Mapping[str, Any]) -> None:
    """Refuse options `--replay-users` cannot go with (`_NOT_WITH_USERS`, --adaptive).

    Raises:
        UserError: naming them and why.
    """
    clash = [name for name, key in _NOT_WITH_USERS if options.get(key) is not None]
    clash += ["--adaptive"] * bool(options.get("adaptive"))
    if clash:
        raise UserError(
            f"--replay-users cannot go with {', '.join(clash)}: it runs one trial per stored "
            "conversation of each scenario, numbered as in the stored run"
        )


def _stored_users(ref: str, settings: Settings) -> StoredUsers:
    """The simulated users of stored run `ref` (an id or its start).

    Raises:
        UserError: no such run (with the closest recent ids), or `ref` starts several ids.
    """
    from sparring.runner.replay_users import StoredUsers
    from sparring.store.database import open_store
    from sparring.store.location import store_url

    store = open_store(store_url(settings.store, cwd=Path.cwd()))
    try:
        return StoredUsers.from_run(_stored_run(store, ref))
    finally:
        store.close()


def _stored_run(store: Store, ref: str) -> RunResult:
    """Run `ref` of `store`.

    Raises:
        UserError: no such run (did you mean: the closest of the recent ids), or `ref`
            starts several ids.
    """
    from sparring.store.reading import list_runs, load_run

    stored = [r.id for r in list_runs(store)]
    matches = [i for i in stored if i == ref] or [i for i in stored if i.startswith(ref)]
    if len(matches) > 1:
        raise UserError(
            f"--replay-users {ref}: it starts several run ids ({', '.join(matches[:5])}); "
            "give more of the id"
        )
    if not matches:
        close = difflib.get_close_matches(ref, stored[:50], n=3, cutoff=0.5)
        hint = f" (did you mean {' or '.join(close)}?)" if close else ""
        recent = ", ".join(stored[:5]) or "none stored yet"
        raise UserError(
            f"--replay-users {ref}: no such run in the store{hint}; the latest: {recent} "
            "(`sparring runs` lists them)"
        )
    return load_run(store, matches[0])
