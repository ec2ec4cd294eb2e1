"""sparring's pytest plugin (entry point `pytest11`): conversation tests as pytest tests.

- Test files (`*.yaml`, `*.yml`, `*.json`) under the `yaml_dirs` of `[tool.sparring]` (or
  sparring.toml) are collected: one test per scenario, node id `path.yaml::scenario_id`,
  run with all its trials against its threshold.
- `@pytest.mark.sparring(trials=3, threshold=0.66)` runs a test function (sync or `async
  def`, no other plugin needed) as trials; the `sparring` fixture opens sessions on targets.
- Tests that call a model (simulated users, criteria, `should`s, marked Python tests) are
  skipped unless `--sparring-live`, `SPARRING_LIVE=1` or `live = true`; tests with checks
  only always run.
- `[tool.sparring.groups.NAME]` gates the session on a group's pass rate (`sparring.gates`);
  `--sparring-report FILE.md` writes the Markdown report of every sparring test (skipped
  ones with why), the group summary, and the session's final exit code.

Importing this module imports nothing but pytest: it loads in every pytest session, and
sessions without sparring tests must not pay for sparring. The tests it makes live in
`sparring.pytest_plugin.items`, imported when there are some.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Coroutine, Generator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import pytest

from sparring.pytest_plugin.fixtures import sparring

if TYPE_CHECKING:
    import asyncio

    from sparring.config import Settings
    from sparring.gates import GateReport, Outcome, TestRecord
    from sparring.pytest_plugin.storing import SessionStore
    from sparring.results import RunResult, ScenarioResult

LIVE_HINT = (
    "calls a model (simulated user or judge), so it runs only when asked: pass "
    "--sparring-live, set SPARRING_LIVE=1, or put `live = true` in [tool.sparring] or "
    "sparring.toml"
)
NO_MODEL_HINT = (
    'no model configured for sparring: set `model = "provider:name"` (e.g. '
    '"openai:gpt-4o-mini") in [tool.sparring] or sparring.toml, or export '
    "SPARRING_MODEL"
)
_SUFFIXES = (".yaml", ".yml", ".json")
T = TypeVar("T")
# what the plugin puts in `report.user_properties` for the controller (xdist)
TAGS_PROPERTY = "sparring.tags"
MARKERS_PROPERTY = "sparring.markers"
ID_PROPERTY = "sparring.id"
RESULT_PROPERTY = "sparring.result"
RESULT_KEY: pytest.StashKey[ScenarioResult] = pytest.StashKey()
"""Where a sparring test keeps its result for `pytest_runtest_makereport`."""
__all__ = ["sparring"]  # the fixture, registered by being in the plugin module
_STATE_KEY: pytest.StashKey[SparringState] = pytest.StashKey()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add `--sparring-live`, `--sparring-report`, `--sparring-no-store` and the record and
    replay options (`sparring.pytest_plugin.replaying`: it imports only pytest)."""
    from importlib.util import find_spec

    from sparring.pytest_plugin.replaying import add_options

    group = parser.getgroup("sparring", "sparring conversation tests")
    # pytest-agent-eval's own flag too, unless its plugin is installed (it registers it)
    alias = () if find_spec("pytest_agent_eval") else ("--agent-eval-live",)
    group.addoption(
        "--sparring-live",
        *alias,
        action="store_true",
        default=False,
        help="run sparring tests that call models (simulated users, judges); "
        "also SPARRING_LIVE=1 or `live = true` in [tool.sparring] or sparring.toml "
        "(pytest-agent-eval's "
        "--agent-eval-live, EVAL_LIVE=1 and `live` in [tool.agent_eval] too)",
    )
    group.addoption(
        "--sparring-report",
        metavar="FILE.md",
        default=None,
        help="write a Markdown report of every sparring test of the session",
    )
    group.addoption(
        "--sparring-no-store",
        action="store_true",
        default=False,
        help="do not keep the session's sparring tests in the results store "
        "(default: one run per session, in the `store` setting's store)",
    )
    add_options(group)


def pytest_configure(config: pytest.Config) -> None:
    """Register the `sparring` marker and the session state; read settings if a file has
    any (a bad setting is a usage error here, before anything runs)."""
    config.addinivalue_line(
        "markers",
        "sparring(trials=1, threshold=1.0, live=True): run the test as a sparring "
        "scenario, `trials` times, passing when at least `threshold` of them pass; "
        "live=False for tests that call no model (they then run without --sparring-live)",
    )
    from sparring.pytest_plugin.replaying import configure

    state = SparringState(config)
    config.stash[_STATE_KEY] = state
    config.pluginmanager.register(state, "sparring-state")
    configure(config, state)  # record and replay, when asked for


