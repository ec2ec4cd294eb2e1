"""Per-reply `should` conditions of the Python API: one judge call per condition.

`judge_shoulds` decides each condition on one agent reply with its own structured model call,
all calls at once. It shares the conversation judge's fencing, rendering limits, evidence
checks and fail-closed reading (`sparring.judging.judge`, `sparring.judging.answers`): an
answer that stays unreadable after one repair (one repeating JSON the agent wrote too), a
failed model call, or a `met` that quotes nothing substantial of the reply is an `error`
verdict, never `met`. A reply that is empty
is `not_met` without asking.

`condition_problem` is the cheap grammar check behind `ConditionGrammarWarning`: a condition
is a verb phrase completing "The message should ...".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import anyio

from sparring.errors import ModelError, ModelOutputError
from sparring.judging.answers import VERDICT_SCHEMA, Decision, DecisionReader
from sparring.judging.judge import DATA_RULE, GAPS_RULE, no_reply_reason
from sparring.judging.sampling import judge_seed
from sparring.models.base import ChatMessage, Model
from sparring.models.structured import complete_json
from sparring.prompts import DEFAULT_LIMITS, Limits, Scrub, judge_view
from sparring.results import Usage, Verdict
from sparring.transcript import Transcript

NO_MODEL_HINT = (
    "no model configured: pass --model provider:name (e.g. openai:gpt-4o-mini or "
    "ollama:qwen2.5:7b) or set SPARRING_MODEL"
)
"""Why verdicts that need a model are `skipped` when there is none."""


class ConditionGrammarWarning(UserWarning):
    """A `should` condition is not written as a verb phrase completing "The message should"."""


@dataclass(frozen=True, slots=True)
class Condition:
    """One `should` to decide: `text` completes "The message should ..."; `id` keys the
    verdict (e.g. `t2.should1`)."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class JudgeSettings:
    """How `should`s are judged: the model (`None`: verdicts are `skipped`), what it sees of
    the conversation, its temperature, and the secret scrubber for its text.
    `require_evidence`: a `met` must quote the conversation, else it is `error`."""

    model: Model | None
    limits: Limits = DEFAULT_LIMITS
    temperature: float = 0.0
    scrub: Scrub | None = None
    require_evidence: bool = True
    skip_reason: str = NO_MODEL_HINT
    """Why verdicts are `skipped` when `model` is `None`."""


async def judge_shoulds(
    conditions: Sequence[Condition],
    *,
    transcript: Transcript,
    turn: int,
    judge: JudgeSettings,
    usage: Usage | None = None,
) -> list[Verdict]:
    """Decide every condition on the agent's reply at `turn`, one model call each, at once.

    Args:
        conditions: What the reply should do; ids must be unique.
        transcript: The conversation up to and including the reply.
        turn: 1-based turn of the reply (user messages counted).
        judge: The model and what it sees; without a model every verdict is `skipped`.
        usage: Model calls and tokens are added to it.

    Returns:
        One `should` verdict per condition, in order: `met`, `not_met`, `error` (the judge
        failed or its answer could not be read) or `skipped` (no model). Never raises for
        model failures.
    """
    verdicts: dict[int, Verdict] = {}

    async def one(index: int, condition: Condition) -> None:
        verdicts[index] = await _judge_one(
            condition, transcript=transcript, turn=turn, judge=judge, usage=usage
        )

    async with anyio.create_task_group() as tg:
        for index, condition in enumerate(conditions):
            tg.start_soon(one, index, condition)
    return [verdicts[i] for i in range(len(conditions))]


def should_verdict(
    condition: Condition,
    *,
    turn: int | None,
    status: Any,
    reason: str,
    decision: Decision | None = None,
) -> Verdict:
    """The `should` verdict for `condition` (`status` one of the verdict statuses)."""
    return Verdict(
        id=condition.id,
        kind="should",
        description=f"should {condition.text}",
        status=status,
        reason=reason,
        turn=turn,
        evidence=decision.evidence if decision else (),
        turns=decision.turns if decision else (),
    )


