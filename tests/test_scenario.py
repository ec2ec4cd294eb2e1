"""Schema rules of `sparring.scenario` that need no file: checks, urls, criterion ids."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from sparring.scenario import (
    Check,
    Criterion,
    JsonSchemaCheck,
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
    expand_check_shorthand,
    parse_threshold,
)
from sparring.target_specs import HttpTargetSpec, OpenAIChatTargetSpec

_CHECK: TypeAdapter[Any] = TypeAdapter(Check)


def check(spec: dict[str, Any]) -> Any:
    return _CHECK.validate_python(expand_check_shorthand(spec))


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"contains": []}, "`contains: []` lists no text, so this check could never fail"),
        ({"contains": ""}, "every reply contains the empty text, so this check could never fail"),
        ({"contains": ["refund", ""]}, "every reply contains the empty text"),
        ({"not_contains": []}, "`not_contains: []` lists no text, so this check could never fail"),
        (
            {"not_contains": ""},
            "every reply contains the empty text, so this check could never pass",
        ),
        ({"tool_called": {}}, "tool_called names no tool in `include` or `exclude`"),
        ({"tool_called": []}, "tool_called names no tool in `include` or `exclude`"),
        ({"tool_called": [""]}, "tool_called has an empty tool name"),
        ({"tool_args": {"tool": "", "args": {}}}, "`tool` is empty; name the tool"),
        ({"regex": ""}, "an empty pattern matches every reply"),
        ({"contains": "x", "turn": 0}, "there is no turn 0: turns count from 1"),
    ],
)
def test_checks_that_can_never_fail_or_pass_are_rejected(spec: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError, match=says.replace("(", r"\(").replace("[", r"\[")):
        check(spec)


@pytest.mark.parametrize(
    "spec",
    [
        {"contains": "refund"},
        {"contains": ["a", "b"]},
        {"not_contains": "card number"},
        {"tool_called": {"exclude": ["refund"]}},
        {"tool_called": ["lookup"]},
        {"tool_args": {"tool": "lookup", "args": {}}},
        {"regex": "^$"},
        {"contains": "x", "turn": -1},
        {"contains": "x", "turn": 1},
    ],
)
def test_checks_that_can_fail_are_kept(spec: dict[str, Any]) -> None:
    assert check(spec).type in spec


def test_invalid_json_schema_names_the_problem_and_where() -> None:
    with pytest.raises(
        ValidationError,
        match=r"invalid JSON Schema at `schema\.type`: 5 is "
        "not valid under any of the given schemas",
    ):
        check({"json_schema": {"type": 5}})
    with pytest.raises(ValidationError, match=r"at `schema\.properties\.a\.minLength`"):
        check({"json_schema": {"properties": {"a": {"minLength": -1}}}})


def test_json_schema_follows_its_declared_dialect() -> None:
    draft7_tuple = {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "items": [{"type": "string"}],
    }  # an array `items` is draft 7 only
    assert check({"json_schema": draft7_tuple}).schema_ == draft7_tuple
    with pytest.raises(ValidationError, match="invalid JSON Schema at `schema.items`"):
        check({"json_schema": {"items": [{"type": "string"}]}})  # 2020-12 by default
    with pytest.raises(ValidationError, match=r"at `schema\.\$schema`: 3 is not of type"):
        JsonSchemaCheck(schema={"$schema": 3})


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8787/chat",
        "https://chat.example.com/api",
        "HTTPS://EXAMPLE.COM",
        "{{secrets.BASE_URL}}/chat",
    ],
)
def test_http_urls_and_leading_placeholders_are_accepted(url: str) -> None:
    assert HttpTargetSpec(url=url).url == url
    assert OpenAIChatTargetSpec(base_url=url, model="m").base_url == url


@pytest.mark.parametrize(
    ("url", "says"),
    [
        (
            "chat.example.com/api",
            "url 'chat.example.com/api' is not an HTTP address (it has no "
            "scheme); start the url with http:// or https://, e.g. 'https://chat.example.com/api'",
        ),
        (
            "ftp://files.example.com/x",
            "(it starts with ftp://); start the url with http:// or https://",
        ),
        ("localhost:8000/chat", "e.g. 'http://localhost:8000/chat'"),
        ("http://", "url 'http://' has no host after http://"),
        ("chat/{{secrets.PATH}}", "start the url with http:// or https://"),
    ],
)
def test_other_urls_are_rejected_with_the_fix(url: str, says: str) -> None:
    with pytest.raises(ValidationError) as info:
        HttpTargetSpec(url=url)
    assert says in str(info.value)
    with pytest.raises(ValidationError, match="base_url .* start the url with http://"):
        OpenAIChatTargetSpec(base_url=url.replace("http://", "ws://"), model="m")


@pytest.mark.parametrize(
    ("criterion_id", "reserved_for"),
    [
        ("t1.should1", "should assertions"),
        ("t12.should3", "should assertions"),
        ("check1", "checks"),
        ("t2.check4", "checks"),
    ],
)
def test_ids_sparring_generates_are_reserved(criterion_id: str, reserved_for: str) -> None:
    with pytest.raises(
        ValidationError,
        match=(rf"id '{criterion_id}' is reserved for {reserved_for}; pick another id"),
    ):
        Criterion(id=criterion_id, text="Is polite")


@pytest.mark.parametrize("criterion_id", ["c1", "check", "t1.should", "my.check1", "should1"])
def test_ids_like_generated_ones_are_allowed(criterion_id: str) -> None:
    assert Criterion(id=criterion_id, text="Is polite").id == criterion_id


# --- $ref in json_schema checks ----------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (
            {"$ref": "#/definitions/nope"},
            "`$ref: '#/definitions/nope'` points to nothing: the schema has no `#/definitions`",
        ),
        (
            {"$defs": {"a": {"type": "string"}}, "items": {"$ref": "#/$defs/b"}},
            "the schema has no `#/$defs/b`",
        ),
        (
            {"$ref": "https://example.com/order.json"},
            "points outside the schema, and sparring does not fetch schemas from files or URLs",
        ),
        ({"$ref": "order.json#/x"}, "points outside the schema"),
        ({"$ref": "#order"}, "is not a `#/...` JSON pointer into the schema"),
        (
            {"properties": {"a": {"$ref": "#/properties/b/items/3"}}, "b": 1},
            "the schema has no `#/properties/b`;",
        ),
    ],
)
def test_unresolvable_ref_is_rejected_at_load_time(schema: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as info:
        check({"json_schema": schema})
    assert says in str(info.value)
    assert 'write `$ref: "#/$defs/<name>"`' in str(info.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"id": {"type": "integer"}}, "properties": {"id": {"$ref": "#/$defs/id"}}},
        {
            "definitions": {"a~b": {"type": "string"}, "c/d": {}},
            "anyOf": [{"$ref": "#/definitions/a~0b"}, {"$ref": "#/definitions/c~1d"}],
        },
        {
            "items": [{"type": "string"}],
            "properties": {"x": {"$ref": "#/items/0"}},
            "$schema": "http://json-schema.org/draft-07/schema#",
        },
        {"type": "object", "properties": {"child": {"$ref": "#"}}},
        {"$defs": {"a b": {}}, "$ref": "#/$defs/a%20b"},
        {"const": {"$ref": "not a reference, just data"}},
        {"properties": {"$ref": {"type": "string"}}},
    ],
)
def test_local_refs_that_resolve_are_kept(schema: dict[str, Any]) -> None:
    assert isinstance(check({"json_schema": schema}), JsonSchemaCheck)


# --- turns that checks look at ---------------------------------------------------------


def scripted(*turns: dict[str, Any], checks: list[Any] | None = None) -> ScriptedScenario:
    return ScriptedScenario.model_validate(
        {"id": "s", "turns": list(turns), "checks": checks or []}
    )


def test_check_in_a_turn_cannot_look_at_a_later_turn() -> None:
    with pytest.raises(ValidationError) as info:
        scripted({"user": "hi", "checks": [{"contains": "x", "turn": 2}]}, {"user": "bye"})
    assert (
        "turns[0].checks[0] looks at turn 2, but a check in turn 1 can only look at turns "
        "1..1 (or negative turns); move it to turn 2's checks or to the scenario's "
        "`checks:`"
    ) in str(info.value)


def test_check_in_a_turn_past_the_last_turn_says_how_many_turns() -> None:
    with pytest.raises(
        ValidationError,
        match="turns 1..2 .or negative turns.; the scenario has only 2 scripted turns",
    ):
        scripted({"user": "a"}, {"user": "b", "checks": [{"regex": "x", "turn": 3}]})


def test_check_in_a_turn_cannot_look_back_before_turn_1() -> None:
    with pytest.raises(
        ValidationError,
        match=r"turns\[1\].checks\[1\] looks at turn -3, but "
        "a check in turn 2 runs when only 2 turns exist",
    ):
        scripted(
            {"user": "a"},
            {"user": "b", "checks": [{"contains": "x"}, {"contains": "y", "turn": -3}]},
        )


def test_checks_in_turns_that_can_see_their_turn_are_kept() -> None:
    scenario = scripted(
        {"user": "a"},
        {
            "user": "b",
            "checks": [
                {"contains": "x", "turn": 1},
                {"contains": "y", "turn": 2},
                {"contains": "z", "turn": -2},
            ],
        },
        checks=[{"contains": "w", "turn": 2}, {"contains": "v", "turn": -2}],
    )
    assert len(scenario.turns[1].checks) == 3 and len(scenario.checks) == 2


@pytest.mark.parametrize("turn", [3, -3])
def test_scenario_check_past_the_scripted_turns_is_rejected(turn: int) -> None:
    with pytest.raises(
        ValidationError,
        match=f"checks.0. looks at turn {turn}, but the "
        "scenario has 2 scripted turns; use a turn from "
        "1 to 2 .or -1 to -2.",
    ):
        scripted({"user": "a"}, {"user": "b"}, checks=[{"contains": "x", "turn": turn}])


@pytest.mark.parametrize("turn", [2, -2])
def test_single_turn_scenario_checks_only_turn_1(turn: int) -> None:
    base = {"id": "q", "prompt": "p"}
    with pytest.raises(
        ValidationError, match=f"looks at turn {turn}, but a single-turn scenario has only turn 1"
    ):
        SingleTurnScenario.model_validate(base | {"checks": [{"contains": "x", "turn": turn}]})
    for ok in (1, -1):
        SingleTurnScenario.model_validate(base | {"checks": [{"contains": "x", "turn": ok}]})


def test_simulated_scenario_check_past_max_turns_is_rejected() -> None:
    base = {"id": "sim", "goal": "g", "max_turns": 4}
    with pytest.raises(
        ValidationError,
        match=r"looks at turn 5, but the conversation has at "
        r"most max_turns \(4\) turns",
    ):
        SimulatedScenario.model_validate(base | {"checks": [{"contains": "x", "turn": 5}]})
    SimulatedScenario.model_validate(base | {"checks": [{"contains": "x", "turn": 4}]})


# --- expected_output reserves its criterion id ------------------------------------------


def test_expected_output_reserves_its_criterion_id() -> None:
    spec = {
        "id": "q",
        "prompt": "p",
        "expected_output": "Paris",
        "criteria": [{"id": "expected_output", "text": "says Paris"}],
    }
    with pytest.raises(
        ValidationError,
        match="criterion id 'expected_output' is reserved when `expected_output` is given",
    ):
        SingleTurnScenario.model_validate(spec)
    with pytest.raises(ValidationError, match="is reserved"):
        SingleTurnScenario.model_validate(
            spec | {"criteria": [], "restrictions": [{"id": "expected_output", "text": "x"}]}
        )
    without = {k: v for k, v in spec.items() if k != "expected_output"}
    assert SingleTurnScenario.model_validate(without).criteria[0].id == "expected_output"


@pytest.mark.parametrize(
    ("value", "fraction"),
    [
        (0.8, 0.8),
        ("80%", 0.8),
        (80, 0.8),
        ("0.5", 0.5),
        (1, 1.0),
        (10, 0.1),
        ("1.5%", 0.015),
    ],
)
def test_threshold_reads_fractions_and_percents(value: object, fraction: float) -> None:
    assert parse_threshold(value) == pytest.approx(fraction)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (
            8,
            "threshold 8 is ambiguous: did you mean 0.8 (80%)? Write a fraction (0.8) or a "
            "percentage ('80%' or 80; for 8% write '8%')",
        ),
        (
            1.5,
            "threshold 1.5 is above 1: did you mean '1.5%' (0.015) or 1.0 (100%)? Write a "
            "fraction (0.8) or a percentage ('80%' or 80)",
        ),
        ("2.5", "did you mean '2.5%' (0.025) or 1.0 (100%)?"),
        (101, "threshold 101 is out of range"),
        (True, "not a boolean"),
    ],
)
def test_threshold_hints_say_what_the_number_could_mean(value: object, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_threshold(value)
    assert says in str(caught.value)
