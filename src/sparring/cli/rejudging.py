"""Grade a stored run's transcripts again (`sparring rejudge`): no agent and no simulated
user is called; each judged trial keeps its transcript and checks and gets the judge's new
verdicts, `--repeat K` times with the majority kept and each item's agreement measured.

Which trials are judged again: those the runner judged or would have (the conversation
ended, so its status came from its verdicts), unless a check failed them and neither the
scenario nor the settings say `judge_after_failed_checks`; every other trial (target error,
timeout, invalid, Python tests) is kept as stored.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import anyio

from sparring.config import Settings
from sparring.errors import UserError
from sparring.judging.judge import ShouldItem, judge_conversation
from sparring.judging.sampling import model_settings
from sparring.models.base import Model
from sparring.prompts import Scrub
from sparring.reports.markdown import UNSTABLE_JUDGE
from sparring.results import (
    RunResult,
    TrialResult,
    Usage,
    Verdict,
    VerdictStatus,
    trial_status,
    undecided_text,
)
from sparring.runner.run import with_expected_output
from sparring.runner.script import script_steps
from sparring.runner.settings import RunSettings
from sparring.scenario import AnyScenario, ScriptedScenario, SingleTurnScenario
from sparring.secrets import Secrets

JUDGED_KINDS = ("criterion", "restriction", "should")
"""Verdict kinds the judge decides; checks are kept as stored."""
_ENDED = ("goal_achieved", "user_gave_up", "max_turns", "script_done", "simulator_failed")
"""End reasons of a conversation the runner goes on to judge."""
_SEVERITY: dict[str, int] = {"error": 3, "not_met": 2, "met": 1, "skipped": 0}
"""Tie-break of a majority: the worse status wins (a tie is never a pass)."""


@dataclass(frozen=True, kw_only=True)
class Agreement:
    """How often the judge's `repeat` answers on item `item_id` of a scenario's trials
    agreed with their majority: `agreeing` of `answers` (over all its judged trials);
    `flipped` when some trial's answers differed."""

    scenario_id: str
    item_id: str
    agreeing: int
    answers: int
    flipped: bool

    @property
    def rate(self) -> float:
        """Share of answers equal to their trial's majority, 0-1."""
        return self.agreeing / self.answers if self.answers else 1.0


@dataclass(kw_only=True)
class Rejudged:
    """The new run and, per scenario and item, the judge's agreement; `skipped` names the
    Python tests kept as stored (their verdicts come from code, not from a YAML spec)."""

    result: RunResult
    agreements: list[Agreement] = field(default_factory=list[Agreement])
    skipped: list[str] = field(default_factory=list[str])
    repeat: int = 1


def stored_specs(
    original: RunResult, *, paths: Sequence[str], pattern: str | None
) -> dict[str, AnyScenario]:
    """The YAML scenario of each scenario of `original` (not its Python tests), reloaded
    from the run's `paths` as `--resume` does.

    Raises:
        UserError: a test file is bad, or a scenario of the run is no longer in the files.
    """
    by_id, lost = _specs_by_id(original, paths=paths, pattern=pattern)
    if lost:
        raise UserError(
            f"scenarios of run {original.run_id} are no longer in its test files "
            f"({', '.join(paths)}): {', '.join(lost)}; the files changed since, so these "
            "transcripts have no spec to be judged against (restore the files, e.g. from git "
            "at the run's commit)"
        )
    return by_id


def criteria_specs(original: RunResult, files: Sequence[str]) -> dict[str, AnyScenario]:
    """The YAML scenario in `files` (`--criteria-from`) of each scenario of `original`
    (not its Python tests), matched by id: their criteria, restrictions and `should`s
    grade the stored transcripts.

    Raises:
        UserError: a file is bad, or holds no scenario with one of the run's scenario ids.
    """
    by_id, lost = _specs_by_id(original, paths=files, pattern=None)
    if lost:
        raise UserError(
            f"--criteria-from {' '.join(files)} has no scenario with the id of run "
            f"{original.run_id}'s scenarios {', '.join(lost)}; every scenario of the run needs "
            "its criteria there (add them, or name the files that hold them)"
        )
    return by_id


