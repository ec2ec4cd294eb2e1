"""Settings, from CLI > environment (`SPARRING_*`) > pyproject `[tool.sparring]` > sparring.toml.

Every setting has one name used everywhere: the CLI option `--reply-timeout` is the setting
`reply_timeout_s`, the environment variable `SPARRING_REPLY_TIMEOUT_S` and the key
`reply_timeout_s` in `[tool.sparring]` or sparring.toml.

The files are looked for in the current directory and its parents up to the project root
(`find_settings_dir`), the same way by `sparring` and the pytest plugin; paths in them
(`yaml_dirs`, `secrets_file`) are relative to the file that names them.

The pytest plugin's settings live in the same place: `yaml_dirs` and `groups` only in the
files (paths in `yaml_dirs` are relative to the file that names them), `live` also as
`SPARRING_LIVE=1`::

    [tool.sparring]
    model = "openai:gpt-4o-mini"
    yaml_dirs = ["tests/conversations"]

    [tool.sparring.groups.booking]
    threshold = 0.9               # 90% of the group's tests must pass
    tags = ["booking"]            # members: scenarios with one of these tags ...
    markers = ["booking"]         # ... tests with one of these pytest markers ...
    must_pass = ["confirm_slot"]  # ... and these tests, which must never fail
"""

from __future__ import annotations

import tomllib
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sparring.config.settings import GroupGate, Settings, load_settings

__all__ = ["GroupGate", "Settings", "find_settings_dir", "has_settings_file", "load_settings"]
_LAZY = frozenset({"GroupGate", "Settings", "load_settings"})


def __getattr__(name: str) -> Any:
    """`Settings`, `GroupGate` and `load_settings` load pydantic on first use (PEP 562), so
    finding the settings file (the pytest plugin does it in every session) stays cheap."""
    if name in _LAZY:
        return getattr(import_module("sparring.config.settings"), name)
    raise AttributeError(f"module 'sparring.config' has no attribute {name!r}")


def has_settings_file(directory: Path) -> bool:
    """Whether `directory` holds sparring settings: a sparring.toml, or a pyproject.toml
    with a `[tool.sparring]` table, or pytest-agent-eval's `[tool.agent_eval]` (or one that
    cannot be read, so loading it says why). Cheap: plain TOML, no validation."""
    if (directory / "sparring.toml").is_file():
        return True
    pyproject = directory / "pyproject.toml"
    if not pyproject.is_file():
        return False
    try:
        data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and ("sparring" in tool or "agent_eval" in tool)


def find_settings_dir(start: Path) -> Path | None:
    """The directory whose settings apply to work started in `start`: the nearest of
    `start` and its parents that `has_settings_file`, looking no higher than the project
    root (the first directory holding `.git`) or the filesystem root; `None` if none has.
    """
    start = start.resolve()
    for directory in (start, *start.parents):
        if has_settings_file(directory):
            return directory
        if (directory / ".git").exists():
            return None
    return None
