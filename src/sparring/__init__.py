"""sparring: test conversational AI agents in conversations.

A simulated or scripted user talks to the target (the agent under test); checks and an
LLM judge score each conversation; trials and thresholds turn it into a CI verdict.

The public names (`Suite`, `CustomerMessage`, `AgentMessage`, `InteractionBuilder`,
`open_session`, ...) load on first use, so `import sparring` stays cheap:

```python
from sparring import Suite, CustomerMessage, AgentMessage
```
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from sparring.api import (
        AgentMessage,
        ConditionsNotMet,
        ConditionsUndecided,
        CustomerMessage,
        Evaluation,
        HookError,
        Insight,
        InteractionBuilder,
        Library,
        Response,
        Session,
        SimulatedUser,
        Suite,
        SuiteRun,
        ToolArgsJudge,
        TrialRange,
        load_library,
        open_session,
    )

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
    "__version__",
    "load_library",
    "open_session",
]


def __getattr__(name: str) -> Any:
    """Load a public name from `sparring.api` on first use (PEP 562)."""
    if name in __all__ and name != "__version__":
        return getattr(import_module("sparring.api"), name)
    raise AttributeError(f"module 'sparring' has no attribute {name!r}")
