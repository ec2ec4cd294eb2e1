"""`sparring doctor` on a website chat (`type: browser`): open the page, send one message,
and show what was found: the elements used (and how: found, or your selector), the reply and
its latency, the steps taken, the page URL and a screenshot's path."""

from __future__ import annotations

from dataclasses import dataclass

import anyio
from rich.console import Console
from rich.text import Text

from sparring.errors import RunError, TargetError
from sparring.target_specs import BrowserTargetSpec
from sparring.targets.browser import BrowserSession, BrowserTarget
from sparring.targets.browser_page import Found
from sparring.transcript import Message, Transcript

EXIT_OK = 0
EXIT_TARGET_FAILED = 3


@dataclass(frozen=True, slots=True)
class BrowserProbe:
    """What one message to a website chat showed: the page, the elements the finder used,
    the reply (or the error), the browser steps taken and the screenshots kept;
    `page_status` is the HTTP status of a page that answered with an error (>= 400), else
    `None`."""

    page_url: str
    found: Found
    reply: Message | None
    error: str
    steps: int
    screenshots: tuple[str, ...]
    page_status: int | None = None


async def probe_browser(spec: BrowserTargetSpec, *, message: str) -> BrowserProbe:
    """Open the chat page of `spec`, send `message`, and record what happened (a screenshot
    is taken whatever `screenshots` says).

    Raises:
        UserError: Playwright is missing or the page address cannot be made.
    """
    target = BrowserTarget.from_settings(spec.model_copy(update={"screenshots": "every_turn"}))
    reply: Message | None = None
    error, status = "", None
    try:
        session = await target.open_session()
        try:
            reply = await session.send(
                Transcript(messages=(Message(role="user", content=message),))
            )
        except RunError as e:
            error, status = str(e), e.status if isinstance(e, TargetError) else None
        finally:
            with anyio.CancelScope(shield=True):
                await session.close()
        return _probe(session, reply, error, target.url, status)
    except RunError as e:  # no browser, or an unknown device: nothing was opened
        return BrowserProbe(target.url, Found(), None, str(e), 0, ())
    finally:
        with anyio.CancelScope(shield=True):
            await target.aclose()


def _probe(
    session: BrowserSession, reply: Message | None, error: str, url: str, status: int | None
) -> BrowserProbe:
    artifacts, page_url = session.evidence(failed=reply is None)
    return BrowserProbe(
        page_url=page_url or url,
        found=session.widget.found,
        reply=reply,
        error=error,
        steps=session.budget.used,
        screenshots=tuple(a.path for a in artifacts),
        page_status=status if status is not None and status >= 400 else None,
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
    console.rule("Page", align="left")
    if probe.page_status is not None:  # nothing to look for on an error page
        rows = [
            ("Page", f"{probe.page_url} (answered HTTP {probe.page_status})"),
            ("Chat", "not looked for: the page did not load (see the error below)"),
        ]
    else:
        rows = [("Page", probe.page_url), *_widget_rows(probe.found, probe.page_url)]
    rows += [("Steps", str(probe.steps)), *(("Screenshot", path) for path in probe.screenshots)]
    for name, value in rows:
        console.print(Text.assemble((f"{name}: ", "bold"), value))


def _widget_rows(found: Found, page_url: str) -> list[tuple[str, str]]:
    """The chat elements the finder used; without an input, what it did not find."""
    rows: list[tuple[str, str]] = []
    if found.frame_url:
        rows.append(
            ("Chat frame", found.frame_url if found.frame_url != page_url else "the page itself")
        )
    if not found.input:
        opened = (
            found.opened_with
            or "nothing: no chat input showed, and no chat bubble or launcher opened one"
        )
        return [
            *rows,
            ("Opened with", opened),
            ("Input", "not found (the error below says what to do)"),
        ]
    return [
        *rows,
        ("Opened with", found.opened_with or "nothing (the chat input was already showing)"),
        ("Input", found.input),
        ("Send", found.send or "none found: Enter is pressed"),
        ("Messages", found.messages or "not found"),
    ]
