"""`sparring run`: load tests, resolve models and targets, run with a live view, report."""

from __future__ import annotations

import asyncio
import os
import signal
import warnings
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import click

from sparring.cli.recording import prepare_run
from sparring.config import Settings
from sparring.errors import UserError
from sparring.events import Event, RunFinished
from sparring.models.base import Model
from sparring.results import RunResult
from sparring.runner import NO_MODEL_HINT, AnyRunnable, RunSettings, TargetPool, run_scenarios
from sparring.runner.adaptive import unconfirmable
from sparring.scenario import AnyScenario

if TYPE_CHECKING:
    from sparring.authoring.suite import SuiteRun
    from sparring.cli.recording import Recording, RunCall
    from sparring.cli.replaying import Replaying
    from sparring.reports.console import ConsoleView
    from sparring.runner.code import CodeScenario
    from sparring.secrets import Secrets

EXIT_REPORT_FAILED = 3
STDOUT = "-"
"""The report path that means standard output (`--output -`)."""
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
    "store",
    "explain_failures",
)


def run_command(
    *,
    paths: tuple[str, ...],
    pattern: str | None,
    tags: tuple[str, ...] = (),
    output: str | None,
    junit: str | None,
    markdown: str | None,
    html: str | None = None,
    xlsx: str | None = None,
    csv_zip: str | None = None,
    fail_fast: bool,
    fail_on_skip: bool,
    live: bool | None,
    adaptive: bool = False,
    quiet: bool = False,
    given: list[AnyScenario] | None = None,
    on_result: Callable[[RunResult], None] | None = None,
    **options: Any,
) -> int:
    """Body of `sparring run`; returns the exit code (see `sparring.cli.main`). `given`
    scenarios are run instead of loading `paths` (`sparring redteam`); `on_result` sees the
    result after the summary.

    Raises:
        UserError: bad test files, settings, model specs or targets (exit code 2).
    """
    options["adaptive"] = adaptive  # `--shard` refuses it
    call = prepare_run(
        paths=paths, pattern=pattern, tags=tags, options=options, setting_names=_SETTING_OPTIONS
    )
    paths, pattern, tags, settings = call.paths, call.pattern, call.tags, call.settings
    files = {"JSON": output, "JUnit": junit, "Markdown": markdown, "HTML": html, "xlsx": xlsx}
    reports = report_paths(files | {"CSV zip": csv_zip})
    paths = paths or _default_paths()
    scenarios, suites = _load(paths, pattern=pattern, settings=settings, given=given)
    scenarios, code = _select(scenarios, suites, pattern=pattern, tags=tags, paths=paths)
    if options.get("list_only"):  # also given to `prepare_run`: a listing keeps nothing
        _print_list([*scenarios, *code], trials=settings.trials)
        return 0
    plan = _plan(
        call,
        options,
        loaded=(scenarios, code, suites),
        settings=RunSettings.from_settings(
            settings, fail_fast=fail_fast, fail_on_skip=fail_on_skip, adaptive=adaptive
        ),
        view=_view(live=live, quiet=quiet, stderr=output == STDOUT),
    )
    if (warning := unconfirmable([*scenarios, *code], adaptive=adaptive)) is not None:
        click.secho(f"warning: {warning}", fg="yellow", err=True)
    previous = _ignore_stop_signals()
    result = anyio.run(_run, plan)
    code = _conclude(result, plan, settings=settings, reports=reports, on_result=on_result)
    _after_run(result, previous)
    return code


