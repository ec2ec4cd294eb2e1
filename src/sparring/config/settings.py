"""The settings model and how they are loaded (see `sparring.config`)."""

from __future__ import annotations

import difflib
import json
import math
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from sparring.config import find_settings_dir
from sparring.errors import ConfigError
from sparring.scenario import parse_threshold


class GroupGate(BaseModel):
    """A `[tool.sparring.groups.NAME]` table: a quality gate over a group of pytest tests.

    A test belongs to the group when it has one of `tags` (scenario tags), one of `markers`
    (pytest markers), or is named in `must_pass` (node id, test name or scenario id). The
    gate is met when at least `threshold` of the members that ran passed and every
    `must_pass` entry names a test that did not fail (see `sparring.gates`).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")
    threshold: float = 1.0
    """Pass rate required, as a fraction 0-1 (`0.9`, `"90%"` and `90` are accepted)."""
    tags: tuple[str, ...] = ()
    markers: tuple[str, ...] = ()
    must_pass: tuple[str, ...] = ()

    @field_validator("threshold", mode="before")
    @classmethod
    def _threshold(cls, value: Any) -> float:
        return parse_threshold(value)

    @model_validator(mode="after")
    def _has_members(self) -> GroupGate:
        if not (self.tags or self.markers or self.must_pass):
            raise ValueError("the group has no members; add `tags`, `markers` or `must_pass`")
        return self


class Settings(BaseModel):
    """Resolved settings for a run; see the module docstring for where each comes from."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    model: str | None = None
    """`provider:name` for both the simulated user and the judge."""
    user_model: str | None = None
    judge_model: str | None = None
    base_url: str | None = None
    """Base URL of an OpenAI-compatible endpoint for the models."""
    site_url: str | None = None
    """The website browser targets open (`http(s)://host[:port]`): a target's `chat_url`
    path (`/support`) is joined to it; a target with no `chat_url` opens it as it is."""
    artifacts_dir: str | None = None
    """Where trials keep files besides their results (browser screenshots); default
    `.sparring/artifacts` in the project root."""
    browser_device: str | None = None
    """The Playwright device (e.g. "iPhone 13") browser targets without their own `device`
    emulate; default desktop Chromium."""
    api_key: str | None = None
    parallel: int = Field(default=8, ge=1, le=1000)
    trials: int | None = Field(default=None, ge=1, le=100)
    reply_timeout_s: float | None = Field(default=None, gt=0)
    conversation_timeout_s: float | None = Field(default=None, gt=0)
    model_timeout_s: float = Field(default=120, gt=0)
    model_max_retries: int = Field(default=4, ge=0, le=20)
    user_temperature: float = Field(default=0.7, ge=0, le=2)
    judge_temperature: float = Field(default=0.0, ge=0, le=2)
    judge_after_failed_checks: bool = False
    """Judge criteria and `should`s even in a trial a check already failed."""
    explain_failures: bool = False
    """One more model call per failed trial explains why it failed (`--explain-failures`)."""
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
    store: str | None = None
    """Where runs are kept: an SQLAlchemy URL (`postgresql+psycopg://user@host/db`) or an
    SQLite file; default `.sparring/sparring.db` in the project root (`sparring.store`)."""
    yaml_dirs: tuple[str, ...] = ()
    """Directories whose test files the pytest plugin collects (absolute once loaded)."""
    library: tuple[str, ...] = ()
    """Files and directories of evaluations and simulated users every run can use by name
    (`sparring.loaders.library`; absolute once loaded)."""
    live: bool = False
    """Let the pytest plugin run tests that call models (`--sparring-live` also does)."""
    groups: dict[str, GroupGate] = Field(default_factory=dict[str, GroupGate])
    """Quality gates of the pytest plugin, by group name."""
    prices: dict[str, tuple[float, float]] = Field(default_factory=dict[str, tuple[float, float]])
    """`[tool.sparring.prices]`: model spec -> `[input, output]` USD per million tokens, for
    models the built-in table does not know or prices differently
    (`sparring.models.pricing`)."""

    @field_validator("site_url")
    @classmethod
    def _site_url(cls, url: str | None) -> str | None:
        if url is None:
            return None
        scheme, sep, rest = url.partition("://")
        if sep and scheme.lower() in ("http", "https") and rest and not rest.startswith("/"):
            return url
        raise ValueError(
            f"{url!r} is not a website address; write it like 'https://shop.example.com' "
            "or 'http://127.0.0.1:8787'"
        )

    @field_validator("prices", mode="before")
    @classmethod
    def _prices(cls, value: Any) -> Any:
        return _check_prices(value)

    @property
    def resolved_user_model(self) -> str | None:
        """The simulated user's model spec: `user_model`, else `model`."""
        return self.user_model or self.model

    @property
    def resolved_judge_model(self) -> str | None:
        """The judge's model spec: `judge_model`, else `model`."""
        return self.judge_model or self.model


