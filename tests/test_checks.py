"""Deterministic checks: every type, every scope, and the reasons they give."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from sparring.judging.checks import describe, run_check
from sparring.scenario import Check, JsonSchemaCheck, ToolCalledCheck, expand_check_shorthand
from sparring.transcript import Message, ToolCall, Transcript

_CHECK = TypeAdapter(Check)


def check(spec: dict[str, Any]) -> Check:
    return _CHECK.validate_python(expand_check_shorthand(spec))


def agent(content: str, *calls: ToolCall, latency_ms: float | None = 100) -> Message:
    return Message(role="agent", content=content, tool_calls=calls, latency_ms=latency_ms)


def convo(*replies: str | Message) -> Transcript:
    messages: list[Message] = []
    for i, reply in enumerate(replies, start=1):
        messages.append(Message(role="user", content=f"user message {i}"))
        messages.append(reply if isinstance(reply, Message) else agent(reply))
    return Transcript(messages=tuple(messages))


CHAT = convo("Hello! How can I help?", "Your order number is 4411.", "Anything else?")


def run(spec: dict[str, Any], transcript: Transcript = CHAT, turn: int | None = None):
    return run_check(check(spec), transcript, check_id="c", turn=turn)


# --- contains / not_contains -----------------------------------------------------------


def test_contains_whole_conversation_met_with_evidence_and_turns() -> None:
    v = run({"contains": "order number"})
    assert v.status == "met"
    assert v.kind == "check" and v.id == "c"
    assert v.description == 'contains "order number"'
    assert v.turns == (1, 2, 3) and v.turn is None
    assert v.evidence == ('turn 2: "Your order number is 4411."',)


def test_contains_is_case_insensitive_by_default_and_sensitive_on_request() -> None:
    assert run({"contains": "ORDER NUMBER"}).status == "met"
    assert run({"contains": {"value": "ORDER NUMBER", "case_sensitive": True}}).status == "not_met"


def test_contains_case_insensitive_non_ascii() -> None:
    t = convo("Straße und ÄPFEL")
    assert run({"contains": "äpfel"}, t).status == "met"
    assert run({"contains": "äpfel"}, t).evidence == ('turn 1: "Straße und ÄPFEL"',)


def test_contains_failure_quotes_what_was_there() -> None:
    v = run({"contains": "refund"})
    assert v.status == "not_met"
    assert v.reason == ('expected turns 1-3 to contain "refund"; turn 3 said: "Anything else?"')


def test_contains_any_and_all() -> None:
    assert run({"contains": ["refund", "4411"]}).status == "met"
    v = run({"contains": {"value": ["refund", "4411"], "match": "all"}})
    assert v.status == "not_met"
    assert 'contain "refund"' in v.reason and "4411" not in v.reason.split(";")[0]
    both = run({"contains": {"value": ["hello", "4411"], "match": "all"}})
    assert both.status == "met"
    assert both.evidence == (
        'turn 1: "Hello! How can I help?"',
        'turn 2: "Your order number is 4411."',
    )
    assert both.description == 'contains "hello" and "4411"'
    assert run({"contains": ["a", "b", "c"]}).description == 'contains "a", "b" or "c"'


def test_contains_attached_turn_scope() -> None:
    assert run({"contains": "4411"}, turn=2).status == "met"
    v = run({"contains": "4411"}, turn=3)
    assert v.status == "not_met" and v.turn == 3 and v.turns == (3,)
    assert v.reason == 'expected turn 3 to contain "4411"; turn 3 said: "Anything else?"'


def test_check_turn_overrides_attached_turn_and_counts_from_end() -> None:
    assert run({"contains": "4411", "turn": 2}, turn=3).status == "met"
    v = run({"contains": "else", "turn": -1})
    assert v.status == "met" and v.turn == 3
    assert run({"contains": "4411", "turn": -2}).status == "met"
    assert v.description == 'contains "else" at turn -1'


def test_missing_turn_is_not_met_with_reason() -> None:
    v = run({"contains": "x", "turn": 7})
    assert v.status == "not_met" and v.turn == 7 and v.turns == ()
    assert v.reason == "the agent never replied at turn 7: the conversation has 3 turns"
    v = run({"contains": "x", "turn": -5})
    assert v.status == "not_met"
    assert v.reason == "turn -5 does not exist: the conversation has 3 turns"


def test_turn_with_user_message_but_no_reply() -> None:
    t = Transcript(messages=(*CHAT.messages, Message(role="user", content="hello?")))
    v = run({"contains": "x", "turn": -1}, t)
    assert v.status == "not_met" and v.turn == 4
    assert v.reason == "the agent never replied at turn 4"


def test_empty_conversation_is_not_met() -> None:
    v = run({"not_contains": "x"}, Transcript())
    assert v.status == "not_met"
    assert v.reason == "the agent never replied in this conversation"


def test_not_contains() -> None:
    ok = run({"not_contains": ["card number", "CVV"]})
    assert ok.status == "met" and ok.reason == ""
    assert ok.description == 'does not contain "card number" or "CVV"'
    bad = run({"not_contains": ["refund", "ORDER NUMBER"]})
    assert bad.status == "not_met"
    assert bad.reason == (
        'expected no reply to contain "ORDER NUMBER", but turn 2: "Your order number is 4411."'
    )
    assert bad.evidence == ('turn 2: "Your order number is 4411."',)
    assert run({"not_contains": "order number"}, turn=3).status == "met"


def test_long_reply_is_quoted_as_excerpt() -> None:
    long = "a" * 500 + " secret word " + "b" * 500
    v = run({"not_contains": "secret word"}, convo(long))
    quote = v.evidence[0]
    assert "…" in quote and "secret word" in quote and len(quote) < 200
    fail = run({"contains": "zzz"}, convo(long))
    assert fail.reason.endswith('…"') and len(fail.reason) < 260


# --- regex / equals ----------------------------------------------------------------------


def test_regex() -> None:
    v = run({"regex": r"#?\d{4}\b"})
    assert v.status == "met" and v.evidence == ('turn 2: "Your order number is 4411."',)
    assert v.description == r"matches /#?\d{4}\b/"
    assert run({"regex": "HELLO"}).status == "not_met"
    assert run({"regex": {"pattern": "HELLO", "ignore_case": True}}).status == "met"
    fail = run({"regex": r"\d", "turn": 1})
    assert fail.reason == r'expected turn 1 to match /\d/; turn 1 said: "Hello! How can I help?"'


def test_regex_keeps_re_syntax() -> None:
    assert run({"regex": r"(?i)ORDER NUMBER is (?P<n>\d+)\."}).status == "met"
    assert run({"regex": r"^Anything else\?$"}).status == "met"
    assert run({"regex": r"(?<=is )\d{4}(?!\d)"}).status == "met"
    assert (
        run({"regex": {"pattern": "ÉCOLE", "ignore_case": True}}, convo("à l'école")).status
        == "met"
    )
    assert run({"contains": "ÉCOLE"}, convo("à l'école")).status == "met"


def test_catastrophic_regex_is_an_error_not_a_frozen_run(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparring.judging import checks

    monkeypatch.setattr(checks, "REGEX_TIMEOUT_S", 0.05)
    v = run({"regex": "(x+)+y"}, convo("short", "x" * 200_000))
    assert v.status == "error"
    assert v.reason.startswith(
        "the pattern /(x+)+y/ took over 0.05 s and was stopped on the "
        "200,000-character reply at turn 2; "
    )
    assert "anchor it" in v.reason and "nested quantifiers" in v.reason
    # the budget is per check: the next check gets a fresh one
    assert run({"regex": "x+y?$"}, convo("x" * 200_000)).status == "met"


def test_invalid_regex_is_rejected_at_load_with_the_engine_the_check_runs_on() -> None:
    from pydantic import ValidationError

    with pytest.raises(
        ValidationError,
        match=r"invalid regular expression 'a\{2,1\}': min "
        "repeat greater than max repeat",
    ):
        check({"regex": "a{2,1}"})


def test_equals_looks_at_last_reply_in_scope() -> None:
    assert run({"equals": "  Anything else?\n"}).status == "met"
    assert run({"equals": "Hello! How can I help?"}).status == "not_met"
    assert run({"equals": "Hello! How can I help?"}, turn=1).status == "met"
    assert run({"equals": {"value": "anything ELSE?", "case_sensitive": False}}).status == "met"
    v = run({"equals": "anything else?"})
    assert v.reason == 'expected the reply to equal "anything else?"; turn 3 said: "Anything else?"'


# --- json_schema -------------------------------------------------------------------------

SCHEMA = {
    "type": "object",
    "required": ["order", "status"],
    "properties": {"order": {"type": "integer"}, "status": {"enum": ["late", "ok"]}},
}


def test_json_schema_met_and_evidence_canonical() -> None:
    v = run({"json_schema": SCHEMA}, convo('{"status":"late","order":4411}'))
    assert v.status == "met"
    assert v.evidence == ('turn 1: "{\\"order\\": 4411, \\"status\\": \\"late\\"}"',)


def test_json_schema_accepts_fenced_json() -> None:
    t = convo('```json\n{"order": 1, "status": "ok"}\n```')
    assert run({"json_schema": SCHEMA}, t).status == "met"


def test_json_schema_not_json() -> None:
    v = run({"json_schema": SCHEMA}, convo("Sure! Here it is."))
    assert v.status == "not_met"
    assert v.reason.startswith("expected turn 1 to be JSON, but it does not parse")
    assert v.reason.endswith('it said: "Sure! Here it is."')


def test_json_schema_mismatch_names_path() -> None:
    v = run({"json_schema": SCHEMA}, convo('{"order": "x", "status": "lost"}'))
    assert v.status == "not_met"
    assert (
        "does not match the schema at order: 'x' is not of type 'integer' "
        "(and 1 more problems)" in v.reason
    )


def test_json_schema_invalid_schema_is_error() -> None:
    # the schema is rejected when a test file loads; built unvalidated, the check still fails
    bad = JsonSchemaCheck.model_construct(schema_={"type": "nonsense"})
    v = run_check(bad, convo("{}"), check_id="c")
    assert v.status == "error"
    assert v.reason.startswith("the check's JSON Schema is invalid")


@pytest.mark.parametrize(
    "ref", ["#/definitions/nope", "https://example.com/s.json", "other.json#/x"]
)
def test_json_schema_unresolvable_ref_is_error_not_a_crash(ref: str) -> None:
    # the loader rejects these; built unvalidated, the check is an error, never an exception
    bad = JsonSchemaCheck.model_construct(schema_={"$ref": ref})
    v = run_check(bad, convo('{"a": 1}'), check_id="c")
    assert v.status == "error"
    assert v.reason.startswith("the JSON Schema has a $ref that cannot be resolved: ")
    assert ref.split("#")[0] in v.reason


def test_any_exception_in_a_check_is_that_checks_error() -> None:
    from sparring.scenario import RegexCheck

    bad = RegexCheck.model_construct(type="regex", pattern="(", ignore_case=False, turn=None)
    v = run_check(bad, convo("hello"), check_id="c")
    assert v.status == "error"
    assert v.reason.startswith("the check could not be run (")
    assert "missing ) at position 1" in v.reason


def test_json_schema_uses_last_reply() -> None:
    t = convo('{"order": 1, "status": "ok"}', "Done!")
    assert run({"json_schema": SCHEMA}, t).status == "not_met"
    assert run({"json_schema": SCHEMA}, t, turn=1).status == "met"


# --- tools -------------------------------------------------------------------------------


def call(name: str, args: Any = None) -> ToolCall:
    return ToolCall.from_arguments(name, args if args is not None else {})


TOOLS = convo(
    agent("Looking it up", call("lookup_order", {"order": 4411, "opts": {"deep": True, "n": 2}})),
    agent("Refunded", call("refund", {"order": 4411, "amount": 20}), call("notify")),
)


def test_tool_called_include_exclude() -> None:
    v = run({"tool_called": ["lookup_order", "refund"]}, TOOLS)
    assert v.status == "met"
    assert v.evidence == ("tools called in turns 1-2: lookup_order, refund, notify",)
    v = run({"tool_called": {"include": ["cancel"], "exclude": ["refund", "delete"]}}, TOOLS)
    assert v.status == "not_met"
    assert v.reason == (
        "expected a call to cancel; expected no call to refund; "
        "tools called in turns 1-2: lookup_order, refund, notify"
    )
    assert v.description == "calls cancel; never calls refund, delete"
    assert run({"tool_called": {"exclude": ["delete"]}}, TOOLS).status == "met"


def test_tool_called_ordered() -> None:
    ok = run({"tool_called": {"include": ["lookup_order", "notify"], "ordered": True}}, TOOLS)
    assert ok.status == "met"
    bad = run({"tool_called": {"include": ["refund", "lookup_order"], "ordered": True}}, TOOLS)
    assert bad.status == "not_met"
    assert bad.reason.startswith("expected calls to refund, lookup_order in that order")
    assert bad.description == "calls refund, lookup_order in order"


def test_tool_called_scope_by_turn() -> None:
    v = run({"tool_called": ["refund"]}, TOOLS, turn=1)
    assert v.status == "not_met"
    assert v.reason == "expected a call to refund; tools called in turn 1: lookup_order"
    none = run({"tool_called": ["refund"]}, convo("no tools here"))
    assert none.reason.endswith("tools called in turn 1: none")


def test_tool_args_subset_is_recursive() -> None:
    v = run({"tool_args": {"tool": "lookup_order", "args": {"opts": {"deep": True}}}}, TOOLS)
    assert v.status == "met"
    assert v.evidence == ('turn 1: lookup_order {"opts": {"deep": true, "n": 2}, "order": 4411}',)
    assert v.description == 'calls lookup_order with at least {"opts": {"deep": true}}'
    wrong = run({"tool_args": {"tool": "refund", "args": {"amount": 25}}}, TOOLS)
    assert wrong.status == "not_met"
    assert wrong.reason == (
        'expected refund to be called with arguments including {"amount": 25}; '
        'it was called with {"amount": 20, "order": 4411} at turn 2'
    )


def test_tool_args_bool_is_not_a_number() -> None:
    t = convo(agent("", call("f", {"flag": 1})))
    assert run({"tool_args": {"tool": "f", "args": {"flag": True}}}, t).status == "not_met"
    assert run({"tool_args": {"tool": "f", "args": {"flag": 1.0}}}, t).status == "met"


def test_tool_args_exact() -> None:
    spec = {"tool": "refund", "args": {"order": 4411}, "match": "exact"}
    assert run({"tool_args": spec}, TOOLS).status == "not_met"
    spec["args"] = {"order": 4411, "amount": 20}
    assert run({"tool_args": spec}, TOOLS).status == "met"


def test_tool_args_lists_match_position_by_position() -> None:
    t = convo(agent("", call("f", {"items": [{"id": 1, "q": 2}, {"id": 2}]})))
    assert (
        run({"tool_args": {"tool": "f", "args": {"items": [{"id": 1}, {"id": 2}]}}}, t).status
        == "met"
    )
    assert run({"tool_args": {"tool": "f", "args": {"items": [{"id": 1}]}}}, t).status == "not_met"


def test_tool_args_no_such_call_and_unparseable_arguments() -> None:
    v = run({"tool_args": {"tool": "cancel", "args": {}}}, TOOLS)
    assert v.reason == (
        "expected a call to cancel in turns 1-2; tools called: lookup_order, refund, notify"
    )
    broken = convo(agent("", ToolCall.from_arguments("f", "{not json")))
    v = run({"tool_args": {"tool": "f", "args": {}}}, broken)
    assert v.status == "not_met"
    assert "{not json (arguments are not valid JSON" in v.reason


# --- latency -----------------------------------------------------------------------------


def test_latency_below() -> None:
    t = convo(agent("a", latency_ms=120), agent("b", latency_ms=2500), agent("c", latency_ms=None))
    v = run({"latency_below": 3000}, t)
    assert v.status == "met"
    assert v.evidence == ("slowest reply: turn 2, 2500 ms",)
    assert v.description == "replies in under 3000 ms"
    slow = run({"latency_below": 2000}, t)
    assert slow.status == "not_met"
    assert slow.reason == "expected every reply in under 2000 ms; slower: turn 2: 2500 ms"
    assert run({"latency_below": 2000}, t, turn=1).status == "met"
    unknown = run({"latency_below": 2000}, t, turn=3)
    assert unknown.status == "not_met"
    assert (
        unknown.reason == "no latency was recorded for turn 3, so 'under 2000 ms' cannot be shown"
    )


# --- scope details -----------------------------------------------------------------------


def test_greeting_before_first_user_message_is_turn_zero() -> None:
    t = Transcript(messages=(agent("Welcome!"), *CHAT.messages))
    v = run({"contains": "welcome"}, t)
    assert v.status == "met" and v.turns == (0, 1, 2, 3)
    assert run({"contains": "welcome", "turn": 1}, t).status == "not_met"


def test_several_agent_messages_in_one_turn_are_all_in_scope() -> None:
    t = Transcript(
        messages=(Message(role="user", content="hi"), agent("part one"), agent("part two"))
    )
    assert run({"contains": "one"}, turn=1, transcript=t).status == "met"
    assert run({"equals": "part two"}, turn=1, transcript=t).status == "met"


@pytest.mark.parametrize(
    "spec",
    [
        {"contains": "x"},
        {"not_contains": "x"},
        {"regex": "x"},
        {"equals": "x"},
        {"json_schema": {"type": "object"}},
        {"tool_called": ["x"]},
        {"tool_args": {"tool": "x", "args": {}}},
        {"latency_below": 10},
    ],
)
def test_every_type_has_a_description(spec: dict[str, Any]) -> None:
    text = describe(check(spec))
    assert text and "\n" not in text


def test_tool_args_exact_nested_and_subset_type_mismatch() -> None:
    t = convo(agent("", call("f", {"a": {"b": [1, {"c": True}]}, "s": "x"})))
    exact = {"tool": "f", "match": "exact", "args": {"a": {"b": [1, {"c": True}]}, "s": "x"}}
    assert run({"tool_args": exact}, t).status == "met"
    exact["args"] = {"a": {"b": [1, {"c": 1}]}, "s": "x"}
    assert run({"tool_args": exact}, t).status == "not_met"
    assert run({"tool_args": {"tool": "f", "args": {"s": {"x": 1}}}}, t).status == "not_met"


def test_tool_called_include_counts_repeated_names() -> None:
    transcript = Transcript(
        messages=(
            Message(role="user", content="go"),
            Message(
                role="agent",
                content="ok",
                tool_calls=tuple(ToolCall.from_arguments(n, {}) for n in ("a", "b", "a")),
            ),
        )
    )
    twice_b = run_check(ToolCalledCheck(include=["b", "b"]), transcript, check_id="k")
    assert twice_b.status == "not_met" and "b (2 times)" in twice_b.reason
    twice_a = run_check(ToolCalledCheck(include=["a", "a", "b"]), transcript, check_id="k")
    assert twice_a.status == "met"