def _settings_dir(config: pytest.Config, project: Path | None) -> Path | None:
    """The directory whose sparring.toml or `[tool.sparring]` the session uses, or `None`.

    Looked for next to pytest's config file, then in the `project` of the invocation
    directory (`sparring.config.find_settings_dir`, as `sparring run` finds it), then in the
    rootdir. The rootdir alone is not enough: pytest picks it before the plugin's options
    are known, so `--sparring-report PATH` can move it to PATH's directory.
    """
    from sparring.config import has_settings_file

    candidates = [config.inipath.parent if config.inipath else None, project, config.rootpath]
    return next((d for d in candidates if d and has_settings_file(d)), None)


def _check_report_option(config: pytest.Config, *, inside: tuple[Path | None, ...]) -> None:
    """Reject `--sparring-report PATH` (with a space) when PATH exists outside the project
    (the directories `inside`) and under the rootdir: pytest then took PATH as a test path
    too when it chose its rootdir and config file, so neither its settings nor sparring's
    would apply.

    Raises:
        pytest.UsageError: naming the rootdir pytest chose and the `=` form that avoids it.
    """
    args, path = list(config.invocation_params.args), config.getoption("sparring_report")
    if not path or "--sparring-report" not in args:
        return
    at = len(args) - 1 - args[::-1].index("--sparring-report")
    report = (config.invocation_params.dir / path).resolve()
    if (
        args[at + 1 : at + 2] != [path]
        or not report.exists()
        or not report.is_relative_to(config.rootpath.resolve())
        or any(report.is_relative_to(d.resolve()) for d in inside if d)
    ):
        return
    raise pytest.UsageError(
        f"--sparring-report {path}: the file exists, so pytest also took it as a test path "
        f"when choosing its rootdir ({config.rootpath}) and config file ("
        f"{config.inipath or 'none found'}), and this project's settings would not apply; "
        f"write --sparring-report={path} (one argument)"
    )