def _specs_by_id(
    original: RunResult, *, paths: Sequence[str], pattern: str | None
) -> tuple[dict[str, AnyScenario], list[str]]:
    """The YAML scenarios in `paths` with the ids of `original`'s YAML scenarios, and the
    ids of those that have none there."""
    from sparring.loaders.files import split_paths
    from sparring.loaders.yaml import load_paths
    from sparring.redteam import expand_red_team

    yaml_files, _ = split_paths(paths)
    loaded = expand_red_team(load_paths(yaml_files, pattern=pattern) if yaml_files else [])
    by_id = {s.id: with_expected_output(s) for s in loaded}  # as the runner judged them
    wanted = [s.scenario_id for s in original.scenarios if s.kind != "python"]
    return {i: by_id[i] for i in wanted if i in by_id}, [i for i in wanted if i not in by_id]


async def rejudge_run(
    original: RunResult,
    specs: dict[str, AnyScenario],
    *,
    judge: Model,
    settings: Settings,
    repeat: int,
) -> Rejudged:
    """`original` judged again by `judge`, each judged trial `repeat` times (>= 1), as a
    new run (new id and start time, `judge` as its judge model); trials in parallel up to
    `settings.parallel`. Never raises for model failures (they are `error` verdicts)."""
    run_settings = RunSettings.from_settings(settings)
    file = Path(settings.secrets_file) if settings.secrets_file else None
    grader = _Grader(
        judge=judge,
        settings=run_settings,
        scrub=Secrets.load(file=file, api_key=settings.api_key).scrub,
        repeat=repeat,
    )
    result = _new_run(original, judge=judge, temperature=run_settings.judge_temperature)
    skipped = [s.scenario_id for s in result.scenarios if s.scenario_id not in specs]
    limiter = anyio.CapacityLimiter(run_settings.parallel)

    async def one(index: int, trial: TrialResult, spec: AnyScenario) -> None:
        async with limiter:
            trials[index] = await grader.grade(trial, spec)

    pairs = [
        (t, specs[s.scenario_id])
        for s in result.scenarios
        if s.scenario_id in specs
        for t in s.trials
    ]
    trials: list[TrialResult] = [t for t, _ in pairs]
    async with anyio.create_task_group() as tg:
        for index, (trial, spec) in enumerate(pairs):
            tg.start_soon(one, index, trial, spec)
    graded = {(t.scenario_id, t.trial): t for t in trials}
    for scenario in result.scenarios:
        scenario.trials = [graded.get((t.scenario_id, t.trial), t) for t in scenario.trials]
    return Rejudged(result=result, agreements=grader.agreements(), skipped=skipped, repeat=repeat)


def _new_run(original: RunResult, *, judge: Model, temperature: float) -> RunResult:
    """`original` as a new run: new id and start, `judge` as its judge model."""
    models = [m for m in original.models if m.role != "judge"]
    models.append(model_settings("judge", judge, temperature=temperature))
    return original.model_copy(
        deep=True,
        update={
            "run_id": uuid.uuid4().hex[:12],
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "judge_model": judge.name,
            "models": models,
            "interrupted": False,
        },
    )


def spec_shoulds(scenario: AnyScenario) -> list[ShouldItem]:
    """The `should`s of a scripted or single-turn scenario, with the ids and turns the
    runner gives them (`t{turn}.should{i}`, turn counting user messages; a `simulate: N`
    step counted as N, as when its simulated user wrote all N)."""
    if not isinstance(scenario, ScriptedScenario | SingleTurnScenario):
        return []
    items: list[ShouldItem] = []
    turn = 0
    for step in script_steps(scenario):
        turn += step.user_messages
        items += [
            ShouldItem(id=f"t{turn}.should{i}", turn=turn, text=text)
            for i, text in enumerate(step.should, start=1)
        ]
    return items


