"""Secrets: `{{secrets.NAME}}` values from the environment or a dotenv-style file.

Precedence: the environment wins over the secrets file, so CI can override a local file
without editing it (`export BOT_KEY=...` beats `BOT_KEY=...` in the file).

What gets scrubbed (`Secrets.scrub`): every value in the secrets file, and every value
looked up with `get` (wherever it came from). Environment variables that no test uses are
not scrubbed: they were never sent anywhere, and masking every `1` or `true` in the
environment would garble reports. Each value is also scrubbed in its URL-encoded and
JSON-escaped forms, so a secret in a query string or a request body never leaks either.
Matching is plain substring matching, so a very short secret (say `42`) also masks that
text wherever it appears: give secrets real, long values.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote, quote_plus

from sparring.errors import ConfigError, UserError

MASK = "***"
_SENSITIVE_EXACT = frozenset({
    "authorization", "proxy-authorization", "cookie", "set-cookie", "api-key", "x-api-key",
})
_SENSITIVE_PARTS = ("auth", "token", "secret", "password", "api-key", "apikey", "api_key",
                    "cookie", "session", "signature")
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
        raise ConfigError(f"cannot read the secrets file: {e.strerror or e}; check the path",
                          path=str(path)) from None
    values: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            raise ConfigError("expected `NAME=value` (letters, digits and _ in NAME)",
                              path=str(path), line=number)
        values[match.group(1)] = _unquote(match.group(2))
    return values


# What HTTP clients leave unencoded in each part of a URL (httpx follows the WHATWG sets):
# a secret placed in a URL's userinfo, path or query shows up partially encoded.
_URL_SAFE = (
    "!$&'()*+,;=:@/?",  # query and fragment: sub-delims, ':', '@', '/', '?'
    "!$&'()*+,;=:@/",   # path
    "!$&'()*+,",        # userinfo (username / password)
)


def _forms(value: str) -> set[str]:
    """The value as typed, URL-encoded (fully, and as HTTP clients encode each part of a
    URL) and JSON-escaped: what may appear in logs and error messages."""
    return {value, quote(value, safe=""), quote_plus(value), json.dumps(value)[1:-1],
            *(quote(value, safe=safe) for safe in _URL_SAFE)}


class Secrets:
    """Secret values for `{{secrets.NAME}}`, and the scrubbing that keeps them out of output.

    Prefer `Secrets.load()`; `Secrets({"BOT_KEY": "k"})` is handy in tests. Safe to share by
    every target and conversation of a run.

    Args:
        env: Values that win (normally the process environment).
        file_values: Values from the secrets file; all of them are scrubbed from output.
        file: Where `file_values` came from, named in error messages.
    """

    def __init__(self, env: Mapping[str, str] | None = None, *,
                 file_values: Mapping[str, str] | None = None, file: Path | None = None) -> None:
        self._env = dict(env or {})
        self._file_values = dict(file_values or {})
        self._file = file
        self._scrubbed: set[str] = {v for v in self._file_values.values() if v}
        self._pattern: re.Pattern[str] | None = None
        self._pattern_size = -1

    @classmethod
    def load(cls, *, env: Mapping[str, str] | None = None, file: Path | None = None) -> Secrets:
        """Read secrets from `env` (default: `os.environ`) and, when given, a dotenv `file`.

        Raises:
            ConfigError: `file` cannot be read or has a malformed line.
        """
        file_values = read_secrets_file(file) if file is not None else {}
        return cls(os.environ if env is None else env, file_values=file_values, file=file)

    def get(self, name: str) -> str:
        """The value of secret `name` (environment first, then the file).

        Raises:
            UserError: the secret is set nowhere; the message says how to set it.
        """
        value = self._env.get(name)
        if value is None:
            value = self._file_values.get(name)
        if value is None:
            where = f"add `{name}=...` to {self._file}" if self._file else (
                "put it in a secrets file (lines `NAME=value`)")
            raise UserError(f"secret {name!r} (used as {{{{secrets.{name}}}}}) is not set: "
                            f"run `export {name}=...` before sparring, or {where}")
        if value and value not in self._scrubbed:
            self._scrubbed.add(value)
        return value

    def __contains__(self, name: object) -> bool:
        return name in self._env or name in self._file_values

    def scrub(self, text: str) -> str:
        """Return `text` with every known secret value (see module docstring) as `***`."""
        if not self._scrubbed or not text:
            return text
        pattern = self._compiled()
        return pattern.sub(MASK, text) if pattern is not None else text

    def _compiled(self) -> re.Pattern[str] | None:
        if self._pattern_size != len(self._scrubbed):
            forms = {f for v in self._scrubbed for f in _forms(v) if f}
            ordered = sorted(forms, key=len, reverse=True)  # longest first: no partial leaks
            self._pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
            self._pattern_size = len(self._scrubbed)
        return self._pattern

    def mask_headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Copy of `headers` safe to show: credential headers masked, secrets scrubbed.

        `Authorization`, cookies, `api-key` style and any header whose name mentions a
        token, secret, password, session or auth become `***` (`Bearer ***` keeps its
        scheme word); every other value has known secret values scrubbed.
        """
        out: dict[str, str] = {}
        for name, value in headers.items():
            if _is_sensitive(name):
                scheme, _, rest = value.partition(" ")
                out[name] = f"{scheme} {MASK}" if rest and scheme.isalpha() else MASK
            else:
                out[name] = self.scrub(value)
        return out


def _is_sensitive(header: str) -> bool:
    lower = header.lower()
    return lower in _SENSITIVE_EXACT or any(part in lower for part in _SENSITIVE_PARTS)
