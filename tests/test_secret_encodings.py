"""A secret the agent echoes in another encoding is masked too: base64 (standard and URL-safe,
at each of the three byte alignments inside a longer base64 text), hex in either case, every
character `\\u`- or `\\x`-escaped, broken by a line break or an invisible character,
full-width, upper-case. Checked on the scrubber, and through `sparring run` in the JSON
report and the results store; the text around a secret stays as it was.
"""

from __future__ import annotations

import base64
import json
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sparring.secrets import Scrubber, Secrets
from tests.support.echo_server import Answer, EchoRequest, EchoServer

SECRET = "sk-LIVE-7Hq9<x>&Zp/+Q=end"
DATA = SECRET.encode()


def _base64_inside(prefix: bytes, *, url_safe: bool = False) -> str:
    """The secret's bytes after `prefix` (its length sets the alignment) and before more."""
    encode = base64.urlsafe_b64encode if url_safe else base64.b64encode
    return encode(prefix + DATA + b"\xfb\xff more data").decode("ascii")


ENCODINGS: dict[str, Callable[[str], str]] = {
    "base64": lambda s: base64.b64encode(s.encode()).decode(),
    "base64_url": lambda s: base64.urlsafe_b64encode(s.encode()).decode(),
    **{
        f"base64_offset_{n}": (lambda s, n=n: _base64_inside(b"\xfb\xff\xfe"[:n] + b"pre"))
        for n in range(3)
    },
    **{
        f"base64_url_offset_{n}": (
            lambda s, n=n: _base64_inside(b"?>"[:n] + b"\xfb", url_safe=True)
        )
        for n in range(3)
    },
    "hex": lambda s: s.encode().hex(),
    "hex_upper": lambda s: s.encode().hex().upper(),
    "u_escaped": lambda s: "".join(f"\\u{ord(c):04x}" for c in s),
    "u_escaped_upper": lambda s: "".join(f"\\u{ord(c):04X}" for c in s),
    "x_escaped": lambda s: "".join(f"\\x{ord(c):02x}" for c in s),
    "line_break": lambda s: s[:10] + "\n" + s[10:],
    "line_break_indented": lambda s: s[:12] + "\r\n    " + s[12:],
    "soft_hyphen": lambda s: s[:7] + "\u00ad" + s[7:],
    "zero_width": lambda s: "\u200b".join(s),
    "full_width": lambda s: "".join(chr(ord(c) + 0xFEE0) for c in s),
    "upper_case": str.upper,
    "mixed": lambda s: (
        s[:4].upper()
        + "\u00ad"
        + "".join(chr(ord(c) + 0xFEE0) for c in s[4:9])
        + "".join(f"\\u{ord(c):04x}" for c in s[9:14])
        + s[14:]
    ),
}
"""How the agent encodes the secret it got, by the user message it was sent."""


def _scrubbed(text: str) -> str:
    secrets = Secrets({"KEY": SECRET})
    secrets.get("KEY")
    return secrets.scrub(text)


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_each_encoding_is_masked_and_the_text_around_it_kept(name: str) -> None:
    encoded = ENCODINGS[name](SECRET)
    assert _scrubbed(f'said "{encoded}" and more') == 'said "***" and more'


@pytest.mark.parametrize("name", list(ENCODINGS))
def test_each_encoding_is_masked_inside_json(name: str) -> None:
    """As the agent puts it in a JSON payload (escaped once more) and beside other text."""
    encoded = json.dumps({"note": f"token: {ENCODINGS[name](SECRET)}", "n": 1})
    assert json.loads(_scrubbed(encoded)) == {"note": "token: ***", "n": 1}


def test_a_secret_after_backslashes_is_masked_from_where_they_begin() -> None:
    """Escaped forms of a secret's first character are matched from the start of a run of
    backslashes only (so a long run takes time in proportion to its length)."""
    escaped = ENCODINGS["u_escaped"](SECRET)
    assert _scrubbed("x" + "\\" * 7 + escaped + " y") == "x*** y"
    assert _scrubbed("line\\n" + SECRET + "\\nnext") == "line\\n***\\nnext"
    assert _scrubbed("\\" * 5000 + "end") == "\\" * 5000 + "end"


