r"""Secrets: `{{secrets.NAME}}` values from the environment or a dotenv-style file.

Precedence: the environment wins over the secrets file, so CI can override a local file
without editing it (`export BOT_KEY=...` beats `BOT_KEY=...` in the file).

What gets scrubbed (`Secrets.scrub`): only values looked up with `get` (that is, used by
a `{{secrets.NAME}}` in a target), wherever they came from. Other entries of the secrets
file or the environment are never sent anywhere, so they are left alone: masking
`DEBUG=false` or `SHOP=Northwind` would turn every "false" or "Northwind" in transcripts
into `***`, changing verdicts and breaking JSON. The models' API keys are scrubbed too:
`OPENAI_API_KEY` and `ANTHROPIC_API_KEY` from the environment and the `api_key` setting
(`Secrets.load(api_key=...)`), since an agent that shares the environment can echo them.

Each scrubbed value is masked in every form it takes on the way to a report
(`_secret_pattern`), character by character, so forms mixed within one text are masked
too: each character as typed, percent-encoded (its UTF-8 bytes as `%XX`, hex digits in
either case, `%` itself encoded again any number of times, a space as `+`: whatever an
HTTP client leaves raw in a URL's path, query or userinfo), escaped any number of times
as a JSON or Python string literal shows it (`\"`, `\\`, `\u00e9`, `\xe9`), as an HTML
character reference (`&quot;`, `&#34;`, `&#x22;`), an accented letter composed or
decomposed (NFC or NFD), and in another case or compatibility form (upper-case, full-width
`ｓ`: what NFKC and case folding make the same); every character may be `\u`-, `\U`- or
`\x`-escaped, and a line break (with indentation) or an invisible format character (soft
hyphen, zero-width space) may sit between two of them. The value's UTF-8 bytes are masked as
hex digits (either case) and as base64 (standard or URL-safe) at each of the three byte
alignments, where the whole base64 run holding them is masked (`_encoded_pattern`; only when
the value fills at least 8 base64 characters at each alignment, so a short value cannot mask
an unrelated attachment by chance). A fragment of a value is not masked (a prefix such as
`sk-proj-` is shared by many keys and texts), but for a piece cut short (below).

Trade-off: values shorter than `MIN_SCRUB_CHARS` (4) characters are not scrubbed, so such
a value does show in reports and errors. Matching is by substring, and masking every `1`,
`no` or `eu` would garble reports; a value that short is no credential anyway. Give
secrets real, long values: even a 4-character one masks that text wherever it appears.

Cut after scrubbing, never before (`Scrubber.excerpt`): a secret straddling the cut would
otherwise show all but its last characters.
"""

from __future__ import annotations

import base64
import json
import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from urllib.parse import parse_qsl, quote, quote_plus, unquote

from sparring.errors import ConfigError, UserError

MASK = "***"
MIN_SCRUB_CHARS = 4
MODEL_KEY_VARIABLES = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
"""Environment variables holding the models' API keys: always scrubbed when set."""
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
    "!$&'()*+,;=:@/?[]\\^{}|%",  # httpx's path and query: also leaves these raw
)
_PERCENT = re.compile(r"%[0-9A-F]{2}")


def _forms(value: str) -> set[str]:
    """The texts `value` may show as in logs, error messages, echoed payloads and reports:
    as typed, URL-encoded (fully, and as HTTP clients encode each part of a URL), and
    escaped once and twice (see `_escapes`). `_secret_pattern` matches every form; these
    exact texts serve to find a piece of a form cut short."""
    once = _escapes(value)
    twice = {form for escaped in once for form in _escapes(escaped)}
    return {value, *_url_forms(value), *once, *twice}


def _url_forms(value: str) -> set[str]:
    """`value` percent-encoded as `quote`, `quote_plus` and HTTP clients do, with upper- and
    lower-case hex digits (`%C3%84`, `%c3%84`)."""
    upper = {quote(value, safe=""), quote_plus(value), *(quote(value, safe=s) for s in _URL_SAFE)}
    return upper | {_PERCENT.sub(lambda m: m.group().lower(), form) for form in upper}


_HEX_ESCAPE = re.compile(r"\\u([0-9a-f]{4})")


