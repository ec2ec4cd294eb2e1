"""Settings, from CLI > environment (`SPARRING_*`) > pyproject `[tool.sparring]` > sparring.toml.

Every setting has one name used everywhere: the CLI option `--reply-timeout` is the setting
`reply_timeout_s`, the environment variable `SPARRING_REPLY_TIMEOUT_S` and the key
`reply_timeout_s` in `[tool.sparring]` or sparring.toml.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sparring.errors import ConfigError


class Settings(BaseModel):
    """Resolved settings for a run; see the module docstring for where each comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model: str | None = None
    """`provider:name` for both the simulated user and the judge."""
    user_model: str | None = None
    judge_model: str | None = None
    base_url: str | None = None
    """Base URL of an OpenAI-compatible endpoint for the models."""
    api_key: str | None = None
    parallel: int = Field(default=8, ge=1, le=1000)
    trials: int | None = Field(default=None, ge=1, le=100)
    reply_timeout_s: float | None = Field(default=None, gt=0)
    conversation_timeout_s: float | None = Field(default=None, gt=0)
    model_timeout_s: float = Field(default=120, gt=0)
    model_max_retries: int = Field(default=4, ge=0, le=20)
    user_temperature: float = Field(default=0.7, ge=0, le=2)
    judge_temperature: float = Field(default=0.0, ge=0, le=2)
    judge_chars_per_message: int | None = Field(default=None, ge=1)
    """What the judge sees of each message (default 1,500 characters)."""
    judge_chars_total: int | None = Field(default=None, ge=1)
    """What the judge sees of a conversation; the middle is left out (default 16,000)."""
    user_chars_per_message: int | None = Field(default=None, ge=1)
    """What the simulated user sees of each message (default 2,000 characters)."""
    user_chars_total: int | None = Field(default=None, ge=1)
    """The most recent characters the simulated user sees (default 12,000)."""
    secrets_file: str | None = None
    """dotenv-style file of `NAME=value` lines for `{{secrets.NAME}}`."""

    @property
    def resolved_user_model(self) -> str | None:
        """The simulated user's model spec: `user_model`, else `model`."""
        return self.user_model or self.model

    @property
    def resolved_judge_model(self) -> str | None:
        """The judge's model spec: `judge_model`, else `model`."""
        return self.judge_model or self.model


_FIELDS = tuple(Settings.model_fields)


def _from_file(path: Path, *, section: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    if not path.is_file():
        return {}, None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read settings ({e}); save it as UTF-8 text or remove it",
                          path=str(path)) from None
    for key in section:
        inner = data.get(key)
        data = cast(dict[str, Any], inner) if isinstance(inner, dict) else {}  # TOML keys are str
    return dict(data), str(path)  # a sub-table is an unknown key too (`_check_keys`)


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _FIELDS:
        value = env.get(f"SPARRING_{name.upper()}")
        if value:
            out[name] = value
    return out


def _check_keys(values: dict[str, Any], where: str) -> None:
    for key in values:
        if key not in _FIELDS:
            close = difflib.get_close_matches(key, _FIELDS, n=1)
            hint = (f"; did you mean {close[0]!r}?" if close
                    else f"; known keys: {', '.join(_FIELDS)}")
            raise ConfigError(f"unknown setting {key!r}{hint}", path=where)


def load_settings(cli: Mapping[str, Any], *, cwd: Path | None = None,
                  env: Mapping[str, str] | None = None) -> Settings:
    """Merge settings from every source, highest precedence first: CLI, env, files.

    Args:
        cli: Options given on the command line; `None` values mean "not given".
        cwd: Where to look for pyproject.toml and sparring.toml (default: current dir).
        env: Environment (default: `os.environ`).

    Raises:
        ConfigError: a file has invalid TOML, an unknown key (with did-you-mean), or a
            value of the wrong type.
    """
    cwd = cwd or Path.cwd()
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    sources = [
        _from_file(cwd / "sparring.toml", section=()),
        _from_file(cwd / "pyproject.toml", section=("tool", "sparring")),
    ]
    for values, where in sources:
        if where:
            _check_keys(values, where)
            merged.update(values)
            origin.update(dict.fromkeys(values, where))
    from_env = _from_env(env)
    merged.update(from_env)
    origin.update({k: f"SPARRING_{k.upper()}" for k in from_env})
    from_cli = {k: v for k, v in cli.items() if v is not None}
    merged.update(from_cli)
    origin.update({k: f"--{k.removesuffix('_s').replace('_', '-')}" for k in from_cli})
    try:
        return Settings.model_validate(merged)
    except ValidationError as e:
        problems = "; ".join(_describe(err["loc"], err["msg"], origin) for err in e.errors())
        raise ConfigError(f"invalid setting: {problems}") from None


def _describe(loc: tuple[int | str, ...], message: str, origin: Mapping[str, str]) -> str:
    key = str(loc[0]) if loc else ""
    return f"{key} (from {origin.get(key, 'defaults')}): {message}"