def test_a_base64_run_holding_the_secret_is_masked_whole_and_only_it() -> None:
    run = _base64_inside(b"\x01")
    text = f"data:text/plain;base64,{run}\nnext line"
    assert _scrubbed(text) == "data:text/plain;base64,***\nnext line"


def test_other_base64_hex_and_look_alikes_are_left_alone() -> None:
    near, other = SECRET[:-1] + "X", "X" + SECRET[1:]
    text = (
        f"{base64.b64encode(bytes(range(256)) * 8).decode()} {bytes(range(256)).hex()} "
        f"{near} {near.upper()} {other.encode().hex()} sk-live-7hq9 "
        f"{base64.b64encode(other.encode()).decode()}"
    )
    assert _scrubbed(text) == text


def test_a_short_secret_is_not_looked_for_in_base64() -> None:
    """A value of 4 bytes fills fewer than 8 base64 characters at some alignment: looking for
    so few would mask unrelated base64 runs (an attached image) by chance."""
    data = base64.b64encode(b"xx" + b"abcd" + b"y" * 40).decode()
    assert Scrubber(["abcd"]).scrub(data) == data
    assert Scrubber(["abcd"]).scrub("61626364 ABCD") == "*** ***"


# --- through `sparring run`: the JSON report and the store ---------------------------------


def echo(request: EchoRequest) -> Answer:
    """The agent: the secret of its X-Key header, encoded as the user message says."""
    body: dict[str, Any] = request.body or {}
    message = str(body.get("message"))
    return Answer({"reply": f"here: {ENCODINGS[message](request.headers['x-key'])} (done)"})


@pytest.fixture(scope="module")
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo) as server:
        yield server


def suite_file(url: str) -> str:
    scenarios = "".join(
        f"  - id: {name}\n    turns:\n      - user: {name}\n"
        "        checks:\n          - contains: never said\n"
        for name in ENCODINGS
    )
    return (
        f'target:\n  url: "{url}/chat"\n  headers: {{X-Key: "{{{{secrets.KEY}}}}"}}\n'
        "  body_template: {message: '{{input}}'}\n  response_path: reply\n"
        f"scenarios:\n{scenarios}"
    )


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, and in the JSON texts inside it, parsed."""
    if isinstance(value, str):
        yield value
        try:
            inner = json.loads(value)
        except ValueError:
            return
        if not isinstance(inner, str):
            yield from strings(inner)
    elif isinstance(value, dict):
        for key, item in value.items():  # pyright: ignore[reportUnknownVariableType]
            yield str(key)  # pyright: ignore[reportUnknownArgumentType]
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            yield from strings(item)


def store_strings(path: Path) -> Iterator[str]:
    with sqlite3.connect(path) as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for table in tables:
            for row in db.execute(f'SELECT * FROM "{table}"'):
                for cell in row:
                    if isinstance(cell, bytes):
                        cell = cell.decode("utf-8", "replace")
                    yield from strings(cell) if isinstance(cell, str) else ()


def leaks(texts: Iterator[str]) -> list[str]:
    """The encodings (their names) whose encoded secret shows in one of `texts`."""
    forms = {name: encode(SECRET) for name, encode in ENCODINGS.items()}
    found: set[str] = set()
    for text in texts:
        found |= {name for name, form in forms.items() if form in text or SECRET in text}
    return sorted(found)


def test_sparring_run_keeps_every_encoding_out_of_the_json_report_and_the_store(
    tmp_path: Path, agent: EchoServer
) -> None:
    (tmp_path / "encodings.yaml").write_text(suite_file(agent.url("")), encoding="utf-8")
    (tmp_path / "secrets.env").write_text(f"KEY='{SECRET}'\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "encodings.yaml", "--secrets-file"]
        + ["secrets.env", "--store", "store.db", "-o", "r.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # every scenario fails its check
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    replies = {
        s["scenario_id"]: s["trials"][0]["transcript"]["messages"][1]["content"]
        for s in report["scenarios"]
    }
    assert replies == dict.fromkeys(ENCODINGS, "here: *** (done)")  # echoed, masked, kept
    assert leaks(strings(report)) == []
    assert leaks(store_strings(tmp_path / "store.db")) == []
    assert leaks(iter([done.stdout + done.stderr])) == []
