"""Sessions in sync Python tests: `with suite.session() as session:` in a sync test or hook.

A sync test runs in a worker thread (`sparring.runner.code.call_body`), while the session's
target, HTTP client and models belong to the run's event loop. `BlockingSession` runs each
call on that loop (through the body's `BlockingPortal`) and waits for it, so a sync test
reads like an async one without `await`:

```python
@suite.scenario
def test_refund() -> None:
    with suite.session() as session:
        response = session.send("I want a refund")
        response.should("ask for the order number")
```
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager, AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sparring.errors import UserError
from sparring.runner.code import sync_portal

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal

    from sparring.authoring.session import Response, Session
    from sparring.authoring.steps import Step
    from sparring.results import SubtestResult, Verdict
    from sparring.scenario import Check
    from sparring.scenario.evaluations import SimulatedUser
    from sparring.transcript import Message, StatusEvent, ToolCall, Transcript

SYNC_WITH_HINT = (
    "sessions are asynchronous outside the tests and hooks sparring runs: write `async with "
    "....session(...) as session:` in an `async def` function (in a sync test or hook that "
    "sparring runs, `with suite.session() as session:` works too)"
)

SYNC_WAY = "Write `with suite.session() as session:` in it (its calls block, no await), or "
"""How a sync test opens a session, for `refuse_in_sync_body`'s message."""


class SyncSession(AbstractContextManager["BlockingSession"]):
    """`with` on a session in a sync test or hook: opened and closed on the run's loop.

    Raises:
        UserError: not in a sync test or hook sparring runs (`SYNC_WITH_HINT`).
    """

    def __init__(self, opening: AbstractAsyncContextManager[Session]) -> None:
        portal = sync_portal()
        if portal is None:
            raise UserError(SYNC_WITH_HINT)
        self._portal = portal
        self._opened = portal.wrap_async_context_manager(opening)

    def __enter__(self) -> BlockingSession:
        return BlockingSession(self._opened.__enter__(), self._portal)

    def __exit__(self, *exc: Any) -> bool | None:
        return self._opened.__exit__(*exc)


class BlockingSession:
    """A `Session` whose calls block until done: `send`, `simulate`, `add_events` and
    `unfold` take the same arguments and raise the same errors as the async ones."""

    def __init__(self, session: Session, portal: BlockingPortal) -> None:
        self.session, self._portal = session, portal

    @property
    def transcript(self) -> Transcript:
        """The conversation so far (preloaded history included)."""
        return self.session.transcript

    def send(
        self, text: str, *, files: Sequence[str | Path] = (), audio: str | Path | None = None
    ) -> BlockingResponse:
        """`Session.send`: the agent's reply to `text`."""
        sent = functools.partial(self.session.send, text, files=files, audio=audio)
        return BlockingResponse(self._portal.call(sent), self._portal)

    def simulate(
        self,
        turns: int = 1,
        *,
        persona: str | SimulatedUser | None = None,
        goal: str | None = None,
    ) -> list[BlockingResponse]:
        """`Session.simulate`: the replies to the simulated user's next `turns` messages."""
        played = functools.partial(self.session.simulate, turns, persona=persona, goal=goal)
        return [BlockingResponse(r, self._portal) for r in self._portal.call(played)]

    def add_events(self, history: Sequence[Step]) -> None:
        """`Session.add_events`: continue the conversation from a written history."""
        self._portal.call(self.session.add_events, history)

    def unfold(self, steps: Sequence[Step]) -> list[SubtestResult]:
        """`Session.unfold`: each agent step with `should` or `checks`, as a sub-test."""
        return self._portal.call(self.session.unfold, steps)


class BlockingResponse:
    """A `Response` whose `should` blocks until judged (`check` needs no model)."""

    def __init__(self, response: Response, portal: BlockingPortal) -> None:
        self.response, self._portal = response, portal

    def __repr__(self) -> str:
        return repr(self.response)

    @property
    def reply(self) -> Message:
        """The agent message as recorded."""
        return self.response.reply

    @property
    def turn(self) -> int:
        """1-based turn of the reply in its session."""
        return self.response.turn

    @property
    def message(self) -> str:
        """All reply text."""
        return self.response.message

    @property
    def messages(self) -> list[str]:
        """Each message the agent sent separately."""
        return self.response.messages

    @property
    def tool_calls(self) -> list[ToolCall]:
        """Tools the agent called for this reply, in order."""
        return self.response.tool_calls

    @property
    def status_events(self) -> list[StatusEvent]:
        """States the agent reported while producing the reply."""
        return self.response.status_events

    @property
    def latency_ms(self) -> float | None:
        """Reply time in milliseconds."""
        return self.response.latency_ms

    def should(
        self, condition: str | Sequence[str], *, require_evidence: bool = True
    ) -> list[Verdict]:
        """`Response.should`, waited for: one verdict per condition.

        Raises:
            ConditionsNotMet: some condition was not met (an AssertionError).
            ConditionsUndecided: the judge could not decide some condition.
        """
        judged = functools.partial(
            self.response.should, condition, require_evidence=require_evidence
        )
        return self._portal.call(judged)

    def check(self, *checks: Check | dict[str, Any]) -> list[Verdict]:
        """`Response.check`: sparring's declarative checks on this reply."""
        return self.response.check(*checks)
