"""Record and replay under pytest: `--sparring-record DIR`, `--sparring-replay DIR`,
`--sparring-replay-strict`, `--sparring-live-role ROLE`, meaning what `sparring run`'s
`--record`... mean, with the same cassettes (`sparring.runner.replay_roles`).

Imports nothing but pytest until one of the options is given. One `SessionReplay` per
pytest process, started when the first sparring test runs. Under pytest-xdist each worker
records into its own directory under DIR (`PARTS`), and the controller, which runs no test,
merges them into DIR once every worker is done (`merge_cassettes`); the workers send it
their counts, so the replay summary line covers the whole session.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from sparring.config import Settings
    from sparring.pytest_plugin import SparringState
    from sparring.runner.replay_roles import ReplayRoles
    from sparring.secrets import Scrubber, Secrets

PARTS = ".sparring-xdist"
"""Where, under the record directory, each pytest-xdist worker records (one directory per
worker id); removed once merged."""
_COUNTS = "sparring_replay_counts"
"""The key of a worker's replay counts in its `workeroutput`."""
_KEY: pytest.StashKey[SessionReplay] = pytest.StashKey()
_SCRUBBER: pytest.StashKey[Scrubber] = pytest.StashKey()
"""The session's scrubber: every secret a test looked up, masked in the cassettes too."""


def add_options(group: pytest.OptionGroup) -> None:
    """Add `--sparring-record`, `--sparring-replay`, `--sparring-replay-strict` and
    `--sparring-live-role` to the plugin's option group."""
    group.addoption(
        "--sparring-record",
        metavar="DIR",
        default=None,
        help="keep every model answer and agent reply of the sparring tests in cassettes "
        "in DIR (as `sparring run --record DIR`)",
    )
    group.addoption(
        "--sparring-replay",
        metavar="DIR",
        default=None,
        help="answer from DIR's cassettes; runs the tests that call models, as "
        "--sparring-live does, and asks live what DIR lacks",
    )
    group.addoption(
        "--sparring-replay-strict",
        action="store_true",
        default=False,
        help="with --sparring-replay: what the cassettes lack makes the trial error "
        "(CI without keys or network)",
    )
    group.addoption(
        "--sparring-live-role",
        action="append",
        choices=("agent", "user", "judge"),
        metavar="ROLE",
        default=None,
        dest="sparring_live_roles",
        help="with --sparring-replay: ROLE (agent, user, judge) answers live (repeatable)",
    )


def configure(config: pytest.Config, state: SparringState) -> None:
    """Set up record and replay for the session when an option asks for it.

    Raises:
        pytest.UsageError: options that do not go together, or a cassette directory
            that cannot be read or written.
    """
    options = {
        "record": config.getoption("sparring_record"),
        "replay": config.getoption("sparring_replay"),
        "replay_strict": config.getoption("sparring_replay_strict"),
        "live_roles": config.getoption("sparring_live_roles"),
    }
    if not any(options.values()):
        return
    replay = SessionReplay(config, state, options)
    config.stash[_KEY] = replay
    config.pluginmanager.register(replay, "sparring-replay")


def test_secrets(config: pytest.Config, settings: Settings) -> Secrets:
    """The secrets of one sparring test, read anew (the environment, the `secrets_file`
    setting; the models' keys and the `api_key` setting masked), whose every value looked
    up is masked from then on in the session's cassettes too (one scrubber per session).

    Raises:
        ConfigError: the secrets file cannot be read or has a malformed line.
    """
    from sparring.secrets import Scrubber, Secrets

    scrubber = config.stash.setdefault(_SCRUBBER, Scrubber())
    return Secrets.load(file=settings.secrets_file, api_key=settings.api_key, scrubber=scrubber)


def session_roles(config: pytest.Config) -> ReplayRoles | None:
    """The session's record and replay, started (`None`: not asked for).

    Raises:
        UserError: a cassette cannot be written.
    """
    replay = config.stash.get(_KEY, None)
    return None if replay is None else replay.started()


