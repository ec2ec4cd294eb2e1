"""The JSON Schema of test files, as accepted by the loader (for `sparring schema`, editors).

Pydantic's schema of `TestFile` describes the validated shape; test files may also use the
loader's shorthands, so the schema is widened to accept them: checks written as
`{contains: "x"}`, criteria as plain text, `should` and `end_reason` as one string,
`tool_args_judge` as one rubric, thresholds as `80` or `"80%"`, and a whole file that is
one scenario. A library file
(`evaluations:` and `simulated_users:` only, `sparring.loaders.library`) is accepted too, and
so is a `sparring redteam` file (`target:` and `redteam:`, no `scenarios:`).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from sparring.loaders._library_file import LibraryFile
from sparring.loaders.cases import case_properties
from sparring.scenario import CHECK_TYPES, RedTeamSettings, TestFile, expand_check_shorthand

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SCENARIO_DEFS = ("SimulatedScenario", "ScriptedScenario", "SingleTurnScenario", "RedTeamScenario")
_CRITERIA = ("criteria", "restrictions")


def test_file_json_schema() -> dict[str, Any]:
    """JSON Schema (draft 2020-12) of a sparring test file.

    Returns:
        A fresh dict: a file is a test set (`target` + `scenarios`), one scenario, a
        library file or a red-team file; check, criterion, `should` and threshold
        shorthands are included.
    """
    return copy.deepcopy(_schema())


test_file_json_schema.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


@functools.cache
def _schema() -> dict[str, Any]:
    base = TestFile.model_json_schema()
    defs: dict[str, Any] = base.pop("$defs")
    test_set: dict[str, Any] = {**base, "title": "Test set"}
    defs["TestSet"] = test_set
    check_names = _check_def_names(defs)
    _one_or_many(defs[check_names[CHECK_TYPES.index("end_reason")]]["properties"], "value")
    tool_called = defs[check_names[CHECK_TYPES.index("tool_called")]]["properties"]
    for key in ("include", "exclude"):  # `tool_called: lookup_order`
        _one_or_many(tool_called, key)
    check_refs = [f"#/$defs/{name}" for name in check_names]
    defs["Check"] = _check_schema(defs, check_refs)
    defs["Scenario"] = {"oneOf": [{"$ref": f"#/$defs/{n}"} for n in _SCENARIO_DEFS]}
    test_set["properties"]["scenarios"]["items"] = {"$ref": "#/$defs/Scenario"}
    for name in (*_SCENARIO_DEFS, "ScriptedTurn"):
        _widen(defs[name]["properties"])
    for name in _SCENARIO_DEFS:  # a scenario template over rows (sparring.loaders.cases)
        defs[name]["properties"].update(case_properties())
    library = LibraryFile.model_json_schema()
    for name, definition in library.pop("$defs").items():
        defs.setdefault(name, definition)  # Evaluation and Insight: as in scenarios
    defs["Library"] = {**library, "title": "Library file", "minProperties": 1}
    defs["RedTeamSettings"] = RedTeamSettings.model_json_schema()
    for key in ("plugins", "strategies"):  # `strategies: plain`, as the loader takes
        _one_or_many(defs["RedTeamSettings"]["properties"], key)
    red_team = defs["RedTeamScenario"]
    red_team["required"] = [*red_team["required"], "kind"]  # as the loader: only by `kind:`
    for key in ("plugins", "strategy"):
        _one_or_many(red_team["properties"], key)
    defs["RedTeamFile"] = _red_team_file(test_set["properties"]["target"])
    return {
        "$schema": DIALECT,
        "title": "sparring test file",
        "description": "A test set (`target` + `scenarios`), one scenario with its own "
        "`target`, a library file of `evaluations` and `simulated_users` used by name, "
        "or a `sparring redteam` file (`target` + `redteam`). "
        "Written in YAML or JSON.",
        "anyOf": [
            {"$ref": "#/$defs/TestSet"},
            {"$ref": "#/$defs/Scenario"},
            {"$ref": "#/$defs/Library"},
            {"$ref": "#/$defs/RedTeamFile"},
        ],
        "$defs": defs,
    }


def _red_team_file(target: dict[str, Any]) -> dict[str, Any]:
    """A `sparring redteam` file: `target:` and the `redteam:` settings, no scenarios."""
    return {
        "type": "object",
        "title": "Red-team file",
        "properties": {"target": target, "redteam": {"$ref": "#/$defs/RedTeamSettings"}},
        "required": ["target"],
        "additionalProperties": False,
    }


def _check_def_names(defs: dict[str, Any]) -> list[str]:
    """Names of the check models' definitions, in `CHECK_TYPES` order."""
    by_type = {
        d["properties"]["type"].get("const"): name
        for name, d in defs.items()
        if "type" in d.get("properties", {}) and "turn" in d["properties"]
    }
    return [by_type[t] for t in CHECK_TYPES]


