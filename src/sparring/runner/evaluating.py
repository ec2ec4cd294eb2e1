"""What a trial's evaluations and `explain_failures` need from the runner: which
evaluations score a scenario, whether it has anything to pass or fail (else its trials end
`done`), a Python test's evaluations and tool-argument rubrics judged after its body, and
the explanation of a failed trial."""

from __future__ import annotations

from collections.abc import Sequence

from sparring.errors import ModelError
from sparring.judging.explain import explain_failure
from sparring.judging.judge import judge_conversation, skipped_verdicts
from sparring.judging.should import JudgeSettings
from sparring.models.base import Model
from sparring.prompts import Scrub
from sparring.results import InsightResult, Usage, Verdict
from sparring.runner.code import CodeScenario
from sparring.runner.script import script_steps
from sparring.runner.settings import AnyRunnable, RunSettings
from sparring.scenario import ScriptedScenario, SingleTurnScenario
from sparring.scenario.evaluations import Evaluation
from sparring.transcript import Transcript

NO_EXPLANATION = "no explanation (explain_failures)"
"""Starts the note a failed trial gets when no explanation could be written."""


def evaluations_of(scenario: AnyRunnable) -> list[Evaluation]:
    """The evaluations scoring each trial of `scenario` (a Python test's, or a loaded
    scenario's `defined_evaluations`)."""
    if isinstance(scenario, CodeScenario):
        return list(scenario.evaluations)
    return scenario.defined_evaluations


def has_gates(scenario: AnyRunnable) -> bool:
    """Whether some insight of the scenario's evaluations has a pass rule."""
    return any(i.gating for e in evaluations_of(scenario) for i in e.insights)


def nothing_to_pass(scenario: AnyRunnable) -> bool:
    """Whether a trial of `scenario` has nothing that can pass or fail it: no criterion,
    check, `should`, tool-argument rubric or gating insight (it ends `done`). A Python
    test always has its body."""
    if isinstance(scenario, CodeScenario):
        return False
    steps = (
        script_steps(scenario)
        if isinstance(scenario, ScriptedScenario | SingleTurnScenario)
        else []
    )
    return not (
        scenario.all_criteria
        or scenario.checks
        or scenario.tool_args_judge
        or any(t.checks or t.should for t in steps)
        or has_gates(scenario)
    )


def masked_insight(insight: InsightResult, scrub: Scrub | None) -> InsightResult:
    """`insight` with secrets masked in its error, reasoning, evidence and text value (an
    error quotes what the judge answered, which may repeat a secret)."""
    if scrub is None:
        return insight
    value = insight.value
    return insight.model_copy(
        update={
            "value": scrub(value) if isinstance(value, str) else value,
            "reasoning": scrub(insight.reasoning),
            "evidence": tuple(scrub(e) for e in insight.evidence),
            "error": None if insight.error is None else scrub(insight.error),
        }
    )


def explains(scenario: AnyRunnable, settings: RunSettings) -> bool:
    """`explain_failures`: the scenario's own when it sets one, else the settings'."""
    own = scenario.explain_failures
    return settings.explain_failures if own is None else own


async def judge_code_test(
    scenario: CodeScenario, transcript: Transcript, judge: JudgeSettings, usage: Usage
) -> tuple[list[Verdict], list[InsightResult]]:
    """A Python test's evaluations and tool-argument rubrics, judged in one call on the
    trial's conversation after its body: `(verdicts, insights)`, secrets masked. Nothing
    when it has neither. Without a model (`judge.model`) or a conversation, the rubrics are
    `skipped` (`not_met` when the tool was never called with arguments that parse) and the
    evaluations not scored (their gates `pending`)."""
    if not (scenario.evaluations or scenario.tool_args_judge):
        return [], []
    subject = SingleTurnScenario.model_construct(
        id=scenario.id,
        name=scenario.display_name,
        prompt="",
        tool_args_judge=list(scenario.tool_args_judge),
    )
    if judge.model is None or not transcript.messages:
        return skipped_verdicts(subject, (), judge.skip_reason, transcript), []
    outcome = await judge_conversation(
        judge.model,
        scenario=subject,
        transcript=transcript,
        evaluations=scenario.evaluations,
        limits=judge.limits,
        temperature=judge.temperature,
        usage=usage,
        scrub=judge.scrub,
    )
    return outcome.verdicts, [masked_insight(i, judge.scrub) for i in outcome.insights]


async def explanation(
    model: Model | None,
    scenario: AnyRunnable,
    transcript: Transcript,
    *,
    results: tuple[Sequence[Verdict], Sequence[InsightResult]],
    settings: RunSettings,
    usage: Usage,
    scrub: Scrub | None,
    no_model: str,
) -> tuple[str | None, str | None]:
    """`(explanation, None)` for a failed trial (`explain_failure` with `model`), or
    `(None, note)` saying why there is none: no model (`no_model` says why) or a failed
    call. Never raises for model failures."""
    if model is None:
        return None, f"{NO_EXPLANATION}: {no_model}"
    verdicts, insights = results
    try:
        text = await explain_failure(
            model,
            title=scenario.display_name,
            transcript=transcript,
            verdicts=verdicts,
            insights=insights,
            limits=settings.limits,
            usage=usage,
            scrub=scrub,
        )
    except ModelError as e:
        return None, f"{NO_EXPLANATION}: the model call failed: {e}"
    return text, None