class SessionReplay:
    """One pytest process's record and replay, and its session hooks."""

    def __init__(self, config: pytest.Config, state: SparringState, options: dict[str, Any]):
        from sparring.errors import UserError
        from sparring.runner.replay_roles import ReplayRoles, replay_options

        self.state, self.config = state, config
        self.worker: str | None = getattr(config, "workerinput", {}).get("workerid")
        self.controller = self.worker is None and getattr(config.option, "dist", "no") != "no"
        """The pytest-xdist controller: runs no test, merges what its workers recorded."""
        self.note: str | None = None
        self.uncounted: list[str] = []
        """The pytest-xdist workers that ended without sending their counts (killed)."""
        self.record = None if options["record"] is None else Path(options["record"])
        if self.record is not None and self.worker is not None:
            options = {**options, "record": self.record / PARTS / self.worker}
        elif self.record is not None and self.controller:
            shutil.rmtree(self.record / PARTS, ignore_errors=True)  # a killed session's
        settings = state.settings
        try:
            secrets = test_secrets(config, settings)  # what the tests look up, masked
            replayed = replay_options(options, option_prefix="--sparring-")
            self.roles = ReplayRoles.prepare(replayed, settings=settings, scrub=secrets.scrub)
        except UserError as e:
            raise pytest.UsageError(str(e)) from None
        self._started = False

    def started(self) -> ReplayRoles:
        """`roles`, recording from now on (`ReplayRoles.start`, once).

        Raises:
            UserError: a cassette cannot be written.
        """
        if not self._started:
            self._started = True
            self.roles.start()
        return self.roles

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object) -> None:
        """Count what a pytest-xdist worker replayed and asked live (a worker that crashed
        or was killed sends nothing: it is named under the replay line)."""
        counts = getattr(node, "workeroutput", {}).get(_COUNTS)
        if self.roles.replay is None:
            return
        if counts:
            self.roles.replay.add_counts(counts)
        else:
            self.uncounted.append(str(getattr(node, "workerinput", {}).get("workerid", "?")))

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Close the cassettes and models; a worker sends its counts to the controller,
        which merges the workers' cassettes into the record directory."""
        self.state.run_async(self.roles.aclose)
        replay = self.roles.replay
        if self.worker is not None and replay is not None:
            output: dict[str, Any] = getattr(self.config, "workeroutput")  # noqa: B009
            output[_COUNTS] = replay.counts()
        if self.controller and self.record is not None:
            self._merge(session)

    def _merge(self, session: pytest.Session) -> None:
        """Merge the workers' cassettes into the record directory (when a worker
        recorded any); a failure fails the session, saying why."""
        from sparring.errors import UserError
        from sparring.runner.replay_cassettes import merge_cassettes

        assert self.record is not None
        parts = self.record / PARTS
        found = sorted(p for p in parts.iterdir() if p.is_dir()) if parts.is_dir() else []
        if not found:
            return
        try:
            merge_cassettes(found, self.record)
        except UserError as e:
            self.note = f"error: --sparring-record: {e}"
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        shutil.rmtree(parts, ignore_errors=True)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The replay line (`replay: agent: N replayed, M live; ...`), which workers it
        leaves out, and a merge error."""
        if self.worker is not None:
            return
        summary = self.roles.summary()
        if summary is not None:
            terminalreporter.write_sep("=", "sparring replay")
            terminalreporter.write_line(summary)
        if self.uncounted:
            one = len(self.uncounted) == 1
            who = ("worker " if one else "workers ") + ", ".join(self.uncounted)
            they = "it" if one else "they"
            kept = f"; what {they} recorded is merged all the same" if self.record else ""
            terminalreporter.write_line(
                f"note: the replay counts leave out {who}: {they} ended "
                f"without sending them (crashed or killed){kept}"
            )
        if self.note is not None:
            terminalreporter.write_line(self.note)
        if (unrecorded := self._unrecorded_models()) is not None:
            terminalreporter.write_line(unrecorded)

    def _unrecorded_models(self) -> str | None:
        """Why `--sparring-record` kept no model answer (no `--sparring-live`, or no model
        configured: tests that call models were skipped) and how to record them; `None`
        when it could, or when nothing is recorded."""
        if self.record is None or self.config.getoption("sparring_replay"):
            return None
        settings = self.state.settings
        if not self.state.live:
            how = "pass --sparring-live (or set SPARRING_LIVE=1) to record them too"
        elif settings.resolved_user_model is None or settings.resolved_judge_model is None:
            how = (
                "configure a model (`model` in [tool.sparring] or sparring.toml, or "
                "SPARRING_MODEL) to record them too"
            )
        else:
            return None
        return (
            f"note: sparring: --sparring-record {self.record} kept the targets' replies only: "
            "no model was called, so tests that need one were skipped and user.jsonl and "
            "judge.jsonl hold no answer (a --sparring-replay-strict replay of those tests "
            f"fails); {how}"
        )
