"""Settings precedence: CLI > SPARRING_* environment > pyproject [tool.sparring] > sparring.toml."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.config import load_settings
from sparring.errors import ConfigError


def test_precedence_cli_over_env_over_pyproject_over_sparring_toml(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text(
        'model = "ollama:a"\nparallel = 2\ntrials = 5\njudge_model = "ollama:j"\n'
    )
    (tmp_path / "pyproject.toml").write_text('[tool.sparring]\nmodel = "ollama:b"\nparallel = 3\n')
    env = {"SPARRING_PARALLEL": "4", "SPARRING_MODEL": "ollama:c"}
    settings = load_settings({"model": "ollama:d", "parallel": None}, cwd=tmp_path, env=env)
    assert settings.model == "ollama:d"
    assert settings.parallel == 4
    assert settings.trials == 5
    assert settings.resolved_judge_model == "ollama:j"
    assert settings.resolved_user_model == "ollama:d"


def test_defaults_without_any_source(tmp_path: Path) -> None:
    settings = load_settings({}, cwd=tmp_path, env={})
    assert (settings.model, settings.parallel, settings.user_temperature) == (None, 8, 0.7)
    assert settings.judge_temperature == 0.0


def test_unknown_key_in_a_file_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text('modle = "openai:gpt-4o-mini"\n')
    with pytest.raises(
        ConfigError,
        match=r"sparring.toml: unknown setting 'modle'; did you "
        r"mean 'model'\?",
    ):
        load_settings({}, cwd=tmp_path, env={})


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.sparring\n")
    with pytest.raises(ConfigError, match="pyproject.toml: invalid TOML"):
        load_settings({}, cwd=tmp_path, env={})


@pytest.mark.parametrize(
    ("cli", "env", "origin"),
    [
        ({}, {"SPARRING_PARALLEL": "abc"}, "SPARRING_PARALLEL"),
        ({"parallel": 0}, {}, "--parallel"),
        ({"reply_timeout_s": -1}, {}, "--reply-timeout"),
    ],
)
def test_bad_values_name_their_source(
    tmp_path: Path, cli: dict[str, object], env: dict[str, str], origin: str
) -> None:
    with pytest.raises(ConfigError, match=f"from {origin}"):
        load_settings(cli, cwd=tmp_path, env=env)


def test_other_tool_tables_in_pyproject_are_ignored(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.ruff]\nline-length = 100\n[tool.sparring]\nparallel = 16\n"
    )
    assert load_settings({}, cwd=tmp_path, env={}).parallel == 16


def test_settings_file_that_is_not_utf8_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(b"\xff\xfe[tool]")
    with pytest.raises(ConfigError, match="pyproject.toml: cannot read settings"):
        load_settings({}, cwd=tmp_path, env={})


def test_transcript_limits_override_only_what_is_set(tmp_path: Path) -> None:
    from sparring.prompts import Limits
    from sparring.runner import RunSettings

    settings = load_settings({}, cwd=tmp_path, env={"SPARRING_JUDGE_CHARS_TOTAL": "4000"})
    assert RunSettings.from_settings(settings).limits == Limits(judge_chars_total=4000)


def test_a_sub_table_is_not_silently_ignored(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text('[judge]\nmodel = "openai:gpt-4o"\n')
    with pytest.raises(ConfigError, match="unknown setting 'judge'; did you mean 'judge_model'"):
        load_settings({}, cwd=tmp_path, env={})


def test_pytest_plugin_settings_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sparring]\nyaml_dirs = ["tests/evals", "more"]\nlive = true\n'
        '[tool.sparring.groups.booking]\nthreshold = "90%"\ntags = ["gate:booking"]\n'
        'must_pass = ["confirm"]\n[tool.sparring.groups.smoke]\nmarkers = ["smoke"]\n'
    )
    settings = load_settings({}, cwd=tmp_path, env={})
    assert settings.yaml_dirs == (str(tmp_path / "tests/evals"), str(tmp_path / "more"))
    assert settings.live is True
    booking, smoke = settings.groups["booking"], settings.groups["smoke"]
    assert (booking.threshold, booking.tags, booking.must_pass) == (
        0.9,
        ("gate:booking",),
        ("confirm",),
    )
    assert (smoke.threshold, smoke.markers) == (1.0, ("smoke",))


def test_yaml_dirs_are_relative_to_the_file_that_names_them(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text('yaml_dirs = "evals"\n')
    settings = load_settings({}, cwd=tmp_path, env={})
    assert settings.yaml_dirs == (str(tmp_path / "evals"),)


@pytest.mark.parametrize(("value", "live"), [("1", True), ("true", True), ("0", False)])
def test_sparring_live_env_overrides_the_file(tmp_path: Path, value: str, live: bool) -> None:
    (tmp_path / "sparring.toml").write_text("live = false\n" if live else "live = true\n")
    assert load_settings({}, cwd=tmp_path, env={"SPARRING_LIVE": value}).live is live


def test_groups_and_yaml_dirs_are_not_read_from_the_environment(tmp_path: Path) -> None:
    settings = load_settings(
        {}, cwd=tmp_path, env={"SPARRING_GROUPS": "x", "SPARRING_YAML_DIRS": "y"}
    )
    assert (settings.groups, settings.yaml_dirs) == ({}, ())


def test_unknown_key_in_a_group_gets_a_did_you_mean(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sparring.groups.booking]\ntreshold = 0.9\ntags = ["b"]\n'
    )
    with pytest.raises(
        ConfigError,
        match=r"pyproject.toml: unknown setting 'treshold' in group "
        r"'booking'; did you mean 'threshold'\?",
    ):
        load_settings({}, cwd=tmp_path, env={})


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('groups = ["booking"]', "`groups` must be a table of groups"),
        ("[groups]\nbooking = 0.9", "group 'booking' must be a table"),
        (
            "[groups.booking]\nthreshold = 8\ntags = ['b']",
            r"groups.booking.threshold \(from .*sparring.toml\): threshold 8 is ambiguous: did you "
            r"mean 0.8",
        ),
        ("[groups.booking]\nthreshold = 0.5", "groups.booking .*the group has no members"),
    ],
)
def test_malformed_groups_say_what_to_write(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "sparring.toml").write_text(toml + "\n")
    with pytest.raises(ConfigError, match=message):
        load_settings({}, cwd=tmp_path, env={})


_PRICE_FORM = (
    r'write "provider:name" = \[input, output\] in USD per million tokens, e.g. '
    r'"openai-compatible:llama3" = \[0.2, 0.6\]$'
)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("llama3 = [0.2, 0.6]", r"key 'llama3' is not a model spec 'provider:name'"),
        ('"openai:" = [0.2, 0.6]', r"key 'openai:' is not a model spec"),
        (
            '"openai:x" = [true, false]',
            r"price of 'openai:x' is \[true, false\], not two "
            r"non-negative numbers \[input, output\]",
        ),
        ('"openai:x" = [0.2]', r"price of 'openai:x' is \[0.2\], not two"),
        ('"openai:x" = [0.2, 0.6, 1]', r"is \[0.2, 0.6, 1\], not two"),
        ('"openai:x" = [0.2, -1]', r"is \[0.2, -1\], not two non-negative"),
        ('"openai:x" = ["0.2", 0.6]', r"is \[\"0.2\", 0.6\], not two"),
        ('"openai:x" = [inf, 0.6]', r"is \[Infinity, 0.6\], not two"),
        ('"openai:x" = 0.2', r"is 0.2, not two"),
    ],
)
def test_bad_prices_name_the_key_the_file_and_the_form(
    tmp_path: Path, toml: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.sparring.prices]\n{toml}\n")
    with pytest.raises(
        ConfigError, match=rf"prices \(from .*pyproject.toml\): .*{message}.*; {_PRICE_FORM}"
    ):
        load_settings({}, cwd=tmp_path, env={})


def test_prices_that_are_not_a_table_say_what_to_write(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text("prices = [0.2, 0.6]\n")
    with pytest.raises(
        ConfigError,
        match=rf"prices \(from .*sparring.toml\): expected a table "
        rf"of model prices; {_PRICE_FORM}",
    ):
        load_settings({}, cwd=tmp_path, env={})


def test_prices_accept_ints_and_floats_and_strip_the_key(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text('[prices]\n" ollama:m " = [0, 1.5]\n')
    assert load_settings({}, cwd=tmp_path, env={}).prices == {"ollama:m": (0.0, 1.5)}
