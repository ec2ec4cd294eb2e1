"""Secrets: `{{secrets.NAME}}` values from the environment or a dotenv-style file.

Precedence: the environment wins over the secrets file, so CI can override a local file
without editing it (`export BOT_KEY=...` beats `BOT_KEY=...` in the file).

What gets scrubbed (`Secrets.scrub`): only values looked up with `get` (that is, used by
a `{{secrets.NAME}}` in a target), wherever they came from. Other entries of the secrets
file or the environment are never sent anywhere, so they are left alone: masking
`DEBUG=false` or `SHOP=Northwind` would turn every "false" or "Northwind" in transcripts
into `***`, changing verdicts and breaking JSON. Each scrubbed value is masked as typed,
URL-encoded (fully, and as HTTP clients encode each part of a URL) and JSON-escaped, so a
secret in a query string or a request body never leaks either.

Trade-off: values shorter than `MIN_SCRUB_CHARS` (4) characters are not scrubbed, so such
a value does show in reports and errors. Matching is by substring, and masking every `1`,
`no` or `eu` would garble reports; a value that short is no credential anyway. Give
secrets real, long values: even a 4-character one masks that text wherever it appears.

Cut after scrubbing, never before (`Scrubber.excerpt`): a secret straddling the cut would
otherwise show all but its last characters.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, unquote

from sparring.errors import ConfigError, UserError

MASK = "***"
MIN_SCRUB_CHARS = 4
"""Values shorter than this are never scrubbed (see the module docstring)."""
_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    if " #" in value:  # trailing comment on an unquoted value
        return value.split(" #", 1)[0].rstrip()
    return value


def read_secrets_file(path: Path) -> dict[str, str]:
    """Parse a dotenv-style file: `NAME=value` lines, `#` comments, blank lines.

    An optional `export ` prefix is allowed; values may be wrapped in single or double
    quotes (kept verbatim inside); an unquoted value may end with ` # comment`.

    Raises:
        ConfigError: the file cannot be read, or a line is not `NAME=value` (with line number).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(
            f"cannot read the secrets file: {e.strerror or e}; check the path", path=str(path)
        ) from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ConfigError(
                "expected `NAME=value` (letters, digits and _ in NAME)", path=str(path), line=number
            )
        values[match.group(1)] = _unquote(match.group(2))
    return values


# What HTTP clients leave unencoded in each part of a URL (httpx follows the WHATWG sets):
# a secret placed in a URL's userinfo, path or query shows up partially encoded.
_URL_SAFE = (
    "!$&'()*+,;=:@/?",  # query and fragment: sub-delims, ':', '@', '/', '?'
    "!$&'()*+,;=:@/",  # path
    "!$&'()*+,",  # userinfo (username / password)
)


def _forms(value: str) -> set[str]:
    """The value as typed, URL-encoded (fully, and as HTTP clients encode each part of a
    URL) and JSON-escaped (ASCII-only or not, also with Go's `\u0026`-style HTML escapes and
    escaped slashes): what may appear in logs, error messages and echoed payloads."""
    escaped = {json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]}
    escaped |= {
        e.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e") for e in escaped
    }
    escaped |= {e.replace("/", "\\/") for e in escaped}
    return {
        value,
        quote(value, safe=""),
        quote_plus(value),
        *escaped,
        *(quote(value, safe=safe) for safe in _URL_SAFE),
    }


class Scrubber:
    """Masks a growing set of values, in every form of `_forms`, as `***`.

    Cheap per call: one compiled regex (longest form first, so a value that contains
    another is masked whole), rebuilt only when a value is added here or to `parent`.

    Args:
        values: Initial values; each goes through `add`.
        parent: Another scrubber whose values (now and later) are masked too, in the same
            pass, so overlapping values never leave a piece of the longer one showing.
    """

    def __init__(self, values: Iterable[str] = (), *, parent: Scrubber | None = None) -> None:
        self._values: set[str] = set()
        self._parent = parent
        self._pattern: re.Pattern[str] | None = None
        self._tail: re.Pattern[str] | None = None
        self._built_for = self._tail_built_for = -1
        for value in values:
            self.add(value)

    def add(self, value: str) -> None:
        """Mask `value` from now on; ignored when shorter than `MIN_SCRUB_CHARS`."""
        if len(value) >= MIN_SCRUB_CHARS:
            self._values.add(value)

    def scrub(self, text: str) -> str:
        """`text` with every value (in each form) replaced by `***`."""
        size = self._size()
        if not size or not text:
            return text
        pattern = self._pattern
        if pattern is None or self._built_for != size:
            pattern = self._pattern = _alternation(self._forms())
            self._built_for = size
        return pattern.sub(MASK, text)

    def excerpt(self, text: str, limit: int, *, truncated: bool = False) -> str:
        """`text` scrubbed whole, then cut to its first `limit` characters.

        Args:
            text: The full text (never cut it first: a value across the cut would leak).
            limit: Characters kept, >= 0.
            truncated: `text` is only the start of something longer (a body read in
                part), so it may end inside a value: a trailing piece of any form is
                masked as well.
        """
        size = self._size()
        if not truncated or not size or not text:
            return self.scrub(text)[:limit]
        pattern = self._tail
        if pattern is None or self._tail_built_for != size:
            forms = self._forms()
            pieces = {(re.escape(f[:k]) + r"\Z", k) for f in forms for k in range(1, len(f))}
            whole = {(re.escape(f), len(f)) for f in forms}
            ordered = sorted(whole | pieces, key=lambda item: item[1], reverse=True)
            pattern = self._tail = re.compile("|".join(regex for regex, _ in ordered))
            self._tail_built_for = size
        return pattern.sub(MASK, text)[:limit]

    def _size(self) -> int:
        """Grows whenever a value is added here or to a parent (sets only grow)."""
        return len(self._values) + (self._parent._size() if self._parent else 0)

    def _all_values(self) -> set[str]:
        return self._values | (self._parent._all_values() if self._parent else set())

    def _forms(self) -> set[str]:
        return {f for v in self._all_values() for f in _forms(v) if f}