class SparringState:
    """The plugin's per-session state and session-level hooks (one per pytest process).

    Settings are read lazily, so sessions without sparring settings or tests never import
    the rest of sparring. Under xdist the controller records every worker's reports and is
    the only process that evaluates gates and writes the report.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._settings: Settings | None = None
        self._loop: asyncio.Runner | None = None
        from sparring.config import find_settings_dir

        project = find_settings_dir(config.invocation_params.dir)
        self.settings_dir = _settings_dir(config, project)
        """Where the settings file is (`None`: no sparring settings)."""
        self.configured = self.settings_dir is not None
        _check_report_option(
            config, inside=(config.invocation_params.dir, project, self.settings_dir)
        )
        self.controller = not hasattr(config, "workerinput")
        self.started = time.time()
        self.tests: dict[str, _Seen] = {}
        self.gate_report: GateReport | None = None
        self.report_note: str | None = None
        """Where the Markdown report went, or why it could not be written."""
        self.store: SessionStore | None = None
        """Keeps the session's sparring tests as one run (the controller, first result)."""
        if self.configured:
            for name, gate in self._load_settings().groups.items():
                for marker in gate.markers:
                    config.addinivalue_line(
                        "markers", f"{marker}: a member of the sparring group {name!r}"
                    )

    def _load_settings(self) -> Settings:
        from sparring.config import load_settings
        from sparring.errors import ConfigError

        try:
            self._settings = load_settings({}, cwd=self.settings_dir or self.config.rootpath)
        except ConfigError as e:
            raise pytest.UsageError(f"sparring settings: {e}") from None
        return self._settings

    @property
    def settings(self) -> Settings:
        """Settings from the files and the environment (see `sparring.config`)."""
        return self._settings or self._load_settings()

    @property
    def live(self) -> bool:
        """Whether tests that call models may run."""
        return bool(self.config.getoption("sparring_live")) or self.settings.live

    def why_not_run(
        self, *, user: bool = False, judge: bool = False, subject: str = "it"
    ) -> str | None:
        """Why a test that calls the simulated user's model (`user`) or the judge's
        (`judge`) must be skipped, or `None`: the session is not live, or one it calls is not
        configured. `subject` names it in the reason (e.g. "scenario 'refund'"). A replay
        runs them: its cassettes answer, and name the models they were recorded from."""
        if not (user or judge) or self.config.getoption("sparring_replay"):
            return None
        if not self.live:
            return f"sparring: {subject} {LIVE_HINT}"
        settings = self.settings
        missing = (user and settings.resolved_user_model is None) or (
            judge and settings.resolved_judge_model is None
        )
        if missing:
            return f"sparring: {NO_MODEL_HINT}"
        return None

    def run_async(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        """`await fn(*args)` on the session's one event loop, made on first use and closed
        when pytest ends: a target module that made an async client at import (bound to the
        loop that first used it) works for every test, not only the first."""
        import asyncio

        if self._loop is None:
            self._loop = asyncio.Runner()
        return self._loop.run(fn(*args))

    def pytest_unconfigure(self) -> None:
        """Close the session's event loop, if a sparring test made one."""
        if self._loop is not None:
            self._loop.close()
            self._loop = None

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        """A test file under one of the `yaml_dirs` becomes a `ScenarioFile`."""
        if not self.configured or file_path.suffix not in _SUFFIXES:
            return None
        if not any(file_path.is_relative_to(d) for d in self.settings.yaml_dirs):
            return None
        from sparring.pytest_plugin.items import ScenarioFile

        return ScenarioFile.from_parent(  # pyright: ignore[reportUnknownMemberType]
            parent, path=file_path
        )

    def pytest_pycollect_makeitem(
        self, collector: pytest.Module | pytest.Class, name: str, obj: object
    ) -> list[pytest.Item] | None:
        """A module-level `Suite` becomes one `SuiteTestItem` per test; the functions it
        registered are not collected again as plain (possibly `async def`) tests."""
        suites_loaded = "sparring.authoring.suite" in sys.modules
        if not suites_loaded or not isinstance(collector, pytest.Module):
            return None  # no test module imported the authoring API
        from sparring.authoring.suite import Suite
        from sparring.pytest_plugin.items import SuiteTestItem

        if isinstance(obj, Suite):
            return [
                SuiteTestItem.from_parent(  # pyright: ignore[reportUnknownMemberType]
                    collector, name=test.name, suite=obj
                )
                for test in obj.tests
            ]
        namespace = cast(dict[str, object], vars(collector.obj))
        suites = [v for v in namespace.values() if isinstance(v, Suite)]
        if any(test.fn is obj for suite in suites for test in suite.tests):
            return []
        return None

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark Python sparring tests that call models to skip unless the session is live."""
        from sparring.errors import UserError
        from sparring.pytest_plugin.items import marker_options

        for item in items:
            live = _live_option(item)
            if live is None:
                continue
            try:
                if isinstance(item, pytest.Function):
                    marker_options(item)
            except UserError:
                continue  # not skipped: running it reports the bad option
            why = self.why_not_run(judge=live)  # its sessions' `should`s
            if why:
                item.add_marker(pytest.mark.skip(reason=why))

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run a test with the `sparring` marker or fixture as trials (see `run_test`)."""
        if _live_option(pyfuncitem) is None:
            return None
        from sparring.pytest_plugin.items import run_test

        run_test(pyfuncitem, self)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, Any, Any]:
        """Show sparring failures as their message; put what the controller needs into
        the report: the test's markers (setup, when groups are configured) and the sparring
        result (call; or, for a sparring test skipped or failed before its trials, one that
        says why)."""
        report: pytest.TestReport = yield
        if report.failed and call.excinfo is not None and _is_ours(call.excinfo.value):
            report.longrepr = str(call.excinfo.value)  # the message says it all
        if report.skipped and call.when == "call" and isinstance(report.longrepr, tuple):
            path, line, _ = item.reportinfo()  # the test's place, not the plugin's
            where = None if line is None else line + 1
            # a `None` line prints `path: reason`, as pytest shows skip markers of such items
            report.longrepr = (os.fspath(path), where, report.longrepr[2])  # pyright: ignore[reportAttributeAccessIssue]
        extra: list[tuple[str, object]] = []
        if call.when == "setup" and self.configured and self.settings.groups:
            extra.append((MARKERS_PROPERTY, sorted({m.name for m in item.iter_markers()})))
        if (
            (report.skipped or report.failed)
            and RESULT_KEY not in item.stash
            and _is_sparring_test(item)
        ):
            from sparring.pytest_plugin.items import unrun_result

            reason = (
                _skip_reason(report)
                if report.skipped
                else str(report.longrepr)
                if isinstance(report.longrepr, str)
                else call.excinfo.exconly()
                if call.excinfo
                else "the test failed"
            )
            item.stash[RESULT_KEY] = unrun_result(item, skipped=report.skipped, reason=reason)
            extra.append((RESULT_PROPERTY, item.stash[RESULT_KEY].model_dump_json()))
        elif call.when == "call" and RESULT_KEY in item.stash:
            extra.append((RESULT_PROPERTY, item.stash[RESULT_KEY].model_dump_json()))
        if extra:  # a new list: item.user_properties itself goes to the JUnit XML
            report.user_properties = [*report.user_properties, *extra]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record every phase of every test (on the controller: of every worker)."""
        if not self.controller:
            return
        self.tests.setdefault(report.nodeid, _Seen()).add(report)
        result = dict(report.user_properties).get(RESULT_PROPERTY)
        if isinstance(result, str) and not self.config.getoption("sparring_no_store"):
            if self.store is None:
                from sparring.pytest_plugin.storing import SessionStore, session_paths

                cwd, paths = self.settings_dir or self.config.rootpath, session_paths(self.config)
                self.store = SessionStore(settings=self.settings, cwd=cwd, paths=paths)
            self.store.add(report.nodeid, result, head=self.session_run([]))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Evaluate the gates and turn exit code 1 into 0 when they say so; then write the
        report, which states the session's final exit code."""
        if not self.controller:
            return
        if self.store is not None:
            head = self.session_run([])
            head.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
            self.store.close(head, exit_code=int(exitstatus))
        code, overridden = int(exitstatus), False
        if self.configured and self.settings.groups:
            from sparring.gates import evaluate

            records = [seen.record(nodeid) for nodeid, seen in self.tests.items()]
            self.gate_report = evaluate(
                self.settings.groups,
                records,
                stopped_early=bool(session.shouldfail or session.shouldstop),
            )
            overridden = (
                code == pytest.ExitCode.TESTS_FAILED and self.gate_report.overrides_exit_code
            )
            if overridden:
                session.exitstatus = code = pytest.ExitCode.OK
        path = self.config.getoption("sparring_report")
        if path:
            self.report_note = self._write_report(
                Path(path), exit_status=(code, _exit_meaning(code, overridden=overridden))
            )
            if not self.report_note.startswith("sparring report:") and code == 0:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The group summary and where the report went."""
        unjudged = {n: why for n, s in self.tests.items() if (why := s.unjudged()) is not None}
        if unjudged:
            terminalreporter.write_sep("=", "sparring: passed without their judged parts")
            for nodeid, why in unjudged.items():
                terminalreporter.write_line(f"{nodeid}: not judged: {why}")
        if self.gate_report is not None:
            terminalreporter.write_sep("=", "sparring group summary")
            for line in self.gate_report.lines():
                terminalreporter.write_line(line)
        if self.report_note:
            terminalreporter.write_line(self.report_note)
        if self.store is not None and self.store.note:
            terminalreporter.write_line(self.store.note)

    def session_run(self, scenarios: list[ScenarioResult]) -> RunResult:
        """The session as a run of `scenarios`: started when pytest started, lasting until
        now, with the models it may use (none unless live)."""
        from datetime import UTC, datetime

        from sparring import __version__
        from sparring.results import RunResult

        live = self.live
        return RunResult(
            sparring_version=__version__,
            run_id=f"pytest-{os.getpid()}",
            started_at=datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds"),
            duration_ms=(time.time() - self.started) * 1000,
            user_model=self.settings.resolved_user_model if live else None,
            judge_model=self.settings.resolved_judge_model if live else None,
            scenarios=scenarios,
        )

    def _write_report(self, path: Path, *, exit_status: tuple[int, str]) -> str:
        """Write the Markdown report of every sparring test seen, with the group summary
        and the session's `exit_status` (code, meaning); say where, or why not."""
        from sparring.reports.markdown import write_markdown
        from sparring.results import ScenarioResult

        scenarios = [
            ScenarioResult.model_validate_json(seen.result).model_copy(update={"name": nodeid})
            for nodeid, seen in self.tests.items()
            if seen.result
        ]
        run = self.session_run(scenarios)
        try:
            write_markdown(
                run,
                path,
                exit_status=exit_status,
                gate_lines=self.gate_report.lines() if self.gate_report else (),
            )
        except OSError as e:
            return (
                f"error: --sparring-report: could not write {str(path)!r}: "
                f"{e.strerror or e}; give a writable file path"
            )
        return f"sparring report: {path}"


