"""`sparring run`: load tests, resolve models and targets, run with a live view, report."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from sparring.config import Settings, load_settings
from sparring.errors import UserError
from sparring.events import Event, RunFinished
from sparring.models.base import Model
from sparring.results import RunResult
from sparring.runner import NO_MODEL_HINT, AnyRunnable, RunSettings, TargetPool, run_scenarios
from sparring.scenario import AnyScenario

if TYPE_CHECKING:
    from sparring.authoring.suite import SuiteRun
    from sparring.secrets import Secrets

EXIT_REPORT_FAILED = 3
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""Signals that stop a run as Ctrl-C does: SIGTERM is how CI systems cancel a job, SIGHUP
what a closed terminal or SSH session sends."""
DEFAULT_TESTS = "tests/conversations"
_SETTING_OPTIONS = (
    "model",
    "user_model",
    "judge_model",
    "base_url",
    "parallel",
    "trials",
    "reply_timeout_s",
    "conversation_timeout_s",
    "secrets_file",
)


def run_command(
    *,
    paths: tuple[str, ...],
    pattern: str | None,
    list_only: bool,
    output: str | None,
    junit: str | None,
    markdown: str | None,
    fail_fast: bool,
    fail_on_skip: bool,
    live: bool | None,
    **options: Any,
) -> int:
    """Body of `sparring run`; returns the exit code (see `sparring.cli.main`).

    Raises:
        UserError: bad test files, settings, model specs or targets (exit code 2).
    """
    settings = load_settings({k: options.get(k) for k in _SETTING_OPTIONS})
    reports = {"JSON": output, "JUnit": junit, "Markdown": markdown}
    for path in reports.values():
        if path:
            _check_writable(Path(path))
    scenarios, suites = _load(paths or _default_paths(), pattern=pattern, settings=settings)
    listed: list[AnyRunnable] = [*scenarios, *suites.scenarios(pattern=pattern)]
    if not listed:
        raise UserError(
            f"no scenario id or name matches --pattern {pattern!r}; run with --list to see them"
            if pattern
            else "the test files hold no "
            "scenarios (only sparring reports?); give files with `scenarios:`"
        )
    if list_only:
        _print_list(listed, trials=settings.trials)
        return 0
    user_model, judge_model = _resolve_models(settings)
    # Signals are ignored outside the event loop's own handlers (see `_stop_on_signal`), so
    # a second Ctrl-C or SIGTERM cannot break off the reports of an interrupted run.
    # An interrupted run keeps ignoring them until the process exits.
    previous = {s: signal.signal(s, signal.SIG_IGN) for s in _STOP_SIGNALS}
    run_settings = RunSettings.from_settings(
        settings, fail_fast=fail_fast, fail_on_skip=fail_on_skip
    )
    result = anyio.run(
        _run,
        scenarios,
        suites,
        pattern,
        _secrets(settings),
        run_settings,
        user_model,
        judge_model,
        live,
    )
    written = _write_reports(result, reports)
    if result.interrupted:
        click.secho(
            "Interrupted: the reports hold the trials that finished; unfinished ones "
            "are marked `interrupted`.",
            fg="yellow",
            err=True,
        )
    else:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    if not written and result.exit_code != 130:
        return EXIT_REPORT_FAILED
    return result.exit_code


def _load(
    paths: tuple[str, ...], *, pattern: str | None, settings: Settings
) -> tuple[list[AnyScenario], SuiteRun]:
    """YAML scenarios (filtered by `pattern`) and the Python test files' suites (their
    models connected with `settings`)."""
    from sparring.authoring.suite import SuiteRun
    from sparring.loaders.files import split_paths
    from sparring.loaders.python import load_suites
    from sparring.loaders.yaml import load_paths

    yaml_files, py_files = split_paths(paths)
    scenarios = load_paths(yaml_files, pattern=pattern) if yaml_files else []
    return scenarios, SuiteRun(load_suites(py_files, named=paths), settings=settings)


def _default_paths() -> tuple[str, ...]:
    if Path(DEFAULT_TESTS).is_dir():
        return (DEFAULT_TESTS,)
    raise UserError(
        f"give the test files or directories to run, e.g. `sparring run "
        f"{DEFAULT_TESTS}` (`sparring init` writes a starter there)"
    )


def _print_list(scenarios: list[AnyRunnable], *, trials: int | None) -> None:
    for s in scenarios:
        count = trials or s.trials
        click.echo(
            f"{s.id}  [{s.kind}, {count} trial{'s' if count != 1 else ''}]  "
            f"{_listed_source(s.source)}"
        )
    click.echo(f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}")


