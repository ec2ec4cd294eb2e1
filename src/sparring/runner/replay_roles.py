"""A run's record and replay as its options ask (`--record DIR`, `--replay DIR`,
`--replay-strict`, `--live-role ROLE`), with the models of its roles built for it: shared by
`sparring run` (`sparring.cli.replaying`) and the pytest plugin's `--sparring-record` and
friends (`sparring.pytest_plugin.replaying`), so both read and write the same cassettes.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sparring.config import Settings
from sparring.errors import ModelError, UserError
from sparring.events import Observer
from sparring.models.base import Model
from sparring.runner.replay import Replay, ReplayOptions, Role
from sparring.runner.replay_models import ModelSource
from sparring.runner.settings import AnyRunnable
from sparring.targets.base import Target


def replay_options(
    options: Mapping[str, Any],
    *,
    option_prefix: str = "--",
    rerun: Mapping[str, Collection[int]] | None = None,
) -> ReplayOptions | None:
    """The `ReplayOptions` that `options` ask for (`None`: neither record nor replay).

    Args:
        options: `record` and `replay` (a directory or `None`), `replay_strict` (bool),
            `live_roles` (role names).
        option_prefix: How the user spells the options, for messages (`--` or
            `--sparring-`).
        rerun: A `--resume`'s trial numbers run again, per scenario id.

    Raises:
        UserError: strict or live roles without a directory to replay.
    """
    record, replay = options.get("record"), options.get("replay")
    live: frozenset[Role] = frozenset(options.get("live_roles") or ())
    for name, given in (("replay-strict", options.get("replay_strict")), ("live-role", live)):
        if given and replay is None:
            raise UserError(
                f"{option_prefix}{name} goes with {option_prefix}replay DIR: it says how "
                "DIR's cassettes answer"
            )
    if record is None and replay is None:
        return None
    return ReplayOptions(
        record=None if record is None else Path(record),
        replay=None if replay is None else Path(replay),
        live=live,
        strict=bool(options.get("replay_strict")),
        rerun=rerun,
        option_prefix=option_prefix,
    )


@dataclass(kw_only=True)
class ReplayRoles:
    """What a run records and replays (`replay`; `None`: nothing) and the models its roles
    are played by, built from `settings` when first needed and closed by `aclose`."""

    settings: Settings
    replay: Replay | None = None
    _built: dict[str, Model] = field(default_factory=dict[str, Model])

    @classmethod
    def prepare(
        cls, options: ReplayOptions | None, *, settings: Settings, scrub: Callable[[str], str]
    ) -> ReplayRoles:
        """Read the cassettes to replay (those to record are written from `start` on);
        `scrub` masks secrets in everything keyed and kept.

        Raises:
            UserError: as `Replay`: a cassette directory that cannot be read or written.
        """
        return cls(
            settings=settings, replay=None if options is None else Replay(options, scrub=scrub)
        )

    def models(self) -> tuple[Model | None, Model | None]:
        """The simulated user's and the judge's model, from the settings (see `model`).

        Raises:
            UserError: a live role's model cannot be built (as `model_from_settings`).
        """
        settings = self.settings
        return (
            self.model("user", settings.resolved_user_model),
            self.model("judge", settings.resolved_judge_model),
        )

    def model(self, role: Role, spec: str | None) -> Model | None:
        """The model playing `role`: built from `spec` when nothing is replayed or
        recorded; else wrapped (`Replay.model`), and built only at the first miss when
        `role` is replayed (a hermetic replay never builds it, so needs no API key).

        Raises:
            UserError: a live role's model cannot be built (as `model_from_settings`).
        """
        replay = self.replay
        if replay is None:
            return None if spec is None else self._build(spec)
        live: ModelSource = None
        if spec is not None:
            live = self._lazy(spec) if replay.options.replays(role) else self._build(spec)
        return replay.model(role, live, spec=spec)

    def targets(self, targets: Callable[[AnyRunnable], Target]) -> Callable[[AnyRunnable], Target]:
        """`targets`, replayed and recorded when asked to (`Replay.targets`)."""
        return targets if self.replay is None else self.replay.targets(targets)

    def observe(self, observer: Observer) -> Observer:
        """`observer`, after replay learns from the events which trial each task plays."""
        return observer if self.replay is None else self.replay.observe(observer)

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
        self._built.clear()

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
        """`_build(spec)` when first called, for a replayed role: a miss then needs it.

        The returned function raises `ModelError` (a trial's error) when the model
        cannot be built."""

        def build() -> Model:
            try:
                return self._build(spec)
            except UserError as e:
                raise ModelError(f"the live model {spec} cannot be used: {e}", requests=0) from e

        return build
