"""`llms.txt` (the reference for coding agents) stays true: every YAML block loads, the
Python block runs up to defining its tests, and the check and target names it lists exist."""

from __future__ import annotations

import re
from pathlib import Path

from sparring.loaders.yaml import load_text
from sparring.scenario import CHECK_TYPES

ROOT = Path(__file__).resolve().parent.parent
TEXT = (ROOT / "llms.txt").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, flags=re.S)


def test_every_yaml_block_loads_as_written() -> None:
    found = blocks("yaml")
    assert len(found) == 3
    loaded = [load_text(block, path="llms.txt") for block in found]
    assert [s.id for s in loaded[0]] == [
        "order-status",
        "refund-window",
        "impatient-customer",
        "greeting-then-simulated",
    ]
    assert [s.id for s in loaded[1]] == ["refund[late-order]", "refund[2]"]
    assert [(s.id, s.kind) for s in loaded[2]] == [("discount-code", "red_team")]


def test_the_python_block_defines_its_tests() -> None:
    (block,) = blocks("python")
    namespace: dict[str, object] = {"__name__": "llms_example"}
    exec(compile(block, "llms.txt", "exec"), namespace)  # noqa: S102 - our own document
    assert callable(namespace["test_return_policy"])
    assert callable(namespace["test_refund_flow"])
    assert callable(namespace["test_written_then_simulated"])
    assert callable(namespace["test_known_gap"])


def test_the_check_names_it_lists_are_sparrings() -> None:
    line = next(line for line in TEXT.splitlines() if line.startswith("Checks:"))
    paragraph = TEXT[TEXT.index(line) : TEXT.index("\n\n", TEXT.index(line))]
    listed = set(re.findall(r"`([a-z_]+)`", paragraph)) - {"include", "exclude", "ordered"}
    listed -= {"args", "match", "turn"}
    assert listed == set(CHECK_TYPES) - {"subset"}