def _conclude(
    result: RunResult,
    plan: _Plan,
    *,
    settings: Settings,
    reports: dict[str, str | None],
    on_result: Callable[[RunResult], None] | None,
) -> int:
    """After the run: gates, reports, the store's end, the summary (and the red-team rates
    of a run with attacks, on standard error when the JSON report has standard output), then
    `on_result`; returns the exit code (3 when a report could not be written, whatever the
    run's own code)."""
    from sparring.redteam import render_summary, summarize

    exit_status, gate_lines = gate_outcome(result, settings)
    written = write_reports(result, reports, exit_status=exit_status, gate_lines=gate_lines)
    if not written and result.exit_code != 130:
        exit_status = _report_failed(result, exit_status)
    code = exit_status[0] if exit_status else result.exit_code
    plan.recording.close(result, exit_code=code)
    if (replayed := plan.replaying.summary()) is not None:
        click.echo(replayed, err=True)
    plan.view.summary(result, gate_lines=gate_lines, exit_status=exit_status)
    if (attacks := summarize(result)).plugins:  # red-team attacks: rates as `sparring redteam`
        click.echo(render_summary(attacks), err=reports.get("JSON") == STDOUT)
    if on_result is not None:
        on_result(result)
    return code


def _report_failed(result: RunResult, exit_status: tuple[int, str] | None) -> tuple[int, str]:
    """`(3, meaning)` for a run whose reports could not all be written; the meaning names
    the exit code the run would have had (`exit_status`, else the run's own)."""
    from sparring.reports.outcome import exit_meaning

    code, meaning = exit_status or (result.exit_code, exit_meaning(result))
    return EXIT_REPORT_FAILED, (
        f"a report could not be written (see the error above); else exit code {code}: {meaning}"
    )


@dataclass(frozen=True, kw_only=True)
class _Plan:
    """What `_run` runs: the YAML scenarios, the ids of the Python tests chosen, and how."""

    scenarios: list[AnyScenario]
    code_ids: list[str]
    suites: SuiteRun
    secrets: Secrets
    settings: RunSettings
    models: tuple[Model | None, Model | None]
    """The simulated user's and the judge's."""
    view: ConsoleView
    recording: Recording
    """Keeps the run in the results store (`sparring.cli.recording`)."""
    replaying: Replaying
    """Records and replays the run (`sparring.cli.replaying`); closes the models."""


def _select(
    scenarios: list[AnyScenario],
    suites: SuiteRun,
    *,
    pattern: str | None,
    tags: tuple[str, ...],
    paths: tuple[str, ...],
) -> tuple[list[AnyScenario], list[CodeScenario]]:
    """The YAML scenarios and Python tests to run: those `pattern` matches (applied to the
    YAML ones when loading) and, with `tags`, only scenarios that have one of them (Python
    tests have no tags).

    Raises:
        UserError: a tag no scenario has (`_check_tags`), or nothing is left, with what was
            asked for (or what the files of `paths` hold instead of scenarios).
    """
    code = suites.scenarios(pattern=pattern)
    if tags:
        if scenarios:  # else what is asked for matches nothing, as said below
            _check_tags(tags, scenarios, pattern=pattern)
        scenarios = [s for s in scenarios if set(tags).intersection(s.tags)]
        code = []
    if scenarios or code:
        return scenarios, code
    asked = [f"--pattern {pattern!r}"] * bool(pattern) + [f"--tag {' or '.join(tags)}"] * bool(tags)
    if asked:
        raise UserError(
            f"no scenario matches {' and '.join(asked)}; run with --list to see the ids and "
            "tags (Python tests have no tags)"
        )
    raise UserError(_no_scenarios(paths))


def _no_scenarios(paths: tuple[str, ...]) -> str:
    """Why the test files of `paths` (which loaded) hold nothing to run: they are library
    files of evaluations and simulated users, or sparring reports."""
    from sparring.loaders._library_file import is_library
    from sparring.loaders._parse import parse_documents
    from sparring.loaders.files import read_test_file, split_paths

    files, _ = split_paths(paths)
    libraries = [
        str(f)
        for f in files
        if all(
            d.data is None or is_library(d.data)
            for d in parse_documents(read_test_file(f), path=str(f))
        )
    ]
    if libraries and len(libraries) == len(files):
        what = "is a library file" if len(libraries) == 1 else "are library files"
        return (
            f"{', '.join(libraries)} {what}: "
            "evaluations and simulated users that scenarios use by name, nothing to run by "
            "itself; run the test files whose scenarios name them (`sparring run` reads the "
            "library files among the paths it is given and next to a file named on its own), "
            "or list it in the `library` setting"
        )
    kinds = "library files or sparring reports" if libraries else "sparring reports?"
    return f"the test files hold no scenarios (only {kinds}); give files with `scenarios:`"