def _listed_source(source: str | None) -> str:
    """`source` (`file:line`, YAML or Python) with the file relative to the current
    directory when it is under it, else as it is; `""` for none."""
    if not source:
        return ""
    file, _, line = source.rpartition(":")
    if not line.isdigit():
        file, line = source, ""
    try:
        shown = Path(file).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return source
    return f"{shown}:{line}" if line else shown


def _resolve_models(settings: Settings) -> tuple[Model | None, Model | None]:
    from sparring.models.registry import models_from_settings

    user, judge = models_from_settings(settings)
    if user is None or judge is None:
        missing = " and ".join(
            r for r, m in (("simulated user", user), ("judge", judge)) if m is None
        )
        click.secho(
            f"note: {missing} steps will be skipped; {NO_MODEL_HINT}", fg="yellow", err=True
        )
    return user, judge


def _secrets(settings: Settings) -> Secrets:
    """The run's secrets: the environment and the `secrets_file` setting; the models' keys
    (the `api_key` setting too) are masked like them.

    Raises:
        ConfigError: the secrets file cannot be read or has a malformed line.
    """
    from sparring.secrets import Secrets

    file = Path(settings.secrets_file) if settings.secrets_file else None
    return Secrets.load(file=file, api_key=settings.api_key)


async def _run(
    scenarios: list[AnyScenario],
    suites: SuiteRun,
    pattern: str | None,
    secrets: Secrets,
    run_settings: RunSettings,
    user_model: Model | None,
    judge_model: Model | None,
    live: bool | None,
) -> RunResult:
    """The run, with a live view; Ctrl-C or SIGTERM stops it and returns what finished
    (`RunResult.interrupted`)."""
    from sparring.reports.console import ConsoleView

    finished: list[RunResult] = []
    try:
        async with TargetPool(secrets=secrets) as pool:
            with ConsoleView(live=live) as view:

                def observe(event: Event) -> None:
                    view(event)
                    if isinstance(event, RunFinished):  # sent even when interrupted
                        finished.append(event.result)

                async with suites.active(client=pool.client) as tests:
                    code = [tests[s.id] for s in suites.scenarios(pattern=pattern)]
                    for scenario in [*scenarios, *code]:  # misconfigured targets fail here,
                        if scenario.target is not None:  # not inside the task group
                            pool.for_scenario(scenario)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_stop_on_signal, tg.cancel_scope)
                        await run_scenarios(
                            [*scenarios, *code],
                            targets=pool.for_scenario,
                            user_model=user_model,
                            judge_model=judge_model,
                            settings=run_settings,
                            observer=observe,
                            scrub=secrets.scrub,
                        )
                        tg.cancel_scope.cancel()  # done: stop listening for signals
                # after_all hooks ran as `active` closed; the summary is printed after this
                finished[-1].hook_errors.extend(secrets.scrub(e) for e in suites.hook_errors)
    finally:
        with anyio.CancelScope(shield=True):
            for model in {id(m): m for m in (user_model, judge_model) if m}.values():
                await model.aclose()
    return finished[-1]


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """Cancel the run on SIGINT, SIGTERM or SIGHUP (`_STOP_SIGNALS`), also when the shell
    started sparring with SIGINT ignored. Outside this receiver they are ignored until the
    reports are written (`run_command`), so a second one changes nothing."""
    try:
        with anyio.open_signal_receiver(*_STOP_SIGNALS) as signals:
            async for _ in signals:
                scope.cancel()
    finally:  # leaving the receiver restores the default handlers, not the ignored ones
        for signum in _STOP_SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


def _check_writable(path: Path) -> None:
    """Fail before the run, not after it, when a report cannot be written to `path`."""
    if path.is_dir():
        raise UserError(
            f"report path {str(path)!r} is a directory; give a file name such as "
            f"{str(path / 'results.json')!r}"
        )
    parent = path.parent
    while not parent.exists():
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise UserError(
            f"cannot write a report to {str(path)!r}: {str(parent)!r} is not a "
            "writable directory; pick another path"
        )


def _write_reports(result: RunResult, reports: dict[str, str | None]) -> bool:
    """Write every requested report, each whatever happens to the others; False (after
    saying which and why) if any could not be written."""
    from sparring.reports.json import write_json
    from sparring.reports.junit import write_junit
    from sparring.reports.markdown import write_markdown

    writers = {"JSON": write_json, "JUnit": write_junit, "Markdown": write_markdown}
    ok = True
    for label, path in reports.items():
        if not path:
            continue
        try:
            writers[label](result, Path(path))
        except Exception as e:  # one failed report must not lose the others
            why = e.strerror or e if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
            click.secho(
                f"error: could not write the {label} report to {path}: {why}",
                fg="red",
                err=True,
            )
            ok = False
        else:
            click.echo(f"{label} report: {path}", err=True)
    return ok
