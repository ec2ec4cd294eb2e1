"""`sparring calibrate LABELS` / `sparring calibrate --run RUN`: how often the judge agrees
with people, on labelled cases or on a stored run's verdict overrides. Imports only click
at start-up; the work is in `sparring.judging.calibration` and the cases are read by
`sparring.loaders.labels`."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from sparring.cli.history import BASE_URL_HELP, STORE_HELP

if TYPE_CHECKING:
    from sparring.config import Settings
    from sparring.judging.calibration import Calibration, CaseResult, Confusion, LabelledCase

_NO_MODEL = (
    "no judge model to calibrate: give --judge-model SPEC (e.g. --judge-model "
    "openai:gpt-4o-mini), or set `judge_model` (or `model`) under [tool.sparring] in "
    "pyproject.toml or in sparring.toml, or SPARRING_JUDGE_MODEL"
)
_SHOWN_WRONG = 20
"""At most this many wrong cases are listed."""


@click.command("calibrate")
@click.argument("labels", metavar="[LABELS]", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--run",
    "run_id",
    metavar="RUN",
    help="Use the verdict overrides of stored run RUN as the labels (instead of LABELS).",
)
@click.option("--store", metavar="URL", help=STORE_HELP)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Also write the results as JSON here (`-` for standard output).",
)
@click.option(
    "--judge-model",
    metavar="SPEC",
    help="Calibrate this judge (default: the configured judge model).",
)
@click.option("--base-url", metavar="URL", help=BASE_URL_HELP)
@click.option(
    "--repeat",
    type=click.IntRange(min=1, max=20),
    default=1,
    show_default=True,
    help="Judge each case K times: the majority is its label, and the judge's "
    "self-agreement is measured.",
)
def calibrate(
    labels: str | None,
    run_id: str | None,
    store: str | None,
    output: str | None,
    judge_model: str | None,
    base_url: str | None,
    repeat: int,
) -> None:
    """Measure the judge against people: LABELS is a JSONL file of labelled cases (a
    transcript, a `criterion`, `restriction` or `should`, and `label` met or not_met; see
    README "Measuring the judge"), or --run RUN takes the verdicts people corrected in a
    stored run (`sparring override`). Prints agreement, Cohen's kappa, a confusion table per
    criterion, the judge's self-agreement over --repeat answers and the cases it got wrong."""
    sys.exit(
        calibrate_command(
            labels,
            run_id=run_id,
            store=store,
            judge_model=judge_model,
            base_url=base_url,
            repeat=repeat,
            output=output,
        )
    )


def calibrate_command(
    labels: str | None,
    *,
    judge_model: str | None,
    repeat: int,
    run_id: str | None = None,
    store: str | None = None,
    output: str | None = None,
    base_url: str | None = None,
) -> int:
    """Body of `sparring calibrate`; returns the exit code: 0 when the judge answered, 3
    when none of its answers could be used (every case `error`). `base_url`: the endpoint
    of an `openai-compatible:` judge (`--base-url`).

    Raises:
        UserError: neither or both of LABELS and `run_id`, no judge model configured, a
            model spec that cannot be used, a labels file that cannot be read, no such run,
            or a run without verdict overrides.
        ConfigError: a labels line that is not a valid case (at file:line), or a
            secrets file that cannot be read.
    """
    from sparring.config import load_settings
    from sparring.errors import UserError

    if (labels is None) == (run_id is None):
        raise UserError(
            "give LABELS (a JSONL file of labelled cases) or --run RUN (a stored run's "
            "verdict overrides), one of them"
        )
    settings = load_settings({"judge_model": judge_model, "base_url": base_url})
    spec = settings.resolved_judge_model
    if spec is None:
        raise UserError(_NO_MODEL)
    cases, origin = _cases(labels, run_id, store)
    say = functools.partial(click.echo, err=output == "-")  # `-o -`: JSON alone on stdout
    say(
        f"Calibrating judge {spec} on {len(cases)} labelled case{_s(len(cases))} from "
        f"{origin}" + (f", each judged {repeat} times" if repeat > 1 else "")
    )
    done = _judged(cases, spec, settings, repeat)
    _print(done, say)
    if output is not None:
        _write(output, done.as_json() | {"judge_model": spec, "labels": origin})
    return 3 if done.overall.errors == len(done.results) else 0


