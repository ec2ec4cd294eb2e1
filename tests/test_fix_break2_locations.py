"""Load errors point at what the user wrote: a red_team scenario's key at its own line (as
other scenario kinds' keys are)."""

from __future__ import annotations

from pathlib import Path

import pytest

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
