"""Measuring the judge against human labels (`sparring calibrate`).

Each `LabelledCase` is a finished conversation, one criterion, restriction or `should` (on
one reply) and the label a person gave it (`met` / `not_met`): read from a labels file, or
from the verdict overrides of a stored run (`override_cases`). `calibrate` has the judge grade every
case `repeat` times, exactly as in a run (one judge call per answer, the same prompt and
evidence rules), and `Calibration` reports:

- agreement: the share of cases where the judge's label (the majority of its answers, a
  tie going to the worse label) equals the person's; an `error` answer never agrees;
- Cohen's kappa (`cohen_kappa`): agreement corrected for chance, over the cases the judge
  decided;
- a confusion table per criterion (`Confusion`), and over all cases;
- self-agreement: with `repeat` >= 2, the mean share of a case's answers that equal its
  majority (1.0 = the judge never changed its mind), and the cases it flipped on;
- the cases it got wrong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

from sparring.judging.judge import ShouldItem, judge_conversation
from sparring.models.base import Model
from sparring.prompts import DEFAULT_LIMITS, Limits, Scrub
from sparring.results import RunResult, Usage, Verdict
from sparring.scenario import Criterion, ScriptedScenario, ScriptedTurn
from sparring.transcript import Transcript

CaseKind = Literal["criterion", "restriction", "should"]
"""What a case's text is: as the verdict kinds the judge decides."""
Label = Literal["met", "not_met"]
"""A person's label of a case."""
JudgeLabel = Literal["met", "not_met", "error"]
"""The judge's label of a case: `error` when its answer could not be used."""
LABELS: tuple[Label, ...] = ("met", "not_met")
JUDGE_LABELS: tuple[JudgeLabel, ...] = ("met", "not_met", "error")
_SEVERITY: dict[str, int] = {"error": 2, "not_met": 1, "met": 0}
"""Tie-break of a majority: the worse label wins (as `sparring rejudge --repeat`)."""
_ITEM_ID = "criterion"
_SCENARIO_ID = "calibration-case"
"""The id every case is judged under: neutral, so a case's own id cannot sway the judge."""


@dataclass(frozen=True, kw_only=True)
class LabelledCase:
    """A conversation and one thing a person decided about it.

    `text` is a success criterion (`kind="criterion"`), a restriction (`"restriction"`:
    `met` when the agent did not do it) or a `should` condition, a verb phrase completing
    "The message should ..." about the agent's reply at 1-based `turn` (`kind="should"`).
    `criterion_id` groups cases into confusion tables (cases about the same criterion share
    it). `description` is shown to the judge as the scenario's
    description (what is being tested); `source` is `file:line` of the case.
    """

    id: str
    transcript: Transcript
    kind: CaseKind
    text: str
    label: Label
    criterion_id: str
    turn: int | None = None
    description: str | None = None
    source: str = ""


@dataclass(frozen=True)
class CaseResult:
    """The judge's answers on one case (one verdict per repeat)."""

    case: LabelledCase
    answers: tuple[Verdict, ...]

    @property
    def statuses(self) -> list[JudgeLabel]:
        """Each answer as a judge label (`skipped` cannot happen; it counts as `error`)."""
        return [_judge_label(a) for a in self.answers]

    @property
    def judge_label(self) -> JudgeLabel:
        """The majority of the answers; a tie goes to the worse label (error > not_met >
        met)."""
        counts = Counter(self.statuses)
        return max(counts, key=lambda s: (counts[s], _SEVERITY[s]))

    @property
    def correct(self) -> bool:
        """Whether the judge's label is the person's."""
        return self.judge_label == self.case.label

    @property
    def self_agreement(self) -> float:
        """Share (0-1) of the answers equal to their majority."""
        statuses = self.statuses
        return statuses.count(self.judge_label) / len(statuses)

    @property
    def reason(self) -> str:
        """The reason of the first answer with the majority label."""
        return next(a.reason for a in self.answers if _judge_label(a) == self.judge_label)


def _judge_label(verdict: Verdict) -> JudgeLabel:
    return verdict.status if verdict.status in ("met", "not_met") else "error"


def cohen_kappa(pairs: Sequence[tuple[str, str]]) -> float | None:
    """Cohen's kappa of two raters over the same items: `(p_o - p_e) / (1 - p_e)`.

    `p_o` is the share of items both rated alike; `p_e` the agreement expected by chance,
    the sum over labels of the product of each rater's share of that label.

    Args:
        pairs: `(rater A's label, rater B's label)` per item.

    Returns:
        Kappa, from -1 (always disagree) through 0 (chance) to 1 (always agree); `None`
        when it is undefined: no items, or both raters gave one and the same label to
        every item (`p_e` = 1).
    """
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(a == b for a, b in pairs) / n
    first, second = Counter(a for a, _ in pairs), Counter(b for _, b in pairs)
    expected = sum(first[label] * second[label] for label in first) / (n * n)
    if expected == 1:
        return None
    return (observed - expected) / (1 - expected)


