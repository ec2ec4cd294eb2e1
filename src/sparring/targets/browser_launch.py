"""Starting headless Chromium for browser targets (Playwright's async API).

Debian's `/usr/bin/chromium` is used where it exists (`.ci/run` installs it), else the
Chromium Playwright downloads (`playwright install chromium`); with neither, a clear error
names the install lines. Playwright itself is the `browser` extra.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from sparring.errors import MissingPart, TargetError

if TYPE_CHECKING:
    from playwright.async_api import Browser, Playwright

BROWSER_EXTRA = "pip install 'sparring[browser]'"
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser")
NO_BROWSER = (
    "no Chromium found for the browser target: install Debian's with `apt-get install "
    f"chromium` (or `playwright install chromium`), and Playwright with `{BROWSER_EXTRA}`"
)


def import_playwright() -> Any:
    """`playwright.async_api.async_playwright`.

    Raises:
        MissingPart: Playwright is not installed, naming the extra to install.
    """
    try:
        from playwright.async_api import async_playwright
    except ImportError:
        raise MissingPart(f"browser targets need Playwright: {BROWSER_EXTRA}") from None
    return async_playwright


def chromium_path() -> str | None:
    """The system Chromium to drive, or `None` to use Playwright's own download."""
    for path in CHROMIUM_PATHS:
        if Path(path).is_file():
            return path
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    return found


async def launch(playwright: Playwright) -> Browser:
    """Headless Chromium.

    Raises:
        MissingPart: no Chromium is installed (`NO_BROWSER`).
        TargetError: Chromium would not start.
    """
    from playwright.async_api import Error

    path = chromium_path()
    try:
        return await playwright.chromium.launch(
            executable_path=path, headless=True, args=["--no-sandbox"]
        )
    except Error as e:
        if path is None and "Executable doesn't exist" in str(e):
            raise MissingPart(NO_BROWSER) from None
        raise TargetError(
            f"Chromium ({path or 'Playwright download'}) did not start: {e}"
        ) from None


def context_options(playwright: Playwright, device: str | None) -> dict[str, Any]:
    """The `new_context` options of `device` (a Playwright device name), or of desktop
    Chromium at 1280 x 900 when `None`.

    Raises:
        TargetError: `device` is not one of Playwright's devices (with the closest names).
    """
    if device is None:
        return {"viewport": {"width": 1280, "height": 900}}
    devices = cast(dict[str, dict[str, Any]], playwright.devices)  # pyright: ignore[reportUnknownMemberType]
    if device not in devices:
        close = difflib.get_close_matches(device, list(devices), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise TargetError(
            f"device {device!r} is not one of Playwright's devices{hint} (names as in "
            "Playwright's device list, e.g. 'iPhone 13', 'Pixel 7', 'iPad Mini')"
        )
    options = dict(devices[device])
    options.pop("default_browser_type", None)  # always Chromium here
    return options
