"""The chat widget on a page: finding it, sending a message, reading the reply.

The finding and reading run as JavaScript in each frame (`browser_widget.js`), which marks
the elements it picks with `data-sparring-ROLE` attributes; Playwright then acts on them by
selector. Every browser action (open the page, click, type, send, upload, read a reply) is
one step of the conversation's `StepBudget`.
"""

from __future__ import annotations

import base64
import time
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING, Any, cast

import anyio

from sparring.errors import StepBudgetSpent, TargetError
from sparring.target_specs import BrowserTargetSpec
from sparring.transcript import Attachment

if TYPE_CHECKING:
    from playwright.async_api import FilePayload, Frame, Page

SCRIPT = resources.files("sparring.targets").joinpath("browser_widget.js").read_text("utf-8")
"""The finder and reader, evaluated in a frame: `frame.evaluate(SCRIPT, {"op": ...})`."""
POLL_S = 0.15
"""How often a reply (or a widget that is opening) is looked at, in seconds."""
APPEAR_S = 5.0
"""How long the page may take to show its widget (or a launcher's click to show the input)."""
STEPS_PER_TURN = 3
"""Type, send, read: what one turn needs at least (one more to upload files)."""
NEVER_REPLIED = "The chat assistant never replied"


def step_budget(max_turns: int) -> int:
    """Browser steps a conversation of `max_turns` user messages may take: 12 + 5 per turn,
    60 at most."""
    return min(60, 12 + 5 * max_turns)


@dataclass
class StepBudget:
    """The browser steps a conversation may still take; `spend` counts one."""

    limit: int
    used: int = 0

    def reserve(self, steps: int, *, turn: int) -> None:
        """Check that `steps` more fit before starting turn `turn`.

        Raises:
            StepBudgetSpent: they do not.
        """
        if self.used + steps > self.limit:
            raise StepBudgetSpent(
                f"the browser used {self.used} of its {self.limit} steps (12 + 5 x "
                f"max_turns, at most 60) before turn {turn}, which needs {steps} more; "
                "the conversation ended there"
            )

    def spend(self, what: str) -> None:
        """Count one step, for `what` (e.g. "opening the page").

        Raises:
            StepBudgetSpent: no step is left.
        """
        if self.used >= self.limit:
            raise StepBudgetSpent(
                f"the browser used all {self.limit} steps (12 + 5 x max_turns, at most 60) "
                f"before {what}; the conversation ended there"
            )
        self.used += 1


@dataclass
class Found:
    """What the finder used on the page, each element described as
    `<tag id=.. class=..>` with how it was found ("found" or "your `input` selector")."""

    frame_url: str = ""
    opened_with: str | None = None
    input: str = ""
    send: str | None = None
    messages: str = ""
    upload: str | None = None
    tried: list[str] = field(default_factory=list[str])
    """Launchers clicked that opened nothing."""


@dataclass(frozen=True)
class _Item:
    text: str
    typing: bool
    side: str


@dataclass(frozen=True)
class _Snapshot:
    items: list[_Item]
    busy: bool


@dataclass(frozen=True)
class Reply:
    """The agent's messages for one user message (usually one), and the time from sending
    to the reply's last change, in milliseconds."""

    parts: list[str]
    latency_ms: float


def reply_parts(items: list[_Item], sent: str) -> list[str]:
    """The agent's text among the messages that appeared after `sent` was sent: typing
    indicators and the user's own message (by its side, else by its text) left out."""
    new = [i for i in items if not i.typing and i.text and i.side != "user"]
    if not any(i.side for i in items):
        wanted = " ".join(sent.split())
        echo = next((i for i in new if " ".join(i.text.split()).endswith(wanted)), None)
        new = [i for i in new if i is not echo]
    return [i.text for i in new]