def _escapes(text: str) -> set[str]:
    r"""`text` inside a JSON string (ASCII-only or not, with upper-case `\u00E9` hex, Go's
    `\u0026`-style HTML escapes, escaped slashes) or a Python string literal (`repr`,
    `ascii`), without the quotes."""
    escaped = {json.dumps(text)[1:-1], json.dumps(text, ensure_ascii=False)[1:-1]}
    escaped |= {_HEX_ESCAPE.sub(lambda m: "\\u" + m.group(1).upper(), e) for e in escaped}
    escaped |= {
        e.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e") for e in escaped
    }
    escaped |= {e.replace("/", "\\/") for e in escaped}
    return escaped | {repr(text)[1:-1], ascii(text)[1:-1]}


_NAMED_ESCAPES = {"\n": "n", "\r": "r", "\t": "t", "\b": "b", "\f": "f"}
_BACKSLASHES = r"\\\\*+"
"""One or more backslashes, all of them (possessive: a long run is not tried again with one
less each time); written to begin with a plain one (see `_char_forms`)."""


# What may break a secret up without changing it: a line break (raw or escaped, with the
# next line's indentation) or an invisible format character (Unicode category Cf: soft
# hyphen, zero-width space and joiners, direction marks, BOM, tag characters), raw or
# escaped as in JSON or HTML.
_BREAK = (
    r"(?:(?:[\n\r\x0b\x0c\x85\u2028\u2029]|\\\\*+[nr])[ \t]*"
    r"|[\xad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u202a-\u202e"
    r"\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    r"\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]"
    r"|\\\\*+u(?i:00ad|061c|180e|200[b-f]|202[a-e]|206[0-46-9a-f]|feff)|&shy;)*"
)


def _secret_pattern(value: str) -> str:
    r"""A regex matching `value` with each character in any of its forms (the module
    docstring): as typed in any case or compatibility form (`S`, `Ｓ`), percent-encoded
    (`%5C`, `%5c`, `%255C`), escaped any number of times as a JSON or Python string literal
    (`"` as `\"`, `\\\"`, ...; any character as `\u0073`, `\\u0073`, `\x73`, ...), as an
    HTML character reference, composed or decomposed; line breaks and invisible characters
    between them (`_BREAK`). JSON inside JSON inside a quoted error stays masked however
    deep it is nested, and a URL an HTTP client encoded part by part is masked whichever
    characters it left raw."""
    first, *rest = unicodedata.normalize("NFC", value)
    return _BREAK.join([_composed_char(first, first=True), *map(_composed_char, rest)])


def _scrub_pattern(values: list[str]) -> str:
    """A regex matching each of `values` (`_secret_pattern`), led by a look at the character
    where a match would begin: most positions of a text are left after that one look."""
    starts = {"\\", "%", "&", "+"}  # an escape, a percent-encoding, an HTML reference, a space
    for value in values:
        first = unicodedata.normalize("NFC", value)[0]
        starts |= {*_variants(first), *_variants(unicodedata.normalize("NFD", first)[0])}
    basic = "".join(re.escape(c) for c in sorted(starts) if c <= "\uffff")
    alternatives = "|".join(map(_secret_pattern, values))
    return rf"(?=[{basic}\U00010000-\U0010ffff])(?:{alternatives})"


_BASE64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
_MIN_BASE64_CORE = 8
"""Base64 characters a value's bytes must fill at an alignment for it to be looked for:
fewer would mask runs of unrelated base64 data (an attached image) by chance."""


def _encoded_pattern(values: list[str]) -> str:
    """A regex matching each value's UTF-8 bytes as hex digits (either case; group `hex`)
    or base64 (standard or URL-safe) at each of the three byte alignments in a longer
    base64 text: the characters only its own bytes determine, when at least
    `_MIN_BASE64_CORE` (`_base64_run` widens a match to the base64 run holding the rest).
    Led by a look at the character a match would begin with, as `_scrub_pattern`."""
    hex_forms = ["".join(_hex(byte, 2) for byte in value.encode("utf-8")) for value in values]
    base64_forms = sorted({form for value in values for form in _base64_forms(value)})
    starts = {f"{value.encode('utf-8')[0]:02x}"[0] for value in values}
    starts = {*starts, *map(str.upper, starts), *(form[0] for form in base64_forms)}
    alternatives = "|".join([f"(?P<hex>{'|'.join(hex_forms)})", *map(re.escape, base64_forms)])
    return f"(?=[{''.join(map(re.escape, sorted(starts)))}])(?:{alternatives})"