_PRICE_FORM = (
    'write "provider:name" = [input, output] in USD per million tokens, e.g. '
    '"openai-compatible:llama3" = [0.2, 0.6]'
)


def _is_price(part: Any) -> bool:
    return (
        isinstance(part, int | float)
        and not isinstance(part, bool)
        and math.isfinite(part)
        and part >= 0
    )


def _check_prices(value: Any) -> dict[str, tuple[float, float]]:
    """`[tool.sparring.prices]` as `{spec: (input, output)}`, USD per million tokens.

    Keys must look like model specs (`provider:name`); whether the provider exists is checked
    when models are resolved (`models.registry.model_from_settings`), where providers
    registered by plugins are known.

    Raises:
        ValueError: not a table, a key that is not `provider:name`, or a value that is not
            two non-negative numbers; the message names the key and the accepted form.
    """
    if not isinstance(value, dict):
        raise ValueError(f"expected a table of model prices; {_PRICE_FORM}")
    prices: dict[str, tuple[float, float]] = {}
    for key, price in cast(dict[str, Any], value).items():
        provider, _, name = key.strip().partition(":")
        if not (provider and name):
            raise ValueError(
                f"key {key!r} is not a model spec 'provider:name' as --model "
                f"takes it; {_PRICE_FORM}"
            )
        parts = cast(list[Any], price) if isinstance(price, list | tuple) else []
        if len(parts) != 2 or not all(_is_price(part) for part in parts):
            raise ValueError(
                f"price of {key!r} is {json.dumps(price, default=str)}, not two "
                f"non-negative numbers [input, output]; {_PRICE_FORM}"
            )
        prices[key.strip()] = (float(parts[0]), float(parts[1]))
    return prices


_FIELDS = tuple(Settings.model_fields)
_GROUP_FIELDS = tuple(GroupGate.model_fields)
_FILE_ONLY = ("yaml_dirs", "library", "groups", "prices")
_SPARRING = ("tool", "sparring")
"""sparring's table in pyproject.toml."""
"""Settings read from files only, never from the environment."""


def _from_file(path: Path, *, section: tuple[str, ...]) -> tuple[dict[str, Any], str | None]:
    if not path.is_file():
        return {}, None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"invalid TOML: {e}", path=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(
            f"cannot read settings ({e}); save it as UTF-8 text or remove it", path=str(path)
        ) from None
    for key in section:
        inner = data.get(key)
        data = cast(dict[str, Any], inner) if isinstance(inner, dict) else {}  # TOML keys are str
    data = dict(data)  # a sub-table is an unknown key too (`_check_keys`)
    for key in ("yaml_dirs", "library"):
        dirs = data.get(key)
        if isinstance(dirs, str):
            dirs = [dirs]
        if isinstance(dirs, list) and all(isinstance(d, str) for d in cast(list[Any], dirs)):
            data[key] = [str(path.parent / d) for d in cast(list[str], dirs)]
    if isinstance(data.get("secrets_file"), str) and data["secrets_file"]:
        data["secrets_file"] = str(path.parent / data["secrets_file"])
    if isinstance(data.get("artifacts_dir"), str) and data["artifacts_dir"]:
        data["artifacts_dir"] = str(path.parent / data["artifacts_dir"])
    if isinstance(data.get("store"), str) and data["store"] and "://" not in data["store"]:
        data["store"] = str(path.parent / data["store"])  # an SQLite file, next to its file
    return data, str(path)


