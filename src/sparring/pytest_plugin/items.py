"""The tests the pytest plugin makes and runs: scenarios of test files, Python tests with the
`sparring` marker or fixture, and the tests of module-level `Suite`s.

Imported by `sparring.pytest_plugin` only once a session has sparring tests. Every test runs
through `sparring.runner` (all its trials, its threshold); `conclude` turns the result into
pass, skip (with why) or a `ScenarioFailed` whose message names every failed verdict.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from sparring.pytest_plugin import (
    ID_PROPERTY,
    NO_MODEL_HINT,
    RESULT_KEY,
    TAGS_PROPERTY,
    SparringState,
    plugin_state,
)
from sparring.pytest_plugin.replaying import session_roles, test_secrets

if TYPE_CHECKING:
    from sparring.authoring.suite_options import TestOptions
    from sparring.events import Event
    from sparring.models.base import Model
    from sparring.results import ScenarioResult
    from sparring.runner import AnyRunnable, RunSettings
    from sparring.runner.context import TrialContext
    from sparring.runner.replay_roles import ReplayRoles
    from sparring.scenario import AnyScenario
    from sparring.scenario.base import TrialRange
    from sparring.secrets import Secrets


# --- YAML test files ----------------------------------------------------------------------


class ScenarioFile(pytest.File):
    """A sparring test file: one `ScenarioItem` per scenario; those that call a model are
    marked to skip unless the session is live."""

    def collect(self) -> Iterator[ScenarioItem]:
        """Load the file; a bad file is a collection error listing `path:line: problem`s."""
        from sparring.errors import UserError
        from sparring.loaders.yaml import load_paths
        from sparring.redteam import expand_red_team
        from sparring.runner.script import needs_user_model

        try:
            scenarios = expand_red_team(load_paths([os.path.relpath(self.path)]))
        except UserError as e:
            raise self.CollectError(str(e)) from None
        state = plugin_state(self.config)
        for scenario in scenarios:
            item = ScenarioItem.from_parent(  # pyright: ignore[reportUnknownMemberType]
                self, name=scenario.id, scenario=scenario
            )
            why = state.why_not_run(  # judged parts alone are skipped when it runs
                user=needs_user_model(scenario), subject=f"scenario {scenario.id!r}"
            )
            if why:
                item.add_marker(pytest.mark.skip(reason=why))
            yield item


class ScenarioItem(pytest.Item):
    """One scenario of a test file, run with all its trials (`sparring.runner`)."""

    def __init__(self, *, scenario: AnyScenario, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self.scenario = scenario
        self.extra_keyword_matches.update(scenario.tags)  # `-k booking` selects by tag
        self.user_properties += [(ID_PROPERTY, scenario.id), (TAGS_PROPERTY, list(scenario.tags))]

    def runtest(self) -> None:
        """Run every trial; fail below the threshold, skip when nothing could run."""
        state = plugin_state(self.config)
        user, judge = needed_models(self.scenario)
        why = state.why_not_run(user=user, judge=judge)
        models = _models(state, user=user, judge=judge) if (user or judge) and not why else None
        result = state.run_async(
            _run_scenario,
            self.scenario,
            test_secrets(self.config, state.settings),
            _run_settings(state, why),
            *(models or (None, None)),
            session_roles(self.config),
        )
        conclude(self, result)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the scenario starts in its file."""
        line = (self.scenario.source or "").rpartition(":")[2]
        return self.path, int(line) - 1 if line.isdigit() else None, f"scenario {self.scenario.id}"


def needed_models(scenario: AnyScenario) -> tuple[bool, bool]:
    """Whether `scenario` calls the simulated user's model (a simulated user, simulated
    turns) and whether it calls the judge's (criteria, `should`s, expected output,
    evaluations, tool-argument rubrics). Scenarios with checks only are deterministic."""
    from sparring.runner.script import needs_user_model
    from sparring.scenario import ScriptedScenario, SingleTurnScenario

    judged = bool(scenario.all_criteria or scenario.evaluations or scenario.tool_args_judge)
    if isinstance(scenario, ScriptedScenario):
        judged = judged or any(turn.should for turn in scenario.turns)
    elif isinstance(scenario, SingleTurnScenario):
        judged = judged or bool(scenario.should or scenario.expected_output)
    return needs_user_model(scenario), judged