@dataclass
class _Seen:
    """The phases of one test seen so far, merged."""

    outcome: Outcome = "skipped"
    properties: dict[str, Any] = field(default_factory=dict[str, Any])
    result: str | None = None

    def add(self, report: pytest.TestReport) -> None:
        if report.failed:
            self.outcome = "failed"
        elif report.when == "call" and report.passed and self.outcome != "failed":
            self.outcome = "passed"
        self.properties.update(dict(report.user_properties))
        self.result = self.properties.get(RESULT_PROPERTY, self.result)

    def unjudged(self) -> str | None:
        """Why a passed test's criteria or `should`s were skipped (e.g. the session is not
        live), or `None` when it passed with everything judged (or did not pass)."""
        if self.outcome != "passed" or self.result is None:
            return None
        return _skip_reason_in(json.loads(self.result))

    def record(self, nodeid: str) -> TestRecord:
        from sparring.gates import TestRecord

        name = nodeid.rsplit("::", 1)[-1]
        names = {
            name,
            name.split("[", 1)[0],
            *([self.properties[ID_PROPERTY]] if ID_PROPERTY in self.properties else []),
        }
        return TestRecord(
            nodeid=nodeid,
            outcome=self.outcome,
            names=frozenset(names),
            tags=frozenset(self.properties.get(TAGS_PROPERTY, ())),
            markers=frozenset(self.properties.get(MARKERS_PROPERTY, ())),
        )