@dataclass(frozen=True)
class Confusion:
    """Person's label (rows) against the judge's (columns) over some cases.

    `counts[(person, judge)]` is the number of cases; `name` is the criterion id, or
    `"all"`.
    """

    name: str
    results: tuple[CaseResult, ...]

    def count(self, person: Label, judge: JudgeLabel) -> int:
        """Cases the person labelled `person` and the judge `judge`."""
        return sum(r.case.label == person and r.judge_label == judge for r in self.results)

    @property
    def total(self) -> int:
        """Number of cases."""
        return len(self.results)

    @property
    def agreement(self) -> float | None:
        """Share (0-1) of cases where the judge's label is the person's (an `error` never
        is); `None` without cases."""
        return sum(r.correct for r in self.results) / self.total if self.results else None

    @property
    def errors(self) -> int:
        """Cases whose judge label is `error`."""
        return sum(r.judge_label == "error" for r in self.results)

    @property
    def kappa(self) -> float | None:
        """Cohen's kappa over the cases the judge decided (`cohen_kappa`)."""
        return cohen_kappa(
            [(r.case.label, r.judge_label) for r in self.results if r.judge_label != "error"]
        )


@dataclass
class Calibration:
    """Every case's answers, and what they say about the judge (see the module docstring)."""

    results: list[CaseResult]
    repeat: int
    usage: Usage = field(default_factory=Usage)

    @property
    def overall(self) -> Confusion:
        """The confusion table over every case."""
        return Confusion("all", tuple(self.results))

    @property
    def by_criterion(self) -> list[Confusion]:
        """One confusion table per `criterion_id`, in order of first appearance."""
        names = list(dict.fromkeys(r.case.criterion_id for r in self.results))
        return [
            Confusion(n, tuple(r for r in self.results if r.case.criterion_id == n)) for n in names
        ]

    @property
    def self_agreement(self) -> float | None:
        """Mean share of each case's answers equal to its majority; `None` when each case
        was judged once."""
        if self.repeat < 2 or not self.results:
            return None
        return sum(r.self_agreement for r in self.results) / len(self.results)

    @property
    def unstable(self) -> list[CaseResult]:
        """Cases whose answers differ."""
        return [r for r in self.results if len(set(r.statuses)) > 1]

    @property
    def wrong(self) -> list[CaseResult]:
        """Cases whose judge label is not the person's, in case order."""
        return [r for r in self.results if not r.correct]

    def as_json(self) -> dict[str, Any]:
        """Everything `sparring calibrate` prints, as JSON data (`--output`): `repeat`,
        `overall` and `criteria` (each `name`, `cases`, `agreement` 0-1, `kappa`, `errors`
        and `confusion[person][judge]` counts), `self_agreement`, `unstable` (case ids),
        `cases` (each `id`, `source`, `criterion_id`, `label`, `judge_label`, `answers`,
        `reason`) and `usage`."""
        return {
            "repeat": self.repeat,
            "overall": _table_json(self.overall),
            "criteria": [_table_json(t) for t in self.by_criterion],
            "self_agreement": self.self_agreement,
            "unstable": [r.case.id for r in self.unstable],
            "cases": [
                {
                    "id": r.case.id,
                    "source": r.case.source,
                    "criterion_id": r.case.criterion_id,
                    "label": r.case.label,
                    "judge_label": r.judge_label,
                    "answers": r.statuses,
                    "reason": r.reason,
                }
                for r in self.results
            ],
            "usage": self.usage.model_dump(),
        }


def _table_json(table: Confusion) -> dict[str, Any]:
    return {
        "name": table.name,
        "cases": table.total,
        "agreement": table.agreement,
        "kappa": table.kappa,
        "errors": table.errors,
        "confusion": {p: {j: table.count(p, j) for j in JUDGE_LABELS} for p in LABELS},
    }


