"""`sparring doctor FILE`: send one message to a test file's target and explain the result.

Shows each HTTP request (credentials masked) and response, the reply the target read from
it, tool calls, latency, and a diagnosis with fixes (`diagnosis.py`). Every value of
a secret the target uses is masked in all of it, in one place: the console's output stream
(`_ScrubbedStdout`), so an agent that echoes a secret in its reply or a tool call does not
show it either. Exit code 0 when
the target answered with a non-empty reply and nothing is a problem, 3 otherwise, 2 for a
file or option that is wrong (like `sparring run`).
"""

from __future__ import annotations

import io
import json
import os
import sys
from typing import IO, TextIO, cast

import anyio
from rich.console import Console
from rich.text import Text

from sparring.cli.doctor.diagnosis import Finding, Probe, diagnose, is_healthy
from sparring.cli.doctor.probe import probe
from sparring.config import load_settings
from sparring.loaders.target_file import load_target
from sparring.secrets import Secrets, mask_url
from sparring.target_specs import (
    A2ATargetSpec,
    BrowserTargetSpec,
    CallableTargetSpec,
    HttpTargetSpec,
    OpenAIChatTargetSpec,
    ParlantTargetSpec,
)
from sparring.targets.registry import AnyTargetSpec

EXIT_OK = 0
EXIT_TARGET_FAILED = 3
BODY_CHARS = 2000
"""Characters of a request or response body shown; the rest is counted."""
_STYLE = {"ok": "green", "note": "cyan", "warning": "yellow", "problem": "red"}


def doctor_command(
    *, file: str, message: str, secrets_file: str | None, scenario: str | None
) -> int:
    """Body of `sparring doctor`; returns the exit code.

    Raises:
        UserError: the file cannot be read or holds no valid target, `--scenario` names no
            scenario in it, a secret the target uses is not set (exit code 2).
    """
    settings = load_settings({"secrets_file": secrets_file})
    secrets = Secrets.load(file=settings.secrets_file, api_key=settings.api_key)
    spec, source = load_target(file, scenario_id=scenario)
    console = _console(_ScrubbedStdout(sys.stdout, secrets))
    if isinstance(spec, BrowserTargetSpec):
        from sparring.cli.doctor.browser import browser_doctor

        return browser_doctor(console, spec, message=message, source=source)
    console.print(
        Text.assemble(
            ("sparring doctor: ", "bold"), f"{_describe(spec)}  ", (f"(target: {source})", "dim")
        )
    )
    console.print(Text(f"Sending one user message: {message!r}"))
    result = anyio.run(lambda: probe(spec, message=message, secrets=secrets))
    findings = diagnose(result)
    _print_exchanges(console, result)
    _print_result(console, result)
    _print_findings(console, findings, source)
    return EXIT_OK if is_healthy(findings) else EXIT_TARGET_FAILED


def _describe(spec: AnyTargetSpec) -> str:
    match spec:
        case HttpTargetSpec():
            return f"http target, {spec.method} {spec.url}"
        case OpenAIChatTargetSpec():
            return f"openai_chat target, model {spec.model!r} at {mask_url(spec.base_url)}"
        case CallableTargetSpec():
            return f"callable target {spec.ref}"
        case A2ATargetSpec() | ParlantTargetSpec():
            return f"{spec.type} target at {spec.url}"
        case _:
            return f"{spec.type} target"


# --- output --------------------------------------------------------------------------------


