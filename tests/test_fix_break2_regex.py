"""pytest-agent-eval `reply_matches_any` patterns that are valid alone stay valid together:
each keeps its own leading inline flags (a verbose `(?x)` with a trailing comment included),
and an error quotes the user's pattern, never the combined one."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.judging.checks import run_check
from sparring.loaders import load_paths
from sparring.scenario import RegexCheck
from sparring.transcript import Message, Transcript
from tests.test_dialects_schema import load_one, project


def _matches_any(tmp_path: Path, patterns: str) -> RegexCheck:
    text = f"id: t\nturns:\n  - user: Hi\n    expect:\n      reply_matches_any: {patterns}\n"
    scenario, _ = load_one(project(tmp_path, t=text) / "t.yaml")
    [check] = scenario.turns[0].checks
    assert isinstance(check, RegexCheck)
    return check


def _status(check: RegexCheck, reply: str) -> str:
    transcript = Transcript(
        messages=(Message(role="user", content="hi"), Message(role="agent", content=reply))
    )
    return run_check(check, transcript, check_id="c1").status


def test_a_verbose_pattern_with_a_comment_loads_beside_another(tmp_path: Path) -> None:
    check = _matches_any(tmp_path, "['zzz', '(?x)nomatch#']")
    assert [_status(check, r) for r in ("a zzz b", "nomatch", "no match")] == [
        "met",
        "met",
        "not_met",
    ]


def test_each_pattern_keeps_its_flags_to_itself(tmp_path: Path) -> None:
    check = _matches_any(tmp_path, r"['a b', '(?x) c \d  # a c and a digit', '(?s)x.y']")
    assert _status(check, "say a b") == "met"  # the first is not verbose
    assert _status(check, "ab") == "not_met"
    assert _status(check, "c7") == "met"
    assert _status(check, "x\ny") == "met"  # (?s) for the third
    assert _status(check, "a\nb") == "not_met"


def test_a_bad_pattern_is_quoted_as_written(tmp_path: Path) -> None:
    text = "id: t\nturns:\n  - user: Hi\n    expect:\n      reply_matches_any: ['ok', '(?x)BK-(']\n"
    path = project(tmp_path, t=text) / "t.yaml"
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    message = str(caught.value)
    assert f"{path}:5:" in message and "invalid regular expression '(?x)BK-('" in message
    assert "(?|" not in message


def test_patterns_that_only_break_together_are_quoted_as_written(tmp_path: Path) -> None:
    text = (
        "id: t\nturns:\n  - user: Hi\n    expect:\n      reply_matches_any: ['zzz', 'a(?x)b #c']\n"
    )
    path = project(tmp_path, t=text) / "t.yaml"
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    message = str(caught.value)
    assert f"{path}:5:" in message
    assert "the patterns 'zzz', 'a(?x)b #c' each compile but not as one" in message
    assert "put inline flags such as (?x) only at the start of a pattern" in message
    assert "(?|" not in message
