"""Plainwright conversation-test JSON files, read as sparring simulated scenarios.

A file is recognised by its shape: a top-level `config:` mapping (with `kind`,
`natural_language`, `name`, `trials` beside it). It becomes one simulated scenario::

    name                     ->  name, and the id (the name in lower case, words joined by -)
    natural_language         ->  description (the judge's context; the goal when none)
    trials                   ->  trials (1-10)
    config.persona / goal / opening_message / max_turns (1-12)  ->  the same
    config.success_criteria  ->  criteria (at most 20, each at most 500 characters)
    config.threshold         ->  threshold (default 80%, Plainwright's pass mark)
    config.target            ->  target: `url` means http, `agent_url` means a2a

Plainwright's defaults apply: persona "A typical first-time user of this product.", goal the
description else "Get help with a typical request.", max_turns 6, the criterion "The
assistant helps the user achieve their goal: <goal>" when none is given. A website chat
target (no `url` or `agent_url`, `type: browser`, or no target at all) is a `browser`
target (`chat_url`, `chat_hint`; without `chat_url`, the `site_url` setting). An A2A
target's `timeout_s` must be 1-300 as in Plainwright; its `rpc_url` is accepted and not
used (a note says so): sparring reads the agent card at `agent_url` and sends messages to
the endpoint the card names.
"""

from __future__ import annotations

import re
from typing import Any, cast

from sparring.loaders._moves import Move, moved
from sparring.loaders._parse import Document, Loc, is_mapping
from sparring.loaders.dialects._common import note, unknown_keys
from sparring.loaders.errors import Problem

DIALECT = "a Plainwright conversation test"
TOP_KEYS = ("module_id", "id", "name", "kind", "natural_language", "trials", "config")
CONFIG_KEYS = (
    "target",
    "persona",
    "goal",
    "opening_message",
    "success_criteria",
    "max_turns",
    "threshold",
)
HTTP_KEYS = ("type", "url", "method", "headers", "body_template", "response_path", "timeout_s")
A2A_KEYS = ("type", "agent_url", "headers", "rpc_url", "timeout_s")
A2A_TIMEOUT_S = (1, 300)
BROWSER_KEYS = ("type", "chat_url", "chat_hint")
MAX_TURNS = (1, 12)
TRIALS = (1, 10)
MAX_CRITERIA = 20
MAX_CRITERION_CHARS = 500
DEFAULT_GOAL = "Get help with a typical request."
DEFAULT_THRESHOLD = 0.8


def recognises(data: dict[str, Any]) -> bool:
    """Whether a top-level mapping is a Plainwright test (it has a `config:` mapping)."""
    return "scenarios" not in data and is_mapping(data.get("config"))


def to_native(doc: Document, *, path: str) -> tuple[Document, list[Problem]]:
    """The conversation test in `doc` as one native simulated scenario (positions kept).

    Returns:
        The native document, or the problems: unknown keys (with did-you-mean), a kind
        other than `conversation`, values outside Plainwright's limits, a website chat or
        unknown target type.
    """
    data: dict[str, Any] = doc.data
    config: dict[str, Any] = data["config"]
    problems = unknown_keys(data, (), TOP_KEYS, doc=doc, path=path, dialect=DIALECT)
    problems += unknown_keys(config, ("config",), CONFIG_KEYS, doc=doc, path=path, dialect=DIALECT)
    if data.get("kind", "conversation") != "conversation":
        problems.append(
            Problem(
                path,
                *doc.position(("kind",), value=True),
                f"Plainwright test kind {data['kind']!r} is not supported; sparring reads "
                "conversation tests (`kind: conversation`)",
            )
        )
    problems += _limits(data, config, doc=doc, path=path)
    native, moves = _scenario(data, config)
    target, trouble = _target(config.get("target"), doc=doc, path=path)
    problems += trouble
    native["target"] = target
    moves.append((("config", "target"), ("target",)))
    if problems:
        return doc, problems
    return moved(doc, native, moves), []


def _scenario(data: dict[str, Any], config: dict[str, Any]) -> tuple[dict[str, Any], list[Move]]:
    native: dict[str, Any] = {"kind": "simulated"}
    moves: list[Move] = [(("kind",), ("kind",))]
    name = data.get("name")
    native["id"] = data.get("id") or slug(name if isinstance(name, str) else "conversation")
    moves.append(((("id",) if "id" in data else ("name",)), ("id",)))
    for old, new in (("name", "name"), ("natural_language", "description"), ("trials", "trials")):
        if old in data:
            native[new] = data[old]
            moves.append(((old,), (new,)))
    for key, new in (
        ("persona", "persona"),
        ("goal", "goal"),
        ("opening_message", "opening_message"),
        ("success_criteria", "criteria"),
        ("max_turns", "max_turns"),
        ("threshold", "threshold"),
    ):
        if key in config:
            native[new] = config[key]
            moves.append((("config", key), (new,)))
    native.setdefault("threshold", DEFAULT_THRESHOLD)
    if not (native.get("goal") or native.get("description")):
        native["goal"] = DEFAULT_GOAL
    return native, moves