class _ScrubbedStdout(io.TextIOBase):
    """A text stream that writes to `out` with every secret value `secrets` has handed out
    masked (`Secrets.scrub`): what the console prints goes through here, all of it.

    Rich writes each printed line whole (soft wrap, no colour codes inside a plain value),
    so a secret is never split across two writes.
    """

    def __init__(self, out: TextIO, secrets: Secrets) -> None:
        super().__init__()
        self._out, self._secrets = out, secrets

    def write(self, text: str, /) -> int:
        """Write `text` scrubbed; returns `len(text)` (what was asked to be written)."""
        self._out.write(self._secrets.scrub(text))
        return len(text)

    def flush(self) -> None:
        """Flush `out`."""
        self._out.flush()

    def isatty(self) -> bool:
        """Whether `out` is a terminal (colour on or off)."""
        return self._out.isatty()

    @property
    def encoding(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        """`out`'s encoding (Rich picks its box characters by it)."""
        return self._out.encoding


def _console(stream: _ScrubbedStdout) -> Console:
    """`stream`, coloured on a terminal only; long lines are not cut (urls, bodies and errors
    stay whole for copying); 120-column rules in CI logs (no COLUMNS set)."""
    out = cast(IO[str], stream)  # Rich only writes, flushes and asks isatty / encoding
    console = Console(file=out, highlight=False, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(file=out, highlight=False, soft_wrap=True, width=120)
    return console


def _print_exchanges(console: Console, result: Probe) -> None:
    if not result.exchanges:
        console.print(Text("(no HTTP: the target runs in this process)", style="dim"))
    for number, ex in enumerate(result.exchanges, start=1):
        ending = result.answered_after is not None and number > result.answered_after
        console.rule(
            Text(f"Request {number}" + (" (ends the conversation)" if ending else "")), align="left"
        )
        console.print(Text(f"{ex.method} {ex.url}", style="bold"))
        _print_headers(console, ex.request_headers)
        _print_body(console, ex.request_body)
        if ex.status is None:
            why = ex.error_detail or ex.error or "abandoned: the time limit ran out"
            console.rule(Text(f"Response {number}: none"), align="left")
            console.print(Text(f"no response ({why})", style="red"))
            continue
        took = f" after {ex.elapsed_ms:.0f} ms" if ex.elapsed_ms is not None else ""
        console.rule(Text(f"Response {number}: HTTP {ex.status} {ex.reason}{took}"), align="left")
        _print_headers(console, ex.response_headers)
        _print_body(console, ex.response_body)
        if not ex.body_complete:
            console.print(
                Text("(the body was cut off here: the time limit ran out)", style="yellow")
            )


def _print_headers(console: Console, headers: tuple[tuple[str, str], ...]) -> None:
    for name, value in headers:
        console.print(Text.assemble((f"{name}: ", "dim"), value))


def _print_body(console: Console, body: str) -> None:
    if not body:
        console.print(Text("(empty body)", style="dim"))
        return
    try:
        body = json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        pass  # not JSON: shown as it came
    rest = len(body) - BODY_CHARS
    console.print()
    console.print(Text(body[:BODY_CHARS]))
    if rest > 0:
        console.print(Text(f"... ({rest} more characters)", style="dim"))


def _print_result(console: Console, result: Probe) -> None:
    console.rule("Result", align="left")
    reply = result.reply
    if reply is None:
        console.print(Text.assemble(("Error: ", "red bold"), result.error))
        return
    where = f" (response_path {result.response_path!r})" if result.response_path else ""
    console.print(
        Text.assemble(
            (f"Reply{where}: ", "bold"), repr(reply.content) if reply.content else "(empty)"
        )
    )
    calls = ", ".join(f"{c.name}({c.arguments_raw})" for c in reply.tool_calls) or "none"
    console.print(Text.assemble(("Tool calls: ", "bold"), calls))
    if reply.latency_ms is not None:
        console.print(Text.assemble(("Latency: ", "bold"), f"{reply.latency_ms:.0f} ms"))
    if reply.input_tokens is not None or reply.output_tokens is not None:
        console.print(
            Text.assemble(
                ("Tokens: ", "bold"), f"{reply.input_tokens} in, {reply.output_tokens} out"
            )
        )


def _print_findings(console: Console, findings: list[Finding], source: str) -> None:
    """The findings; when one has a fix, where the target to edit is (`source`,
    `path:line` of its `target:`)."""
    console.rule("Diagnosis", align="left")
    for finding in findings:
        console.print(
            Text.assemble(
                (f"{finding.severity.upper()}: ", f"bold {_STYLE[finding.severity]}"), finding.what
            )
        )
        if finding.fix:
            console.print(Text(f"  fix: {finding.fix}"))
    if any(f.fix for f in findings):
        console.print(Text(f"The target is at {source}.", style="dim"))
