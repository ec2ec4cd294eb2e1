"""Results of a run: Verdict, TrialResult, ScenarioResult, RunResult.

This is the canonical, versioned report schema (DESIGN.md section 6): the JSON report is
`RunResult.model_dump_json()`, and every other report is rendered from these models.
Status rules live here so every report and the CLI agree on them; `usage.py` holds the
model-call counts and costs (`Usage`, `UsageTotals`), re-exported here.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from math import ceil, comb
from typing import Literal

from pydantic import ConfigDict, Field

from sparring.results.usage import Usage, UsageTotals, add_tokens, usage_totals
from sparring.transcript import Record, Transcript

SCHEMA_VERSION = "1"

VerdictStatus = Literal["met", "not_met", "error", "skipped"]
VerdictKind = Literal["criterion", "restriction", "should", "check"]
TrialStatus = Literal["passed", "failed", "error", "timed_out", "skipped", "invalid", "done"]
"""`invalid`: the simulated user wrote no usable message before `min_turns`, so the
conversation says nothing about the agent; not judged, left out of the pass rate, exit 3.
`done`: it ran with nothing to pass or fail (no criterion, `should`, check or gating
insight; evaluations may score it): not passed nor failed, not in the pass rate, exit 0."""
ScenarioStatus = Literal[
    "passed", "failed", "error", "skipped", "not_run", "invalid", "undecided", "done"
]
"""`undecided`: adaptive trials reached `max_trials` with the pass rate's 95% interval still
straddling the threshold (see `ScenarioResult.decision`); exit 3. `done`: every trial that
ran was `done`."""
Decision = Literal["passed", "failed"]
EndReason = Literal[
    "goal_achieved",
    "user_gave_up",
    "max_turns",
    "target_error",
    "timeout",
    "script_done",
    "model_error",
    "skipped",
    "interrupted",
    "internal_error",
    "test_error",
    "simulator_failed",
    "browser_done",
]


class Override(Record):
    """A person's correction of a verdict or insight ("Verdict wrong?"): the corrected
    `value` (a verdict status `met` / `not_met`, or an insight value), why, who and when
    (ISO 8601 UTC). Kept in the store; applied when a run is read, so every report and
    export shows it; the labels `sparring calibrate` reads."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    value: bool | float | str
    reason: str
    author: str
    at: str
    original: bool | float | str | None = None
    """What the judge had said (a verdict status or an insight value)."""


class Verdict(Record):
    """The decision on one criterion, `should` or check.

    `turn` is the 1-based turn of the reply a per-reply verdict is about (`None` for the
    whole conversation); `turns` are the turns the judge cited as relevant.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    id: str
    kind: VerdictKind
    description: str
    status: VerdictStatus
    reason: str = ""
    evidence: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()
    turn: int | None = None
    override: Override | None = None
    """A person's correction; when set, `status` is the corrected one."""