def _alternation(forms: set[str]) -> re.Pattern[str]:
    return re.compile("|".join(map(re.escape, sorted(forms, key=len, reverse=True))))


class Secrets:
    """Secret values for `{{secrets.NAME}}`, and the scrubbing that keeps them out of output.

    Prefer `Secrets.load()`; `Secrets({"BOT_KEY": "k"})` is handy in tests. Safe to share by
    every target and conversation of a run. Only values looked up with `get` and at least
    `MIN_SCRUB_CHARS` long are scrubbed (see the module docstring).

    Args:
        env: Values that win (normally the process environment).
        file_values: Values from the secrets file.
        file: Where `file_values` came from, named in error messages.
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        file_values: Mapping[str, str] | None = None,
        file: Path | None = None,
    ) -> None:
        self._env = dict(env or {})
        self._file_values = dict(file_values or {})
        self._file = file
        self._scrubber = Scrubber()

    @classmethod
    def load(cls, *, env: Mapping[str, str] | None = None, file: Path | None = None) -> Secrets:
        """Read secrets from `env` (default: `os.environ`) and, when given, a dotenv `file`.

        Raises:
            ConfigError: `file` cannot be read or has a malformed line.
        """
        file_values = read_secrets_file(file) if file is not None else {}
        return cls(os.environ if env is None else env, file_values=file_values, file=file)

    def get(self, name: str) -> str:
        """The value of secret `name` (environment first, then the file); from now on it is
        scrubbed, unless shorter than `MIN_SCRUB_CHARS`.

        Raises:
            UserError: the secret is set nowhere; the message says how to set it.
        """
        value = self._env.get(name)
        if value is None:
            value = self._file_values.get(name)
        if value is None:
            where = (
                f"add `{name}=...` to {self._file}"
                if self._file
                else ("put `NAME=value` lines in a file and pass it with --secrets-file")
            )
            raise UserError(
                f"secret {name!r} (used as {{{{secrets.{name}}}}}) is not set: "
                f"run `export {name}=...` before sparring, or {where}"
            )
        self._scrubber.add(value)
        return value

    def scrubber_with(self, values: Iterable[str]) -> Scrubber:
        """A scrubber for `values` plus every secret value (now and later looked up), in one
        pass. For credentials written literally (an `api_key`, a password in a URL) that
        must stay out of error messages, but that would garble transcripts if `scrub`
        masked them (`api_key: ollama`)."""
        return Scrubber(values, parent=self._scrubber)

    def __contains__(self, name: object) -> bool:
        return name in self._env or name in self._file_values

    def scrub(self, text: str) -> str:
        """Return `text` with every scrubbed value (see the module docstring) as `***`."""
        return self._scrubber.scrub(text)

    def excerpt(self, text: str, limit: int, *, truncated: bool = False) -> str:
        """`text` scrubbed whole, then cut to `limit` characters (see `Scrubber.excerpt`)."""
        return self._scrubber.excerpt(text, limit, truncated=truncated)


def _url_parts(url: str) -> tuple[str, str, str, str, str, str, str]:
    """`(scheme + "://", userinfo + "@", host and path, "?", query, "#", fragment)`, each
    part `""` when absent. The userinfo is everything before the last `@` ahead of the
    query, so a raw `/` in a password stays in it."""
    head, hash_mark, fragment = url.partition("#")
    head, question, query = head.partition("?")
    scheme, sep, rest = head.partition("://")
    if not sep:
        scheme, rest = "", head
    userinfo, at, rest = rest.rpartition("@")
    return scheme + sep, userinfo + at, rest, question, query, hash_mark, fragment


def mask_url(url: str) -> str:
    """`url` safe to show: userinfo, query and fragment replaced by `***`.

    `http://admin:pw@127.0.0.1:8999/v1?api-key=K` -> `http://***@127.0.0.1:8999/v1?***`.
    """
    scheme, userinfo, rest, question, query, hash_mark, fragment = _url_parts(url)
    return (
        scheme
        + (f"{MASK}@" if userinfo else "")
        + rest
        + question
        + (MASK if query else "")
        + hash_mark
        + (MASK if fragment else "")
    )


def url_credentials(url: str) -> list[str]:
    """Values in `url` that may be credentials, percent-decoded: user name, password,
    every query value and the fragment (for a `Scrubber`, which also masks their encoded
    forms)."""
    _, userinfo, _, _, query, _, fragment = _url_parts(url)
    user, _, password = userinfo[:-1].partition(":")
    found = [unquote(v) for v in (user, password) if v]
    found += [v for _, v in parse_qsl(query)]
    return found + ([unquote(fragment)] if fragment else [])