def _models(state: SparringState, *, user: bool, judge: bool) -> tuple[Model | None, Model | None]:
    """The simulated user's and the judge's model (`None` where none is configured);
    recorded or replayed when the session is (`ReplayRoles.models`: with nothing
    configured, the models the cassettes hold).

    Raises:
        UserError: the `user` or `judge` model is needed but not configured (and no
            replay), or a spec cannot be resolved (unknown provider, missing key).
    """
    from sparring.errors import UserError
    from sparring.models.registry import models_from_settings

    roles = session_roles(state.config)
    if roles is not None:
        return roles.models()
    user_model, judge_model = models_from_settings(state.settings)
    if (user and user_model is None) or (judge and judge_model is None):
        raise UserError(NO_MODEL_HINT)
    return user_model, judge_model


def _run_settings(state: SparringState, no_model_reason: str | None) -> RunSettings:
    """The session's run settings; with `no_model_reason`, a run that calls no model and
    skips what needs one with that reason (not live, or no model configured)."""
    from sparring.runner import RunSettings

    settings = RunSettings.from_settings(state.settings)
    reason = None if no_model_reason is None else no_model_reason.removeprefix("sparring: ")
    return replace(settings, no_model_reason=reason)


async def _run_scenario(
    scenario: AnyRunnable,
    secrets: Secrets,
    run_settings: RunSettings,
    user_model: Model | None,
    judge_model: Model | None,
    roles: ReplayRoles | None,
) -> ScenarioResult:
    """Run all trials of `scenario` (a test file's, or a Python test's) with `secrets`
    (`test_secrets`), its targets recorded or replayed with `roles` (`None`: no replay),
    then close the models."""
    from sparring.runner import TargetPool, run_scenarios

    try:
        async with TargetPool(secrets=secrets) as pool:
            targets, observer = pool.for_scenario, _ignore
            if roles is not None:
                targets, observer = roles.targets(targets), roles.observe(observer)
            run = await run_scenarios(
                [scenario],
                targets=targets,
                user_model=user_model,
                judge_model=judge_model,
                scrub=secrets.scrub,
                settings=run_settings,
                observer=observer,
            )
    finally:
        for model in {id(m): m for m in (user_model, judge_model) if m}.values():
            await model.aclose()
    return run.scenarios[0]


def _ignore(event: Event) -> None:
    """The observer of a run nothing watches."""


# --- Python tests ---------------------------------------------------------------------------

_MARKER_OPTIONS = (
    *("trials", "threshold", "live", "evaluations", "tool_args_judge", "explain_failures"),
)
_MARKER_FORM = "@pytest.mark.sparring(trials=5, threshold=0.8, live=False)"


@dataclass(frozen=True, slots=True)
class MarkerOptions:
    """A Python test's `sparring` marker, checked: `trials` (a count, or a `TrialRange`
    for adaptive trials), `threshold` (0-1), `live` (it calls models), and what it is
    judged on besides its body (`options`: evaluations, tool-argument rubrics,
    explain_failures)."""

    trials: int | TrialRange
    threshold: float
    live: bool
    options: TestOptions


def marker_options(item: pytest.Function) -> MarkerOptions:
    """The test's `sparring` marker options (defaults 1 trial, threshold 1.0, live), named
    as in YAML: `trials` (`5` or `{"min": 3, "max": 30}`), `threshold`, `live`,
    `evaluations`, `tool_args_judge`, `explain_failures`.

    Raises:
        UserError: positional arguments, an unknown option (with did-you-mean) or a bad
            value (`trials` neither a whole number from 1 to 100 nor a range, a bad
            `threshold`, `live` or `explain_failures` not True or False, evaluations or
            rubrics that are none); the message names the test and the accepted form.
    """
    from sparring.authoring.suite_options import checked_options, checked_trials
    from sparring.errors import UserError
    from sparring.scenario import parse_threshold

    marker = item.get_closest_marker("sparring")
    where = f"@pytest.mark.sparring on {item.nodeid}"
    options = _named_options(marker, where)
    try:
        threshold = parse_threshold(options.get("threshold", 1.0))
    except ValueError as e:
        raise UserError(f"{where}: {e}, as in {_MARKER_FORM}") from None
    live = options.get("live", True)
    if not isinstance(live, bool):
        raise UserError(f"{where}: live must be True or False, got {live!r}, as in {_MARKER_FORM}")
    judged = checked_options(
        where,
        evaluations=options.get("evaluations", ()),
        tool_args_judge=options.get("tool_args_judge", ()),
        explain_failures=options.get("explain_failures"),
    )
    trials = checked_trials(where, options.get("trials", 1), form=_MARKER_FORM)
    return MarkerOptions(trials, threshold, live, judged)