def _base64_forms(value: str) -> set[str]:
    """`value`'s bytes in base64 (`_encoded_pattern`), standard and URL-safe."""
    data = value.encode("utf-8")
    forms: set[str] = set()
    for skip in range(3):
        whole = data[skip:][: (len(data) - skip) // 3 * 3]
        core = base64.b64encode(whole).decode("ascii")
        if len(core) >= _MIN_BASE64_CORE:
            forms |= {core, core.replace("+", "-").replace("/", "_")}
    return forms


def _base64_run(text: str, start: int, end: int) -> tuple[int, int]:
    """`(start, end)` widened to the base64 run around `text[start:end]`, padding included."""
    while start and text[start - 1] in _BASE64_CHARS:
        start -= 1
    while end < len(text) and text[end] in _BASE64_CHARS:
        end += 1
    while end < len(text) and text[end] == "=":
        end += 1
    return start, end


def _composed_char(char: str, *, first: bool = False) -> str:
    """`_char_forms(char)`, or the forms of its NFD decomposition (`Ä` as `A` + U+0308)."""
    decomposed = unicodedata.normalize("NFD", char)
    if decomposed == char:
        return _char_forms(char, first=first)
    parts = [_char_forms(decomposed[0], first=first), *map(_char_forms, decomposed[1:])]
    return f"(?:{_char_forms(char, first=first)}|{''.join(parts)})"


# Where characters that fold (NFKC, case-folded) to a letter, digit or sign of a typical
# secret live: Latin, Greek and Cyrillic with their case pairs, phonetic and modifier
# letters, letterlike symbols, enclosed and circled alphanumerics, CJK compatibility,
# presentation forms, full-width forms, mathematical alphanumerics. Scanned once, lazily.
_FOLD_RANGES = (
    (0x0000, 0x05FF),
    (0x1D00, 0x24FF),
    (0x2A00, 0x2CFF),
    (0x3000, 0x33FF),
    (0xA700, 0xA7FF),
    (0xFB00, 0xFFFF),
    (0x10700, 0x107FF),
    (0x1D400, 0x1D7FF),
    (0x1F100, 0x1F1FF),
    (0x1FB00, 0x1FBFF),
)


def _fold(text: str) -> str:
    """NFKC, case-folded, NFKC again: `Ｓ`, `𝐬`, `ⓢ` and `S` all fold to `s`."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


@cache
def _fold_table() -> dict[str, frozenset[str]]:
    """Each folded text, to the characters in `_FOLD_RANGES` that fold to it."""
    table: dict[str, set[str]] = {}
    for first, last in _FOLD_RANGES:
        for char in map(chr, range(first, last + 1)):
            table.setdefault(_fold(char), set()).add(char)
    return {folded: frozenset(chars) for folded, chars in table.items()}


def _variants(char: str) -> list[str]:
    """`char` and the characters that are it in another case or compatibility form
    (upper-case `S`, full-width `ｓ`, mathematical `𝐬`, ...), sorted."""
    same = {char, char.upper(), char.lower(), _fold(char)}
    same = {c for c in same if len(c) == 1} | _fold_table().get(_fold(char), frozenset())
    return sorted(same)


def _any_of(chars: list[str]) -> list[str]:
    """Regexes, one of which matches each of `chars`: a class, and one for its characters
    beyond U+FFFF (a slow list to look through) that looks at such characters only."""
    if len(chars) == 1:
        return [re.escape(chars[0])]
    basic = "".join(re.escape(c) for c in chars if c <= "\uffff")
    astral = "".join(re.escape(c) for c in chars if c > "\uffff")
    return [f"[{basic}]"] + ([rf"[\U00010000-\U0010ffff](?<=[{astral}])"] if astral else [])


_HTML_NAMES = {'"': "quot", "&": "amp", "'": "apos", "<": "lt", ">": "gt"}


def _char_forms(char: str, *, first: bool = False) -> str:
    """A regex matching `char` in each of its forms, but decomposed (`_secret_pattern`).

    Every branch begins with one character or class, so the regex engine leaves a position
    that matches none after one look at each branch: one regex runs over all kept text. As
    the `first` character of a value, its escaped forms begin where a run of backslashes
    does: tried from inside the run too, a long run would take time growing with the square
    of its length, and from its start they match whatever they would match inside."""
    run = r"\\(?<!\\\\)\\*+" if first else _BACKSLASHES  # a backslash not after one
    code = ord(char)
    variants = _variants(char)
    typed = _any_of(variants)
    escaped = [escape for variant in variants for escape in _escapes_of(ord(variant))]
    if char in "\"'/":  # `\"`, `\\\"`: escaped by one backslash or more
        escaped += typed
    options = [*typed, run + "(?:" + "|".join(escaped) + ")"]
    if char == "\\":  # escaped any number of times: a run of backslashes, all of it
        options.append(run)
    options.append("".join(rf"%(?:25)*{_hex(byte, 2)}" for byte in char.encode("utf-8")))
    if char == " ":
        options.append(r"\+")
    html = [rf"#(?:0*{code}|[xX]0*{_hex(code, len(f'{code:x}'))})"]
    if char in _HTML_NAMES:
        html.append(_HTML_NAMES[char])
    options.append(f"&(?:{'|'.join(html)});")
    return "(?:" + "|".join(options) + ")"


def _escapes_of(code: int) -> list[str]:
    r"""Regexes for what follows the backslash(es) of the character `code` escaped as in a
    JSON or Python string literal: `n`, `x73`, `u0073`, `ud83d\\+ude00`, `U00000073`."""
    escapes = [_NAMED_ESCAPES[chr(code)]] if chr(code) in _NAMED_ESCAPES else []
    if code < 0x100:
        escapes.append("x" + _hex(code, 2))
    if code <= 0xFFFF:
        escapes.append("u" + _hex(code, 4))
    else:
        high, low = divmod(code - 0x10000, 0x400)
        escapes.append(f"u{_hex(0xD800 + high, 4)}{_BACKSLASHES}u{_hex(0xDC00 + low, 4)}")
    return [*escapes, "U" + _hex(code, 8)]


def _hex(code: int, width: int) -> str:
    """`code` as `width` hex digits, each in either case (`00e9` -> `00[eE]9`)."""
    digits = f"{code:0{width}x}"
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits)


CUT = "…"
"""How sparring marks a text cut short; a piece of a secret right before it is masked."""


class Scrubber:
    """Masks a growing set of values as `***`, in every form they take (`_secret_pattern`:
    as typed, percent-encoded, escaped any number of times, ...); and a piece of one of
    `_forms` at least `MIN_SCRUB_CHARS` long that ends where a text was cut (`CUT`).

    Cheap per call: one compiled regex (longest value first, so a value that contains
    another is masked whole), rebuilt only when a value is added here or to `parent`.

    Args:
        values: Initial values; each goes through `add`.
        parent: Another scrubber whose values (now and later) are masked too, in the same
            pass, so overlapping values never leave a piece of the longer one showing.
    """

    def __init__(self, values: Iterable[str] = (), *, parent: Scrubber | None = None) -> None:
        self._values: set[str] = set()
        self._parent = parent
        self._pattern = re.compile("(?!)")
        self._encoded = re.compile("(?!)")
        self._pieces: frozenset[str] = frozenset()
        self._longest_piece = 0
        self._built_for = 0
        for value in values:
            self.add(value)

    def add(self, value: str) -> None:
        """Mask `value` from now on; ignored when shorter than `MIN_SCRUB_CHARS`."""
        if len(value) >= MIN_SCRUB_CHARS:
            self._values.add(value)

    def scrub(self, text: str) -> str:
        """`text` with every value (in each form) replaced by `***`."""
        if not text or not self._built():
            return text
        if CUT in text:  # pieces first: a shorter value must not hide a longer one's piece
            parts = text.split(CUT)
            for i, part in enumerate(parts[:-1]):
                parts[i] = self._mask_cut_end(part, shortest=MIN_SCRUB_CHARS)
            text = CUT.join(parts)
        return self._mask_encoded(self._pattern.sub(MASK, text))

    def _mask_encoded(self, text: str) -> str:
        """`text` with each value's hex digits masked, and each base64 run holding a value."""
        spans: list[tuple[int, int]] = []
        for match in self._encoded.finditer(text):
            start, end = match.span()
            if match.group("hex") is None:
                start, end = _base64_run(text, start, end)
            if spans and start <= spans[-1][1]:  # runs widened into each other
                start = spans.pop()[0]
            spans.append((start, end))
        for start, end in reversed(spans):
            text = text[:start] + MASK + text[end:]
        return text

    def excerpt(self, text: str, limit: int, *, truncated: bool = False) -> str:
        """`text` scrubbed whole, then cut to its first `limit` characters.

        Args:
            text: The full text (never cut it first: a value across the cut would leak).
            limit: Characters kept, >= 0.
            truncated: `text` is only the start of something longer (a body read in
                part), so it may end inside a value: a trailing piece of any form, however
                short, is masked as well.
        """
        if truncated and text and self._built():
            text = self._mask_cut_end(text, shortest=1)
        return self.scrub(text)[:limit]

    def _mask_cut_end(self, text: str, *, shortest: int) -> str:
        """`text` with its longest ending that is a form or begins one (>= `shortest`
        characters) masked: the text may have been cut inside a secret."""
        for size in range(min(self._longest_piece, len(text)), shortest - 1, -1):
            if text[len(text) - size :] in self._pieces:
                return text[: len(text) - size] + MASK
        return text

    def _built(self) -> bool:
        """Whether there is anything to mask; (re)builds the regex and the pieces first
        when values were added since the last call."""
        size = self._size()
        if size and self._built_for != size:
            values = sorted(self._all_values(), key=len, reverse=True)
            self._pattern = re.compile(_scrub_pattern(values))
            self._encoded = re.compile(_encoded_pattern(values))
            forms = {f for v in values for f in _forms(v)}
            self._pieces = frozenset(f[:k] for f in forms for k in range(1, len(f) + 1))
            self._longest_piece = max((len(p) for p in self._pieces), default=0)
            self._built_for = size
        return size > 0

    def _size(self) -> int:
        """Grows whenever a value is added here or to a parent (sets only grow)."""
        return len(self._values) + (self._parent._size() if self._parent else 0)

    def _all_values(self) -> set[str]:
        return self._values | (self._parent._all_values() if self._parent else set())


class Secrets:
    """Secret values for `{{secrets.NAME}}`, and the scrubbing that keeps them out of output.

    Prefer `Secrets.load()`; `Secrets({"BOT_KEY": "k"})` is handy in tests. Safe to share by
    every target and conversation of a run. Only values looked up with `get`, and the
    models' API keys, are scrubbed, when at least `MIN_SCRUB_CHARS` long (see the module
    docstring).

    Args:
        env: Values that win (normally the process environment).
        file_values: Values from the secrets file.
        file: Where `file_values` came from, named in error messages.
        scrubber: Keeps the values to mask (default: its own); one shared by several
            `Secrets` masks every value any of them looked up (the pytest plugin's tests,
            each reading the environment anew, and the session's cassettes).
    """

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        file_values: Mapping[str, str] | None = None,
        file: Path | None = None,
        scrubber: Scrubber | None = None,
    ) -> None:
        self._env = dict(env or {})
        self._file_values = dict(file_values or {})
        self._file = file
        self._scrubber = Scrubber() if scrubber is None else scrubber
        for name in MODEL_KEY_VARIABLES:
            self._scrubber.add(self._env.get(name, ""))

    @classmethod
    def load(
        cls,
        *,
        env: Mapping[str, str] | None = None,
        file: str | Path | None = None,
        api_key: str | None = None,
        scrubber: Scrubber | None = None,
    ) -> Secrets:
        """Read secrets from `env` (default: `os.environ`) and, when given, a dotenv `file`.

        Args:
            env: Values that win over the file; their `MODEL_KEY_VARIABLES` are scrubbed.
            file: A dotenv-style secrets file (`secrets_file` setting, --secrets-file);
                `None` or `""` for none.
            api_key: The `api_key` setting (a model's key), scrubbed when given.
            scrubber: As in `Secrets` (default: its own).

        Raises:
            ConfigError: `file` cannot be read or has a malformed line.
        """
        path = Path(file) if file else None
        file_values = read_secrets_file(path) if path is not None else {}
        values = os.environ if env is None else env
        secrets = cls(values, file_values=file_values, file=path, scrubber=scrubber)
        if api_key:
            secrets._scrubber.add(api_key)
        return secrets

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
