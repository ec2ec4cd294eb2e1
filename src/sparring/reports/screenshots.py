"""Screenshots in the HTML report: a link to each PNG a trial kept (relative to the report
when it is written to a file), with a small inline thumbnail when the file may be read into
the page.

A thumbnail is the PNG itself as a `data:` URL, shown small: the report's
Content-Security-Policy allows images from `data:` only, so the page stays one
self-contained file. Only a PNG (by its signature) inside the report's directory or the
artifacts directory (the `artifacts_dir` setting, else `.sparring/artifacts`) is read,
since a run exported from the store names paths that must not pull other files into a page
that may be shared. Each is inlined up to `THUMBNAIL_BYTES`, a report up to
`INLINE_BUDGET` in all; past either, and for a file that is gone, the link alone.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from sparring.errors import UserError
from sparring.results import Artifact

THUMBNAIL_BYTES = 1024 * 1024
"""The largest screenshot inlined, in bytes."""
INLINE_BUDGET = 16 * 1024 * 1024
"""The most screenshot bytes one report inlines."""
_PNG = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class ScreenshotView:
    """One screenshot as shown: `label` ("after turn 2"), `href` to the file, its `path` as
    stored, and `thumbnail`, a `data:image/png` URL, or `None` (link only)."""

    label: str
    href: str
    path: str
    thumbnail: str | None


class Screenshots:
    """Turns a trial's screenshot artifacts into `ScreenshotView`s for one report.

    Args:
        report_dir: Where the report is written (links are relative to it); `None`: links
            are absolute `file:` URLs.
        readable: Directories whose PNGs may be inlined (none: links only).
    """

    def __init__(self, *, report_dir: Path | None = None, readable: Sequence[Path] = ()) -> None:
        self._report_dir = report_dir.resolve() if report_dir is not None else None
        self._readable = [d.resolve() for d in readable]
        self._budget = INLINE_BUDGET

    @classmethod
    def for_report(cls, path: Path) -> Screenshots:
        """For a report written to `path`: links relative to its directory, thumbnails of
        PNGs there or in the artifacts directory."""
        readable = [path.parent]
        try:
            from sparring.config.settings import load_settings
            from sparring.targets.browser import artifacts_dir

            readable.append(artifacts_dir(load_settings({}).artifacts_dir))
        except (UserError, OSError):
            pass  # settings that do not load: thumbnails from the report's directory only
        return cls(report_dir=path.parent, readable=readable)

    def views(self, artifacts: Sequence[Artifact]) -> list[ScreenshotView]:
        """The screenshots among `artifacts`, in order."""
        return [self._view(a) for a in artifacts if a.kind == "screenshot"]

    def _view(self, artifact: Artifact) -> ScreenshotView:
        file = Path(artifact.path).absolute()
        label = f"after turn {artifact.turn}" if artifact.turn else "as the conversation ended"
        return ScreenshotView(
            label=label, href=self._href(file), path=artifact.path, thumbnail=self._inline(file)
        )

    def _href(self, file: Path) -> str:
        if self._report_dir is not None:
            try:
                return quote(Path(os.path.relpath(file, self._report_dir)).as_posix())
            except ValueError:  # another drive (Windows): no relative path
                pass
        return file.as_uri()

    def _inline(self, file: Path) -> str | None:
        """The PNG at `file` as a `data:` URL, when it may and can be inlined."""
        try:
            real = file.resolve()
            if not any(real.is_relative_to(d) for d in self._readable):
                return None
            size = real.stat().st_size
            if size > min(THUMBNAIL_BYTES, self._budget):
                return None
            png = real.read_bytes()
        except OSError:
            return None
        if not png.startswith(_PNG):
            return None
        self._budget -= len(png)
        return "data:image/png;base64," + base64.b64encode(png).decode("ascii")
