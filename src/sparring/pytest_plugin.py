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
  `--sparring-report FILE.md` writes the Markdown report of every sparring test.

Importing this module imports nothing but pytest: it loads in every pytest session, and
sessions without sparring tests must not pay for sparring.
"""

from __future__ import annotations

import inspect
import os
import sys
import time
import tomllib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pytest

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    from sparring.api import Session
    from sparring.config import Settings
    from sparring.gates import GateReport, Outcome, TestRecord
    from sparring.models.base import Model
    from sparring.results import ScenarioResult
    from sparring.runner import AnyRunnable, RunSettings
    from sparring.scenario import AnyScenario
    from sparring.session import TargetLike, TrialContext

LIVE_HINT = ("it calls a model (simulated user or judge), so it runs only when asked: pass "
             "--sparring-live, set SPARRING_LIVE=1, or put `live = true` in [tool.sparring]")
NO_MODEL_HINT = ("no model configured for sparring: set `model = \"provider:name\"` (e.g. "
                 "\"openai:gpt-4o-mini\") in [tool.sparring] or sparring.toml, or export "
                 "SPARRING_MODEL")
_SUFFIXES = (".yaml", ".yml", ".json")
# what the plugin puts in `report.user_properties` for the controller (xdist)
_TAGS = "sparring.tags"
_MARKERS = "sparring.markers"
_ID = "sparring.id"
_RESULT = "sparring.result"
_RESULT_KEY = pytest.StashKey["ScenarioResult"]()
_STATE_KEY = pytest.StashKey["SparringState"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add `--sparring-live` and `--sparring-report`."""
    group = parser.getgroup("sparring", "sparring conversation tests")
    group.addoption("--sparring-live", action="store_true", default=False,
                    help="run sparring tests that call models (simulated users, judges); "
                    "also SPARRING_LIVE=1 or `live = true` in [tool.sparring]")
    group.addoption("--sparring-report", metavar="FILE.md", default=None,
                    help="write a Markdown report of every sparring test of the session")


def pytest_configure(config: pytest.Config) -> None:
    """Register the `sparring` marker and the session state; read settings if a file has
    any (a bad setting is a usage error here, before anything runs)."""
    config.addinivalue_line(
        "markers", "sparring(trials=1, threshold=1.0, live=True): run the test as a sparring "
        "scenario, `trials` times, passing when at least `threshold` of them pass; "
        "live=False for tests that call no model (they then run without --sparring-live)")
    config.addinivalue_line(
        "markers", "sparring_suite: a test of a sparring Suite (added by sparring)")
    state = SparringState(config)
    config.stash[_STATE_KEY] = state
    config.pluginmanager.register(state, "sparring-state")


def _has_settings_file(root: Path) -> bool:
    """Whether sparring.toml or a `[tool.sparring]` table exists (cheap: no pydantic)."""
    if (root / "sparring.toml").is_file():
        return True
    try:
        data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return False
    return "sparring" in data.get("tool", {})


