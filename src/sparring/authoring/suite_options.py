"""Options a Python test takes under the names a YAML scenario uses: `trials` (a count, or
`{"min": 3, "max": 30}` for adaptive trials), `evaluations`, `tool_args_judge` and
`explain_failures`; checked once here for `@suite.scenario` and `@pytest.mark.sparring`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import ValidationError

from sparring.authoring.steps import validation_summary
from sparring.errors import UserError
from sparring.scenario.base import TrialRange
from sparring.scenario.evaluations import Evaluation, ToolArgsJudge

TRIALS_FORM = "trials=5"
RANGE_FORM = 'trials={"min": 3, "max": 30}'
RUBRIC_FORM = 'tool_args_judge={"tool": "lookup_order", "rubric": "The order id is the one given"}'
RubricsLike = ToolArgsJudge | Mapping[str, str] | Sequence[ToolArgsJudge | Mapping[str, str]]
"""What `tool_args_judge=` takes: one rubric (a `ToolArgsJudge` or a mapping) or a list."""


@dataclass(frozen=True, slots=True)
class TestOptions:
    """What a Python test is judged on besides its body, checked: its own evaluations, its
    tool-argument rubrics, and `explain_failures` (`None`: as the settings say)."""

    evaluations: tuple[Evaluation, ...] = ()
    tool_args_judge: tuple[ToolArgsJudge, ...] = ()
    explain_failures: bool | None = None


def checked_options(
    where: str,
    *,
    evaluations: object = (),
    tool_args_judge: object = (),
    explain_failures: object = None,
    also: Sequence[Evaluation] = (),
) -> TestOptions:
    """A Python test's `TestOptions`, each checked (`checked_evaluations`, with `also` the
    suite's; `checked_rubrics`; `checked_flag`).

    Raises:
        UserError: as those say, naming `where`.
    """
    return TestOptions(
        evaluations=checked_evaluations(where, evaluations, also=also),
        tool_args_judge=checked_rubrics(where, tool_args_judge),
        explain_failures=checked_flag(where, "explain_failures", explain_failures),
    )


def suite_trials(repetitions: int, trials: object) -> int | TrialRange:
    """A `@suite.scenario` test's trials: `trials` when given (`checked_trials`), else
    `repetitions`.

    Raises:
        UserError: both given, or a bad value.
    """
    if trials is not None:
        if repetitions != 1:
            raise UserError(
                "suite.scenario: give trials= or repetitions=, not both (trials= takes "
                'a count or {"min": 3, "max": 30})'
            )
        return checked_trials("suite.scenario", trials)
    if (
        not isinstance(repetitions, int)  # pyright: ignore[reportUnnecessaryIsInstance]
        or isinstance(repetitions, bool)
        or not 1 <= repetitions <= 100
    ):
        raise UserError(
            f"suite.scenario(repetitions=...) must be a whole number from 1 "
            f"to 100, got {repetitions!r}"
        )
    return repetitions


def checked_trials(where: str, trials: object, *, form: str = TRIALS_FORM) -> int | TrialRange:
    """`trials` as a count (1-100) or a `TrialRange` (given as one, or as a mapping with
    `min` and `max`).

    Raises:
        UserError: anything else, or a range that is not one (`min` above `max`, a bound
            out of 1-1000); the message names `where` and the accepted `form`.
    """
    if isinstance(trials, TrialRange):
        return trials
    if isinstance(trials, Mapping):
        given: Mapping[Any, Any] = trials  # pyright: ignore[reportUnknownVariableType]
        try:
            return TrialRange.model_validate(dict(given))
        except ValidationError as e:
            raise UserError(
                f"{where}: trials {dict(given)!r}: {validation_summary(e, skip=0)}, as in "
                f"{RANGE_FORM}"
            ) from None
    if isinstance(trials, bool) or not isinstance(trials, int) or not 1 <= trials <= 100:
        raise UserError(
            f"{where}: trials must be a whole number from 1 to 100, got {trials!r}, as in "
            f"{form} (or {RANGE_FORM} for adaptive trials)"
        )
    return trials


def checked_rubrics(where: str, rubrics: object) -> tuple[ToolArgsJudge, ...]:
    """`tool_args_judge` as rubrics: one `ToolArgsJudge` or mapping (`tool`, `rubric`,
    optional `id`), or a list of them, as in YAML.

    Raises:
        UserError: an item that is no rubric, or two with one verdict id.
    """
    items: list[object]
    if isinstance(rubrics, list | tuple):
        items = list(rubrics)  # pyright: ignore[reportUnknownArgumentType]
    elif isinstance(rubrics, ToolArgsJudge | Mapping):
        items = [rubrics]  # pyright: ignore[reportUnknownVariableType]
    else:
        raise UserError(
            f"{where}: tool_args_judge must be a rubric or a list of them, as in "
            f"{RUBRIC_FORM}; got {rubrics!r}"
        )
    out: list[ToolArgsJudge] = []
    for k, item in enumerate(items):
        try:
            out.append(ToolArgsJudge.model_validate(item))
        except ValidationError as e:
            raise UserError(
                f"{where}: tool_args_judge[{k}]: {validation_summary(e, skip=0)}; write "
                f"{RUBRIC_FORM}"
            ) from None
    ids = [r.verdict_id for r in out]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise UserError(
            f"{where}: tool_args_judge has two rubrics with the verdict id {repeated[0]!r}; "
            "give one of them an `id`"
        )
    return tuple(out)


def checked_flag(where: str, name: str, value: object) -> bool | None:
    """`value` of an option that is `True`, `False` or `None` (as the settings say).

    Raises:
        UserError: anything else.
    """
    if value is not None and not isinstance(value, bool):
        raise UserError(f"{where}: {name} must be True or False, got {value!r}")
    return value


def checked_evaluations(
    call: str, evaluations: object, *, also: Sequence[Evaluation] = ()
) -> tuple[Evaluation, ...]:
    """`evaluations` (a list or tuple) as a tuple, checked: `Evaluation` objects, their
    names distinct from each other and from those of `also` (the suite's, for a test's own).

    Raises:
        UserError: naming `call(evaluations=...)`, what is wrong and how to fix it.
    """
    if not isinstance(evaluations, list | tuple):
        raise UserError(
            f"{call}(evaluations=...) takes a list of sparring Evaluation objects, got "
            f"{type(evaluations).__name__} {evaluations!r:.60}"
        )
    given = tuple(cast("list[object]", evaluations))
    for item in given:
        if not isinstance(item, Evaluation):
            raise UserError(
                f"{call}(evaluations=...) takes sparring Evaluation objects, got "
                f"{type(item).__name__} {item!r:.60}; build one with Evaluation(...) or take "
                "it from a library: load_library().evaluation(NAME)"
            )
    checked = tuple(e for e in given if isinstance(e, Evaluation))
    names = [e.name for e in (*also, *checked)]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        where = " (the suite's evaluations have it already)" if also else ""
        raise UserError(f"{call}(evaluations=...) names {', '.join(twice)} twice{where}: keep one")
    return checked
