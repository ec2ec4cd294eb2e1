"""One trial: the conversation loop of DESIGN.md section 3, checks, the judge call, and
Python test bodies with their hooks. Every trial that started ends with an outcome."""

from __future__ import annotations

import time
import traceback
from collections.abc import Awaitable, Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace

import anyio
from pydantic import BaseModel

from sparring.errors import MissingPart, ModelError, ModelOutputError, TargetError, TargetTimeout
from sparring.events import (
    JudgeStarted,
    MessageAdded,
    Observer,
    TrialFinished,
    TrialStarted,
    VerdictAdded,
)
from sparring.judging.checks import empty_reply_verdict, run_check
from sparring.judging.judge import ShouldItem, judge_conversation, skipped_verdicts
from sparring.judging.should import NO_MODEL_HINT, JudgeSettings
from sparring.models.base import Model
from sparring.results import (
    EndReason,
    InsightResult,
    ReplyNote,
    SubtestResult,
    TrialResult,
    TrialStatus,
    Usage,
    Verdict,
    evaluations_passed,
    trial_score,
    trial_status,
    undecided_text,
)
from sparring.runner.code import (
    CodeScenario,
    HookError,
    as_expected_failure,
    assertion_text,
    call_body,
    raised_text,
)
from sparring.runner.context import (
    CURRENT_TRIAL,
    ConditionsNotMet,
    ConditionsUndecided,
    SimulationSkipped,
    TrialContext,
    UserPlay,
    masked_verdict,
)
from sparring.runner.evaluating import (
    explains,
    explanation,
    has_gates,
    judge_code_test,
    masked_insight,
    nothing_to_pass,
)
from sparring.runner.evidence import StepBudgetSpent, kept, planned, unsent
from sparring.runner.script import SimulatorFailed, needs_user_model, play_script
from sparring.runner.settings import REPLY_TIMEOUT_HINT, AnyRunnable, RunSettings
from sparring.scenario import (
    AnyScenario,
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.simulator import next_user_message
from sparring.targets.attachments import read_attachment
from sparring.targets.base import EvidenceSession, Target, TargetSession
from sparring.transcript import Message, Transcript, sanitized


@dataclass(kw_only=True)
class RunContext:
    """What every trial of one run shares: settings, models, the observer, the targets."""

    settings: RunSettings
    user_model: Model | None
    judge_model: Model | None
    observer: Observer
    targets: Callable[[AnyRunnable], Target]
    scrub: Callable[[str], str] | None = None
    stop: bool = False

    def __post_init__(self) -> None:
        if self.settings.no_model_reason:  # models are off for the whole run
            self.user_model = self.judge_model = None

    @property
    def skip_reason(self) -> str:
        """Why steps that need a model are `skipped` when there is none."""
        return self.settings.no_model_reason or NO_MODEL_HINT


class _TrialState:
    """Mutable state of one trial while it runs; turned into a TrialResult at the end."""

    def __init__(self, scenario: AnyRunnable, trial: int, ctx: RunContext) -> None:
        self.scenario, self.trial, self.ctx = scenario, trial, ctx
        self.transcript = Transcript()
        """What is kept, reported and shown to models: secrets masked (`transcript.sanitized`)."""
        self.wire = Transcript()
        """What the target is sent: the conversation exactly as it happened."""
        self.verdicts: list[Verdict] = []
        self.insights: list[InsightResult] = []
        self.unjudged: str | None = None
        """Why the judge was not asked (no judge model), when it had something to ask."""
        self.explanation: str | None = None
        self.usage = Usage()
        self.reply_notes: list[ReplyNote] = []
        self.subtests: list[SubtestResult] = []
        self.started = time.perf_counter()
        self.target_name = "target"
        self.note: str | None = None
        """Why a conversation that was still judged ended early (`simulator_failed`)."""
        self.traceback: str | None = None
        """Where sparring itself failed (`internal_error`)."""
        self.evidence: EvidenceSession | None = None
        """The session's screenshots and page URL (browser targets)."""

    def add_message(self, message: Message) -> None:
        self.wire = self.wire.with_message(message)
        message = sanitized(message, self.ctx.scrub)
        self.transcript = self.transcript.with_message(message)
        self.ctx.observer(MessageAdded(self.scenario.id, self.trial, message))

    def add_verdicts(self, verdicts: Sequence[Verdict]) -> None:
        """Keep `verdicts` with secrets masked: a check's reason and evidence quote what the
        agent really said."""
        for v in verdicts:
            v = masked_verdict(v, self.ctx.scrub)
            self.verdicts.append(v)
            self.ctx.observer(VerdictAdded(self.scenario.id, self.trial, v))

    def add_subtest(self, subtest: SubtestResult) -> None:
        """Keep a sub-test of a Python test, its transcript made safe like the trial's."""
        messages = tuple(sanitized(m, self.ctx.scrub) for m in subtest.transcript.messages)
        self.subtests.append(
            subtest.model_copy(update={"transcript": Transcript(messages=messages)})
        )

    def finish(self, status: TrialStatus, end_reason: EndReason, error: str | None) -> TrialResult:
        """The trial's result as it stands, its `error` text masked like everything else
        kept (a target's error may quote what the agent echoed); emits TrialFinished."""
        result = TrialResult(
            scenario_id=self.scenario.id,
            trial=self.trial,
            status=status,
            end_reason=end_reason,
            transcript=self.transcript,
            verdicts=self.verdicts,
            reply_notes=self.reply_notes,
            insights=self.insights,
            score=trial_score(self.insights, self.verdicts),
            evaluations_passed=evaluations_passed(
                self.insights, pending=has_gates(self.scenario) and not self.insights
            ),
            explanation=self.explanation,
            usage=self.usage,
            subtests=self.subtests,
            error=None if error is None else _scrubbed(error, self.ctx.scrub),
            traceback=None if self.traceback is None else _scrubbed(self.traceback, self.ctx.scrub),
            duration_ms=(time.perf_counter() - self.started) * 1000,
            **kept(self.evidence, failed=status != "passed", scrub=self.ctx.scrub),
        )
        self.ctx.observer(TrialFinished(result))
        return result

    async def exchange(
        self,
        session: TargetSession,
        text: str,
        *,
        files: Sequence[str] = (),
        audio: str | None = None,
    ) -> Message:
        """Send one user message (with the files at the paths `files`, and for a voice
        target the WAV at `audio`) and record both it and the reply."""
        attached = tuple(read_attachment(f) for f in files)
        self.add_message(Message(role="user", content=text, files=attached, audio=audio))
        timeout = self.ctx.settings.reply_timeout_s
        try:
            with anyio.fail_after(timeout) if timeout is not None else nullcontext():
                reply = await session.send(self.wire)
        except TimeoutError:
            if timeout is None:
                raise
            raise TargetTimeout(
                target=self.target_name, timeout_seconds=timeout, hint=REPLY_TIMEOUT_HINT
            ) from None
        except RecursionError:  # e.g. an SDK reading a reply nested 100,000 levels deep
            raise TargetError(
                f"{self.target_name}: the reply is nested too deeply to read (Python's "
                "recursion limit); the agent should answer with flatter JSON"
            ) from None
        self.add_message(reply)
        return reply


async def _simulate(state: _TrialState, session: TargetSession) -> EndReason:
    scenario = state.scenario
    assert isinstance(scenario, SimulatedScenario)
    ctx = state.ctx
    assert ctx.user_model is not None
    text = scenario.opening_message
    for turn in range(1, scenario.max_turns + 1):
        if text is None:
            try:
                decision = await next_user_message(
                    ctx.user_model,
                    scenario=scenario,
                    transcript=state.transcript,
                    may_stop=turn > scenario.effective_min_turns,
                    limits=ctx.settings.limits,
                    temperature=ctx.settings.user_temperature,
                    usage=state.usage,
                    scrub=ctx.scrub,
                )
            except ModelOutputError as e:  # still unusable when asked again: never sent
                return _simulator_failed(state, scenario, turn, e)
            if decision.done and turn > scenario.effective_min_turns:
                return decision.done_reason or "goal_achieved"
            text = decision.message
        await state.exchange(session, text, files=scenario.files)
        text = None
    return "max_turns"


def _simulator_failed(
    state: _TrialState, scenario: SimulatedScenario, turn: int, error: ModelOutputError
) -> EndReason:
    """End a conversation whose simulated user wrote nothing sendable for `turn`: it is
    judged on what was said when `min_turns` turns were played (`state.note` says why it
    ended), else it raises `SimulatorFailed` (a bad simulated user is not a failing agent).
    """
    why = f"the simulated user wrote no usable message for turn {turn}: {error}"
    least = scenario.effective_min_turns
    if turn <= least:
        raise SimulatorFailed(
            f"{why}; the conversation stopped before min_turns ({least}), so the agent was "
            "not judged"
        )
    state.note = (
        f"{why}; the conversation ended there, min_turns ({least}) reached, and what was "
        "said before was judged"
    )
    return "simulator_failed"


def _conversation_checks(
    state: _TrialState, scenario: AnyScenario, end_reason: EndReason
) -> list[Verdict]:
    """The scenario's checks on the conversation as the agent really had it (`wire`), then
    the built-in empty-reply check unless the scenario sets `allow_empty_replies`."""
    verdicts = [
        run_check(c, state.wire, check_id=f"check{i}", end_reason=end_reason)
        for i, c in enumerate(scenario.checks, start=1)
    ]
    empty = None if scenario.allow_empty_replies else empty_reply_verdict(state.wire)
    return verdicts if empty is None else [*verdicts, empty]


async def _judge(
    state: _TrialState, scenario: AnyScenario, shoulds: list[ShouldItem], end_reason: EndReason
) -> None:
    """Conversation-level checks, then one judge call unless a check already failed the
    trial (and neither the scenario nor the settings say `judge_after_failed_checks`)."""
    ctx = state.ctx
    state.add_verdicts(_conversation_checks(state, scenario, end_reason))
    evaluations = scenario.defined_evaluations
    if not (scenario.all_criteria or shoulds or scenario.tool_args_judge or evaluations):
        return
    failed = next((v for v in state.verdicts if v.status == "not_met"), None)
    if scenario.judge_after_failed_checks or ctx.settings.judge_after_failed_checks:
        failed = None
    if failed is not None:
        reason = f"not judged: check {failed.id} ({failed.description}) already failed the trial"
        state.add_verdicts(skipped_verdicts(scenario, shoulds, reason, state.transcript))
    elif ctx.judge_model is None:
        state.add_verdicts(skipped_verdicts(scenario, shoulds, ctx.skip_reason, state.transcript))
        state.unjudged = ctx.skip_reason
    else:
        ctx.observer(JudgeStarted(scenario.id, state.trial))
        outcome = await judge_conversation(
            ctx.judge_model,
            scenario=scenario,
            transcript=state.transcript,
            shoulds=shoulds,
            evaluations=evaluations,
            limits=ctx.settings.limits,
            temperature=ctx.settings.judge_temperature,
            usage=state.usage,
            scrub=ctx.scrub,
            require_evidence=scenario.require_evidence,
        )
        state.add_verdicts(outcome.verdicts)
        state.reply_notes = outcome.reply_notes
        state.insights = [masked_insight(i, ctx.scrub) for i in outcome.insights]


async def _converse(state: _TrialState, target: Target | None) -> EndReason:
    """Open a session, play the conversation, judge it; return the end reason."""
    scenario = state.scenario
    if isinstance(scenario, CodeScenario):
        return await _run_code(state, scenario, target)
    assert target is not None
    state.target_name = target.name
    session = await target.open_session()
    state.evidence = planned(session, scenario)  # a browser: screenshots, page URL, steps
    shoulds: list[ShouldItem] = []
    try:
        if isinstance(scenario, SimulatedScenario):
            end_reason = await _simulate(state, session)
        else:
            assert isinstance(scenario, ScriptedScenario | SingleTurnScenario)
            shoulds = await play_script(state, scenario, session)
            end_reason = "script_done"
    except StepBudgetSpent as e:  # judged on what was said; the unsent message is dropped
        state.transcript, state.wire = unsent(state.transcript), unsent(state.wire)
        end_reason, state.note = "browser_done", str(e)
    finally:
        with anyio.CancelScope(shield=True):
            await session.close()
    await _judge(state, scenario, shoulds, end_reason)
    return end_reason


class _TestRaised(Exception):
    """A Python test's body (or hook) raised something other than a failed assertion, or
    left an assertion un-awaited."""


async def _run_code(state: _TrialState, scenario: CodeScenario, target: Target | None) -> EndReason:
    """Run a Python test's body in a trial context: `should` verdicts and sessions are
    recorded on `state`; a failed `assert` becomes a `not_met` verdict.

    Anything else the body raises, `SystemExit` and `KeyboardInterrupt` included, makes
    the trial `error` (`_TestRaised`), as does a `should` or `unfold` never awaited; only
    the run's own cancellation (timeout, Ctrl-C) goes on as it is."""
    ctx = state.ctx
    trial = _trial_context(state, scenario, target)
    token = CURRENT_TRIAL.set(trial)
    stopped: SimulationSkipped | None = None  # simulate() without a model: skipped there
    try:
        if scenario.before is not None:
            await _hook(scenario.before, "a before hook", ctx.scrub)
        await call_body(scenario.body, trial)
    except SimulationSkipped as e:
        stopped = e
    except (ConditionsNotMet, ConditionsUndecided):
        pass  # their verdicts are recorded and decide the trial
    except AssertionError as e:
        state.add_verdicts(
            [
                Verdict(
                    id="assert",
                    kind="check",
                    description="assert in the test body",
                    status="not_met",
                    reason=_scrubbed(assertion_text(e), ctx.scrub),
                )
            ]
        )
    except (TargetError, _TestRaised, anyio.get_cancelled_exc_class()):
        raise
    except BaseException as e:  # SystemExit, KeyboardInterrupt... must not end the run
        raise _TestRaised(_scrubbed(f"the test raised {raised_text(e)}", ctx.scrub)) from e
    finally:
        CURRENT_TRIAL.reset(token)
        forgotten = trial.unawaited()
    if trial.target_failure is not None:  # caught by the test: still an error, never a pass
        raise trial.target_failure
    if forgotten:
        raise _TestRaised(forgotten)
    if stopped is not None and trial_status(state.verdicts) in ("passed", "skipped"):
        raise stopped  # checks passed so far cannot pass a test that stopped there
    state.evidence = trial.evidence  # a browser session's screenshots and page URL
    verdicts, state.insights = await judge_code_test(
        scenario, state.transcript, trial.judge, state.usage
    )
    state.add_verdicts(verdicts)
    return "script_done"


def _trial_context(
    state: _TrialState, scenario: CodeScenario, target: Target | None
) -> TrialContext:
    """What a Python test's body gets: its target, judge, simulated user and recorder."""
    ctx = state.ctx
    spec = None if target is None or not isinstance(scenario.target, BaseModel) else scenario.target
    return TrialContext(
        scenario_id=scenario.id,
        trial=state.trial,
        target=target,
        spec=spec,
        build_target=lambda s: ctx.targets(replace(scenario, target=s)),
        judge=JudgeSettings(
            model=None if ctx.settings.no_model_reason else scenario.judge_model or ctx.judge_model,
            limits=ctx.settings.limits,
            temperature=ctx.settings.judge_temperature,
            scrub=ctx.scrub,
            skip_reason=ctx.skip_reason,
        ),
        reply_timeout_s=ctx.settings.reply_timeout_s or scenario.reply_timeout_s,
        usage=state.usage,
        recorder=state,
        user=UserPlay(
            model=ctx.user_model,
            persona=scenario.persona,
            goal=scenario.goal,
            limits=ctx.settings.limits,
            temperature=ctx.settings.user_temperature,
            scrub=ctx.scrub,
            skip_reason=ctx.skip_reason,
        ),
    )


async def _hook(
    hook: Callable[..., Awaitable[None]],
    what: str,
    scrub: Callable[[str], str] | None,
    *args: object,
) -> None:
    try:
        await hook(*args)
    except anyio.get_cancelled_exc_class():
        raise
    except HookError as e:
        raise _TestRaised(_scrubbed(str(e), scrub)) from e
    except BaseException as e:
        raise _TestRaised(_scrubbed(f"{what} raised {raised_text(e)}", scrub)) from e


def _scrubbed(text: str, scrub: Callable[[str], str] | None) -> str:
    return scrub(text) if scrub is not None else text


Outcome = tuple[TrialStatus, EndReason, str | None]


async def run_trial(
    scenario: AnyRunnable,
    trial: int,
    target: Target | None,
    ctx: RunContext,
    *,
    trials: int,
    on_result: Callable[[TrialResult], None],
) -> None:
    """Run trial number `trial` (1-based, of `trials`) and pass its TrialResult to `on_result`.

    Never raises for target, model or judge failures: they become the trial's status. If the
    run is cancelled (Ctrl-C), the trial is recorded as `error` / `interrupted` with what it
    had so far before the cancellation goes on.
    """
    ctx.observer(TrialStarted(scenario.id, scenario.display_name, trial, trials))
    state = _TrialState(scenario, trial, ctx)
    if needs_user_model(scenario) and ctx.user_model is None:
        on_result(state.finish("skipped", "skipped", ctx.skip_reason))
        return
    try:
        outcome = await _play(state, target)
        if isinstance(scenario, CodeScenario) and scenario.after is not None:
            outcome = await _after(state, scenario.after, outcome)
        if isinstance(scenario, CodeScenario) and scenario.expect_failure:
            status, error = as_expected_failure(outcome[0], outcome[2])
            outcome = (status, outcome[1], error)
        if outcome[0] == "failed" and explains(scenario, ctx.settings):
            outcome = await _explain(state, outcome)
    except anyio.get_cancelled_exc_class():
        on_result(
            state.finish(
                "error", "interrupted", "the run was interrupted before this trial finished"
            )
        )
        raise
    on_result(state.finish(*outcome))


async def _play(state: _TrialState, target: Target | None) -> Outcome:
    """Play and judge the trial within its timeout; its status, end reason and error."""
    ctx, scenario = state.ctx, state.scenario
    timeout = ctx.settings.conversation_timeout_s or scenario.timeout_s
    try:
        with anyio.fail_after(timeout):
            end_reason = await _converse(state, target)
    except TimeoutError:
        where = (
            "--conversation-timeout"
            if ctx.settings.conversation_timeout_s
            else "the scenario's `timeout_s`"
        )
        return (
            "timed_out",
            "timeout",
            f"conversation timed out after {timeout:g} s; raise {where} if it is just slow",
        )
    except TargetError as e:
        return "error", "target_error", str(e)
    except ModelError as e:
        return "error", "model_error", f"simulated user failed: {e}"
    except _TestRaised as e:
        return "error", "test_error", str(e)
    except SimulatorFailed as e:
        return "invalid", "simulator_failed", str(e)
    except MissingPart as e:  # e.g. no Chromium or espeak-ng: skipped, as without a model
        return "skipped", "skipped", str(e)
    except SimulationSkipped as e:
        return "skipped", "skipped", e.verdicts[0].reason
    except Exception as e:  # a bug or an unexpected failure must not lose the trial
        state.traceback = traceback.format_exc()
        return (
            "error",
            "internal_error",
            f"unexpected {type(e).__name__}: {e}; please report this with the JSON report attached",
        )
    return _status(state, end_reason)


def _status(state: _TrialState, end_reason: EndReason) -> Outcome:
    """The outcome of a trial that ran to the end, from its verdicts and insights."""
    scenario, insights = state.scenario, state.insights
    status = trial_status(state.verdicts, insights)
    if isinstance(scenario, CodeScenario) and status == "skipped" and not state.verdicts:
        status = "passed"  # a Python test that returns without failing passes, like pytest
    if status in ("passed", "skipped") and nothing_to_pass(scenario):
        if state.unjudged is not None:  # its evaluations were not scored: no model
            return "skipped", "skipped", state.unjudged
        if insights and all(i.status == "error" for i in insights):
            return "error", end_reason, f"no insight could be scored: {insights[0].error}"
        return "done", end_reason, state.note
    if status == "skipped":  # every verdict skipped (no judge model): say so, not how it ended
        reasons = (v.reason for v in state.verdicts if v.reason)
        return status, "skipped", next(reasons, state.unjudged)
    undecided = undecided_text(state.verdicts, insights) if status == "error" else None
    return status, end_reason, undecided or state.note


async def _explain(state: _TrialState, outcome: Outcome) -> Outcome:
    """`explanation` for a failed trial; when none could be written, the outcome's text
    says why and the status stays."""
    ctx, scenario = state.ctx, state.scenario
    own = scenario.judge_model if isinstance(scenario, CodeScenario) else None
    model = None if ctx.settings.no_model_reason else own or ctx.judge_model
    state.explanation, note = await explanation(
        model,
        scenario,
        state.transcript,
        results=(state.verdicts, state.insights),
        settings=ctx.settings,
        usage=state.usage,
        scrub=ctx.scrub,
        no_model=ctx.skip_reason,
    )
    status, end_reason, error = outcome
    if note is None:
        return outcome
    return status, end_reason, note if error is None else f"{error}; {note}"


async def _after(
    state: _TrialState, after: Callable[[bool, str | None], Awaitable[None]], outcome: Outcome
) -> Outcome:
    """Run a Python test's after-each hook with (passed, error); a hook that raises makes
    the trial `error`."""
    status, _, error = outcome
    failure = error or next(
        (f"{v.id} {v.description}: {v.reason}" for v in state.verdicts if v.status == "not_met"),
        None,
    )
    try:
        await _hook(after, "the after hook", state.ctx.scrub, status == "passed", failure)
    except _TestRaised as e:
        return "error", "test_error", str(e)
    return outcome