async def _judge_one(
    condition: Condition,
    *,
    transcript: Transcript,
    turn: int,
    judge: JudgeSettings,
    usage: Usage | None,
) -> Verdict:
    if judge.model is None:
        return should_verdict(condition, turn=turn, status="skipped", reason=judge.skip_reason)
    no_reply = no_reply_reason(transcript, turn)
    if no_reply is not None:
        return should_verdict(condition, turn=turn, status="not_met", reason=no_reply)
    reader = DecisionReader(transcript, scrub=judge.scrub, limits=judge.limits)
    view = judge_view(transcript, limits=judge.limits, scrub=judge.scrub, keep_turns={turn})
    await reader.prepare()
    try:
        decision = await complete_json(
            judge.model,
            _prompt(condition, turn=turn, view_text=view.text),
            schema=VERDICT_SCHEMA,
            validate=_Validate(reader),
            schema_name="should_verdict",
            temperature=judge.temperature,
            seed=judge_seed(judge.model),
            usage=usage,
            screen=reader.screen,
        )
    except ModelOutputError as e:
        why = f"the judge's answer could not be read, even after one repair: {e}"
        return should_verdict(condition, turn=turn, status="error", reason=why)
    except ModelError as e:
        why = f"the judge model failed: {e}"
        return should_verdict(condition, turn=turn, status="error", reason=why)
    status, reason = decision.status, decision.reason
    ungrounded = reader.ungrounded(decision, turn=turn) if status == "met" else None
    if judge.require_evidence and ungrounded is not None:
        status, reason = "error", ungrounded
    return should_verdict(condition, turn=turn, status=status, reason=reason, decision=decision)


@dataclass(frozen=True, slots=True)
class _Validate:
    """`validate` for `complete_json`: the answer's top-level object as one decision."""

    reader: DecisionReader

    def __call__(self, value: Any) -> Decision:
        decision = self.reader.decision(value)
        if isinstance(decision, str):
            raise ValueError(
                f"the answer cannot be used: {decision}; answer with one object "
                'with reason, evidence, turns and verdict ("met" or "not_met")'
            )
        return decision


_SYSTEM = f"""\
You are the judge in an automated test of an AI agent. You read one conversation between a \
user and the agent and decide one condition about the agent's reply at one turn.

Rules:
{DATA_RULE}
- Decide from the transcript only, about the reply at the given turn: "met" when that reply \
does what "The message should ..." says, otherwise "not_met". Earlier messages are context.
{GAPS_RULE}

Give "reason" (one or two sentences), "evidence" (short exact quotes from the reply; "met" \
needs one), "turns" (the turn numbers that matter) and "verdict" ("met" or "not_met").
Answer with one JSON object only:
{{"reason": "...", "evidence": ["..."], "turns": [1], "verdict": "met"}}"""


def _prompt(condition: Condition, *, turn: int, view_text: str) -> list[ChatMessage]:
    """System rules (the same for every call, so providers can cache them), then the
    conversation and the condition."""
    user = (
        f"## The conversation\n{view_text}\n\n"
        f"## The condition, about the agent's reply at turn {turn}\n"
        f"The message should {condition.text}\n\nAnswer now with the JSON object."
    )
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}]


# --- condition grammar ---------------------------------------------------------------------

_REPEATED_LEAD = re.compile(
    r"^\s*(?:the\s+(?:message|reply|response|agent)\s+)?should\b\s*", re.IGNORECASE
)
_ARTICLE = re.compile(r"^\s*(a|an|the)\s+\w", re.IGNORECASE)
_PAST = re.compile(r"^\s*([A-Za-z]{3,}ed)\b")
_PRESENT_ED = frozenset(
    {
        "embed",
        "shred",
        "proceed",
        "succeed",
        "exceed",
        "need",
        "feed",
        "heed",
        "speed",
        "seed",
        "breed",
        "bleed",
        "shed",
    }
)


def condition_problem(condition: str) -> str | None:
    """What is wrong with how `condition` is written, with the fix; `None` when it looks
    like a verb phrase.

    Conservative and cheap: only a leading "The message should" / "should", a first word in
    the past tense ("greeted"), or a leading article ("a greeting") is reported.
    """
    text = condition.strip()
    if not text:
        return "the condition is empty; write what the reply should do, e.g. 'greet the customer'"
    lead = _REPEATED_LEAD.match(text)
    if lead:
        rest = text[lead.end() :] or "greet the customer"
        return (
            f"condition {condition!r} repeats 'should': sparring already reads it as "
            f'"The message should ..."; write {rest!r}'
        )
    past = _PAST.match(text)
    if past and past.group(1).lower() not in _PRESENT_ED:
        return (
            f"condition {condition!r} starts in the past tense ({past.group(1)!r}); write "
            "it in the present, as what the message should do, e.g. 'greet the customer' "
            "rather than 'greeted the customer'"
        )
    if _ARTICLE.match(text):
        return (
            f"condition {condition!r} is a noun phrase; write a verb phrase completing "
            "\"The message should ...\", e.g. 'greet the customer' rather than "
            "'a greeting'"
        )
    return None
