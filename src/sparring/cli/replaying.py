"""`sparring run`'s record and replay: `--record DIR`, `--replay DIR`, `--replay-strict`,
`--live-role ROLE` (`sparring.runner.replay_roles`, shared with the pytest plugin) and
`--replay-users RUN` (`sparring.runner.replay_users`, read from the results store).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.config import Settings
from sparring.errors import UserError
from sparring.events import Observer
from sparring.models.base import Model
from sparring.runner import AnyRunnable
from sparring.scenario import AnyScenario
from sparring.targets.base import Target

if TYPE_CHECKING:
    from sparring.results import RunResult
    from sparring.runner.replay_roles import ReplayRoles
    from sparring.runner.replay_users import StoredUsers
    from sparring.secrets import Secrets
    from sparring.store.database import Store

_NOT_WITH_USERS = (("--resume", "resume"), ("--shard", "shard"), ("--trials", "trials"))
"""Options `--replay-users` refuses: it runs one trial per stored conversation, numbered
as in the stored run."""


@dataclass(kw_only=True)
class Replaying:
    """What a run records and replays (nothing, by default): the cassettes and the models
    built for them (`roles`, shared with the pytest plugin), and the stored simulated users
    (`users`)."""

    settings: Settings
    roles: ReplayRoles
    users: StoredUsers | None = None

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
        from sparring.runner.replay_roles import ReplayRoles, replay_options

        replayed = replay_options(options, rerun=rerun)
        users = None
        ref = options.get("replay_users")
        if ref is not None:
            _check_users_options(options)
            users = _stored_users(str(ref), settings)
            if replayed is not None:  # the stored run's users speak, not the cassette's
                replayed = replace(replayed, live=replayed.live.union(("user",)))
        roles = ReplayRoles.prepare(replayed, settings=settings, scrub=secrets.scrub)
        return cls(settings=settings, roles=roles, users=users)

    def models(self) -> tuple[Model | None, Model | None]:
        """The simulated user's and the judge's model: the stored users for
        `--replay-users`; wrapped for replay (built when first needed) or recording
        (`ReplayRoles.model`).

        Raises:
            UserError: a live role's model cannot be built (as `model_from_settings`).
        """
        users, roles, replay = self.users, self.roles, self.roles.replay
        if users is None:
            return roles.models()
        # recorded when recording: a later --replay needs no store
        user = users if replay is None else replay.model("user", users, spec=None)
        return user, roles.model("judge", self.settings.resolved_judge_model)

    def scenarios(self, scenarios: list[AnyScenario]) -> list[AnyScenario]:
        """`scenarios` as `--replay-users` plays them (`StoredUsers.scenarios`).

        Raises:
            UserError: as `StoredUsers.scenarios`.
        """
        return scenarios if self.users is None else self.users.scenarios(scenarios)

    def targets(self, targets: Callable[[AnyRunnable], Target]) -> Callable[[AnyRunnable], Target]:
        """`targets`, replayed and recorded when asked to."""
        return self.roles.targets(targets)

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after what replay learns from the events (which trial each task
        plays, how many messages each trial's user sent)."""
        from sparring.runner.replay_cassettes import observe

        if self.users is None:
            return self.roles.observe(observer)
        return observe(self.users.observe(observer))

    def start(self) -> None:
        """Start recording, as the run starts (`Replay.start`).

        Raises:
            UserError: a cassette cannot be written.
        """
        self.roles.start()

    def summary(self) -> str | None:
        """What was replayed, answered live and recorded, per role (`None`: no replay)."""
        return self.roles.summary()

    async def aclose(self) -> None:
        """Close the cassettes being written and the models built here."""
        await self.roles.aclose()


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