# --- helpers of the hooks, and the `sparring` fixture ----------------------------------------


def plugin_state(config: pytest.Config) -> SparringState:
    """The session's `SparringState` (set in `pytest_configure`)."""
    return config.stash[_STATE_KEY]


_EXIT_MEANING = {
    0: "every test that ran passed",
    1: "at least one test failed",
    2: "the session was interrupted",
    3: "pytest hit an internal error",
    4: "pytest was used wrongly (see its output)",
    5: "no test was collected",
}


def _exit_meaning(code: int, *, overridden: bool) -> str:
    """What the session's exit code means, for the report."""
    if overridden:
        return "every gate is met and every failed test belongs to a group (overridden from 1)"
    return _EXIT_MEANING.get(code, "see pytest's output")


def _skip_reason(report: pytest.TestReport) -> str:
    """Why pytest skipped the test (`longrepr` of a skip is `(path, line, "Skipped: why")`)."""
    if isinstance(report.longrepr, tuple):
        return report.longrepr[2].removeprefix("Skipped: ")
    return "skipped"


def _is_sparring_test(item: pytest.Item) -> bool:
    """A scenario of a test file, or a Python sparring test (see `_live_option`)."""
    items = sys.modules.get("sparring.pytest_plugin.items")
    return _live_option(item) is not None or (
        items is not None and isinstance(item, items.ScenarioItem)
    )


def _live_option(item: pytest.Item) -> bool | None:
    """`None` for tests that are not sparring tests; else whether the test calls models
    (the marker's `live`, default True; tests using only the fixture count as marked)."""
    marker = item.get_closest_marker("sparring")
    if marker is not None:
        return bool(marker.kwargs.get("live", True))
    items = sys.modules.get("sparring.pytest_plugin.items")
    if items is not None and isinstance(item, items.SuiteTestItem):
        return False  # always runs; its `should`s are skipped unless live (see runtest)
    if "sparring" in getattr(item, "fixturenames", ()):
        return True
    return None


def _skip_reason_in(data: object) -> str | None:
    """The reason of the first skipped judged verdict (criterion, restriction, `should`)
    anywhere in a result's JSON data, or `None`."""
    if isinstance(data, dict):
        node = cast(dict[str, Any], data)
        if node.get("status") == "skipped" and node.get("kind") in _JUDGED_KINDS:
            return str(node.get("reason") or "not judged")
        data = list(node.values())
    if isinstance(data, list):
        for item in cast(list[Any], data):
            if (why := _skip_reason_in(item)) is not None:
                return why
    return None


_JUDGED_KINDS = ("criterion", "restriction", "should")


def _is_ours(error: BaseException) -> bool:
    """A failed threshold or a misconfiguration: its message is the whole story."""
    items = sys.modules.get("sparring.pytest_plugin.items")
    errors = sys.modules.get("sparring.errors")
    return (items is not None and isinstance(error, items.ScenarioFailed)) or (
        errors is not None and isinstance(error, errors.UserError)
    )
