"""Load errors point at what the user wrote: a red_team scenario's key at its own line (as
other scenario kinds' keys are)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.config.settings import load_settings
from sparring.errors import ConfigError
from sparring.loaders import load_paths


def _load_error(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    return str(caught.value)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("allow: {a: 1}", ":6:12: scenarios[0].allow: expected a list, got a mapping"),
        ('allow: "help@x.com"', ":6:12: scenarios[0].allow: expected a list, got text"),
        ("canaries: {a: 1}", ":6:15: scenarios[0].canaries: expected a list, got a mapping"),
        ("policy: [1]", ":6:13: scenarios[0].policy: expected text, got a list"),
        ("plugin: [pii_leak]", ":6:5: unknown key 'plugin' in scenarios[0] (red-team scenario)"),
    ],
)
def test_a_red_team_key_of_the_wrong_type_is_named_at_its_line(
    tmp_path: Path, line: str, expected: str
) -> None:
    path = tmp_path / "bad3.yaml"
    text = (
        "target: {url: 'http://127.0.0.1:9/chat'}\nscenarios:\n  - kind: red_team\n"
        f"    id: rt\n    plugins: [pii_leak]\n    {line}\n"
    )
    assert f"{path}{expected}" in _load_error(path, text)


TRANSCRIPT = "id: t2\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [hello]\n"


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("runs = -1", ":6:3: [tool.agent_eval] runs: trials must be at least 1 and at most 100"),
        ("threshold = 0", ":6:3: [tool.agent_eval] threshold: a threshold of 0 passes even"),
        ('threshold = "lots"', ":6:3: [tool.agent_eval] threshold: threshold 'lots' is not"),
    ],
)
def test_a_bad_agent_eval_default_is_blamed_on_pyproject_not_the_transcript(
    tmp_path: Path, setting: str, expected: str
) -> None:
    (tmp_path / ".git").mkdir()
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(
        '[project]\nname = "x"\n\n[tool.agent_eval]\n'
        f'target = {{url = "http://127.0.0.1:9/chat"}}\n  {setting}\n'
    )
    message = _load_error(tmp_path / "t2.yaml", TRANSCRIPT)
    assert f"{pyproject.resolve()}{expected}" in message
    assert "t2.yaml" not in message


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ("groups = 3", "`groups` must be a table of groups, e.g. [tool.agent_eval.groups.booking]"),
        (
            "groups = {booking = 3}",
            "group 'booking' must be a table with `threshold` and `tags`, `markers` or "
            "`must_pass`, e.g. [tool.agent_eval.groups.booking]",
        ),
        ("groups = {booking = {tresh = 3}}", "unknown setting 'tresh' in group 'booking'"),
    ],
)
def test_an_agent_eval_groups_error_names_the_table_the_user_wrote(
    tmp_path: Path, groups: str, expected: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.agent_eval]\n{groups}\n")
    with pytest.raises(ConfigError) as caught:
        load_settings({}, cwd=tmp_path, env={})
    message = str(caught.value)
    assert "pyproject.toml [tool.agent_eval]: " in message and expected in message
    assert "tool.sparring" not in message


def test_a_sparring_toml_groups_error_names_its_own_table(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text("[groups]\nbooking = 3\n")
    with pytest.raises(ConfigError, match=r"e\.g\. \[groups\.booking\]"):
        load_settings({}, cwd=tmp_path, env={})