def _check_tags(
    tags: tuple[str, ...], scenarios: list[AnyScenario], *, pattern: str | None
) -> None:
    """Refuse a `--tag` that no scenario has: a typo would quietly run fewer scenarios.

    Raises:
        UserError: names each such tag with the closest known one ("did you mean"), and
            lists the tags the scenarios have.
    """
    import difflib

    known = sorted({tag for s in scenarios for tag in s.tags})
    unknown = [tag for tag in tags if tag not in known]
    if not unknown:
        return
    close = [m[0] for tag in unknown if (m := difflib.get_close_matches(tag, known, n=1))]
    hint = f" (did you mean {' or '.join(f'--tag {c}' for c in close)}?)" if close else ""
    among = f" that --pattern {pattern!r} matches" if pattern else ""
    raise UserError(
        f"{' and '.join(f'--tag {tag}' for tag in unknown)} "
        f"{'matches' if len(unknown) == 1 else 'match'} no scenario{among}{hint}; known "
        f"tags: {', '.join(known) or 'none'} (Python tests have no tags)"
    )


def _view(*, live: bool | None, quiet: bool, stderr: bool) -> ConsoleView:
    """The live view: on stderr when stdout carries the JSON report (`-o -`)."""
    from sparring.reports.console import ConsoleView, default_console

    return ConsoleView(
        console=default_console(stderr=stderr), live=live, quiet=quiet, summary_at_exit=False
    )


def gate_outcome(result: RunResult, settings: Settings) -> tuple[tuple[int, str] | None, list[str]]:
    """The group gates of `[tool.sparring.groups]` over the run's scenarios, as in the
    pytest plugin (`sparring.gates`): their summary lines, and `(code, meaning)` when they
    change the exit code (`None` when there are no gates or they change nothing)."""
    if not settings.groups:
        return None, []
    from sparring.gates import evaluate, gated_exit_code, run_records
    from sparring.reports import stopped_by_fail_fast
    from sparring.reports.outcome import exit_meaning

    report = evaluate(
        settings.groups,
        run_records(result),
        stopped_early=stopped_by_fail_fast(result),
        stopped_by="--fail-fast",
    )
    code = gated_exit_code(result, report)
    lines = report.lines(overridden_to=code)
    if code == result.exit_code:
        return None, lines
    meaning = exit_meaning(result, code) if code else _OVERRIDDEN
    return (code, f"{meaning} (overridden from {result.exit_code} by the group gates)"), lines


_OVERRIDDEN = "every gate is met and every failed scenario belongs to a group"


def _ignore_stop_signals() -> dict[signal.Signals, Any]:
    """Ignore the stop signals outside the event loop's own handlers (see
    `_stop_on_signal`), so a second Ctrl-C or SIGTERM cannot break off the reports of an
    interrupted run; returns the handlers to restore (`_after_run`)."""
    return {s: signal.signal(s, signal.SIG_IGN) for s in _STOP_SIGNALS}


def _after_run(result: RunResult, previous: dict[signal.Signals, Any]) -> None:
    """Say an interrupted run was interrupted (its signals stay ignored until the process
    exits); else restore the signal handlers `previous`."""
    if result.interrupted:
        click.secho(
            "Interrupted: the reports hold the trials that finished; unfinished ones "
            "are marked `interrupted`.",
            fg="yellow",
            err=True,
        )
        return
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _load(
    paths: tuple[str, ...],
    *,
    pattern: str | None,
    settings: Settings,
    given: list[AnyScenario] | None = None,
) -> tuple[list[AnyScenario], SuiteRun]:
    """YAML scenarios (filtered by `pattern`; `red_team` ones expanded into attacks), or
    the `given` ones, and the Python test files' suites (their models connected with
    `settings`)."""
    from sparring.authoring.suite import SuiteRun
    from sparring.judging.should import ConditionGrammarWarning
    from sparring.loaders.files import split_paths
    from sparring.loaders.python import load_suites
    from sparring.loaders.yaml import load_paths
    from sparring.redteam import expand_red_team
    from sparring.simulator import voice_mode_notes

    if given is not None:
        return given, SuiteRun([], settings=settings)
    yaml_files, py_files = split_paths(paths)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ConditionGrammarWarning)
        scenarios = load_paths(yaml_files, pattern=pattern) if yaml_files else []
    for w in caught:  # e.g. a `should` that is not a verb phrase, at its file:line
        click.secho(f"warning: {w.filename}:{w.lineno}: {w.message}", fg="yellow", err=True)
    for note in voice_mode_notes(scenarios):  # a voice-mode user typing to a text target
        click.secho(f"note: {note}", fg="yellow", err=True)
    scenarios = expand_red_team(scenarios)
    return scenarios, SuiteRun(load_suites(py_files, named=paths), settings=settings)