@dataclass(kw_only=True)
class _Grader:
    """Judges trials `repeat` times and keeps, per (scenario, item), the agreement; the
    judge sees the transcript, and its answer is read, with secrets masked by `scrub`."""

    judge: Model
    settings: RunSettings
    scrub: Scrub
    repeat: int
    _tally: dict[tuple[str, str], list[int]] = field(
        default_factory=dict[tuple[str, str], list[int]]
    )
    _flipped: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])

    async def grade(self, trial: TrialResult, spec: AnyScenario) -> TrialResult:
        """`trial` with new judge verdicts, status and error (see the module docstring);
        its `usage` is this judging's."""
        shoulds = spec_shoulds(spec)
        if not self._judgeable(trial, spec, shoulds):
            return trial
        usage = Usage()
        outcomes = [
            await judge_conversation(
                self.judge,
                scenario=spec,
                transcript=trial.transcript,
                shoulds=shoulds,
                limits=self.settings.limits,
                temperature=self.settings.judge_temperature,
                usage=usage,
                scrub=self.scrub,
                require_evidence=spec.require_evidence,
            )
            for _ in range(self.repeat)
        ]
        answers = [o.verdicts for o in outcomes]
        judged = [
            self._majority(trial.scenario_id, list(item)) for item in zip(*answers, strict=True)
        ]
        verdicts = [v for v in trial.verdicts if v.kind not in JUDGED_KINDS] + judged
        return trial.model_copy(
            update={
                "verdicts": verdicts,
                "reply_notes": outcomes[0].reply_notes,
                "status": trial_status(verdicts, trial.insights),
                "error": undecided_text(verdicts, trial.insights),
                "usage": usage,
            }
        )

    def _judgeable(self, trial: TrialResult, spec: AnyScenario, shoulds: list[ShouldItem]) -> bool:
        """The runner judged this trial (or would have, with a judge model)."""
        if trial.end_reason not in _ENDED:
            return False
        if trial.status != trial_status(trial.verdicts, trial.insights):
            return False
        if not spec.all_criteria and not shoulds:
            return False
        checks_failed = any(v.kind == "check" and v.status == "not_met" for v in trial.verdicts)
        after = spec.judge_after_failed_checks or self.settings.judge_after_failed_checks
        return not checks_failed or after

    def _majority(self, scenario_id: str, answers: list[Verdict]) -> Verdict:
        """The most frequent status among `answers` on one item (ties: the worse), its
        first verdict; with several answers its reason says how many agreed, led by
        `UNSTABLE_JUDGE` when they differ."""
        counts: Counter[VerdictStatus] = Counter(v.status for v in answers)
        status = max(counts, key=lambda s: (counts[s], _SEVERITY[s]))
        chosen = next(v for v in answers if v.status == status)
        key = (scenario_id, chosen.id)
        tally = self._tally.setdefault(key, [0, 0])
        tally[0] += counts[status]
        tally[1] += len(answers)
        if len(answers) == 1:
            return chosen
        spread = ", ".join(f"{s} {n}" for s, n in counts.most_common())
        agreement = f"judge agreement {counts[status]}/{len(answers)} ({spread})"
        if len(counts) > 1:
            self._flipped.add(key)
            agreement = f"{UNSTABLE_JUDGE}: {agreement}"
        return chosen.model_copy(update={"reason": f"{agreement}. {chosen.reason}"})

    def agreements(self) -> list[Agreement]:
        """Per (scenario, item) in judging order, the judge's agreement."""
        return [
            Agreement(
                scenario_id=scenario_id,
                item_id=item_id,
                agreeing=agreeing,
                answers=answers,
                flipped=(scenario_id, item_id) in self._flipped,
            )
            for (scenario_id, item_id), (agreeing, answers) in self._tally.items()
        ]