def _named_options(marker: pytest.Mark | None, where: str) -> dict[str, Any]:
    """The marker's keyword options.

    Raises:
        UserError: positional arguments, or an option not in `_MARKER_OPTIONS`.
    """
    import difflib

    from sparring.errors import UserError

    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    if marker is not None and marker.args:
        given = {**dict(zip(_MARKER_OPTIONS, marker.args, strict=False)), **options}
        named = ", ".join(f"{key}={value!r}" for key, value in given.items())
        form = (
            f"@pytest.mark.sparring({named})"
            if len(marker.args) <= len(_MARKER_OPTIONS)
            else _MARKER_FORM
        )
        raise UserError(
            f"{where}: options must be named, got positional arguments "
            f"{', '.join(map(repr, marker.args))}; write {form}"
        )
    for key in options:
        if key not in _MARKER_OPTIONS:
            close = difflib.get_close_matches(key, _MARKER_OPTIONS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"use {', '.join(_MARKER_OPTIONS)}"
            raise UserError(f"{where}: unknown option {key!r}; {hint}")
    return options


def run_test(item: pytest.Function, state: SparringState) -> None:
    """Run a Python sparring test: its function (sync or async) once per trial, with its
    fixtures, through `sparring.runner`; then `conclude`.

    A failing `assert` or unmet `should` fails a trial, any other exception makes it
    `error`; the test fails when the pass rate is below the threshold.

    Raises:
        UserError: bad marker options or model settings.
        ScenarioFailed: the test did not reach its threshold.
    """
    from sparring.runner.code import CodeScenario, call_body

    marked = marker_options(item)
    function = item.obj
    arguments = {
        name: item.funcargs[name]
        for name in inspect.signature(function).parameters
        if name in item.funcargs
    }

    async def body(trial: TrialContext) -> None:
        await call_body(functools.partial(function, **arguments))

    path, line, _ = item.reportinfo()
    scenario = CodeScenario(
        id=item.nodeid,
        display_name=item.name,
        body=body,
        source=f"{os.path.relpath(path)}:{(line or 0) + 1}",
        trials=marked.trials,
        threshold=marked.threshold,
        evaluations=marked.options.evaluations,
        tool_args_judge=marked.options.tool_args_judge,
        explain_failures=marked.options.explain_failures,
    )
    user, judge = _models(state, user=False, judge=True) if marked.live else (None, None)
    run_settings = _run_settings(state, None)
    roles = session_roles(item.config)
    secrets = test_secrets(item.config, state.settings)
    result = state.run_async(_run_scenario, scenario, secrets, run_settings, user, judge, roles)
    conclude(item, result)


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

        state = plugin_state(self.config)
        why = state.why_not_run(judge=True)
        if state.live and self.suite.model is not None:
            why = None  # live, the suite's own model judges (none need be configured)
        settings = _run_settings(state, why)
        pattern = f"^{re.escape(self.name)}$"
        secrets = test_secrets(self.config, state.settings)  # as every sparring test's
        replay = session_roles(self.config)
        result = state.run_async(
            lambda: self.suite.arun(
                pattern=pattern,
                settings=settings,
                secrets=secrets,
                replay=replay,
                store=False,  # kept in the session's one run, as every sparring test
            )
        )
        conclude(self, result.scenarios[0])

    @property
    def test(self) -> Any:
        """The suite's `RegisteredTest` this item runs."""
        return next(t for t in self.suite.tests if t.name == self.name)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        """Where the test function is."""
        line = self.test.source.rpartition(":")[2]
        return self.path, int(line) - 1 if line.isdigit() else None, f"suite test {self.name}"


# --- outcomes ---------------------------------------------------------------------------


class ScenarioFailed(AssertionError):
    """A sparring test's pass rate is below its threshold, or its trials could not run."""


def conclude(item: pytest.Item, result: ScenarioResult) -> None:
    """Turn a scenario result into the test's outcome; keep it for reports and gates.

    Returns when the scenario passed or is `done` (it ran with nothing to judge: not a
    failure); calls `pytest.skip` when every trial was skipped (with why).

    Raises:
        ScenarioFailed: the scenario failed, errored or did not run; the message names k/N
            trials passed, the threshold, and every failed verdict with reason and turn.
    """
    item.stash[RESULT_KEY] = result
    status = result.status
    if status in ("passed", "done"):
        return
    if status == "skipped":
        why = next((t.error for t in result.trials if t.error), "every trial was skipped")
        pytest.skip(f"sparring: {why}")
    raise ScenarioFailed(describe_failure(result))


def unrun_result(item: pytest.Item, *, skipped: bool, reason: str) -> ScenarioResult:
    """The result of a sparring test that never reached its trials: each planned trial
    `skipped` (not live, no model, a skip marker), or one trial `error` (a bad marker
    option, a fixture that failed), saying `reason`; so reports list it as `sparring run`
    lists such scenarios."""
    from sparring.results import ScenarioResult, TrialResult

    scenario_id, kind = item.nodeid, "python"
    if isinstance(item, ScenarioItem):
        scenario_id, kind = item.scenario.id, item.scenario.kind
    planned, threshold = _planned(item)
    trials = [
        TrialResult(
            scenario_id=scenario_id,
            trial=n,
            status="skipped" if skipped else "error",
            end_reason="skipped" if skipped else "test_error",
            error=reason,
        )
        for n in range(1, (planned if skipped else 1) + 1)
    ]
    path, line, _ = item.reportinfo()
    return ScenarioResult(
        scenario_id=scenario_id,
        name=item.nodeid,
        kind=kind,
        source=f"{os.path.relpath(path)}:{(line or 0) + 1}",
        threshold=threshold,
        planned_trials=len(trials),
        trials=trials,
    )


def _planned(item: pytest.Item) -> tuple[int, float]:
    """`(trials, threshold)` a sparring test asks for: its scenario's (the least of
    adaptive trials), its suite test's repetitions, or its marker's; `(1, 1.0)` when its
    marker is bad (the test's own failure reports the bad option)."""
    from sparring.errors import UserError

    if isinstance(item, ScenarioItem):
        trials = item.scenario.trials
        return trials if isinstance(trials, int) else trials.min, item.scenario.threshold
    if isinstance(item, SuiteTestItem):
        trials = item.test.trials
        return trials if isinstance(trials, int) else trials.min, item.test.threshold
    if isinstance(item, pytest.Function):
        try:
            marked = marker_options(item)
        except UserError:
            return 1, 1.0
        trials = marked.trials
        return trials if isinstance(trials, int) else trials.min, marked.threshold
    return 1, 1.0


def describe_failure(result: ScenarioResult) -> str:
    """`k/N trials passed, rate [low, high], threshold T` (the 95% Wilson interval), what
    to do about an `undecided` one, then each trial that did not pass with its error,
    failed verdicts (`turn N: id (kind: description) not met: reason`) and evaluation
    gates that did not pass (`evaluation.insight (insight = value (pass rule of evaluation
    E)) not met: reasoning`)."""
    from sparring.reports import one_line, percent
    from sparring.reports.insights import gate_verdicts
    from sparring.reports.outcome import verdict_what
    from sparring.reports.rates import interval_text

    passed, counted = result.passed_trials, len(result.counted)
    noun = "test" if result.kind == "python" else "scenario"
    rate = f", {percent(result.pass_rate)} {interval_text(passed, counted)}" if counted else ""
    lines = [
        f"sparring {noun} {result.scenario_id!r} {result.status}: "
        f"{passed}/{counted} trials passed{rate}, threshold {percent(result.threshold)}"
    ]
    if result.status == "undecided":  # pytest has no outcome for it: a failed test says so
        lines.append(
            f"undecided, not failed: after {len(result.trials)} trials (the most allowed) the "
            "pass rate's 95% interval still holds the threshold; raise the trials' max or "
            "lower the threshold (sparring run exits 3 for it)"
        )
    if result.missing_trials:
        lines.append(f"{result.missing_trials} planned trials did not run")
    for trial in result.trials:
        if trial.status == "passed":
            continue
        lines.append(
            f"trial {trial.trial}: {trial.status} (end reason {trial.end_reason})"
            + (f": {one_line(trial.error, 1000)}" if trial.error else "")
        )
        for v in [*trial.failures, *gate_verdicts(trial.insights)]:
            at = f"turn {v.turn}: " if v.turn is not None else ""
            status = "not met" if v.status == "not_met" else v.status
            lines.append(
                f"  {at}{v.id} ({one_line(verdict_what(v), 200)}) {status}: "
                f"{one_line(v.reason, 1000)}"
            )
    return "\n".join(lines)