class InsightResult(Record):
    """The judge's value for one insight of one evaluation, in one trial.

    `value` is typed by `type` (`boolean` -> bool, `score` -> 0-1 float, `category` -> one
    of the options, `text` -> str) or `None` when `status` is `error` (missing, ill-typed or
    out-of-range in the judge's answer: never a default). `passed` applies the insight's
    `pass_when` (`None` when it has none, or on error); `score` is its 0-1 contribution to
    the trial's score (`None` when it does not count: text, category without a score map;
    0 on error for one that counts, as an `error` criterion counts as not met).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    evaluation: str
    insight: str
    type: Literal["boolean", "score", "category", "text"]
    status: Literal["ok", "error"]
    value: bool | float | str | None = None
    reasoning: str = ""
    evidence: tuple[str, ...] = ()
    turns: tuple[int, ...] = ()
    passed: bool | None = None
    score: float | None = Field(default=None, ge=0, le=1)
    weight: float = 1.0
    group: str | None = None
    featured: bool = False
    gating: bool = False
    """It has a `pass_when`: not passing fails the trial, an error makes it `error`."""
    error: str | None = None
    override: Override | None = None

    @property
    def id(self) -> str:
        """`evaluation.insight`, as reports and overrides name it."""
        return f"{self.evaluation}.{self.insight}"


class Artifact(Record):
    """A file a trial produced besides its transcript: a browser screenshot (`kind`
    `screenshot`, `path` to the PNG, `turn` it was taken after, `url` of the page), or a
    recording (`kind` `audio`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["screenshot", "audio"]
    path: str
    turn: int | None = None
    url: str | None = None


EvaluationsPassed = Literal["yes", "no", "pending", "none"]
"""Of a trial: `yes` every gating insight passed, `no` one failed (or errored), `pending`
not judged yet, `none` no gating insight."""


class ReplyNote(Record):
    """The judge's short note and 0-1 score on one agent reply (1-based `turn`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    turn: int
    note: str
    score: float | None = Field(default=None, ge=0, le=1)


def trial_status(
    verdicts: Sequence[Verdict], insights: Sequence[InsightResult] = ()
) -> TrialStatus:
    """Status of a trial that ran to the end, from its verdicts and gating insights (a
    gating insight counts as `met` when it passed, `not_met` when not, `error` on error).

    Any `not_met` -> failed (a definite failure); else any `error` -> error (never a pass);
    else any `met` -> passed; else (everything skipped, e.g. no model) -> skipped.
    """
    statuses: set[str] = {v.status for v in verdicts}
    statuses |= {  # a gate: passed -> met, ok but not passed -> not_met, error -> error
        "met" if i.passed else i.status.replace("ok", "not_met") for i in insights if i.gating
    }
    if "not_met" in statuses:
        return "failed"
    if "error" in statuses:
        return "error"
    if "met" in statuses:
        return "passed"
    return "skipped"


def evaluations_passed(insights: Sequence[InsightResult], *, pending: bool) -> EvaluationsPassed:
    """`TrialResult.evaluations_passed`: `pending` (gating insights, no judge call made),
    else `none` (no gating insight), `no` (one did not pass or errored), `yes`."""
    if pending:
        return "pending"
    gates = [i for i in insights if i.gating]
    if not gates:
        return "none"
    return "yes" if all(i.status == "ok" and i.passed for i in gates) else "no"


def undecided_text(
    verdicts: Sequence[Verdict], insights: Sequence[InsightResult] = ()
) -> str | None:
    """Why verdicts or gating insights made a trial `error`: `"<id> could not be decided:
    <reason>"` (first `error` verdict), else `"<evaluation.insight> could not be scored:
    <error>"` (first gating insight in error); `None` for neither. Kept as the trial's
    `error`, so reports can tell it from a failure of the trial and name it once."""
    first = next((v for v in verdicts if v.status == "error"), None)
    if first is not None:
        return f"{first.id} could not be decided: {first.reason}"
    gate = next((i for i in insights if i.gating and i.status == "error"), None)
    return None if gate is None else f"{gate.id} could not be scored: {gate.error}"


class SubtestResult(Record):
    """One sub-test of a trial (a Python test's `session.unfold` step): a fresh conversation
    of its own, reported in order after the trial's main transcript.

    Its verdicts are in the trial's `verdicts` (ids start with this `id`, e.g.
    `unfold1.step4.should1`), so the trial's status counts them.
    """

    model_config = ConfigDict(extra="forbid")
    id: str
    """e.g. `unfold1.step4`: the first unfold of the trial, its 4th step."""
    name: str
    """What it tests, for reports: the live user message and the conditions."""
    status: TrialStatus
    transcript: Transcript = Field(default_factory=Transcript)
    """The preloaded history plus the live message and the reply."""
    history: Literal["as_written", "replayed"] = "as_written"
    """How the target got the steps before the live message: `as_written` (the agent
    steps' written texts), or `replayed` (a target that can only replay, such as a2a: the
    customer messages were sent live and the agent's own replies stand in the transcript in
    place of the written ones, so the tested reply followed a history unlike the written
    one)."""
    error: str | None = None
    """Why the sub-test could not run (e.g. the target failed)."""


class TrialResult(Record):
    """One trial: its transcript (whatever it got, even on error), verdicts and status."""

    model_config = ConfigDict(extra="forbid")
    scenario_id: str
    trial: int
    """1-based trial number."""
    status: TrialStatus
    end_reason: EndReason
    transcript: Transcript = Field(default_factory=Transcript)
    verdicts: list[Verdict] = Field(default_factory=list[Verdict])
    reply_notes: list[ReplyNote] = Field(default_factory=list[ReplyNote])
    error: str | None = None
    """Why the trial is `error` / `timed_out` / `skipped` / `invalid`; for a conversation
    the simulated user broke off after `min_turns` (end reason `simulator_failed`, judged on
    what was said), what the simulated user got wrong."""
    traceback: str | None = None
    """Where sparring itself failed (end reason `internal_error`): the Python traceback, to
    attach to a bug report."""
    duration_ms: float = 0
    usage: Usage = Field(default_factory=Usage)
    subtests: list[SubtestResult] = Field(default_factory=list[SubtestResult])
    """Sub-tests of a Python test (`session.unfold`), in the order they were written."""
    insights: list[InsightResult] = Field(default_factory=list[InsightResult])
    """Values of the scenario's evaluations' insights, evaluation by evaluation."""
    score: float | None = Field(default=None, ge=0, le=1)
    """Weighted average of the insight scores; with no scored insight, the share of
    criteria met; `None` when nothing was scored."""
    evaluations_passed: EvaluationsPassed = "none"
    explanation: str | None = None
    """`explain_failures`: why the trial failed and what to change in the agent."""
    artifacts: list[Artifact] = Field(default_factory=list[Artifact])
    page_url: str | None = None
    """The page a browser target's chat ran on."""

    @property
    def failures(self) -> list[Verdict]:
        """Verdicts that are `not_met` or `error`."""
        return [v for v in self.verdicts if v.status in ("not_met", "error")]

    @property
    def not_judged(self) -> int:
        """What went unjudged: `skipped` verdicts, plus 1 when the evaluations' gating
        insights are `pending` (no judge call made, e.g. no model): a gate is never a
        quiet pass."""
        return sum(v.status == "skipped" for v in self.verdicts) + (
            self.evaluations_passed == "pending"
        )

    def usage_totals(self) -> UsageTotals:
        """`usage` plus the target's token counts summed over its replies in the transcript
        (`None` when no reply carried one)."""
        total = UsageTotals(**self.usage.model_dump())
        for _, reply in self.transcript.agent_replies():
            total.target_input_tokens = add_tokens(total.target_input_tokens, reply.input_tokens)
            total.target_output_tokens = add_tokens(total.target_output_tokens, reply.output_tokens)
        return total


def pass_hat_k(passed: int, total: int) -> dict[int, float]:
    """pass^k for k = 1..total: the chance that k trials drawn without replacement all pass.

    Estimator C(passed, k) / C(total, k), as in tau-bench (Yao et al., 2024).
    """
    return {k: comb(passed, k) / comb(total, k) for k in range(1, total + 1)}


def passes_needed(threshold: float, out_of: int) -> int:
    """How many of `out_of` trials (or tests) must pass to reach `threshold` (a 0-1
    fraction): the fewest n with n >= threshold * out_of, as `ScenarioResult.status` and the
    group gates count; at least 1 for a positive threshold (however tiny), so a run where
    nothing passed never reaches one; 0 when `out_of` is 0."""
    if out_of <= 0 or threshold <= 0:
        return 0
    return max(1, ceil(threshold * out_of - 1e-9))


class ScenarioResult(Record):
    """All trials of one scenario and the verdict across them."""

    model_config = ConfigDict(extra="forbid")
    scenario_id: str
    name: str
    kind: str
    source: str | None = None
    description: str | None = None
    """What the scenario tests, as its file says."""
    tags: list[str] = Field(default_factory=list[str])
    category: str | None = None
    """`category`, `topic`, `behavior`: a single-turn scenario's labels, when given."""
    topic: str | None = None
    behavior: str | None = None
    threshold: float
    planned_trials: int = 0
    """Trials the run meant to run; more than `len(trials)` when it was cut short
    (`--fail-fast`, Ctrl-C). 0 means as many as there are."""
    trials: list[TrialResult] = Field(default_factory=list[TrialResult])
    max_trials: int | None = None
    """Adaptive trials (`trials: {min, max}`): the most trials the scenario may run, with
    `planned_trials` the least; `None` for a fixed count."""
    decision: Decision | None = None
    """Adaptive trials: where the 95% Wilson interval of the pass rate stands against the
    threshold after the last trial (the runner sets it, `sparring.runner.adaptive`): `passed`
    (low end at or above it, trials that did not test the agent counted as failures),
    `failed` (high end below it, those trials counted as passes), `None` while it straddles."""

    @property
    def passed_trials(self) -> int:
        """How many trials passed."""
        return sum(t.status == "passed" for t in self.trials)

    @property
    def missing_trials(self) -> int:
        """Planned trials that never ran (the run was cut short)."""
        return max(0, self.planned_trials - len(self.trials))

    def can_still_pass(self, remaining: int) -> bool:
        """Whether `remaining` more trials could still lift the scenario to its threshold."""
        total = len(self.counted) + self.invalid_trials + remaining
        return self.passed_trials + remaining >= passes_needed(self.threshold, total)

    @property
    def needed(self) -> tuple[int, int]:
        """`(passes, out_of)`: the passed trials the threshold needs out of the trials that
        decide `status` (those that tested the agent, `invalid` ones and planned ones that
        never ran); `(0, 0)` when none did."""
        out_of = len(self.counted) + self.missing_trials + self.invalid_trials
        return passes_needed(self.threshold, out_of), out_of

    @property
    def counted(self) -> list[TrialResult]:
        """Trials that tested the agent: all but `skipped`, `invalid` and `done` ones."""
        return [t for t in self.trials if t.status not in ("skipped", "invalid", "done")]

    @property
    def invalid_trials(self) -> int:
        """Trials whose simulated user failed before `min_turns` (status `invalid`)."""
        return sum(t.status == "invalid" for t in self.trials)

    @property
    def pass_rate(self) -> float | None:
        """Passed / trials that tested the agent (`counted`); errors and timeouts count as
        not passed, `invalid` trials not at all."""
        counted = self.counted
        if not counted:
            return None
        return self.passed_trials / len(counted)

    @property
    def status(self) -> ScenarioStatus:
        """Passed if enough trials passed to reach the threshold over every trial that ran
        or was planned (but never when no trial passed and some errored, even at threshold
        0); if not, undecided when the trials that errored, timed out, never ran or were
        `invalid` could have made up the difference: `error`, or `invalid` when only
        invalid trials could; else `failed`. So a scenario cut short after 1 of 5 trials is
        not `passed`, and a simulated user that fails never makes a scenario `failed`. `done`
        when the trials that ran had nothing to pass or fail (`done`, maybe some skipped)."""
        counted = self.counted
        if not self.trials:
            return "not_run"
        invalid = self.invalid_trials
        if not counted and not self.missing_trials and not invalid:
            return "done" if any(t.status == "done" for t in self.trials) else "skipped"
        if self.max_trials is not None:
            return self._adaptive_status()
        passed = self.passed_trials
        errors = sum(t.status in ("error", "timed_out") for t in counted) + self.missing_trials
        needed = passes_needed(self.threshold, len(counted) + self.missing_trials + invalid)
        if passed >= needed and (passed or not errors + invalid):  # errors alone never pass
            return "passed"
        if passed + errors + invalid < needed:
            return "failed"
        return "error" if errors else "invalid"

    def _adaptive_status(self) -> ScenarioStatus:
        """`decision` when there is one (`passed` only with a passed trial); else `error` or
        `invalid` when such trials could have decided it, `undecided` when none could."""
        if self.decision == "failed" or (self.decision == "passed" and self.passed_trials):
            return self.decision
        if any(t.status in ("error", "timed_out") for t in self.trials) or self.missing_trials:
            return "error"
        return "invalid" if self.invalid_trials else "undecided"

    @property
    def score(self) -> float | None:
        """The mean `score` of the scored trials; `None` when none has one."""
        scores = [t.score for t in self.trials if t.score is not None]
        return sum(scores) / len(scores) if scores else None

    def summary(self) -> dict[str, object]:
        """Derived numbers for reports: status, pass rate, pass^k, usage totals, `score`."""
        counted, passed = self.counted, self.passed_trials
        return {
            "score": self.score,
            "status": self.status,
            "pass_rate": self.pass_rate,
            "passed_trials": passed,
            "counted_trials": len(counted),
            "invalid_trials": self.invalid_trials,
            "pass_hat_k": pass_hat_k(passed, len(counted)) if counted else {},
            "usage_totals": usage_totals(self.trials).model_dump(),
        }


class ModelSettings(Record):
    """The effective sampling settings of one model the run used.

    `spec` is as given (`openai:gpt-4o-mini`), split into `provider` and `model`; `seed`
    is what was sent (`None`: none, or the provider takes none); `max_tokens` is the
    answer limit sparring sends (`None`: the endpoint's default).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    role: Literal["user", "judge"]
    spec: str
    provider: str
    model: str
    temperature: float
    seed: int | None = None
    max_tokens: int | None = None


class RunResult(Record):
    """One execution of a suite; `model_dump_json()` is the JSON report."""

    model_config = ConfigDict(extra="forbid")
    schema_version: str = SCHEMA_VERSION
    sparring_version: str
    run_id: str
    started_at: str
    """ISO 8601, UTC."""
    duration_ms: float = 0
    user_model: str | None = None
    judge_model: str | None = None
    models: list[ModelSettings] = Field(default_factory=list[ModelSettings])
    """The simulated user's and the judge's settings (a model the run has not: absent)."""
    scenarios: list[ScenarioResult] = Field(default_factory=list[ScenarioResult])
    interrupted: bool = False
    """The run was stopped (Ctrl-C, SIGTERM) before every trial finished."""
    fail_on_skip: bool = False
    """Skipped steps make the exit code 3 (`--fail-on-skip`)."""
    hook_errors: list[str] = Field(default_factory=list[str])
    """Python suite hooks that failed outside every trial (after_all), one message each: the
    run did not finish cleanly, so the exit code is at least 3."""

    def usage_totals(self) -> UsageTotals:
        """Model calls, tokens and cost of every trial, and the target's token counts."""
        return usage_totals(t for s in self.scenarios for t in s.trials)

    def counts(self) -> dict[str, int]:
        """Scenarios per status."""
        out: dict[str, int] = {}
        for s in self.scenarios:
            out[s.status] = out.get(s.status, 0) + 1
        return out

    def trial_counts(self) -> dict[str, int]:
        """Trials per status (`invalid` ones among them, which no scenario status hides)."""
        out: dict[str, int] = {}
        for t in (t for s in self.scenarios for t in s.trials):
            out[t.status] = out.get(t.status, 0) + 1
        return out

    @property
    def exit_code(self) -> int:
        """0 all that ran passed (or was `done`: ran with nothing to judge), 1 some failed,
        3 some could not run or stayed undecided (errors, timeouts, `invalid` trials,
        adaptive trials `undecided` at their maximum) or a suite hook failed
        (`hook_errors`), 130 interrupted.

        A definite failure outranks an error, so exit 1 always means the agent misbehaved,
        unless a hook failure makes it 3. An interrupted run is 130 (the shell's code for
        Ctrl-C), whatever finished. With `fail_on_skip`, a run that would be 0 is 3 when
        `skipped_anything()`.
        """
        if self.interrupted:
            return 130
        code = self._exit_code_of_verdicts()
        if self.hook_errors:
            return 3
        if code == 0 and self.fail_on_skip and self.skipped_anything():
            return 3
        return code

    def skipped_anything(self) -> bool:
        """A trial was skipped, or a passed trial left something unjudged (a skipped
        verdict, or pending evaluation gates: `TrialResult.not_judged`, e.g. no model to
        judge it). What a failed trial left unjudged (its check already failed) does not
        count: that trial was decided."""
        return any(
            t.status == "skipped" or (t.status == "passed" and t.not_judged)
            for s in self.scenarios
            for t in s.trials
        )

    def _exit_code_of_verdicts(self) -> int:
        statuses = {s.status for s in self.scenarios}
        if "failed" in statuses:
            return 1
        if statuses & {"error", "not_run", "invalid", "undecided"}:
            return 3
        return 0

    def report_dict(self) -> dict[str, object]:
        """The JSON report: the model dump plus derived per-scenario summaries, counts and
        `usage_totals` (run, scenario and trial level: see `UsageTotals`).

        Strict JSON: non-finite numbers anywhere (e.g. in a raw payload) become null.
        """
        data = json.loads(self.model_dump_json())
        for raw, scenario in zip(data["scenarios"], self.scenarios, strict=True):
            raw.update(scenario.summary())
            for raw_trial, trial in zip(raw["trials"], scenario.trials, strict=True):
                raw_trial["failures"] = [
                    v["id"] for v in raw_trial["verdicts"] if v["status"] in ("not_met", "error")
                ]
                raw_trial["usage_totals"] = trial.usage_totals().model_dump()
        data["counts"] = self.counts()
        data["trial_counts"] = self.trial_counts()
        data["usage_totals"] = self.usage_totals().model_dump()
        data["exit_code"] = self.exit_code
        return data


_JUDGED = ("criterion", "restriction", "should")


def trial_score(insights: Sequence[InsightResult], verdicts: Sequence[Verdict]) -> float | None:
    """A trial's 0-1 score: the `weight`-weighted average of its insights' scores (those
    that have one, weight above 0; an insight in `error` that counts scores 0, see
    `InsightResult.score`); without any, the share of its judged criteria,
    restrictions and `should`s that were `met` (an `error` counts as not met, a skipped one
    not at all); `None` when neither has anything to count. The runner scores each trial
    with it, and the store again after a person overrides a verdict or insight."""
    scored = [(i.score, i.weight) for i in insights if i.score is not None and i.weight > 0]
    if scored:
        return sum(s * w for s, w in scored) / sum(w for _, w in scored)
    judged = [v for v in verdicts if v.kind in _JUDGED and v.status != "skipped"]
    return sum(v.status == "met" for v in judged) / len(judged) if judged else None