AGENT_EVAL_SETTINGS = ("model", "judge_model", "yaml_dirs", "live", "groups")
"""pytest-agent-eval's `[tool.agent_eval]` settings that sparring takes (below its own); its
groups' `pytest_markers` are sparring's `markers`."""


def _from_agent_eval(path: Path) -> tuple[dict[str, Any], str | None]:
    """The `AGENT_EVAL_SETTINGS` of `[tool.agent_eval]` in `path`, and where they are as
    messages say it (`PATH [tool.agent_eval]`; `None` without the file)."""
    values, where = _from_file(path, section=("tool", "agent_eval"))
    taken = {k: v for k, v in values.items() if k in AGENT_EVAL_SETTINGS}
    if isinstance(groups := taken.get("groups"), dict):
        taken["groups"] = {
            name: {
                ("markers" if k == "pytest_markers" else k): v
                for k, v in cast(dict[str, Any], group).items()
            }
            if isinstance(group, dict)
            else group
            for name, group in cast(dict[str, Any], groups).items()
        }
    return taken, where and f"{where} [tool.agent_eval]"


def _from_env(env: Mapping[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in _FIELDS:
        if name in _FILE_ONLY:
            continue
        value = env.get(f"SPARRING_{name.upper()}")
        if value:
            out[name] = value
    if "live" not in out and env.get("EVAL_LIVE", "").lower() in ("1", "true", "yes"):
        out["live"] = True  # pytest-agent-eval's switch
    return out


def _check_keys(values: dict[str, Any], where: str, section: tuple[str, ...]) -> None:
    """Every key of `values` (read from the table `section` of the file `where`) and of its
    groups is a setting.

    Raises:
        ConfigError: an unknown key (with did-you-mean), or groups that are not tables (the
            example names the table as the file has it, e.g. `[tool.agent_eval.groups.x]`).
    """
    _check_known(values, _FIELDS, where=where)
    groups = values.get("groups")
    if groups is None:
        return
    table = ".".join((*section, "groups"))
    if not isinstance(groups, dict):
        raise ConfigError(
            f"`groups` must be a table of groups, e.g. [{table}.booking] with `threshold` "
            "and `tags`",
            path=where,
        )
    for name, group in cast(dict[str, Any], groups).items():
        if not isinstance(group, dict):
            raise ConfigError(
                f"group {name!r} must be a table with `threshold` and `tags`, "
                f"`markers` or `must_pass`, e.g. [{table}.{name}]",
                path=where,
            )
        _check_known(
            cast(dict[str, Any], group), _GROUP_FIELDS, where=where, table=f" in group {name!r}"
        )


def _check_known(
    values: dict[str, Any], known: tuple[str, ...], *, where: str, table: str = ""
) -> None:
    for key in values:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
            raise ConfigError(f"unknown setting {key!r}{table}{hint}", path=where)


def load_settings(
    cli: Mapping[str, Any], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Merge settings from every source, highest precedence first: CLI, env, files.

    Args:
        cli: Options given on the command line; `None` values mean "not given".
        cwd: The directory whose pyproject.toml and sparring.toml are read (default:
            `find_settings_dir` from the current directory; none when it finds none).
        env: Environment (default: `os.environ`).

    Raises:
        ConfigError: a file has invalid TOML, an unknown key (with did-you-mean), or a
            value of the wrong type.
    """
    cwd = cwd or find_settings_dir(Path.cwd())
    env = os.environ if env is None else env
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    sources = (
        [
            (_from_agent_eval(cwd / "pyproject.toml"), ("tool", "agent_eval")),
            (_from_file(cwd / "sparring.toml", section=()), ()),
            (_from_file(cwd / "pyproject.toml", section=_SPARRING), _SPARRING),
        ]
        if cwd
        else []
    )
    for (values, where), section in sources:
        if where:
            _check_keys(values, where, section)
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
    where = ".".join(str(part) for part in loc)
    message = message.removeprefix("Value error, ")
    return f"{where} (from {origin.get(key, 'defaults')}): {message}"
