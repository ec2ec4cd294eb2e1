"""Website chat targets (`type: browser`): a chat widget on a web page, driven in headless
Chromium with Playwright (extra `browser`).

One browser per target, one browser context (cookies, storage) per conversation. The first
message opens the page and finds the widget (`sparring.targets.browser_page`); each message
is typed and sent, and the reply read as the new text in the conversation once it stops
changing. Screenshots and the page URL are kept with the trial (`evidence`).
"""

from __future__ import annotations

import contextlib
import secrets
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urljoin

import anyio

from sparring.errors import StepBudgetSpent, TargetError, UserError
from sparring.results import Artifact
from sparring.target_specs import BrowserTargetSpec
from sparring.targets.browser_launch import context_options, import_playwright, launch
from sparring.targets.browser_page import StepBudget, Widget, step_budget
from sparring.transcript import Message, Transcript

if TYPE_CHECKING:
    from playwright.async_api import Browser, BrowserContext, Page, Playwright

DEFAULT_MAX_TURNS = 6
"""The turn count the step budget assumes until the runner says (`plan`)."""


def chat_page_url(chat_url: str, site_url: str | None) -> str:
    """The page a browser target opens: `chat_url` when it is a full URL, else joined to
    `site_url` (a path such as `/support`; empty: `site_url` itself).

    Raises:
        UserError: `chat_url` is not a full URL and no `site_url` is set.
    """
    if chat_url.startswith(("http://", "https://")):
        return chat_url
    if site_url is None:
        shown = f"chat_url {chat_url!r} is a path" if chat_url else "it has no chat_url"
        raise UserError(
            f"the browser target cannot tell which page to open: {shown} and no site_url is "
            'set. Set site_url = "https://shop.example.com" in [tool.sparring] (or '
            "SPARRING_SITE_URL), or give chat_url as a full URL"
        )
    return urljoin(site_url.rstrip("/") + "/", chat_url.lstrip("/")) if chat_url else site_url


def artifacts_dir(setting: str | None) -> Path:
    """The `artifacts_dir` setting, else `.sparring/artifacts` in the project root."""
    from sparring.store.location import STORE_DIR, project_root

    return Path(setting) if setting else project_root(Path.cwd()) / STORE_DIR / "artifacts"


class BrowserTarget:
    """A chat widget on the page `spec` names, in headless Chromium.

    Args:
        spec: The target's keys (`chat_url`, `chat_hint`, selectors, `device`, ...).
        site_url: The `site_url` setting, joined with a `chat_url` path.
        artifacts_dir: Screenshots go to `artifacts_dir/screenshots/<conversation>/`.
        device: The `browser_device` setting: the device to emulate when `spec` names none.

    Raises:
        UserError: Playwright is missing (naming the extra), or `chat_url` is a path with
            no `site_url`.
    """

    def __init__(
        self,
        spec: BrowserTargetSpec,
        *,
        site_url: str | None,
        artifacts_dir: Path,
        device: str | None = None,
    ) -> None:
        self._start = import_playwright()
        self.spec, self.url, self.artifacts_dir = (
            spec,
            chat_page_url(spec.chat_url, site_url),
            artifacts_dir,
        )
        self.name = f"browser {self.url}"
        self.device = spec.device or device
        self._playwright: Playwright | None = None
        self._browser: Browser | None = None
        self._lock = anyio.Lock()

    @classmethod
    def from_settings(cls, spec: BrowserTargetSpec) -> BrowserTarget:
        """The target with `site_url` and `artifacts_dir` from the settings (environment,
        pyproject.toml, sparring.toml)."""
        from sparring.config import load_settings

        settings = load_settings({})
        return cls(
            spec,
            site_url=settings.site_url,
            artifacts_dir=artifacts_dir(settings.artifacts_dir),
            device=settings.browser_device,
        )

    async def _browser_started(self) -> tuple[Playwright, Browser]:
        async with self._lock:
            playwright = self._playwright
            if playwright is None:
                playwright = self._playwright = await self._start().start()
            if self._browser is None:
                self._browser = await launch(playwright)
            return playwright, self._browser

    async def open_session(self) -> BrowserSession:
        """A new browser context (its own cookies and storage) for one conversation.

        Raises:
            TargetError: no Chromium, or `device` is not a Playwright device.
        """
        playwright, browser = await self._browser_started()
        context = await browser.new_context(**context_options(playwright, self.device))
        return BrowserSession(self, context, await context.new_page())

    async def aclose(self) -> None:
        """Close the browser."""
        if self._browser is not None:
            await self._browser.close()
            self._browser = None
        if self._playwright is not None:
            await self._playwright.stop()
            self._playwright = None


