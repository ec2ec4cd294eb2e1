"""Values the YAML reader cannot turn into data are errors at their file:line: an integer
longer than Python converts, a `!!int` tag on text, and an alias used inside its own
anchor's data (which ruamel would silently make `None`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.loaders._parse import parse_documents

TARGET = "target: {url: 'http://127.0.0.1:9/chat'}\n"


def test_an_integer_too_long_to_convert_is_an_error_at_its_line(tmp_path: Path) -> None:
    digits = "7" * (sys.get_int_max_str_digits() + 700)
    test = tmp_path / "t.yaml"
    test.write_text(TARGET + f"scenarios:\n  - id: r\n    prompt: hi\n    max_turns: {digits}\n")
    with pytest.raises(ConfigError) as caught:
        load_paths([test])
    message = str(caught.value)
    assert f"{test}:5:16: invalid YAML: Exceeds the limit" in message
    assert "quote long numbers" in message and "sys.set_int_max_str_digits" not in message


def test_a_tagged_value_that_is_no_integer_is_an_error_at_its_line() -> None:
    with pytest.raises(ConfigError, match=r"t.yaml:2:4: invalid YAML: invalid literal for int"):
        parse_documents("x: 1\ny: !!int abc\n", path="t.yaml")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (TARGET + "scenarios: &s\n  - id: a\n    prompt: hi\n    description: *s\n", "2:12"),
        ("a: &m\n  b: *m\n", "1:4"),
    ],
)
def test_an_alias_inside_its_own_anchor_is_an_error_at_the_anchor(text: str, where: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_documents(text, path="t.yaml")
    message = str(caught.value)
    assert message.startswith(f"t.yaml:{where}: invalid YAML: an alias (`*name`) is used inside")
    assert "write the data out" in message


def test_aliases_of_other_anchors_still_load() -> None:
    [doc] = parse_documents("a: &x [1]\nb: *x\nc: {d: *x}\n", path="t.yaml")
    assert doc.data == {"a": [1], "b": [1], "c": {"d": [1]}}
