"""Run scenarios: trials, concurrency, timeouts, stop conditions. Never prints.

`run_scenarios` drives each trial through the conversation loop of DESIGN.md section 3
(`trial.py`), runs the deterministic checks, makes one judge call per trial, and reports
progress as events (`sparring.events`). `code.py` and `context.py` are what a Python test
needs from the runner: `CodeScenario`, the trial context, calling a body in a thread.
"""

from sparring.judging.should import NO_MODEL_HINT
from sparring.runner.run import TargetPool, run_scenarios
from sparring.runner.settings import REPLY_TIMEOUT_HINT, AnyRunnable, RunSettings

__all__ = [
    "NO_MODEL_HINT",
    "REPLY_TIMEOUT_HINT",
    "AnyRunnable",
    "RunSettings",
    "TargetPool",
    "run_scenarios",
]
