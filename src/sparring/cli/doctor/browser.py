"""`sparring doctor` on a website chat (`type: browser`): open the page, send one message,
and show what was found: the elements used (and how: found, or your selector), the reply and
its latency, the steps taken, the page URL and a screenshot's path."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
from rich.console import Console
from rich.text import Text

from sparring.errors import RunError
from sparring.target_specs import BrowserTargetSpec
from sparring.targets.browser import BrowserSession, BrowserTarget
from sparring.targets.browser_page import Found
from sparring.transcript import Message, Transcript

EXIT_OK = 0
EXIT_TARGET_FAILED = 3


@dataclass(frozen=True, slots=True)
class BrowserProbe:
    """What one message to a website chat showed: the page, the elements the finder used,
    the reply (or the error), the browser steps taken and the screenshots kept."""

    page_url: str
    found: Found
    reply: Message | None
    error: str
    steps: int
    screenshots: tuple[str, ...]


async def probe_browser(spec: BrowserTargetSpec, *, message: str) -> BrowserProbe:
    """Open the chat page of `spec`, send `message`, and record what happened (a screenshot
    is taken whatever `screenshots` says).

    Raises:
        UserError: Playwright is missing or the page address cannot be made.
    """
    target = BrowserTarget.from_settings(spec.model_copy(update={"screenshots": "every_turn"}))
    reply: Message | None = None
    error = ""
    try:
        session = await target.open_session()
        try:
            reply = await session.send(
                Transcript(messages=(Message(role="user", content=message),))
            )
        except RunError as e:
            error = str(e)
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()
        return _probe(session, reply, error, target.url)
    except RunError as e:  # no browser, or an unknown device: nothing was opened
        return BrowserProbe(target.url, Found(), None, str(e), 0, ())
    finally:
        with anyio.CancelScope(shield=True):
            await target.aclose()


def _probe(session: BrowserSession, reply: Message | None, error: str, url: str) -> BrowserProbe:
    artifacts, page_url = session.evidence(failed=reply is None)
    return BrowserProbe(
        page_url=page_url or url,
        found=session.widget.found,
        reply=reply,
        error=error,
        steps=session.budget.used,
        screenshots=tuple(a.path for a in artifacts),
    )


def browser_doctor(console: Console, spec: BrowserTargetSpec, *, message: str, source: str) -> int:
    """Probe the website chat of `spec` with `message` and print what was found; the exit
    code: 0 when the assistant replied with text, 3 otherwise."""
    where = spec.chat_url or "the site_url setting"
    console.print(
        Text.assemble(
            ("sparring doctor: ", "bold"),
            f"browser target, chat page {where}  ",
            (f"(target: {source})", "dim"),
        )
    )
    console.print(Text(f"Sending one user message: {message!r}"))
    probe = anyio.run(lambda: probe_browser(spec, message=message))
    _print_found(console, probe)
    console.rule("Result", align="left")
    if probe.reply is None or not probe.reply.content:
        console.print(Text.assemble(("Error: ", "red bold"), probe.error or "the reply was empty"))
        if probe.found.tried:
            console.print(Text(f"Clicked without result: {', '.join(probe.found.tried)}"))
        console.print(Text(f"The target is at {source}.", style="dim"))
        return EXIT_TARGET_FAILED
    console.print(Text.assemble(("Reply: ", "bold"), repr(probe.reply.content)))
    if probe.reply.latency_ms is not None:
        console.print(Text.assemble(("Latency: ", "bold"), f"{probe.reply.latency_ms:.0f} ms"))
    return EXIT_OK


def _print_found(console: Console, probe: BrowserProbe) -> None:
    found = probe.found
    console.rule("Page", align="left")
    rows = [
        ("Page", probe.page_url),
        ("Chat frame", found.frame_url if found.frame_url != probe.page_url else "the page itself"),
        ("Opened with", found.opened_with or "nothing (the chat input was already showing)"),
        ("Input", found.input or "not found"),
        ("Send", found.send or "none found: Enter is pressed"),
        ("Messages", found.messages or "not found"),
        ("Steps", str(probe.steps)),
    ]
    rows += [("Screenshot", path) for path in probe.screenshots]
    for name, value in rows:
        if name == "Chat frame" and not found.frame_url:
            continue
        console.print(Text.assemble((f"{name}: ", "bold"), value))