def _default_paths() -> tuple[str, ...]:
    if Path(DEFAULT_TESTS).is_dir():
        return (DEFAULT_TESTS,)
    raise UserError(
        f"give the test files or directories to run, e.g. `sparring run "
        f"{DEFAULT_TESTS}` (`sparring init` writes a starter there)"
    )


def _print_list(scenarios: list[AnyRunnable], *, trials: int | None) -> None:
    from sparring.loaders.files import shown_source

    for s in scenarios:
        count = trials or s.trials
        tags = "".join(f", #{t}" for t in getattr(s, "tags", ()))
        click.echo(
            f"{s.id}  [{s.kind}, {count} trial{'s' if count != 1 else ''}{tags}]  "
            f"{shown_source(s.source) or ''}"
        )
    click.echo(f"{len(scenarios)} scenario{'s' if len(scenarios) != 1 else ''}")


def _plan(
    call: RunCall,
    options: dict[str, Any],
    *,
    loaded: tuple[list[AnyScenario], list[CodeScenario], SuiteRun],
    settings: RunSettings,
    view: ConsoleView,
) -> _Plan:
    """The run's plan: the `loaded` scenarios, Python tests and suites, its secrets and
    models, recorded and replayed as the options ask (`sparring.cli.replaying`).

    Raises:
        UserError: as `Replaying.prepare` and `Replaying.scenarios`, or a model that cannot
            be built.
    """
    from sparring.cli.replaying import Replaying

    scenarios, code, suites = loaded
    secrets = _secrets(call.settings)
    rerun = call.recording.missing if call.recording.resumed else None
    replaying = Replaying.prepare(options, settings=call.settings, secrets=secrets, rerun=rerun)
    if replaying.users is not None:  # one trial per stored conversation
        scenarios, settings = replaying.scenarios(scenarios), replace(settings, trials=None)
    return _Plan(
        scenarios=scenarios,
        code_ids=[s.id for s in code],
        suites=suites,
        secrets=secrets,
        settings=settings,
        models=_resolve_models(call.settings, replaying),
        view=view,
        recording=call.recording,
        replaying=replaying,
    )


def _resolve_models(settings: Settings, replaying: Replaying) -> tuple[Model | None, Model | None]:
    from sparring.models.registry import OWN_ENDPOINT_PROVIDERS, split_model_spec

    user, judge = replaying.models()
    specs = {s for s in (settings.resolved_user_model, settings.resolved_judge_model) if s}
    elsewhere = sorted(s for s in specs if split_model_spec(s)[0] in OWN_ENDPOINT_PROVIDERS)
    if settings.base_url and elsewhere:  # said, so a `--base-url` never seems lost
        click.secho(
            f"note: base_url is for openai-compatible: models; {', '.join(elsewhere)} "
            "keeps its provider's own endpoint",
            fg="yellow",
            err=True,
        )
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