class SparringState:
    """The plugin's per-session state and session-level hooks (one per pytest process).

    Settings are read lazily, so sessions without sparring settings or tests never import
    the rest of sparring. Under xdist the controller records every worker's reports and is
    the only process that evaluates gates and writes the report.
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self._settings: Settings | None = None
        self.configured = _has_settings_file(config.rootpath)
        self.controller = not hasattr(config, "workerinput")
        self.started = time.time()
        self.tests: dict[str, _Seen] = {}
        self.gate_report: GateReport | None = None
        self.report_note: str | None = None
        """Where the Markdown report went, or why it could not be written."""
        if self.configured:
            for name, gate in self._load_settings().groups.items():
                for marker in gate.markers:
                    config.addinivalue_line("markers", f"{marker}: a member of the sparring "
                                            f"group {name!r}")

    def _load_settings(self) -> Settings:
        from sparring.config import load_settings
        from sparring.errors import ConfigError

        try:
            self._settings = load_settings({}, cwd=self.config.rootpath)
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

    def why_not_run(self, *, needs_model: bool) -> str | None:
        """Why a test that calls models (`needs_model`) must be skipped, or `None`."""
        if not needs_model:
            return None
        if not self.live:
            return f"sparring: {LIVE_HINT}"
        settings = self.settings
        if settings.resolved_user_model is None or settings.resolved_judge_model is None:
            return f"sparring: {NO_MODEL_HINT}"
        return None

    def pytest_collect_file(self, file_path: Path,
                            parent: pytest.Collector) -> pytest.Collector | None:
        """A test file under one of the `yaml_dirs` becomes a `ScenarioFile`."""
        if not self.configured or file_path.suffix not in _SUFFIXES:
            return None
        if not any(file_path.is_relative_to(d) for d in self.settings.yaml_dirs):
            return None
        return ScenarioFile.from_parent(  # pyright: ignore[reportUnknownMemberType]
            parent, path=file_path)

    def pytest_pycollect_makeitem(self, collector: pytest.Module | pytest.Class, name: str,
                                  obj: object) -> list[pytest.Item] | None:
        """A module-level `Suite` becomes one `SuiteTestItem` per test; the functions it
        registered are not collected again as plain (possibly `async def`) tests."""
        if "sparring.api" not in sys.modules or not isinstance(collector, pytest.Module):
            return None  # no test module imported the authoring API
        from sparring.api import Suite

        if isinstance(obj, Suite):
            return [SuiteTestItem.from_parent(  # pyright: ignore[reportUnknownMemberType]
                collector, name=test.name, suite=obj) for test in obj.tests]
        namespace = cast(dict[str, object], vars(collector.obj))
        suites = [v for v in namespace.values() if isinstance(v, Suite)]
        if any(test.fn is obj for suite in suites for test in suite.tests):
            return []
        return None

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        """Mark Python sparring tests that call models to skip unless the session is live."""
        from sparring.errors import UserError

        for item in items:
            live = _live_option(item)
            if live is None:
                continue
            try:
                if isinstance(item, pytest.Function):
                    _marker_options(item)
            except UserError:
                continue  # not skipped: running it reports the bad option
            why = self.why_not_run(needs_model=live)
            if why:
                item.add_marker(pytest.mark.skip(reason=why))

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem: pytest.Function) -> bool | None:
        """Run a test with the `sparring` marker or fixture as trials (see `run_test`)."""
        if _live_option(pyfuncitem) is None:
            return None
        run_test(pyfuncitem, self)
        return True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Show sparring failures as their message; put what the controller needs into
        the report: the test's markers (setup, when groups are configured) and the sparring
        result (call)."""
        report: pytest.TestReport = yield
        if report.failed and call.excinfo is not None and _is_ours(call.excinfo.value):
            report.longrepr = str(call.excinfo.value)  # the message says it all
        extra: list[tuple[str, object]] = []
        if call.when == "setup" and self.configured and self.settings.groups:
            extra.append((_MARKERS, sorted({m.name for m in item.iter_markers()})))
        if call.when == "call" and _RESULT_KEY in item.stash:
            extra.append((_RESULT, item.stash[_RESULT_KEY].model_dump_json()))
        if extra:  # a new list: item.user_properties itself goes to the JUnit XML
            report.user_properties = [*report.user_properties, *extra]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Record every phase of every test (on the controller: of every worker)."""
        if self.controller:
            self.tests.setdefault(report.nodeid, _Seen()).add(report)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """Write the report, evaluate the gates, and turn exit code 1 into 0 when they say so."""
        if not self.controller:
            return
        path = self.config.getoption("sparring_report")
        if path:
            self.report_note = self._write_report(Path(path))
            if not self.report_note.startswith("sparring report:") and exitstatus == 0:
                session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if self.configured and self.settings.groups:
            from sparring.gates import evaluate

            records = [seen.record(nodeid) for nodeid, seen in self.tests.items()]
            self.gate_report = evaluate(self.settings.groups, records)
            if exitstatus == pytest.ExitCode.TESTS_FAILED and \
                    self.gate_report.overrides_exit_code:
                session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The group summary and where the report went."""
        if self.gate_report is not None:
            terminalreporter.write_sep("=", "sparring group summary")
            for line in self.gate_report.lines():
                terminalreporter.write_line(line)
        if self.report_note:
            terminalreporter.write_line(self.report_note)

    def _write_report(self, path: Path) -> str:
        """Write the Markdown report of every sparring test seen; say where, or why not."""
        from datetime import UTC, datetime

        from sparring import __version__
        from sparring.reports.markdown import write_markdown
        from sparring.results import RunResult, ScenarioResult

        scenarios = [ScenarioResult.model_validate_json(seen.result)
                     .model_copy(update={"name": nodeid})
                     for nodeid, seen in self.tests.items() if seen.result]
        live = self.live
        run = RunResult(sparring_version=__version__, run_id=f"pytest-{os.getpid()}",
                        started_at=datetime.fromtimestamp(self.started, UTC).isoformat(
                            timespec="seconds"),
                        duration_ms=(time.time() - self.started) * 1000,
                        user_model=self.settings.resolved_user_model if live else None,
                        judge_model=self.settings.resolved_judge_model if live else None,
                        scenarios=scenarios)
        try:
            write_markdown(run, path)
        except OSError as e:
            return (f"error: --sparring-report: could not write {str(path)!r}: "
                    f"{e.strerror or e}; give a writable file path")
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
        self.result = self.properties.get(_RESULT, self.result)

    def record(self, nodeid: str) -> TestRecord:
        from sparring.gates import TestRecord

        name = nodeid.rsplit("::", 1)[-1]
        names = {name, name.split("[", 1)[0], *([self.properties[_ID]]
                                                 if _ID in self.properties else [])}
        return TestRecord(nodeid=nodeid, outcome=self.outcome, names=frozenset(names),
                          tags=frozenset(self.properties.get(_TAGS, ())),
                          markers=frozenset(self.properties.get(_MARKERS, ())))