def slug(name: str) -> str:
    """A scenario id from a test name: `Refund request is handled politely` ->
    `refund-request-is-handled-politely` (at most 128 characters)."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    return "-".join(words)[:128].strip("-") or "conversation"


def _limits(
    data: dict[str, Any], config: dict[str, Any], *, doc: Document, path: str
) -> list[Problem]:
    """Plainwright's limits: trials 1-10, max_turns 1-12, 20 criteria of 500 characters."""
    problems: list[Problem] = []
    for owner, loc, (low, high) in (
        (data, ("trials",), TRIALS),
        (config, ("config", "max_turns"), MAX_TURNS),
    ):
        value = owner.get(loc[-1])
        if isinstance(value, int) and not isinstance(value, bool) and not low <= value <= high:
            problems.append(
                Problem(
                    path,
                    *doc.position(loc, value=True),
                    f"{loc[-1]} is {value}; Plainwright allows {low} to {high}",
                )
            )
    criteria = config.get("success_criteria")
    if isinstance(criteria, list) and len(criteria) > MAX_CRITERIA:  # pyright: ignore[reportUnknownArgumentType]
        problems.append(
            Problem(
                path,
                *doc.position(("config", "success_criteria")),
                f"{len(criteria)} success criteria; Plainwright allows at most {MAX_CRITERIA}: "  # pyright: ignore[reportUnknownArgumentType]
                "split the test in two",
            )
        )
    for k, text in enumerate(criteria if isinstance(criteria, list) else []):  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
        if isinstance(text, str) and len(text) > MAX_CRITERION_CHARS:
            problems.append(
                Problem(
                    path,
                    *doc.position(("config", "success_criteria", k)),
                    f"success criterion {k + 1} has {len(text)} characters; Plainwright "
                    f"allows at most {MAX_CRITERION_CHARS}: shorten it or split it in two",
                )
            )
    return problems


def _target(target: Any, *, doc: Document, path: str) -> tuple[Any, list[Problem]]:
    """The sparring target spec of `config.target`, with Plainwright's type inference."""
    loc: Loc = ("config", "target")
    kind = target.get("type") if is_mapping(target) else None
    if is_mapping(target) and kind is None:
        kind = "http" if "url" in target else "a2a" if "agent_url" in target else "browser"
    if target is None:  # the website chat on the site_url setting
        return {"type": "browser"}, []
    if kind == "browser":
        problems = unknown_keys(target, loc, BROWSER_KEYS, doc=doc, path=path, dialect=DIALECT)
        return {**target, "type": "browser"}, problems
    if kind == "http":
        problems = unknown_keys(target, loc, HTTP_KEYS, doc=doc, path=path, dialect=DIALECT)
        return {**target, "type": "http"}, problems
    if kind == "a2a":
        return _a2a(target, doc=doc, path=path)
    return None, [
        Problem(
            path,
            *doc.position((*loc, "type"), value=True),
            f"target type {kind!r} is not one sparring reads from Plainwright tests; use "
            "http (a `url`), a2a (an `agent_url`) or browser (a `chat_url`)",
        )
    ]


def _a2a(target: dict[str, Any], *, doc: Document, path: str) -> tuple[Any, list[Problem]]:
    """An A2A target: `agent_url` as `url`, `timeout_s` within 1-300; `rpc_url` noted."""
    loc: Loc = ("config", "target")
    problems = unknown_keys(target, loc, A2A_KEYS, doc=doc, path=path, dialect=DIALECT)
    timeout = target.get("timeout_s")
    low, high = A2A_TIMEOUT_S
    number = isinstance(timeout, int | float) and not isinstance(timeout, bool)
    if number and not low <= cast(float, timeout) <= high:
        problems.append(
            Problem(
                path,
                *doc.position((*loc, "timeout_s"), value=True),
                f"timeout_s is {timeout}; Plainwright allows {low} to {high} seconds per "
                "request to an A2A agent",
            )
        )
    if "rpc_url" in target and not problems:
        note(
            f"rpc_url {target['rpc_url']!r} is not used: sparring reads the agent card at "
            "agent_url and sends messages to the endpoint the card names",
            path=path,
            line=doc.position((*loc, "rpc_url"))[0],
        )
    spec = {k: v for k, v in target.items() if k not in ("agent_url", "rpc_url")}
    return {**spec, "type": "a2a", "url": target.get("agent_url")}, problems
