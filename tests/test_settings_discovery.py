"""Settings are found walking up to the project root, the same way by `sparring run` and the
pytest plugin; `base_url` never redirects an `openai:` or `ollama:` model (issue 9, item 16)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sparring.config import find_settings_dir, has_settings_file, load_settings
from sparring.models.openai import OpenAIModel
from sparring.models.registry import model_from_settings


def _project(tmp_path: Path) -> Path:
    """`tmp_path/repo` (a git root) with sparring settings, and `repo/pkg/deep` below it with
    a pyproject.toml that has no sparring table."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "sparring.toml").write_text('model = "ollama:root"\nsecrets_file = ".env.test"\n')
    deep = repo / "pkg" / "deep"
    deep.mkdir(parents=True)
    (repo / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    return repo


def test_settings_are_found_in_a_parent_up_to_the_project_root(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    assert find_settings_dir(repo / "pkg" / "deep") == repo
    assert not has_settings_file(repo / "pkg")  # a pyproject.toml without [tool.sparring]
    (tmp_path / "sparring.toml").write_text('model = "ollama:outside"\n')
    (repo / "sparring.toml").unlink()
    assert find_settings_dir(repo / "pkg" / "deep") is None  # never above `.git`
    assert find_settings_dir(tmp_path) == tmp_path


def test_the_nearest_settings_win(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    (repo / "pkg" / "pyproject.toml").write_text('[tool.sparring]\nmodel = "ollama:pkg"\n')
    assert find_settings_dir(repo / "pkg" / "deep") == repo / "pkg"


def test_load_settings_reads_the_found_file_and_its_paths_relative_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _project(tmp_path)
    monkeypatch.chdir(repo / "pkg" / "deep")
    settings = load_settings({}, env={})
    assert settings.model == "ollama:root"
    assert settings.secrets_file == str(repo / ".env.test")
    assert load_settings({"secrets_file": "mine.env"}, env={}).secrets_file == "mine.env"


def test_sparring_run_lists_with_settings_from_a_parent_directory(tmp_path: Path) -> None:
    repo = _project(tmp_path)
    (repo / "sparring.toml").write_text("trials = 4\n")
    (repo / "pkg" / "deep" / "t.yaml").write_text(
        "target: {type: callable, ref: 'os:getcwd'}\n"
        "scenarios:\n  - id: hi\n    turns: [{user: hi, checks: [{contains: x}]}]\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "t.yaml", "--list"],
        cwd=repo / "pkg" / "deep",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "hi  [scripted, 4 trials]" in done.stdout


def test_base_url_redirects_only_openai_compatible_models(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)
    settings = load_settings(
        {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"}, cwd=Path("/"), env={}
    )
    urls = {}
    for spec in ("openai:gpt-4o-mini", "ollama:qwen2.5:7b", "openai-compatible:mine"):
        model = model_from_settings(spec, settings)
        assert isinstance(model, OpenAIModel)
        urls[spec] = model.base_url
    assert urls == {
        "openai:gpt-4o-mini": "https://api.openai.com/v1",
        "ollama:qwen2.5:7b": "http://localhost:11434/v1",
        "openai-compatible:mine": "http://127.0.0.1:9/v1",
    }
