"""The Python authoring API: `Suite`, `@suite.scenario`, sessions, `should`, `unfold`, hooks.

```python
from sparring.api import AgentMessage, CustomerMessage, Suite

suite = Suite(target="http://127.0.0.1:8787/chat")

@suite.scenario(repetitions=3, threshold="66%")
async def test_greets() -> None:
    async with suite.session() as session:
        response = await session.send("Hello!")
        await response.should("greet the customer")
```

Run it with `sparring run test_file.py`, or from Python with `suite.run()` /
`await suite.arun()`. The code lives in `sparring.authoring` (suites, sessions, steps) and
`sparring.runner` (what a trial is); this module is the stable import path.
"""

from sparring.authoring.connect import open_session
from sparring.authoring.session import Response, Session
from sparring.authoring.steps import AgentMessage, CustomerMessage, InteractionBuilder
from sparring.authoring.suite import Suite
from sparring.authoring.suite_run import SuiteRun
from sparring.loaders.library import Library
from sparring.loaders.yaml import load_library
from sparring.runner.code import HookError
from sparring.runner.context import ConditionsNotMet, ConditionsUndecided
from sparring.scenario.base import TrialRange
from sparring.scenario.evaluations import Evaluation, Insight, SimulatedUser, ToolArgsJudge

__all__ = [
    "AgentMessage",
    "ConditionsNotMet",
    "ConditionsUndecided",
    "CustomerMessage",
    "Evaluation",
    "HookError",
    "Insight",
    "InteractionBuilder",
    "Library",
    "Response",
    "Session",
    "SimulatedUser",
    "Suite",
    "SuiteRun",
    "ToolArgsJudge",
    "TrialRange",
    "load_library",
    "open_session",
]
