"""`explain_failures`: one more model call per failed trial, explaining in plain English why
it failed and what to change in the agent (`TrialResult.explanation`).

The explanation is advice for a person; it never changes a verdict. The transcript is shown
fenced as data, as to the judge (`sparring.prompts.judge_view`), with what failed listed
from the trial's verdicts and insights.
"""

from __future__ import annotations

from collections.abc import Sequence

from sparring.errors import ModelError
from sparring.judging.judge import DATA_RULE, GAPS_RULE
from sparring.models.base import ChatMessage, Model
from sparring.models.pricing import call_cost_usd
from sparring.prompts import Limits, Scrub, judge_view
from sparring.results import InsightResult, Usage, Verdict
from sparring.transcript import Transcript

EXPLANATION_CHARS = 1200
"""The most of an explanation kept; longer ones are cut with `…`."""

_SYSTEM = f"""\
You help a developer fix an AI agent that failed an automated conversation test. Read the \
conversation and what failed, then explain in plain English, in at most five short \
sentences: why the test failed, and what to change in the agent (its prompt, tools or \
logic) so that it passes. No preamble, no JSON, no headings.

Rules:
{DATA_RULE}
{GAPS_RULE}"""


def failure_lines(verdicts: Sequence[Verdict], insights: Sequence[InsightResult]) -> list[str]:
    """What failed, one line each: `not_met` verdicts, and gating insights that did not pass."""
    lines = [f"- {v.id} ({v.description}): {v.reason}" for v in verdicts if v.status == "not_met"]
    lines += [
        f"- {i.id} = {i.value!r}: {i.reasoning}"
        for i in insights
        if i.gating and i.status == "ok" and not i.passed
    ]
    return lines


async def explain_failure(
    model: Model,
    *,
    title: str,
    transcript: Transcript,
    verdicts: Sequence[Verdict],
    insights: Sequence[InsightResult],
    limits: Limits,
    usage: Usage,
    scrub: Scrub | None = None,
) -> str:
    """Ask `model` (temperature 0) why the trial failed and what to change in the agent.

    Args:
        model: The judge model.
        title: The scenario's name, shown first.
        transcript: The trial's conversation (as the judge saw it: through `limits`).
        verdicts: The trial's verdicts; the `not_met` ones are listed.
        insights: The trial's insights; gating ones that did not pass are listed.
        limits: What the model sees of the transcript.
        usage: The call (tokens and cost) is added to it.
        scrub: Removes secrets from the transcript and from the answer.

    Returns:
        The explanation, stripped, scrubbed and cut to `EXPLANATION_CHARS`.

    Raises:
        ModelError: the call failed, or the answer was empty.
    """
    view = judge_view(transcript, limits=limits, scrub=scrub)
    failed = "\n".join(failure_lines(verdicts, insights)) or "- (no single verdict: see the test)"
    prompt: list[ChatMessage] = [
        {"role": "system", "content": _SYSTEM},
        {
            "role": "user",
            "content": f"## Test\n{title}\n\n## The conversation\n{view.text}\n\n"
            f"## What failed\n{failed}\n\nExplain now.",
        },
    ]
    try:
        completion = await model.complete(prompt, temperature=0.0)
    except ModelError as e:  # its requests count, at no cost, as `complete_json` counts them
        for _ in range(e.requests):
            usage.add_call(input_tokens=None, output_tokens=None, cost_usd=0.0)
        raise
    if completion.requests:  # 0: a replayed answer, no call made
        usage.add_call(
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost_usd=call_cost_usd(
                model.name,
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
            ),
        )
    text = completion.text.strip()
    text = scrub(text) if scrub is not None else text
    if not text:
        raise ModelError(f"{model.name} gave an empty explanation")
    return text if len(text) <= EXPLANATION_CHARS else text[: EXPLANATION_CHARS - 1] + "…"
