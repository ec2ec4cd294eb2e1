"""One exception tree for sparring.

`UserError` means "you misconfigured it" (bad YAML, unknown model, missing extra) and is
reported with what, where and how to fix it; the CLI exits 2. `RunError` means a run step
failed (target unreachable, model failed, judge answer unparseable); the runner records it
on the trial as `error` and never raises it past the trial.
"""

from __future__ import annotations


class SparringError(Exception):
    """Base class of every error sparring raises on purpose."""


class UserError(SparringError):
    """Misconfiguration: the message says what is wrong, where, and how to fix it."""


class MissingPart(UserError):
    """An optional package or program a step needs is not installed (Playwright or Chromium
    for a website chat, espeak-ng to speak a voice test's messages). The message gives the
    install line. A trial that needs it is `skipped` with that message, as steps that need
    a model are when none is configured, so the rest of a run goes on."""


class ConfigError(UserError):
    """A test file or setting is invalid.

    Args:
        message: What is wrong and how to fix it.
        path: The file, if the error comes from one.
        line: 1-based line in `path`, when known.
        column: 1-based column in `path`, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        self.message, self.path, self.line, self.column = message, path, line, column
        where = path or ""
        if path and line is not None:
            where += f":{line}" + (f":{column}" if column is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


class RunError(SparringError):
    """A step of a run failed; the trial that hit it is recorded as `error`."""


class TargetError(RunError):
    """The target could not answer: connection error, HTTP status >= 400, bad body.

    Args:
        message: What happened and what to check.
        status: HTTP status code when the target answered with one.
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        self.status = status
        super().__init__(message)


class StepBudgetSpent(TargetError):
    """A browser target used the steps its conversation may take (12 + 5 x max_turns, at
    most 60) before the next turn: the conversation ends there (end reason `browser_done`)
    and is judged on what was said."""


TARGET_TIMEOUT_HINT = "raise `timeout_s` on the target if the agent is just slow"
"""`TargetTimeout.hint` for a target's own `timeout_s` (http, openai_chat, callable)."""


class TargetTimeout(TargetError):
    """The target did not reply within the reply timeout.

    Args:
        target: The target's name.
        timeout_seconds: The limit that ran out, in seconds.
        hint: How to fix it, naming the setting that set the limit: targets pass
            `TARGET_TIMEOUT_HINT`, the runner one naming --reply-timeout.
    """

    def __init__(self, *, target: str, timeout_seconds: float, hint: str) -> None:
        self.timeout_seconds, self.hint = timeout_seconds, hint
        super().__init__(f"target {target!r} did not reply within {timeout_seconds:g} s; {hint}")


class ModelError(RunError):
    """A model call failed after its retries (HTTP error, timeout, refused request).

    Args:
        message: What happened and what to check.
        requests: Requests the failed call sent (its retries included), for the usage
            counts; 0 when it sent none.
    """

    def __init__(self, message: str, *, requests: int = 1) -> None:
        self.requests = requests
        super().__init__(message)


class ModelOutputError(ModelError):
    """A model answer could not be parsed into the required JSON shape, even after repair.

    Args:
        message: What was wrong with the answer.
        raw: The model's last answer, kept for the report.
    """

    def __init__(self, message: str, *, raw: str) -> None:
        self.raw = raw
        super().__init__(f"{message}; answer starts: {raw[:200]!r}")
