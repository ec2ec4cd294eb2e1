"""Judging a conversation: deterministic checks (`checks`) and the LLM judge (`judge`).

`run_check` decides a check without a model; `judge_conversation` grades every criterion and
`should` in one model call and notes every agent reply.
"""

from sparring.judging.checks import run_check
from sparring.judging.judge import JudgeOutcome, ShouldItem, judge_conversation, skipped_verdicts

__all__ = ["JudgeOutcome", "ShouldItem", "judge_conversation", "run_check", "skipped_verdicts"]
