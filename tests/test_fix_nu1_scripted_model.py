"""README's "Without a model: ScriptedModel" works as written: its Python suite passes under
`sparring run` with one model call and under `pytest --sparring-live` (a Suite's own model
judges with no model configured), and its conftest.py provider judges YAML scenarios."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from sparring.models.registry import PROVIDERS
from tests.test_cli import sparring

pytest_plugins = ["pytester"]

README = Path(__file__).resolve().parents[1] / "README.md"

YAML = """
target: {ref: "test_offline:agent"}
scenarios:
  - id: policy
    turns:
      - user: "What's your return policy?"
        should: mention the 30-day return window
  - id: policy_again
    turns:
      - user: "And the return window?"
        should: mention the 30-day return window
"""


def _example(first_line: str) -> str:
    """The README's Python block that starts with `first_line`."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    [block] = [b for b in blocks if b.startswith(first_line)]
    return block


def test_the_readme_suite_passes_under_sparring_run_with_one_model_call(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_offline.py").write_text(
        _example("# tests/test_offline.py"), encoding="utf-8"
    )
    done = sparring("run", "tests/test_offline.py", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "usage: 1 model call" in done.stdout


@pytest.fixture
def cleanup_provider() -> object:
    yield None
    PROVIDERS.pop("scripted", None)


def test_the_readme_suite_and_provider_pass_under_pytest_live(
    pytester: pytest.Pytester, cleanup_provider: object
) -> None:
    pytester.makepyprojecttoml('[tool.sparring]\nyaml_dirs = ["evals"]\nmodel = "scripted:judge"\n')
    pytester.makeconftest(_example("# conftest.py"))
    pytester.makepyfile(test_offline=_example("# tests/test_offline.py"))
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals/policy.yaml").write_text(textwrap.dedent(YAML), encoding="utf-8")
    result = pytester.runpytest("--sparring-live", "--sparring-no-store")
    result.assert_outcomes(passed=3)


def test_a_suites_own_model_judges_under_pytest_live_with_no_model_configured(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml("[tool.sparring]\n")
    pytester.makepyfile(test_offline=_example("# tests/test_offline.py"))
    result = pytester.runpytest("--sparring-live", "--sparring-no-store")
    result.assert_outcomes(passed=1)
