"""Schema rules of `sparring.scenario` that need no file: checks, urls, criterion ids."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from sparring.scenario import Check, Criterion, JsonSchemaCheck, expand_check_shorthand
from sparring.target_specs import HttpTargetSpec, OpenAIChatTargetSpec

_CHECK: TypeAdapter[Any] = TypeAdapter(Check)


def check(spec: dict[str, Any]) -> Any:
    return _CHECK.validate_python(expand_check_shorthand(spec))


@pytest.mark.parametrize(("spec", "says"), [
    ({"contains": []}, "`contains: []` lists no text, so this check could never fail"),
    ({"contains": ""}, "every reply contains the empty text, so this check could never fail"),
    ({"contains": ["refund", ""]}, "every reply contains the empty text"),
    ({"not_contains": []}, "`not_contains: []` lists no text, so this check could never fail"),
    ({"not_contains": ""}, "every reply contains the empty text, so this check could never "
     "pass"),
    ({"tool_called": {}}, "tool_called names no tool in `include` or `exclude`"),
    ({"tool_called": []}, "tool_called names no tool in `include` or `exclude`"),
    ({"tool_called": [""]}, "tool_called has an empty tool name"),
    ({"tool_args": {"tool": "", "args": {}}}, "`tool` is empty; name the tool"),
    ({"regex": ""}, "an empty pattern matches every reply"),
    ({"contains": "x", "turn": 0}, "there is no turn 0: turns count from 1"),
])
def test_checks_that_can_never_fail_or_pass_are_rejected(spec: dict[str, Any],
                                                          says: str) -> None:
    with pytest.raises(ValidationError, match=says.replace("(", r"\(").replace("[", r"\[")):
        check(spec)


@pytest.mark.parametrize("spec", [
    {"contains": "refund"}, {"contains": ["a", "b"]}, {"not_contains": "card number"},
    {"tool_called": {"exclude": ["refund"]}}, {"tool_called": ["lookup"]},
    {"tool_args": {"tool": "lookup", "args": {}}}, {"regex": "^$"},
    {"contains": "x", "turn": -1}, {"contains": "x", "turn": 1},
])
def test_checks_that_can_fail_are_kept(spec: dict[str, Any]) -> None:
    assert check(spec).type in spec


def test_invalid_json_schema_names_the_problem_and_where() -> None:
    with pytest.raises(ValidationError, match=r"invalid JSON Schema at `schema\.type`: 5 is "
                       "not valid under any of the given schemas"):
        check({"json_schema": {"type": 5}})
    with pytest.raises(ValidationError, match=r"at `schema\.properties\.a\.minLength`"):
        check({"json_schema": {"properties": {"a": {"minLength": -1}}}})


def test_json_schema_follows_its_declared_dialect() -> None:
    draft7_tuple = {"$schema": "http://json-schema.org/draft-07/schema#",
                    "items": [{"type": "string"}]}  # an array `items` is draft 7 only
    assert check({"json_schema": draft7_tuple}).schema_ == draft7_tuple
    with pytest.raises(ValidationError, match="invalid JSON Schema at `schema.items`"):
        check({"json_schema": {"items": [{"type": "string"}]}})  # 2020-12 by default
    with pytest.raises(ValidationError, match=r"at `schema\.\$schema`: 3 is not of type"):
        JsonSchemaCheck(schema={"$schema": 3})


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8787/chat", "https://chat.example.com/api", "HTTPS://EXAMPLE.COM",
    "{{secrets.BASE_URL}}/chat",
])
def test_http_urls_and_leading_placeholders_are_accepted(url: str) -> None:
    assert HttpTargetSpec(url=url).url == url
    assert OpenAIChatTargetSpec(base_url=url, model="m").base_url == url


@pytest.mark.parametrize(("url", "says"), [
    ("chat.example.com/api", "url 'chat.example.com/api' is not an HTTP address (it has no "
     "scheme); start the url with http:// or https://, e.g. 'https://chat.example.com/api'"),
    ("ftp://files.example.com/x", "(it starts with ftp://); start the url with http:// or "
     "https://"),
    ("localhost:8000/chat", "e.g. 'http://localhost:8000/chat'"),
    ("http://", "url 'http://' has no host after http://"),
    ("chat/{{secrets.PATH}}", "start the url with http:// or https://"),
])
def test_other_urls_are_rejected_with_the_fix(url: str, says: str) -> None:
    with pytest.raises(ValidationError) as info:
        HttpTargetSpec(url=url)
    assert says in str(info.value)
    with pytest.raises(ValidationError, match="base_url .* start the url with http://"):
        OpenAIChatTargetSpec(base_url=url.replace("http://", "ws://"), model="m")


@pytest.mark.parametrize(("criterion_id", "reserved_for"), [
    ("t1.should1", "should assertions"), ("t12.should3", "should assertions"),
    ("check1", "checks"), ("t2.check4", "checks"),
])
def test_ids_sparring_generates_are_reserved(criterion_id: str, reserved_for: str) -> None:
    with pytest.raises(ValidationError, match=(
            rf"id '{criterion_id}' is reserved for {reserved_for}; pick another id")):
        Criterion(id=criterion_id, text="Is polite")


@pytest.mark.parametrize("criterion_id", ["c1", "check", "t1.should", "my.check1", "should1"])
def test_ids_like_generated_ones_are_allowed(criterion_id: str) -> None:
    assert Criterion(id=criterion_id, text="Is polite").id == criterion_id