async def calibrate(
    model: Model,
    cases: Sequence[LabelledCase],
    *,
    repeat: int = 1,
    parallel: int = 8,
    temperature: float = 0.0,
    limits: Limits = DEFAULT_LIMITS,
    scrub: Scrub | None = None,
) -> Calibration:
    """Have the judge grade every case `repeat` times, at most `parallel` calls at once.

    Never raises for model failures: a failed or unreadable answer is an `error` verdict.

    Args:
        model: The judge.
        cases: The labelled cases.
        repeat: Answers per case (>= 1).
        parallel: Judge calls in flight at once (>= 1).
        temperature: Judge sampling temperature.
        limits: What the judge sees of each conversation, as in a run.
        scrub: Masks secrets (`sparring.secrets.Secrets.scrub`) in what the judge is shown
            and in the verdicts' reasons and evidence, as in a run.

    Returns:
        The calibration, its results in case order.
    """
    usage = Usage()
    answers: dict[tuple[int, int], Verdict] = {}
    limiter = anyio.CapacityLimiter(parallel)

    async def one(index: int, attempt: int) -> None:
        async with limiter:
            answers[index, attempt] = await judge_case(
                model,
                cases[index],
                temperature=temperature,
                limits=limits,
                usage=usage,
                scrub=scrub,
            )

    async with anyio.create_task_group() as group:
        for index in range(len(cases)):
            for attempt in range(repeat):
                group.start_soon(one, index, attempt)
    results = [
        CaseResult(case, tuple(answers[i, k] for k in range(repeat)))
        for i, case in enumerate(cases)
    ]
    return Calibration(results, repeat, usage)


async def judge_case(
    model: Model,
    case: LabelledCase,
    *,
    temperature: float = 0.0,
    limits: Limits = DEFAULT_LIMITS,
    usage: Usage | None = None,
    scrub: Scrub | None = None,
) -> Verdict:
    """One judge answer on `case`, from the judge call a run makes (`judge_conversation`):
    the conversation is a scripted scenario with the case's criterion, or with its `should`
    on the reply at its turn; `scrub` masks secrets in what the judge is shown and in the
    verdict's reason and evidence."""
    turns = [ScriptedTurn(user=m.content) for m in case.transcript.messages if m.role == "user"]
    criteria = (
        []
        if case.kind == "should"
        else [
            Criterion(
                id=_ITEM_ID,
                text=case.text,
                kind="success" if case.kind == "criterion" else "restriction",
            )
        ]
    )
    scenario = ScriptedScenario(
        id=_SCENARIO_ID, description=case.description, turns=turns, criteria=criteria
    )
    turn = case.turn or 1
    shoulds = (
        [ShouldItem(id=f"t{turn}.should1", turn=turn, text=case.text)]
        if case.kind == "should"
        else []
    )
    outcome = await judge_conversation(
        model,
        scenario=scenario,
        transcript=case.transcript,
        shoulds=shoulds,
        limits=limits,
        temperature=temperature,
        usage=usage,
        scrub=scrub,
    )
    verdict = outcome.verdicts[0]
    if scrub is None:
        return verdict
    evidence = tuple(scrub(e) for e in verdict.evidence)
    return verdict.model_copy(update={"reason": scrub(verdict.reason), "evidence": evidence})


_DESCRIBED = {"should": "should ", "restriction": "restriction (must not happen): "}
"""How the judge's verdict descriptions begin (`sparring.judging.judge`), by kind: what is
left is the text judged."""


def override_cases(run: RunResult) -> list[LabelledCase]:
    """The verdicts of `run` a person corrected (`Verdict.override`, as `load_run` applies
    them), as labelled cases: the conversation of the trial, the criterion, restriction or
    `should` judged, and the corrected value as the label. Checks and insights are left
    out (no judge decided the one; the other is not met / not met).

    Ids are `SCENARIO#TRIAL:VERDICT`; `criterion_id` is `SCENARIO:VERDICT`, so each
    scenario's criterion gets its own confusion table.
    """
    cases: list[LabelledCase] = []
    for scenario in run.scenarios:
        for trial in scenario.trials:
            for verdict in trial.verdicts:
                override = verdict.override
                if override is None or verdict.kind == "check":
                    continue
                label = as_label(override.value)
                if label is None:
                    continue
                cases.append(
                    LabelledCase(
                        id=f"{scenario.scenario_id}#{trial.trial}:{verdict.id}",
                        transcript=trial.transcript,
                        kind=verdict.kind,
                        text=verdict.description.removeprefix(_DESCRIBED.get(verdict.kind, "")),
                        label=label,
                        criterion_id=f"{scenario.scenario_id}:{verdict.id}",
                        turn=verdict.turn,
                        description=scenario.description,
                        source=f"run {run.run_id}",
                    )
                )
    return cases


def as_label(value: object) -> Label | None:
    """`value` as a person's label (`met` / `not_met`), or `None` when it is neither."""
    if value == "met":
        return "met"
    return "not_met" if value == "not_met" else None