def _one_or_many(props: dict[str, Any], key: str) -> None:
    """Let the list property `key` also be written as one item (`end_reason: max_turns`)."""
    listed = props[key]
    item = listed.pop("items")
    props[key] = {
        "title": listed.pop("title"),
        "anyOf": [item, {**listed, "items": item}],
    }


def _check_schema(defs: dict[str, Any], refs: list[str]) -> dict[str, Any]:
    """A check: the full form (with `type:`) or the shorthand `{<type>: body, ...}`."""
    forms: list[dict[str, Any]] = []
    for check_type, ref in zip(CHECK_TYPES, refs, strict=True):
        full = defs[ref.rsplit("/", 1)[1]]
        full["required"] = ["type", *full.get("required", [])]
        forms.append({"$ref": ref})
        forms.append(_shorthand(check_type, full))
    return {
        "description": "A deterministic check: `{type: contains, value: x}` or the "
        "shorthand `{contains: x}`.",
        "anyOf": forms,
    }


def _shorthand(check_type: str, full: dict[str, Any]) -> dict[str, Any]:
    """`{contains: "x", turn: 2}` / `{contains: {value: "x"}}`, per `expand_check_shorthand`."""
    props = {k: v for k, v in full["properties"].items() if k != "type"}
    expanded = expand_check_shorthand({check_type: "x"})
    field = next(k for k in expanded if k != "type")
    as_object = {
        "type": "object",
        "properties": props,
        "additionalProperties": False,
        "required": [r for r in full.get("required", []) if r != "type"],
    }
    if check_type == "json_schema":  # a body without `schema:` is the schema itself
        body = [props[field]]
    elif props[field].get("type") == "object":  # a mapping body is always spread
        body = [as_object]
    else:
        body = [props[field], as_object]
    rest = {k: v for k, v in props.items() if k != field}
    return {
        "type": "object",
        "title": f"{check_type} (shorthand)",
        "properties": {check_type: {"anyOf": body}, **rest},
        "required": [check_type],
        "additionalProperties": False,
    }


_THRESHOLD = {
    "description": "Pass rate required across trials: 0.8, 80 or '80%'.",
    "default": 1.0,
    "anyOf": [
        {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
        {"type": "number", "minimum": 10, "maximum": 100},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*%?\s*$"},
    ],
}


def _widen(props: dict[str, Any]) -> None:
    """Accept the loader's shorthands in one scenario's (or turn's) properties."""
    if "checks" in props:
        props["checks"]["items"] = {"$ref": "#/$defs/Check"}
    if "should" in props:
        props["should"] = {**props["should"], "type": ["array", "string"]}
    if "threshold" in props:
        props["threshold"] = _THRESHOLD
    if "tool_args_judge" in props:  # `tool_args_judge: {tool: ..., rubric: ...}`
        _one_or_many(props, "tool_args_judge")
    for key in _CRITERIA:
        if key in props:
            props[key]["items"] = {
                "anyOf": [{"type": "string", "minLength": 1}, {"$ref": "#/$defs/Criterion"}]
            }