async def _run(plan: _Plan) -> RunResult:
    """The run, with a live view; Ctrl-C, SIGTERM or SIGHUP stops it and returns what
    finished (`RunResult.interrupted`)."""
    finished: list[RunResult] = []
    user_model, judge_model = plan.models
    try:
        plan.replaying.start()
        async with TargetPool(secrets=plan.secrets) as pool:
            with plan.view as view:

                def observe(event: Event) -> None:
                    view(event)
                    if isinstance(event, RunFinished):  # sent even when interrupted
                        finished.append(event.result)

                async with plan.suites.active(client=pool.client) as tests:
                    chosen = plan.recording.chosen(
                        [*plan.scenarios, *(tests[i] for i in plan.code_ids)]
                    )
                    targets = plan.replaying.targets(pool.for_scenario)
                    for scenario in chosen:  # misconfigured targets fail here,
                        if scenario.target is not None:  # not inside the task group
                            targets(scenario)
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(_stop_on_signal, tg.cancel_scope)
                        await run_scenarios(
                            chosen,
                            targets=targets,
                            user_model=user_model,
                            judge_model=judge_model,
                            settings=plan.settings,
                            # replay marks trials by their stored numbers (a --resume's)
                            observer=plan.recording.observe(plan.replaying.observe(observe)),
                            scrub=plan.secrets.scrub,
                        )
                        tg.cancel_scope.cancel()  # done: stop listening for signals
                # after_all hooks ran as `active` closed; the summary is printed after this
                scrubbed = (plan.secrets.scrub(e) for e in plan.suites.hook_errors)
                finished[-1].hook_errors.extend(scrubbed)
    finally:
        with anyio.CancelScope(shield=True):
            await plan.replaying.aclose()
    return finished[-1]


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    """Cancel the run on SIGINT, SIGTERM or SIGHUP (`_STOP_SIGNALS`), also when the shell
    started sparring with SIGINT ignored. Outside this task they are ignored until the
    reports are written (`run_command`), so a second one changes nothing: each signal goes
    from this task's handler straight back to ignored (an event loop's receiver restores
    the default handlers on its way out, and a second Ctrl-C or SIGTERM landing right then
    would end the process without its reports)."""
    loop = asyncio.get_running_loop()

    def stop(signum: int, frame: object) -> None:
        loop.call_soon_threadsafe(scope.cancel)

    try:
        for signum in _STOP_SIGNALS:
            signal.signal(signum, stop)
        await anyio.sleep_forever()
    finally:
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


def report_paths(reports: dict[str, str | None]) -> dict[str, str | None]:
    """`reports` (format -> path), checked before the run: writable, and `-` (standard
    output) only for the JSON report.

    Raises:
        UserError: a path that cannot be written, or `-` for another format.
    """
    for label, path in reports.items():
        if path == STDOUT and label != "JSON":
            raise UserError(
                f"the {label} report cannot go to standard output (`-`); only the JSON "
                "report can (`--output -`): give a file name"
            )
        if path and path != STDOUT:
            _check_writable(Path(path))
        if path and label == "xlsx":
            from sparring.reports.exports import require_openpyxl

            require_openpyxl()  # a missing extra fails before the run, not after it
    return reports


def write_reports(
    result: RunResult,
    reports: dict[str, str | None],
    *,
    exit_status: tuple[int, str] | None,
    gate_lines: list[str],
) -> bool:
    """Write every requested report, each whatever happens to the others (the JSON one to
    standard output for `-`; the Markdown one with the group gates and the exit status
    they decided); False (after saying which and why) if any could not be written."""
    from sparring.reports.exports import write_csv_zip, write_xlsx
    from sparring.reports.html import write_html
    from sparring.reports.json import render_json, write_json
    from sparring.reports.junit import write_junit
    from sparring.reports.markdown import write_markdown

    writers: dict[str, Callable[[RunResult, Path], None]] = {
        "JSON": write_json,
        "JUnit": write_junit,
        "HTML": lambda r, p: write_html(r, p, exit_status=exit_status, gate_lines=gate_lines),
        "xlsx": write_xlsx,
        "CSV zip": write_csv_zip,
        "Markdown": lambda r, p: write_markdown(
            r, p, exit_status=exit_status, gate_lines=gate_lines
        ),
    }
    ok = True
    for label, path in reports.items():
        if not path:
            continue
        try:
            if path == STDOUT:
                click.echo(render_json(result))
                continue
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