class Widget:
    """The chat widget of `page`, driven as `spec` says, spending `budget`."""

    def __init__(self, page: Page, spec: BrowserTargetSpec, budget: StepBudget) -> None:
        self.page, self.spec, self.budget = page, spec, budget
        self.found = Found()
        self._frame: Frame | None = None

    @property
    def frame(self) -> Frame:
        """The frame holding the chat input."""
        assert self._frame is not None, "call locate() first"
        return self._frame

    async def locate(self) -> None:
        """Find the chat input (opening the widget first when it is closed), the send
        button and the message list.

        Raises:
            TargetError: no chat input, or nowhere replies appear, with what was tried.
            StepBudgetSpent: the clicks used the conversation's steps.
        """
        if not await self._find_input(wait_s=0.3):
            await self._open()
        self.found.frame_url = self.frame.url
        self.found.send = await self._find("send", self.spec.send)
        messages = await self._find("messages", self.spec.messages)
        if messages is None:
            raise TargetError(
                f"found the chat input {self.found.input} on {self.page.url} but not where "
                "the replies appear; set `messages` on the target to a selector of the "
                "message list"
            )
        self.found.messages = messages

    async def _find(self, role: str, selector: str | None) -> str | None:
        """Mark the widget's `role` element (in the input's frame); its description."""
        if selector is None:
            described = await self._eval(self.frame, {"op": role})
            return None if described is None else f"found {described}"
        marked = await self._select(self.frame, selector, role)
        if marked is None:
            raise TargetError(
                f"your `{role}` selector {selector!r} matches nothing visible in the chat "
                f"frame {self.frame.url}; check it in the browser's developer tools"
            )
        return f"your `{role}` selector: {marked}"

    async def _find_input(self, *, wait_s: float) -> bool:
        """Look in every frame for a visible chat input for up to `wait_s` seconds."""
        deadline = time.monotonic() + wait_s
        while True:
            for frame in self.page.frames:
                if self.spec.input is not None:
                    described = await self._select(frame, self.spec.input, "input")
                    how = "your `input` selector: "
                else:
                    described = await self._eval(frame, {"op": "input"})
                    how = "found "
                if described is not None:
                    self._frame, self.found.input = frame, how + str(described)
                    return True
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(POLL_S)

    async def _open(self) -> None:
        """Click the `open` selector, else the likeliest launchers in turn, until the chat
        input shows."""
        for frame, index, described in await self._launchers():
            self.budget.spend("opening the chat")
            launcher = frame.locator(f'[data-sparring-launcher="{index}"]').first
            await launcher.click(timeout=APPEAR_S * 1000)
            if await self._find_input(wait_s=APPEAR_S):
                self.found.opened_with = described
                return
            self.found.tried.append(described)
        tried = f"; clicked {', '.join(self.found.tried)} and no chat input showed" * bool(
            self.found.tried
        )
        raise TargetError(
            f"found no chat widget on {self.page.url}: no visible chat input{tried}. Say how "
            "to open it with `chat_hint` (e.g. \"Click 'Ask Nora', bottom right\"), or set "
            "the `open` and `input` selectors on the target"
        )

    async def _launchers(self) -> list[tuple[Frame, str, str]]:
        """`(frame, mark index, description)` of what may open the chat, best first."""
        deadline = time.monotonic() + APPEAR_S
        while True:
            found: list[tuple[float, Frame, str, str]] = []
            for frame in self.page.frames:
                if self.spec.open is not None:
                    marked = await self._select(frame, self.spec.open, "launcher", index="0")
                    if marked is not None:
                        return [(frame, "0", f"your `open` selector: {marked}")]
                    continue
                ranked = await self._eval(frame, {"op": "launchers", "hint": self.spec.chat_hint})
                for c in cast(list[dict[str, Any]], ranked or []):
                    found.append((c["score"], frame, str(c["index"]), f"found {c['description']}"))
            if found or time.monotonic() >= deadline:
                found.sort(key=lambda c: -c[0])
                return [(frame, index, text) for _, frame, index, text in found]
            await anyio.sleep(POLL_S)

    async def _select(
        self, frame: Frame, selector: str, role: str, *, index: str | None = None
    ) -> str | None:
        """Mark the first visible element `selector` matches in `frame`; its description."""
        from playwright.async_api import Error

        try:
            located = frame.locator(selector).first
            if not await located.count() or not await located.is_visible():
                return None
            described = await located.evaluate(SCRIPT, {"op": "mark", "role": role})
            if index is not None:
                await located.evaluate(
                    "(e, i) => e.setAttribute('data-sparring-launcher', i)", index
                )
        except Error as e:
            if "selector" in str(e).lower() and "parse" in str(e).lower():
                raise TargetError(f"{selector!r} is not a valid Playwright selector: {e}") from None
            return None
        return str(described)

    async def _eval(self, frame: Frame, args: dict[str, Any]) -> Any:
        """Run the widget script in `frame`; `None` when the frame went away meanwhile."""
        from playwright.async_api import Error

        try:
            return await frame.evaluate(SCRIPT, args)
        except Error:
            if frame.is_detached():
                return None
            raise

    async def say(self, text: str, files: tuple[Attachment, ...], *, turn: int) -> Reply:
        """Type and send `text` (uploading `files` first); the reply once it stops changing.

        Raises:
            StepBudgetSpent: the turn's steps do not fit in the budget (nothing was typed).
            TargetError: no reply within `timeout_s` (`NEVER_REPLIED`), or files to send
                and no upload button.
        """
        self.budget.reserve(STEPS_PER_TURN + bool(files), turn=turn)
        if not await self._eval(self.frame, {"op": "visible", "role": "input"}):
            await self.locate()  # the widget closed itself: open it again
            self.budget.reserve(STEPS_PER_TURN + bool(files), turn=turn)
        before = len((await self._snapshot()).items)
        if files:
            await self._upload(files)
        self.budget.spend("typing the message")
        await self.frame.locator("[data-sparring-input]").first.fill(text)
        self.budget.spend("sending the message")
        sent_at = time.monotonic()
        if self.found.send is not None:
            await self.frame.locator("[data-sparring-send]").first.click()
        else:
            await self.frame.locator("[data-sparring-input]").first.press("Enter")
        self.budget.spend("reading the reply")
        return await self._reply(before, text, sent_at)

    async def _upload(self, files: tuple[Attachment, ...]) -> None:
        if self.found.upload is None:
            self.found.upload = await self._find("upload", None)
        if self.found.upload is None:
            names = ", ".join(f.name for f in files)
            raise TargetError(
                f"this turn sends files ({names}) but the chat widget has no upload button "
                "(no <input type=file> near its input)"
            )
        self.budget.spend("uploading files")
        payloads: list[FilePayload] = [
            {"name": f.name, "mimeType": f.mime_type, "buffer": base64.b64decode(f.data)}
            for f in files
        ]
        await self.frame.locator("[data-sparring-upload]").first.set_input_files(payloads)

    async def _snapshot(self) -> _Snapshot:
        raw = cast(dict[str, Any], await self._eval(self.frame, {"op": "read"}) or {})
        items = [
            _Item(str(i["text"]), bool(i["typing"]), str(i["side"]))
            for i in cast(list[dict[str, Any]], raw.get("items", []))
        ]
        return _Snapshot(items, bool(raw.get("busy")))

    async def _reply(self, before: int, sent: str, sent_at: float) -> Reply:
        """Wait for the new agent text to appear and then stay unchanged for `settle_s`
        with no typing indicator showing."""
        spec = self.spec
        parts: list[str] = []
        changed_at = sent_at
        while True:
            snapshot = await self._snapshot()
            now = time.monotonic()
            latest = reply_parts(snapshot.items[before:], sent)
            if latest != parts:
                parts, changed_at = latest, now
            if parts and not snapshot.busy and now - changed_at >= spec.settle_s:
                break
            if now - sent_at >= spec.timeout_s:
                if parts:
                    break  # still changing (or still "typing") when time ran out: keep it
                raise TargetError(
                    f"{NEVER_REPLIED} within {spec.timeout_s:g} s of the message (page "
                    f"{self.page.url}); raise `timeout_s` on the target if it is just slow, "
                    "or set `messages` if replies appear somewhere else"
                )
            await anyio.sleep(POLL_S)
        return Reply(parts=parts, latency_ms=round((changed_at - sent_at) * 1000, 3))
