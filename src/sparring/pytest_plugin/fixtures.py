"""The `sparring` fixture: sessions on targets inside a sparring test's trial.

Imports nothing of sparring until a test uses it (the plugin loads in every pytest session).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from sparring.authoring.connect import SessionContext, TargetLike
    from sparring.models.base import Model
    from sparring.runner.context import TrialContext


class SparringFixture:
    """What the `sparring` fixture gives a test: sessions on targets, in the test's trial.

    ```python
    @pytest.mark.sparring(trials=3, threshold=0.66)
    async def test_books(sparring):
        async with sparring.session(my_agent) as session:
            response = await session.send("Book me a slot tomorrow at 10am")
            await response.should("confirm the booking")
    ```
    """

    def __repr__(self) -> str:
        """`sparring`, the fixture's name, as pytest's failed-`assert` explanation shows it."""
        return "sparring"

    def session(
        self, target: TargetLike, *, model: Model | str | None = None, response_timeout: float = 60
    ) -> SessionContext:
        """A conversation with `target` (`async with sparring.session(target) as s:`).

        Args:
            target: An `http(s)://` URL, a target spec mapping as under `target:` in YAML,
                a function `agent(history)`, or a `sparring.targets.base.Target`.
            model: Judges this session's `should`s instead of the session's model.
            response_timeout: Seconds to wait for one reply.

        Raises:
            UserError: the target or model cannot be used.
        """
        from sparring.authoring.connect import open_session

        return open_session(target, model=model, response_timeout=response_timeout)

    @property
    def trial(self) -> TrialContext:
        """The running trial: `trial.trial` is its 1-based number.

        Raises:
            UserError: used outside the test's body.
        """
        from sparring.errors import UserError
        from sparring.runner.context import current_trial

        trial = current_trial()
        if trial is None:
            raise UserError("sparring.trial exists only while the test runs")
        return trial


@pytest.fixture
def sparring() -> SparringFixture:
    """Sessions on targets for a sparring test; the test then runs as trials (see
    `@pytest.mark.sparring`) and calls models only in live sessions."""
    return SparringFixture()
