"""Where a pydantic error is in a test file, and which model holds that place.

Pydantic reports locations such as `('scenarios', 0, 'simulated', 'checks', 1, 'contains',
'value')`: the discriminated-union tags (`simulated`, `contains`) are not keys in the file.
`place_of` walks such a location through the parsed data, drops the tags and says which
model's keys are allowed there; `describe` names a model as the reader knows it.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel

from sparring import scenario as sc
from sparring import target_specs as ts
from sparring.loaders._library_file import LibraryFile
from sparring.loaders._parse import Loc, is_mapping
from sparring.scenario import evaluations as ev

# --- the models behind each place in a file ---------------------------------------------

SCENARIOS: dict[str, type[BaseModel]] = {
    "simulated": sc.SimulatedScenario,
    "scripted": sc.ScriptedScenario,
    "single_turn": sc.SingleTurnScenario,
    "red_team": sc.RedTeamScenario,
}
CHECKS: dict[str, type[BaseModel]] = {
    m.model_fields["type"].default: m
    for m in (
        sc.ContainsCheck,
        sc.NotContainsCheck,
        sc.RegexCheck,
        sc.NotRegexCheck,
        sc.NotPiiCheck,
        sc.EqualsCheck,
        sc.JsonSchemaCheck,
        sc.ToolCalledCheck,
        sc.ToolArgsCheck,
        sc.LatencyBelowCheck,
        sc.EndReasonCheck,
    )
}
TARGETS: dict[str, type[BaseModel]] = {
    "http": ts.HttpTargetSpec,
    "openai_chat": ts.OpenAIChatTargetSpec,
    "callable": ts.CallableTargetSpec,
    "a2a": ts.A2ATargetSpec,
    "parlant": ts.ParlantTargetSpec,
    "voice": ts.VoiceTargetSpec,
    "browser": ts.BrowserTargetSpec,
}
_FAMILIES = (SCENARIOS, CHECKS, TARGETS)
_ITEM_MODELS: dict[str, type[BaseModel]] = {
    "turns": sc.ScriptedTurn,
    "criteria": sc.Criterion,
    "restrictions": sc.Criterion,
    "evaluations": ev.Evaluation,
    "insights": ev.Insight,
    "simulated_users": ev.SimulatedUser,
    "tool_args_judge": ev.ToolArgsJudge,
}
_MEMBER_TAGS: dict[str, type[BaseModel]] = {"Evaluation": ev.Evaluation}
"""Union members pydantic names in a location (`evaluations: [NAME | mapping]`)."""
_NOUN = {
    "simulated": "simulated scenario",
    "scripted": "scripted scenario",
    "single_turn": "single-turn scenario",
    "red_team": "red-team scenario",
}


def allowed_keys(model: type[BaseModel]) -> list[str]:
    """Keys a test file may use for `model` (aliases where set; `source` is the loader's)."""
    return [f.alias or name for name, f in model.model_fields.items() if name != "source"]


def describe(model: type[BaseModel]) -> str:
    """A model as the reader knows it: 'simulated scenario', 'regex check', 'http target'."""
    for family, noun in ((SCENARIOS, "scenario"), (CHECKS, "check"), (TARGETS, "target")):
        for tag, m in family.items():
            if m is model:
                return _NOUN.get(tag, f"{tag} {noun}")
    return _OTHER_NOUNS.get(model, model.__name__)


_OTHER_NOUNS: dict[type[BaseModel], str] = {
    sc.ScriptedTurn: "scripted turn",
    sc.Criterion: "criterion",
    sc.TestFile: "test file",
    ev.Evaluation: "evaluation",
    ev.Insight: "insight",
    ev.SimulatedUser: "simulated user",
    ev.ToolArgsJudge: "tool-args judge",
    LibraryFile: "library file",
}


def family_of(model: type[BaseModel]) -> dict[str, type[BaseModel]]:
    """The models `model` is one of (`SCENARIOS`, `CHECKS` or `TARGETS`; `{}` for none)."""
    empty: dict[str, type[BaseModel]] = {}
    return next((f for f in _FAMILIES if model in f.values()), empty)


def why_kind(model: type[BaseModel], node: Any) -> str:
    """Why the loader read `node` as `model`: the explicit tag or the key that implied it."""
    node = node if is_mapping(node) else {}
    family = family_of(model)
    if family is SCENARIOS:
        if "kind" in node:
            return f"it says `kind: {node['kind']}`"
        return next(
            (f"it has `{k}:`" for k in ("turns", "prompt") if k in node),
            "it has neither `turns:` nor `prompt:`",
        )
    if "type" in node:
        return f"it says `type: {node['type']}`"
    if family is CHECKS:
        return f"it is written as `{model.model_fields['type'].default}:`"
    return next((f"it has `{k}:`" for k in ("url", "ref", "base_url") if k in node), "")


def closest(word: str, choices: Sequence[str]) -> str | None:
    """The choice most like `word` (difflib ratio >= 0.6), or None."""
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return found[0] if found else None


# --- walking a pydantic location through the data ----------------------------------------


@dataclass(frozen=True)
class Place:
    """A place in a test file that pydantic's location points to."""

    loc: Loc
    """The part of pydantic's location that exists in the data."""
    model: type[BaseModel] | None
    """Model of the value at `loc` (when it is a mapping validated by a model)."""
    parent: type[BaseModel] | None
    """Model of the mapping that holds `loc[-1]`."""


def _is_tag(loc: Sequence[Any], i: int, *, single: bool) -> bool:
    seg = loc[i]
    if not isinstance(seg, str):
        return False
    if i == 0:
        return single and seg in SCENARIOS
    if loc[i - 1] == "target":
        return seg in TARGETS
    if i >= 2 and isinstance(loc[i - 1], int):
        if loc[i - 2] == "evaluations" and seg in _MEMBER_TAGS:
            return True
        return (loc[i - 2] == "scenarios" and seg in SCENARIOS) or (
            loc[i - 2] == "checks" and seg in CHECKS
        )
    return False


def place_of(
    loc: Sequence[Any],
    data: Any,
    *,
    single: bool,
    missing: bool,
    root: type[BaseModel] | None = None,
) -> Place:
    """Walk pydantic's `loc` through `data` (the parsed document), dropping union tags.

    `single`: the document is one scenario, not a test file; `missing`: the error is a
    missing key (a shorthand check's body is then the place); `root`: the model of the
    whole document when it is neither (a `LibraryFile`).
    """
    node: Any = data
    found: list[str | int] = []
    model: type[BaseModel] | None = root or (None if single else sc.TestFile)
    parent: type[BaseModel] | None = None
    for i, seg in enumerate(loc):
        if _is_tag(loc, i, single=single):
            model = {**SCENARIOS, **CHECKS, **TARGETS, **_MEMBER_TAGS}[seg]
            continue
        ok, child = _child(node, seg)
        if ok:
            parent, model = model, _child_model(found, seg)
            found.append(seg)
            node = child
            continue
        if isinstance(seg, str) and not is_mapping(node):
            continue  # a union member's tag such as `str` or `list[str]`, not a key
        shorthand = _shorthand_body(node, model, seg, missing=missing)
        if shorthand is None:
            break
        found.append(shorthand)  # {contains: "x"} or {contains: {value: "x"}}
        node = _child(node, shorthand)[1]
        ok, child = _child(node, seg)
        if ok:
            found.append(seg)
            node = child
        if ok or not is_mapping(node):  # a non-mapping body is field `seg` itself
            parent, model = model, None
    return Place(tuple(found), model, parent)


def _child(node: Any, seg: Any) -> tuple[bool, Any]:
    """`(True, node[seg])` when `seg` is a key or index in `node`, else `(False, None)`."""
    if is_mapping(node) and isinstance(seg, str) and seg in node:
        return True, node[seg]
    if isinstance(node, list) and isinstance(seg, int):
        items = cast(list[Any], node)
        if 0 <= seg < len(items):
            return True, items[seg]
    return False, None


def _child_model(found: list[Any], seg: Any) -> type[BaseModel] | None:
    if isinstance(seg, int) and found and isinstance(found[-1], str):
        return _ITEM_MODELS.get(found[-1])
    return None


def _shorthand_body(
    node: Any, model: type[BaseModel] | None, seg: Any, *, missing: bool
) -> str | None:
    """The check-type key of a shorthand check whose body holds field `seg`."""
    if model is None or model not in CHECKS.values() or not is_mapping(node):
        return None
    tag = model.model_fields["type"].default
    body = node.get(tag)
    if is_mapping(body):
        return tag if seg in body or missing else None
    return tag if tag in node and not missing else None


def yaml_path(loc: Loc) -> str:
    """`("scenarios", 2, "checks", 0)` -> `scenarios[2].checks[0]`; `()` -> `the top level`."""
    out = ""
    for seg in loc:
        out += f"[{seg}]" if isinstance(seg, int) else (f".{seg}" if out else str(seg))
    return out or "the top level"
