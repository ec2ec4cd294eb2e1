"""The house rules that hold the layout: DESIGN.md's layers, sizes, the public names.

The import-linter contract in pyproject.toml is what CI runs (`lint-imports`); these tests
keep it in step with DESIGN.md section 2, and hold the size limits of STYLE.md.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SRC = ROOT / "src" / "sparring"
DESIGN = ROOT.parent / "shared" / "DESIGN.md"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60


def design_groups(text: str) -> list[list[str]]:
    """The layers of DESIGN.md section 2's tree, lowest first: one list of module names
    (`sparring.x`) per `-- group` heading; the top of the tree (before the first heading)
    is its own group."""
    block = text.split("## 2.", 1)[1].split("```", 2)[1]
    groups: list[list[str]] = [[]]
    for line in block.splitlines():
        if line.strip().startswith("--"):
            groups.append([])
            continue
        if not line.startswith("  ") or line.startswith("   "):
            continue  # the root line, or a continuation of a description
        for token in line.split():
            name = re.fullmatch(r"([a-z_]+)(\.py|/)", token)
            if name is None:
                break  # the description begins
            if name.group(1) != "__init__":
                groups[-1].append(f"sparring.{name.group(1)}")
    return [g for g in groups if g]


def contract_layers() -> list[list[str]]:
    """The layers contract of pyproject.toml, lowest first, parentheses dropped."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contract = config["tool"]["importlinter"]["contracts"][0]
    layers = [re.split(r"\s*[|:]\s*", layer) for layer in contract["layers"]]
    return [[m.strip("()") for m in layer] for layer in reversed(layers)]


@pytest.mark.skipif(not DESIGN.exists(), reason="DESIGN.md is in shared/, beside the repo")
def test_the_import_contract_follows_design_md_section_2() -> None:
    design = design_groups(DESIGN.read_text(encoding="utf-8"))
    contract = contract_layers()
    # errors.py sits in DESIGN's first group (with __init__); the contract gives it its own
    # layer below everything, and the demo agent a layer of its own under the front ends
    flat_design = [m for g in design for m in g]
    flat_contract = [m for g in contract for m in g if m not in {"sparring.api"}]
    assert sorted(flat_design) == sorted(flat_contract)
    order = {m: i for i, group in enumerate(contract) for m in group}
    for lower, higher in zip(design, design[1:], strict=False):
        assert max(order[m] for m in lower) < min(order[m] for m in higher), (lower, higher)


def test_the_import_contract_holds() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    if not lint.exists():
        pytest.skip("import-linter is not installed (pip install -e '.[dev]')")
    done = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-3000:]


def python_files() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


@pytest.mark.parametrize("path", python_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_600_lines_or_has_a_function_over_60(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count("\n") <= MAX_MODULE_LINES, "split this module along a natural seam"
    long = [
        f"{node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def test_the_package_top_holds_only_what_design_md_lists() -> None:
    top = sorted(p.stem for p in SRC.glob("*.py"))
    assert top == [
        "__init__",
        "api",
        "errors",
        "events",
        "gates",
        "prompts",
        "secrets",
        "simulator",
        "target_specs",
        "transcript",
    ]
    # DESIGN.md's scenario.py, config.py and results.py are packages of the same import path
    assert all((SRC / name / "__init__.py").is_file() for name in ("scenario", "config", "results"))


def test_import_sparring_gives_the_public_names_lazily() -> None:
    code = (
        "import sys, sparring; before = sorted(m for m in sys.modules if m.startswith("
        "('sparring.', 'pydantic'))); from sparring import Suite, CustomerMessage, "
        "AgentMessage, InteractionBuilder, open_session; print(before, Suite.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[] Suite", done.stderr


def test_the_public_names_are_pinned() -> None:
    import sparring
    import sparring.api

    assert sparring.__all__ == [
        "AgentMessage",
        "ConditionsNotMet",
        "ConditionsUndecided",
        "CustomerMessage",
        "Evaluation",
        "HookError",
        "Insight",
        "InteractionBuilder",
        "Library",
        "Response",
        "Session",
        "SimulatedUser",
        "Suite",
        "SuiteRun",
        "ToolArgsJudge",
        "TrialRange",
        "__version__",
        "load_library",
        "open_session",
    ]
    assert [n for n in sparring.__all__ if n != "__version__"] == sparring.api.__all__
    for name in sparring.api.__all__:
        assert getattr(sparring, name) is getattr(sparring.api, name)
    with pytest.raises(AttributeError, match="no attribute 'Suit'"):
        _ = sparring.Suit  # pyright: ignore[reportAttributeAccessIssue]


def test_the_framework_adapters_earlier_import_path_still_works() -> None:
    from sparring.adapters.langchain import LangChainAdapter
    from sparring.targets.adapters.langchain import LangChainAdapter as Moved

    assert LangChainAdapter is Moved
