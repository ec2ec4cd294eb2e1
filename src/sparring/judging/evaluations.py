"""Evaluations in the judge call: the insights asked for, their values read, and scores.

Every insight of a scenario's evaluations is asked for in the trial's one judge call
(`sparring.judging.judge`), keyed `evaluation.insight`. A value comes back typed by its
insight (`boolean`, `score` 0-1, `category` one of its options, `text`) with reasoning,
evidence and turns; a missing, ill-typed or out-of-range value, or an unknown category,
is an `error` insight, never a default. A gating insight that passes (`pass_when`) must
quote the agent like a `met` criterion, unless passing means something did not happen (a
boolean that passes when false).

A trial's **score** (`sparring.results.trial_score`) is the weighted average of its
insights' scores (an insight in `error` scores 0), or with none, the share of its judged
criteria, restrictions and `should`s that were met.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sparring.errors import UserError
from sparring.judging.answers import EVIDENCE_SCHEMA, DecisionReader, Valued
from sparring.results import InsightResult
from sparring.scenario.evaluations import Evaluation, Insight, parse_comparison

_TEXT_CHARS = 1000
_COMPARE: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge,
    "<=": operator.le,
    ">": operator.gt,
    "<": operator.lt,
    "==": lambda a, b: math.isclose(a, b, abs_tol=1e-9),
}
"""Verdict kinds the judge decides: what a trial's score counts without insights."""