# --- YAML test files ----------------------------------------------------------------------

class ScenarioFile(pytest.File):
    """A sparring test file: one `ScenarioItem` per scenario; those that call a model are
    marked to skip unless the session is live."""

    def collect(self) -> Iterator[ScenarioItem]:
        """Load the file; a bad file is a collection error listing `path:line: problem`s."""
        from sparring.errors import UserError
        from sparring.loaders.yaml import load_paths

        try:
            scenarios = load_paths([os.path.relpath(self.path)])
        except UserError as e:
            raise self.CollectError(str(e)) from None
        state = _state(self.config)
        for scenario in scenarios:
            item = ScenarioItem.from_parent(  # pyright: ignore[reportUnknownMemberType]
                self, name=scenario.id, scenario=scenario)
            why = state.why_not_run(needs_model=_needs_model(scenario))
            if why:
                item.add_marker(pytest.mark.skip(reason=why))
            yield item


class ScenarioItem(pytest.Item):
    """One scenario of a test file, run with all its trials (`sparring.runner`)."""

    def __init__(self, *, scenario: AnyScenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.scenario = scenario
        self.extra_keyword_matches.update(scenario.tags)  # `-k booking` selects by tag
        self.user_properties += [(_ID, scenario.id), (_TAGS, list(scenario.tags))]

    def runtest(self) -> None:
        """Run every trial; fail below the threshold, skip when nothing could run."""
        import anyio

        state = _state(self.config)
        models = _models(state.settings) if _needs_model(self.scenario) else (None, None)
        result = anyio.run(_run_scenario, self.scenario, state.settings, *models)
        conclude(self, result)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the scenario starts in its file."""
        line = (self.scenario.source or "").rpartition(":")[2]
        return self.path, int(line) - 1 if line.isdigit() else None, \
            f"scenario {self.scenario.id}"


def _state(config: pytest.Config) -> SparringState:
    return config.stash[_STATE_KEY]


def _needs_model(scenario: AnyScenario) -> bool:
    """Whether any step calls a model: a simulated user, criteria, `should`s, expected
    output. Scenarios with checks only are deterministic."""
    from sparring.scenario import ScriptedScenario, SimulatedScenario, SingleTurnScenario

    if isinstance(scenario, SimulatedScenario) or scenario.all_criteria:
        return True
    if isinstance(scenario, ScriptedScenario):
        return any(turn.should for turn in scenario.turns)
    assert isinstance(scenario, SingleTurnScenario)
    return bool(scenario.should or scenario.expected_output)


def _models(settings: Settings) -> tuple[Model, Model]:
    """The simulated user's and the judge's model (tests without them are skipped at
    collection, `SparringState.why_not_run`).

    Raises:
        UserError: a model spec cannot be resolved (unknown provider, missing key).
    """
    from sparring.errors import UserError
    from sparring.models.pricing import set_prices
    from sparring.models.registry import resolve_model

    set_prices(settings.prices)
    user_spec, judge_spec = settings.resolved_user_model, settings.resolved_judge_model
    if user_spec is None or judge_spec is None:
        raise UserError(NO_MODEL_HINT)

    def make(spec: str) -> Model:
        return resolve_model(spec, base_url=settings.base_url, api_key=settings.api_key,
                             timeout_s=settings.model_timeout_s,
                             max_retries=settings.model_max_retries)

    user = make(user_spec)
    return user, user if judge_spec == user_spec else make(judge_spec)


def _run_settings(settings: Settings) -> RunSettings:
    """The run settings `sparring run` would use (parallel, timeouts, limits, temperatures)."""
    from sparring.cli.run import _run_settings as of  # pyright: ignore[reportPrivateUsage]

    return of(settings, fail_fast=False, fail_on_skip=False)


async def _run_scenario(scenario: AnyRunnable, settings: Settings, user_model: Model | None,
                        judge_model: Model | None) -> ScenarioResult:
    """Run all trials of `scenario` (a test file's, or a Python test's), then close the
    models."""
    from sparring.runner import TargetPool, run_scenarios
    from sparring.secrets import Secrets

    secrets = Secrets.load(file=Path(settings.secrets_file) if settings.secrets_file else None)
    try:
        async with TargetPool(secrets=secrets) as pool:
            run = await run_scenarios(
                [scenario], targets=pool.for_scenario, user_model=user_model,
                judge_model=judge_model, scrub=secrets.scrub,
                settings=_run_settings(settings))
    finally:
        for model in {id(m): m for m in (user_model, judge_model) if m}.values():
            await model.aclose()
    return run.scenarios[0]


# --- Python tests ---------------------------------------------------------------------------

_MARKER_OPTIONS = ("trials", "threshold", "live")


def _live_option(item: pytest.Item) -> bool | None:
    """`None` for tests that are not sparring tests; else whether the test calls models
    (the marker's `live`, default True; tests using only the fixture count as marked)."""
    marker = item.get_closest_marker("sparring")
    if marker is not None:
        return bool(marker.kwargs.get("live", True))
    if isinstance(item, SuiteTestItem) or "sparring" in getattr(item, "fixturenames", ()):
        return True
    return None


def _marker_options(item: pytest.Function) -> tuple[int, float, bool]:
    """`(trials, threshold, live)` of the test's `sparring` marker (defaults 1, 1.0, True).

    Raises:
        UserError: an unknown option (with did-you-mean) or a bad value.
    """
    import difflib

    from sparring.errors import UserError
    from sparring.scenario import parse_threshold

    marker = item.get_closest_marker("sparring")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    where = f"@pytest.mark.sparring on {item.nodeid}"
    for key in options:
        if key not in _MARKER_OPTIONS:
            close = difflib.get_close_matches(key, _MARKER_OPTIONS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use {', '.join(_MARKER_OPTIONS)}"
            raise UserError(f"{where}: unknown option {key!r}; {hint}")
    trials = options.get("trials", 1)
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 100:
        raise UserError(f"{where}: trials must be a whole number from 1 to 100, got {trials!r}")
    try:
        threshold = parse_threshold(options.get("threshold", 1.0))
    except ValueError as e:
        raise UserError(f"{where}: {e}") from None
    return trials, threshold, bool(options.get("live", True))


def run_test(item: pytest.Function, state: SparringState) -> None:
    """Run a Python sparring test: its function (sync or async) once per trial, with its
    fixtures, through `sparring.runner`; then `conclude`.

    A failing `assert` or unmet `should` fails a trial, any other exception makes it
    `error`; the test fails when the pass rate is below the threshold.

    Raises:
        UserError: bad marker options or model settings.
        ScenarioFailed: the test did not reach its threshold.
    """
    import anyio

    from sparring.session import CodeScenario, call_body

    trials, threshold, live = _marker_options(item)
    function = item.obj
    arguments = {name: item.funcargs[name]
                 for name in inspect.signature(function).parameters if name in item.funcargs}

    async def body(trial: TrialContext) -> None:
        await call_body(lambda: function(**arguments))

    path, line, _ = item.reportinfo()
    scenario = CodeScenario(id=item.nodeid, display_name=item.name, body=body,
                            source=f"{os.path.relpath(path)}:{(line or 0) + 1}", trials=trials,
                            threshold=threshold)
    judge = _models(state.settings)[1] if live else None
    conclude(item, anyio.run(_run_scenario, scenario, state.settings, None, judge))


class SparringFixture:
    """What the `sparring` fixture gives a test: sessions on targets, in the test's trial.

    ```python
    @pytest.mark.sparring(trials=3, threshold=0.66)
    async def test_books(sparring):
        async with sparring.session(my_agent) as session:
            response = await session.send("Book me a slot tomorrow at 10am")
            await response.should("confirm the booking")
    ```
    """

    def session(self, target: TargetLike, *, model: Model | str | None = None,
                response_timeout: float = 60) -> AbstractAsyncContextManager[Session]:
        """A conversation with `target` (`async with sparring.session(target) as s:`).

        Args:
            target: An `http(s)://` URL, a target spec mapping as under `target:` in YAML,
                a function `agent(history)`, or a `sparring.targets.base.Target`.
            model: Judges this session's `should`s instead of the session's model.
            response_timeout: Seconds to wait for one reply.

        Raises:
            UserError: the target or model cannot be used.
        """
        from sparring.session import open_session

        return open_session(target, model=model, response_timeout=response_timeout)

    @property
    def trial(self) -> TrialContext:
        """The running trial: `trial.trial` is its 1-based number.

        Raises:
            UserError: used outside the test's body.
        """
        from sparring.errors import UserError
        from sparring.session import current_trial

        trial = current_trial()
        if trial is None:
            raise UserError("sparring.trial exists only while the test runs")
        return trial


@pytest.fixture
def sparring() -> SparringFixture:
    """Sessions on targets for a sparring test; the test then runs as trials (see
    `@pytest.mark.sparring`) and calls models only in live sessions."""
    return SparringFixture()


class SuiteTestItem(pytest.Item):
    """One test of a module-level `sparring.api.Suite`, run with its repetitions and
    threshold. Each pytest test is its own suite run, so `before_all` / `after_all` hooks
    run around each test."""

    def __init__(self, *, suite: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.suite = suite

    def runtest(self) -> None:
        """Run the test through `Suite.run` with the session's settings and judge."""
        import re

        settings = _run_settings(_state(self.config).settings)
        result = self.suite.run(pattern=f"^{re.escape(self.name)}$", settings=settings)
        conclude(self, result.scenarios[0])

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test function is."""
        test = next(t for t in self.suite.tests if t.name == self.name)
        line = test.source.rpartition(":")[2]
        return self.path, int(line) - 1 if line.isdigit() else None, f"suite test {self.name}"


def _is_ours(error: BaseException) -> bool:
    """A failed threshold or a misconfiguration: its message is the whole story."""
    if isinstance(error, ScenarioFailed):
        return True
    errors = sys.modules.get("sparring.errors")
    return errors is not None and isinstance(error, errors.UserError)


# --- outcomes ---------------------------------------------------------------------------

class ScenarioFailed(AssertionError):
    """A sparring test's pass rate is below its threshold, or its trials could not run."""


def conclude(item: pytest.Item, result: ScenarioResult) -> None:
    """Turn a scenario result into the test's outcome; keep it for reports and gates.

    Returns when the scenario passed; calls `pytest.skip` when every trial was skipped
    (with why).

    Raises:
        ScenarioFailed: the scenario failed, errored or did not run; the message names k/N
            trials passed, the threshold, and every failed verdict with reason and turn.
    """
    item.stash[_RESULT_KEY] = result
    status = result.status
    if status == "passed":
        return
    if status == "skipped":
        why = next((t.error for t in result.trials if t.error), "every trial was skipped")
        pytest.skip(f"sparring: {why}")
    raise ScenarioFailed(describe_failure(result))


def describe_failure(result: ScenarioResult) -> str:
    """`k/N trials passed (rate), threshold T`, then each trial that did not pass with its
    error and failed verdicts (`turn N: id (kind: description) not met: reason`)."""
    from sparring.reports import one_line, percent

    counted = len(result.counted)
    noun = "test" if result.kind == "python" else "scenario"
    lines = [f"sparring {noun} {result.scenario_id!r} {result.status}: "
             f"{result.passed_trials}/{counted} trials passed ({percent(result.pass_rate)}), "
             f"threshold {percent(result.threshold)}"]
    if result.missing_trials:
        lines.append(f"{result.missing_trials} planned trials did not run")
    for trial in result.trials:
        if trial.status == "passed":
            continue
        lines.append(f"trial {trial.trial}: {trial.status} (end reason {trial.end_reason})"
                     + (f": {one_line(trial.error, 1000)}" if trial.error else ""))
        for v in trial.failures:
            at = f"turn {v.turn}: " if v.turn is not None else ""
            status = "not met" if v.status == "not_met" else v.status
            lines.append(f"  {at}{v.id} ({one_line(v.description, 200)}) {status}: "
                         f"{one_line(v.reason, 1000)}")
    return "\n".join(lines)