def _judged(cases: list[LabelledCase], spec: str, settings: Settings, repeat: int) -> Calibration:
    """The judge `spec` names (connected with `settings`) graded every case `repeat` times,
    with the run's parallelism, judge temperature and limits, and its secret scrubbing (the
    models' API keys and the `api_key` setting are masked in what the judge sees and says).

    Raises:
        UserError: the model spec cannot be used.
        ConfigError: the `secrets_file` setting names a file that cannot be read.
    """
    import anyio

    from sparring.judging.calibration import calibrate
    from sparring.models.registry import model_from_settings
    from sparring.runner.settings import RunSettings
    from sparring.secrets import Secrets

    judge = model_from_settings(spec, settings)
    limits = RunSettings.from_settings(settings).limits
    secrets = Secrets.load(file=settings.secrets_file, api_key=settings.api_key)

    async def work() -> Calibration:
        try:
            return await calibrate(
                judge,
                cases,
                repeat=repeat,
                parallel=settings.parallel,
                temperature=settings.judge_temperature,
                limits=limits,
                scrub=secrets.scrub,
            )
        finally:
            await judge.aclose()

    return anyio.run(work)


def _write(output: str, data: dict[str, Any]) -> None:
    """Write `data` as JSON to the file `output` (`-`: standard output).

    Raises:
        UserError: the file cannot be written.
    """
    import json

    from sparring.errors import UserError

    text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    if output == "-":
        click.echo(text, nl=False)
        return
    try:
        Path(output).write_text(text, encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot write {output!r}: {e.strerror or e}") from None


def _cases(
    labels: str | None, run_id: str | None, store: str | None
) -> tuple[list[LabelledCase], str]:
    """The cases, and where they come from (as printed).

    Raises:
        UserError: as `read_labels`; no such run; a run without verdict overrides.
    """
    if labels is not None:
        from sparring.loaders.labels import read_labels

        return read_labels(labels), labels
    from sparring.cli.history import open_named
    from sparring.errors import UserError
    from sparring.judging.calibration import override_cases
    from sparring.store.reading import find_run, load_run

    opened = open_named(store)
    found = find_run(opened, run_id)
    cases = override_cases(load_run(opened, found.id))
    if not cases:
        raise UserError(
            f"run {found.id} has no verdict overrides of criteria, restrictions or shoulds to "
            "calibrate against; record them with `sparring override` (or in the dashboard)"
        )
    return cases, f"the verdict overrides of run {found.id}"


def _print(done: Calibration, say: Callable[[str], None]) -> None:
    overall = done.overall
    say("")
    say(_summary("Overall", overall))
    if done.self_agreement is not None:
        flipped = done.unstable
        names = ", ".join(r.case.id for r in flipped[:10]) + (" ..." if len(flipped) > 10 else "")
        say(
            f"Judge self-agreement over {done.repeat} answers: {_pct(done.self_agreement)}"
            + (f"; it changed its mind on {len(flipped)}: {names}" if flipped else "")
        )
    for table in done.by_criterion:
        say("")
        say(_summary(table.name, table))
        say(_table(table))
    _print_wrong(done.wrong, say)
    usage = done.usage
    say("")
    say(
        f"Model calls: {usage.model_calls}, tokens {usage.input_tokens} in / "
        f"{usage.output_tokens} out"
    )


def _summary(name: str, table: Confusion) -> str:
    agreeing = sum(r.correct for r in table.results)
    kappa = table.kappa
    if kappa is not None:
        shown = f"{kappa:.2f}"
    elif table.errors == table.total:
        shown = "n/a (the judge decided no case)"
    else:
        shown = "n/a (person and judge gave every decided case one same label)"
    errors = f"; {table.errors} judge error{_s(table.errors)}" if table.errors else ""
    return (
        f"{name}: agreement {agreeing}/{table.total} ({_pct(table.agreement)}), Cohen's kappa "
        f"{shown}{errors}"
    )


def _table(table: Confusion) -> str:
    """Rows: the person's label; columns: the judge's."""
    from sparring.judging.calibration import JUDGE_LABELS, LABELS

    corner = "person \\ judge"
    head = f"  {corner:<16}" + "".join(f"{label:>9}" for label in JUDGE_LABELS)
    rows = [
        f"  {person:<16}" + "".join(f"{table.count(person, j):>9}" for j in JUDGE_LABELS)
        for person in LABELS
    ]
    return "\n".join([head, *rows])


def _print_wrong(wrong: list[CaseResult], say: Callable[[str], None]) -> None:
    say("")
    if not wrong:
        say("The judge agreed with every label.")
        return
    say(f"Cases the judge got wrong ({len(wrong)}):")
    for result in wrong[:_SHOWN_WRONG]:
        case = result.case
        say(
            f"  {case.id} ({case.source}) {case.criterion_id[:60]}: person {case.label}, "
            f"judge {result.judge_label}: {result.reason[:200]}"
        )
    if len(wrong) > _SHOWN_WRONG:
        say(f"  ... and {len(wrong) - _SHOWN_WRONG} more")


def _pct(fraction: float | None) -> str:
    from sparring.reports import percent

    return percent(fraction)


def _s(count: int) -> str:
    return "" if count == 1 else "s"