@dataclass(frozen=True, slots=True)
class InsightItem:
    """One insight of one evaluation, as the judge is asked for it (`id`)."""

    evaluation: Evaluation
    insight: Insight

    @property
    def id(self) -> str:
        """`evaluation.insight`: the key of its value in the judge's answer."""
        return f"{self.evaluation.name}.{self.insight.name}"

    def typed(self, raw: Any) -> tuple[bool | float | str, None] | tuple[None, str]:
        """`raw` as this insight's value, or `(None, why not)`: a boolean is `true` or
        `false`; a score a number 0-1; a category one of the options (letter case and
        surrounding spaces aside); a text any string (scrubbed by the reader)."""
        kind, insight = self.insight.type, self.insight
        if kind == "boolean":
            return (
                (raw, None) if isinstance(raw, bool) else (None, f"is {_shown(raw)}, not a boolean")
            )
        if kind == "score":
            if isinstance(raw, bool) or not isinstance(raw, int | float) or not math.isfinite(raw):
                return None, f"is {_shown(raw)}, not a number from 0 to 1"
            return (float(raw), None) if 0 <= raw <= 1 else (None, f"{raw} is not within 0-1")
        if not isinstance(raw, str):
            return None, f"is {_shown(raw)}, not text"
        if kind == "text":
            return raw, None
        found = [o for o in insight.options if o.strip().casefold() == raw.strip().casefold()]
        if not found:
            return None, f"{_shown(raw)} is not one of its options ({', '.join(insight.options)})"
        return found[0], None

    def result(self, valued: Valued, reader: DecisionReader, *, grounded: bool) -> InsightResult:
        """The insight's result from the judge's `valued` entry: `passed` by `pass_when`,
        `score` by its type; an `error` when `grounded` is asked for and a passing value
        that needs a quote (`needs_quote`) quotes nothing the agent said."""
        value = valued.value
        if isinstance(value, str) and self.insight.type == "text":
            value = reader.clean(value, _TEXT_CHARS)
        passed = self.passed(value)
        if grounded and passed and self.needs_quote:
            why = reader.ungrounded(valued, turn=None, what="passing value")
            if why is not None:
                return self.error(why)
        return self._base(
            status="ok",
            value=value,
            reasoning=valued.reason,
            evidence=valued.evidence,
            turns=valued.turns,
            passed=passed,
            score=self.score(value),
        )

    def error(self, why: str) -> InsightResult:
        """The insight as `error`: no value, `why` as its error; scored 0 when it counts
        toward the trial's score (a boolean, a score, a category with a score map), as an
        `error` criterion counts as not met."""
        counts = self.insight.type in ("boolean", "score") or self.insight.score_map is not None
        return self._base(status="error", error=why, score=0.0 if counts else None)

    def _base(self, **fields: Any) -> InsightResult:
        insight = self.insight
        return InsightResult(
            evaluation=self.evaluation.name,
            insight=insight.name,
            type=insight.type,
            weight=insight.weight,
            group=insight.group,
            featured=insight.featured,
            gating=insight.gating,
            **fields,
        )

    @property
    def needs_quote(self) -> bool:
        """A passing value needs evidence from the agent: every pass rule but a boolean's
        `pass_when: false` (something that did not happen cannot be quoted)."""
        return self.insight.pass_when is not False

    def passed(self, value: bool | float | str) -> bool | None:
        """Whether `value` meets the insight's `pass_when`; `None` when it has none."""
        rule = self.insight.pass_when
        if rule is None:
            return None
        if isinstance(rule, bool):
            return value is rule
        if self.insight.type == "score" and isinstance(rule, str):
            op, limit = parse_comparison(rule)
            return isinstance(value, float) and _COMPARE[op](value, limit)
        return value in ([rule] if isinstance(rule, str) else rule)

    def score(self, value: bool | float | str) -> float | None:
        """The value's 0-1 score: a boolean 1 or 0, a score as is, a category by its
        `score_map` (`None` without one); `None` for text."""
        kind = self.insight.type
        if kind == "boolean":
            return 1.0 if value is True else 0.0
        if kind == "score" and isinstance(value, float):
            return value
        if kind == "category" and self.insight.score_map is not None and isinstance(value, str):
            return self.insight.score_map.get(value)
        return None

    def schema(self) -> dict[str, Any]:
        """JSON Schema of its entry in the judge's answer."""
        value: dict[str, Any] = {
            "boolean": {"type": "boolean"},
            "score": {"type": "number", "minimum": 0, "maximum": 1},
            "category": {"type": "string", "enum": list(self.insight.options)},
            "text": {"type": "string"},
        }[self.insight.type]
        return {
            "type": "object",
            "additionalProperties": False,
            "required": ["reasoning", "evidence", "turns", "value"],
            "properties": {
                "reasoning": {"type": "string"},
                "evidence": EVIDENCE_SCHEMA,
                "turns": {"type": "array", "items": {"type": "integer"}},
                "value": value,
            },
        }

    def line(self) -> str:
        """Its line in the judge prompt: `- id (type): description`."""
        insight = self.insight
        kind = {
            "boolean": "true or false",
            "score": "a number 0-1",
            "category": "one of: " + ", ".join(insight.options),
            "text": "short text",
        }[insight.type]
        about = f": {insight.description}" if insight.description else ""
        return f"- {self.id} ({kind}){about}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def insight_items(
    evaluations: Sequence[Evaluation], taken: Sequence[str] = ()
) -> list[InsightItem]:
    """Every insight of `evaluations`, in order.

    Raises:
        UserError: two evaluations share a name, or an insight id is also in `taken` (the
            verdict ids), ignoring letter case.
    """
    items = [InsightItem(e, i) for e in evaluations for i in e.insights]
    repeated = _repeated([e.name for e in evaluations]) or _repeated(
        [*taken, *(i.id for i in items)]
    )
    if repeated:
        raise UserError(
            "evaluation names and insight ids (evaluation.insight) must be unique and differ "
            f"from criterion ids, ignoring letter case; repeated: {', '.join(repeated)}"
        )
    return items


def _repeated(names: Sequence[str]) -> list[str]:
    folded = [n.casefold() for n in names]
    return sorted({n for n in names if folded.count(n.casefold()) > 1})


def evaluations_prompt(items: Sequence[InsightItem]) -> str:
    """The judge prompt's part on evaluations: each one's prompt, then its insights."""
    parts = [
        '## Evaluations\nFor each insight id give "reasoning" (one or two sentences), '
        '"evidence" (short exact quotes), "turns" and "value" (of the type shown), under '
        '"insights".'
    ]
    current: Evaluation | None = None
    for item in items:
        if item.evaluation is not current:
            current = item.evaluation
            parts.append(f"### {current.name}: {current.prompt}")
        parts.append(item.line())
    return "\n".join(parts)
