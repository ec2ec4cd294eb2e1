"""Files sent with a user message (`files:` in a test): read into `Attachment`s, and the
shapes targets send them in.

`read_attachment(path)` reads a file whole: its type comes from the extension (Python's
built-in table, plus a few it lacks: `.md`, `.yaml`, `.webp`); a file whose extension says
nothing is `text/plain` when it is UTF-8 text, else `application/octet-stream`. Text files
(`text/*`, JSON, YAML, XML, CSV) also carry their text, which the judge and the simulated
user are shown. Files over `MAX_FILE_BYTES` are refused: every trial keeps its files in
the report and the store.

Target shapes built here: `file_entries` (`[{name, mime_type, data}]`, base64 data) for
http's `{{files}}` and a callable's history, and `data_url` for openai_chat's image and
file parts.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Iterable
from pathlib import Path

from sparring.errors import UserError
from sparring.transcript import Attachment

MAX_FILE_BYTES = 20 * 1024 * 1024
"""Largest file sent with a message, in bytes (20 MiB: what chat APIs take for an image)."""

_EXTRA_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".webp": "image/webp",
    ".jsonl": "application/jsonl",
    ".log": "text/plain",
}
_TEXT_TYPES = frozenset(
    {"application/json", "application/jsonl", "application/yaml", "application/xml"}
)
_MIME = mimetypes.MimeTypes()  # the built-in table only: the same on every machine

FileEntry = dict[str, str]
"""`{"name": str, "mime_type": str, "data": base64 str}`: one file as targets receive it."""


def file_problem(
    path: Path,
    *,
    limit: int | None = None,
    what: str = "a file sent with a message",
    kinds: str = "an image, a PDF, a text file",
) -> str | None:
    """What keeps `path` from being read as `what`, with how to fix it (e.g. "does not
    exist; check the path"); `None` when it can be: a readable regular file (not a
    directory, pipe or device: reading one could block or never end) of at most `limit`
    bytes (`None`: `MAX_FILE_BYTES`). `kinds` says which files are meant (the hint when
    `path` is not a file)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    if not path.exists():
        return "does not exist; check the path (relative to the test file)"
    if not path.is_file():
        return f"is not a file; name a file ({kinds})"
    try:
        size = path.stat().st_size
        with path.open("rb"):
            pass
    except OSError as e:
        return f"cannot be read ({e.strerror or e}); check its permissions"
    if size > limit:
        return f"is {size:,} bytes, over the {limit:,}-byte limit for {what}; use a smaller file"
    return None


def read_attachment(path: str | Path) -> Attachment:
    """Read one file into an `Attachment` (name: the file's name; see module docstring).

    Raises:
        UserError: the file is missing, not a file, unreadable or over `MAX_FILE_BYTES`.
    """
    path = Path(path)
    problem = file_problem(path)
    if problem is None:
        try:
            data = path.read_bytes()
        except OSError as e:
            problem = f"cannot be read ({e.strerror or e}); check its permissions"
        else:
            if len(data) <= MAX_FILE_BYTES:
                return attachment_of(path.name, data)
            problem = file_problem(path) or "grew over the size limit while it was read"
    raise UserError(f"file {str(path)!r} {problem}")


def attachment_of(name: str, data: bytes, mime_type: str | None = None) -> Attachment:
    """An `Attachment` of `data` called `name`; `mime_type` guessed when not given."""
    mime = mime_type or guess_mime_type(name, data)
    text = data.decode("utf-8", errors="replace") if is_text_type(mime) else None
    return Attachment(
        name=name,
        mime_type=mime,
        size=len(data),
        data=base64.b64encode(data).decode("ascii"),
        text=text,
    )


def guess_mime_type(name: str, data: bytes) -> str:
    """The type of a file called `name` holding `data` (see module docstring)."""
    suffix = Path(name).suffix.lower()
    guessed = _EXTRA_TYPES.get(suffix) or _MIME.guess_type(name.lower())[0]
    if guessed is not None:
        return guessed
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "application/octet-stream" if b"\x00" in data else "text/plain"


def is_text_type(mime_type: str) -> bool:
    """Whether files of `mime_type` are text (their text is kept and shown to models)."""
    return (
        mime_type.startswith("text/")
        or mime_type in _TEXT_TYPES
        or mime_type.endswith(("+json", "+xml"))
    )


def attachment_bytes(attachment: Attachment) -> bytes:
    """The file's bytes (its `data`, base64-decoded)."""
    return base64.b64decode(attachment.data)


def data_url(attachment: Attachment) -> str:
    """`data:<mime_type>;base64,<data>`, as chat APIs take inline files."""
    return f"data:{attachment.mime_type};base64,{attachment.data}"


def file_entries(files: Iterable[Attachment]) -> list[FileEntry]:
    """`[{name, mime_type, data}]` (base64 data), the shape of http's `{{files}}`."""
    return [{"name": f.name, "mime_type": f.mime_type, "data": f.data} for f in files]
