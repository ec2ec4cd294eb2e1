"""Python test files for `sparring run`: which are imported, how, and what their errors say."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparring.errors import UserError
from sparring.loaders.files import split_paths
from sparring.loaders.python import load_suites

SUITE = """\
from sparring.api import Suite

suite = Suite(target="http://127.0.0.1:9/chat")

@suite.scenario
async def test_{name}() -> None:
    pass
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """`tmp_path` as the current directory, not on `sys.path` (as under the `sparring`
    console script); modules imported by the test are forgotten after it."""
    monkeypatch.chdir(tmp_path)
    saved_path, saved_modules = list(sys.path), set(sys.modules)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", str(tmp_path))]
    yield tmp_path
    sys.path[:] = saved_path
    for name in set(sys.modules) - saved_modules:
        del sys.modules[name]


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def load(*paths: str | Path) -> list[str]:
    """`sparring run PATHS`' suites, as the names of their tests."""
    _, files = split_paths(paths)
    return [t.name for s in load_suites(files, named=paths) for t in s.tests]


def test_a_directory_run_imports_only_files_that_can_hold_a_suite(project: Path) -> None:
    write(project / "myapp_e2" / "__init__.py", "")
    write(project / "myapp_e2" / "core.py", "def add(a, b):\n    return a + b\n")
    write(
        project / "tests" / "test_core.py",  # an ordinary unit test: never imported
        "from myapp_e2.core import add\nraise RuntimeError('imported')\n",
    )
    write(
        project / "tests" / "test_agent.py",  # imports the project from the cwd
        "from myapp_e2.core import add\n" + SUITE.format(name="agent"),
    )
    write(
        project / "tests" / "test_fixture.py",  # a pytest-plugin test: no Suite, fine
        "def test_bot(sparring):\n    pass\n",
    )
    assert load("tests") == ["test_agent"]


def test_a_file_named_on_the_command_line_is_always_imported(project: Path) -> None:
    write(project / "tests" / "test_plain.py", "raise RuntimeError('imported')\n")
    with pytest.raises(
        UserError, match="test_plain.py: importing it raised RuntimeError: imported \\(line 1\\)"
    ):
        load("tests/test_plain.py")


def test_a_named_file_without_a_suite_says_so_and_shows_one(project: Path) -> None:
    write(project / "t.py", "import sparring\nx = 1\n")
    with pytest.raises(UserError) as caught:
        load("t.py")
    message = str(caught.value)
    assert "t.py: defines no `sparring.api.Suite` at module level" in message
    assert "scenarios:" not in message  # no YAML advice
    assert 'suite = Suite(target="http://localhost:8000/chat")' in message
    assert "@suite.scenario" in message
    write(project / "t2.py", "from sparring.api import Suite\nbot = Suite()\n")
    with pytest.raises(
        UserError,
        match=r"t2.py: its Suite \(bot\) has no tests; register "
        r"one with `@bot.scenario`",
    ):
        load("t2.py")


def test_a_syntax_error_names_its_line_once(project: Path) -> None:
    write(project / "test_syntax.py", "import sparring\nx = = 1\n")
    with pytest.raises(UserError) as caught:
        load("test_syntax.py")
    message = str(caught.value)
    assert message.startswith("test_syntax.py: importing it raised SyntaxError: ")
    assert message.count("line 2") == 1 and "test_syntax.py, line" not in message
    write(project / "helper_bad.py", "def f(:\n")
    write(project / "test_imports.py", "import sparring\n\nimport helper_bad\n")
    with pytest.raises(
        UserError,
        match=r"raised SyntaxError in .*helper_bad.py, line 1: .*"
        r"\(imported at line 3\)",
    ):
        load("test_imports.py")


def test_each_test_file_imports_its_own_neighbour_modules(project: Path) -> None:
    for name in ("h1", "h2"):
        write(project / name / "helpers.py", f"WHO = {name!r}\n")
        write(
            project / name / f"test_{name}.py",
            "from helpers import WHO\n" + SUITE.format(name=name) + "suite.context['who'] = WHO\n",
        )
    _, files = split_paths(["h1", "h2"])
    suites = load_suites(files, named=["h1", "h2"])
    assert [s.context["who"] for s in suites] == ["h1", "h2"]