class BrowserSession:
    """One conversation in its own browser context: the page is opened on the first `send`.

    `widget.found` (after the first `send`) says which elements were used; `evidence` gives the
    screenshots the `screenshots` policy keeps, and the page URL.
    """

    def __init__(self, target: BrowserTarget, context: BrowserContext, page: Page) -> None:
        self._target, self._context, self.page = target, context, page
        self.budget = StepBudget(step_budget(DEFAULT_MAX_TURNS))
        self.widget = Widget(page, target.spec, self.budget)
        self._opened = False
        self.page_url: str | None = None
        self._shots: list[Artifact] = []
        self._last: tuple[bytes, int | None, str] | None = None
        self._dir = (
            target.artifacts_dir
            / "screenshots"
            / (f"{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}")
        )

    def plan(self, *, max_turns: int) -> None:
        """Budget the steps of a conversation of `max_turns` user messages."""
        self.budget.limit = step_budget(max_turns)

    async def send(self, transcript: Transcript, /) -> Message:
        """Type the last (user) message of `transcript` into the widget; the reply.

        Raises:
            StepBudgetSpent: the next turn does not fit in the step budget.
            TargetError: the page did not load, no widget was found, the assistant never
                replied, or the browser failed.
        """
        from playwright.async_api import Error

        message = transcript.messages[-1]
        turn = sum(m.role == "user" for m in transcript.messages)
        try:
            if not self._opened:
                await self._open_page()
            reply = await self.widget.say(message.content, message.files, turn=turn)
        except StepBudgetSpent:
            raise
        except (TargetError, Error) as e:
            self.page_url = None if self.page.is_closed() else self.page.url
            await self._screenshot(turn, failed=True)
            if isinstance(e, TargetError):
                raise
            first_line = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise TargetError(f"the browser failed on {self.page.url}: {first_line}") from None
        self.page_url = self.page.url
        await self._screenshot(turn, failed=False)
        return Message(
            role="agent",
            content="\n".join(reply.parts),
            parts=tuple(reply.parts) if len(reply.parts) > 1 else (),
            latency_ms=reply.latency_ms,
            raw={"page_url": self.page.url},
        )

    async def _open_page(self) -> None:
        self.widget.budget.spend("opening the page")
        response = await self.page.goto(self._target.url, wait_until="load")
        if response is not None and response.status >= 400:
            raise TargetError(
                f"{self._target.url} answered HTTP {response.status}; check chat_url (and "
                "the site_url setting it is joined to)",
                status=response.status,
            )
        self._opened = True
        await self.widget.locate()

    async def _screenshot(self, turn: int, *, failed: bool) -> None:
        """Keep a screenshot as the `screenshots` policy says: written now (`every_turn`),
        or held until `evidence` knows whether the trial failed (`failures`)."""
        policy = self._target.spec.screenshots
        if policy == "none" or self.page.is_closed():
            return
        from playwright.async_api import Error

        try:
            png = await self.page.screenshot()
        except Error:
            return  # a crashed page has nothing to show; the error says what happened
        url = self.page_url = self.page.url
        if policy == "every_turn" or failed and policy == "failures":
            self._last = None
            self._shots.append(self._write(png, turn, url))
        else:
            self._last = (png, turn, url)

    def _write(self, png: bytes, turn: int | None, url: str) -> Artifact:
        self._dir.mkdir(parents=True, exist_ok=True)
        path = self._dir / f"{len(self._shots) + 1:02d}-turn-{turn or 0}.png"
        path.write_bytes(png)
        return Artifact(kind="screenshot", path=str(path), turn=turn, url=url)

    def evidence(self, *, failed: bool) -> tuple[list[Artifact], str | None]:
        """The screenshots kept (with `failures`, the last one when `failed`) and the page
        URL at the end of the conversation."""
        if failed and self._last is not None:
            self._shots.append(self._write(*self._last))
            self._last = None
        return list(self._shots), self.page_url

    async def preload(self, history: Transcript, /) -> Transcript:
        """Replay `history`'s user messages live, in order (a widget cannot be given a
        conversation): the replayed conversation, with the agent's real replies."""
        replayed = Transcript()
        for message in history.messages:
            if message.role == "user":
                replayed = replayed.with_message(message)
                replayed = replayed.with_message(await self.send(replayed))
        return replayed

    async def close(self) -> None:
        """Close the conversation's browser context (a browser that already went away is
        closed)."""
        from playwright.async_api import Error

        with contextlib.suppress(Error):
            await self._context.close()
