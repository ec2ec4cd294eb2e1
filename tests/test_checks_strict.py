"""Checks that must fail where they must: statuses asserted, not only messages (issue 8),
non-ASCII text through the case-folding path, and the checks issue 9 adds (`not_regex`,
`end_reason`, the built-in empty-reply check)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from sparring.judging.checks import describe, empty_reply_verdict, is_blank, run_check
from sparring.results import Verdict
from sparring.scenario import Check, EndReasonCheck, NotRegexCheck, expand_check_shorthand
from sparring.transcript import Message, ToolCall, Transcript

_CHECK = TypeAdapter(Check)


def check(spec: dict[str, Any]) -> Check:
    return _CHECK.validate_python(expand_check_shorthand(spec))


def agent(content: str, *calls: ToolCall) -> Message:
    return Message(role="agent", content=content, tool_calls=calls)


def convo(*replies: str | Message) -> Transcript:
    messages: list[Message] = []
    for i, reply in enumerate(replies, start=1):
        messages.append(Message(role="user", content=f"user message {i}"))
        messages.append(reply if isinstance(reply, Message) else agent(reply))
    return Transcript(messages=tuple(messages))


def run(
    spec: dict[str, Any],
    transcript: Transcript,
    *,
    turn: int | None = None,
    end_reason: str | None = None,
) -> Verdict:
    return run_check(check(spec), transcript, check_id="c", turn=turn, end_reason=end_reason)


# --- tool_args on a tool never called ----------------------------------------------------

LOOKUP = ToolCall.from_arguments("lookup_order", {"order_id": "10234"})


@pytest.mark.parametrize(
    ("transcript", "turn", "called"),
    [
        (convo("No tools today."), None, "none"),
        (convo(agent("Looking.", LOOKUP)), None, "lookup_order"),
        (convo(agent("Looking.", LOOKUP), "Done."), 2, "none"),  # called, but not in scope
    ],
)
def test_tool_args_on_a_tool_never_called_is_not_met(
    transcript: Transcript, turn: int | None, called: str
) -> None:
    v = run({"tool_args": {"tool": "refund", "args": {}}}, transcript, turn=turn)
    assert v.status == "not_met"
    assert v.evidence == ()
    assert v.reason.endswith(f"; tools called: {called}")
    # the same tool with the same (empty) arguments, called in scope, is met
    called_here = run({"tool_args": {"tool": "lookup_order", "args": {}}}, convo(agent("", LOOKUP)))
    assert called_here.status == "met"


def test_tool_args_with_arguments_that_did_not_parse_is_not_met_even_for_empty_args() -> None:
    broken = convo(agent("", ToolCall.from_arguments("refund", "{oops")))
    assert run({"tool_args": {"tool": "refund", "args": {}}}, broken).status == "not_met"
    exact: dict[str, Any] = {"tool": "refund", "args": {}, "match": "exact"}
    assert run({"tool_args": exact}, broken).status == "not_met"


# --- contains / not_contains on non-ASCII replies ----------------------------------------

REPLY = convo("Votre café arrive — l’équipe vous écrit 🎉 demain.")


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("CAFÉ", "met"),
        ("L’ÉQUIPE", "met"),
        ("🎉", "met"),
        ("— L’", "met"),
        ("cafe", "not_met"),  # no accent: a different word
        ("l'équipe", "not_met"),  # ASCII apostrophe is not the typographic one
        ("🎊", "not_met"),
        ("- l’", "not_met"),  # hyphen is not an em dash
        ("ÉQUIPES", "not_met"),
    ],
)
def test_contains_ignoring_case_on_non_ascii_replies(value: str, status: str) -> None:
    assert run({"contains": value}, REPLY).status == status
    opposite = "not_met" if status == "met" else "met"
    assert run({"not_contains": value}, REPLY).status == opposite


def test_non_ascii_hits_quote_the_exact_place() -> None:
    v = run({"contains": "ÉQUIPE"}, REPLY)
    assert v.evidence == ('turn 1: "Votre café arrive — l’équipe vous écrit 🎉 demain."',)
    bad = run({"not_contains": ["absent", "🎉"]}, REPLY)
    assert bad.status == "not_met"
    assert bad.reason.startswith('expected no reply to contain "🎉", but turn 1: "')
    assert bad.evidence == ('turn 1: "Votre café arrive — l’équipe vous écrit 🎉 demain."',)


def test_case_folding_that_changes_length_keeps_the_excerpt_in_place() -> None:
    # "İ".lower() is two characters: searching a lowered copy would shift every index
    text = "İ" * 100 + " your ORDER ships " + "x" * 100
    v = run({"contains": "order"}, convo(text))
    assert v.status == "met"
    assert v.evidence == ('turn 1: "…' + "İ" * 54 + " your ORDER ships " + "x" * 53 + '…"',)


def test_contains_misses_non_ascii_text_that_is_not_there() -> None:
    v = run({"contains": ["remboursement", "ÉCHANGE"]}, REPLY)
    assert v.status == "not_met"
    assert v.reason.startswith('expected turn 1 to contain "remboursement" or "ÉCHANGE"')
    every = run({"contains": {"value": ["café", "échange"], "match": "all"}}, REPLY)
    assert every.status == "not_met"
    assert 'contain "échange"' in every.reason


@pytest.mark.parametrize(
    ("value", "status"),
    [
        ("Café", "not_met"),  # there, with this case
        ("CAFÉ", "met"),  # there only in another case
        ("café", "met"),
        ("Votre", "not_met"),
        ("VOTRE", "met"),
    ],
)
def test_not_contains_case_sensitive_both_ways(value: str, status: str) -> None:
    reply = convo("Votre Café arrive.")
    spec = {"not_contains": {"value": value, "case_sensitive": True}}
    assert run(spec, reply).status == status
    assert run({"not_contains": value}, reply).status == "not_met"  # ignoring case: found


def test_contains_case_sensitive_misses_another_case_on_non_ascii() -> None:
    spec = {"contains": {"value": "ÉQUIPE", "case_sensitive": True}}
    assert run(spec, REPLY).status == "not_met"
    assert run({"contains": {"value": "équipe", "case_sensitive": True}}, REPLY).status == "met"


# --- not_regex ---------------------------------------------------------------------------


def test_not_regex_passes_when_no_reply_matches_and_fails_quoting_each_match() -> None:
    t = convo("Your card ends in 4242.", "Anything else?", "Card 1234 5678 9012 3456 saved.")
    ok = run({"not_regex": r"\b\d{4} \d{4} \d{4} \d{4}\b"}, t, turn=1)
    assert ok.status == "met" and ok.reason == "" and ok.evidence == ()
    bad = run({"not_regex": r"\d{4}"}, t)
    assert bad.status == "not_met"
    assert bad.reason == (
        'expected no reply in turns 1-3 to match /\\d{4}/, but turn 1: "Your card ends in 4242."'
    )
    assert bad.evidence == (
        'turn 1: "Your card ends in 4242."',
        'turn 3: "Card 1234 5678 9012 3456 saved."',
    )
    assert bad.description == "does not match /\\d{4}/"


def test_not_regex_ignore_case_and_turn() -> None:
    t = convo("SORRY for the wait.", "Here it is.")
    assert run({"not_regex": "sorry"}, t).status == "met"
    spec = {"not_regex": {"pattern": "sorry", "ignore_case": True, "turn": 1}}
    v = run(spec, t)
    assert v.status == "not_met" and v.turn == 1
    assert describe(check(spec)) == "does not match /sorry/i at turn 1"
    assert run({"not_regex": {"pattern": "sorry", "ignore_case": True}}, t, turn=2).status == "met"


def test_not_regex_that_backtracks_forever_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparring.judging import checks

    monkeypatch.setattr(checks, "REGEX_TIMEOUT_S", 0.05)
    v = run({"not_regex": "(x+)+y"}, convo("x" * 200_000))
    assert v.status == "error"
    assert v.reason.startswith("the pattern /(x+)+y/ took over 0.05 s and was stopped on the ")


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"not_regex": ""}, "an empty pattern matches every reply, so this check could never pass"),
        ({"regex": ""}, "an empty pattern matches every reply, so this check could never fail"),
        ({"not_regex": "a{2,1}"}, "invalid regular expression 'a{2,1}'"),
    ],
)
def test_pattern_checks_are_validated_when_loaded(spec: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check(spec)
    assert says in str(caught.value)


def test_not_regex_on_a_conversation_without_replies_is_not_met() -> None:
    v = run_check(NotRegexCheck(pattern="x"), Transcript(), check_id="c")
    assert v.status == "not_met"
    assert v.reason == "the agent never replied in this conversation"


# --- end_reason --------------------------------------------------------------------------


def test_end_reason_met_when_the_conversation_ended_for_a_listed_reason() -> None:
    spec = {"end_reason": ["goal_achieved", "user_gave_up"]}
    v = run(spec, convo("Hi"), end_reason="user_gave_up")
    assert v.status == "met"
    assert v.evidence == ("the conversation ended with user_gave_up",)
    assert v.turns == () and v.turn is None
    assert v.description == "the conversation ends with goal_achieved or user_gave_up"


def test_end_reason_not_met_names_every_reason_it_would_take() -> None:
    spec = {"end_reason": ["goal_achieved", "user_gave_up"]}
    v = run(spec, convo("Hi"), end_reason="max_turns")
    assert v.reason == (
        "expected the conversation to end with goal_achieved or user_gave_up; it ended with "
        "max_turns"
    )


def test_end_reason_not_met_says_how_it_ended() -> None:
    v = run({"end_reason": "goal_achieved"}, convo("Hi"), end_reason="max_turns")
    assert v.status == "not_met"
    assert (
        v.reason == "expected the conversation to end with goal_achieved; it ended with max_turns"
    )


def test_end_reason_needs_no_reply_but_an_ended_conversation() -> None:
    assert run({"end_reason": "max_turns"}, Transcript(), end_reason="max_turns").status == "met"
    unknown = run({"end_reason": "max_turns"}, convo("Hi"))
    assert unknown.status == "error"  # never a pass when it cannot be known
    assert "an end_reason check belongs in a test file scenario's `checks:`" in unknown.reason


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ({"end_reason": "goal_reached"}, "goal_achieved"),
        ({"end_reason": []}, "at least 1 item"),
        ({"end_reason": {"value": "max_turns", "turn": 2}}, "remove `turn`"),
    ],
)
def test_end_reason_values_are_checked_when_loaded(spec: dict[str, Any], says: str) -> None:
    with pytest.raises(ValidationError) as caught:
        check(spec)
    assert says in str(caught.value)


def test_end_reason_accepts_one_reason_or_a_list() -> None:
    assert check({"end_reason": "max_turns"}) == EndReasonCheck(value=["max_turns"])
    assert check({"end_reason": ["max_turns"]}) == EndReasonCheck(value=["max_turns"])


# --- the built-in empty-reply check ------------------------------------------------------


@pytest.mark.parametrize("text", ["Hello", " a ", "0", "\u200bok"])
def test_a_reply_that_shows_something_is_not_blank(text: str) -> None:
    assert not is_blank(text)


@pytest.mark.parametrize("text", ["", "   ", "\n\t", "\u200b", "\ufeff \u200d", "\u3000"])
def test_empty_whitespace_and_invisible_replies_are_blank(text: str) -> None:
    assert is_blank(text)


def test_every_reply_with_text_gives_no_verdict() -> None:
    assert empty_reply_verdict(convo("Hi", "Sure.")) is None
    assert empty_reply_verdict(Transcript()) is None


def test_an_empty_reply_is_named_by_its_turn() -> None:
    v = empty_reply_verdict(convo("Hi", "  \n"))
    assert v is not None
    assert (v.id, v.kind, v.status) == ("empty_reply", "check", "not_met")
    assert v.reason.startswith("the agent sent no reply at turn 2; ")
    assert "allow_empty_replies: true" in v.reason
    assert v.turns == (2,) and v.turn == 2


def test_several_empty_replies_are_all_named() -> None:
    v = empty_reply_verdict(convo("", "ok", "\u200b", agent("", LOOKUP)))
    assert v is not None
    assert v.reason.startswith("the agent sent no reply at turns 1, 3 and 4; ")
    assert v.turns == (1, 3, 4) and v.turn is None


@pytest.mark.parametrize("parts", [("", "Here you go."), ("Here you go.", " ")])
def test_a_turn_with_some_text_among_its_messages_is_not_empty(parts: tuple[str, str]) -> None:
    t = Transcript(messages=(Message(role="user", content="hi"), *(agent(p) for p in parts)))
    assert empty_reply_verdict(t) is None


def test_a_greeting_with_text_does_not_hide_an_empty_first_reply() -> None:
    t = Transcript(messages=(agent("Welcome!"), Message(role="user", content="hi"), agent("")))
    v = empty_reply_verdict(t)
    assert v is not None
    assert (v.description, v.reason) == (
        "the agent replies at every turn",
        "the agent sent no reply at turn 1; if an empty reply is fine in this scenario, set "
        "`allow_empty_replies: true`",
    )


# --- survivors of the mutation run on checks (/tmp/mutation-baseline.md) ------------------


def test_not_contains_finds_a_dotted_capital_i_by_its_plain_spelling() -> None:
    # "İSTANBUL".lower() has a combining dot: only the case-folding search finds "istanbul"
    v = run({"not_contains": "istanbul"}, convo("Ships from İSTANBUL today."))
    assert v.status == "not_met"
    assert v.evidence == ('turn 1: "Ships from İSTANBUL today."',)


@pytest.mark.parametrize("case_sensitive", [True, False])
def test_evidence_quotes_the_first_hit_exactly(case_sensitive: bool) -> None:
    text = "a" * 100 + "needle" + "b" * 100 + "needle" + "c" * 100
    spec = {"contains": {"value": "needle", "case_sensitive": case_sensitive}}
    v = run(spec, convo(text))
    assert v.evidence == ('turn 1: "…' + "a" * 60 + "needle" + "b" * 60 + '…"',)


def test_a_hit_at_the_start_of_a_long_reply_is_quoted_without_a_leading_mark() -> None:
    v = run({"contains": "start"}, convo("start " + "x" * 200))
    assert v.evidence == ('turn 1: "start ' + "x" * 59 + '…"',)


def test_match_all_names_only_the_missing_values_joined_by_and() -> None:
    v = run({"contains": {"value": ["x1", "café", "z9"], "match": "all"}}, REPLY)
    assert v.reason.startswith('expected turn 1 to contain "x1" and "z9"; turn 1 said: ')
    anything = run({"contains": ["x1", "z9"]}, REPLY)
    assert anything.reason.startswith('expected turn 1 to contain "x1" or "z9"; ')


def test_descriptions_say_how_each_check_matches() -> None:
    assert describe(check({"regex": {"pattern": "x", "ignore_case": True}})) == "matches /x/i"
    assert describe(check({"regex": "x"})) == "matches /x/"
    assert describe(check({"equals": "OK"})) == 'equals "OK"'
    assert describe(check({"not_contains": ["a", "b"]})) == 'does not contain "a" or "b"'
    exact = {"tool_args": {"tool": "f", "args": {"a": 1}, "match": "exact"}}
    assert describe(check(exact)) == 'calls f with exactly {"a": 1}'


def test_turn_zero_is_the_greeting_and_a_negative_turn_before_it_does_not_exist() -> None:
    greeted = Transcript(messages=(agent("Welcome!"), *convo("Hi").messages))
    assert run({"contains": "welcome"}, greeted, turn=0).status == "met"
    no_greeting = run({"contains": "x"}, convo("Hi"), turn=0)
    assert no_greeting.reason == "the agent never replied at turn 0"
    before = run({"contains": "x", "turn": -2}, convo("Hi"))
    assert before.reason == "turn -2 does not exist: the conversation has 1 turns"


def test_a_long_reply_gets_the_whole_regex_budget() -> None:
    long = convo("a" * 3_000_000)  # about 0.1 s of honest, linear searching
    assert run({"regex": "a{2}c"}, long).status == "not_met"
    assert run({"not_regex": "a{2}c"}, long).status == "met"


def test_a_regex_that_takes_too_long_says_how_to_fix_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from sparring.judging import checks

    monkeypatch.setattr(checks, "REGEX_TIMEOUT_S", 0.05)
    v = run({"regex": "(x+)+y"}, convo("x" * 200_000))
    assert (v.status, v.reason) == (
        "error",
        "the pattern /(x+)+y/ took over 0.05 s and was stopped on the 200,000-character reply "
        "at turn 1; it backtracks too much: anchor it (e.g. `^...`) and avoid nested "
        "quantifiers such as `(x+)+`",
    )


def test_a_check_that_raises_names_the_error_and_whose_fault_it_is() -> None:
    from sparring.scenario import JsonSchemaCheck, RegexCheck

    bad = RegexCheck.model_construct(type="regex", pattern="(", ignore_case=False, turn=None)
    v = run_check(bad, convo("hello"), check_id="c")
    assert v.reason.startswith("the check could not be run (error: missing ) at position 1")
    assert v.reason.endswith(
        "; this is a mistake in the check or a bug in sparring, not the agent's fault"
    )
    ref = JsonSchemaCheck.model_construct(schema_={"$ref": "#/nope"})
    v = run_check(ref, convo("{}"), check_id="c")
    assert v.reason.endswith(
        '; point `$ref` at a part of the schema itself, e.g. `$ref: "#/$defs/item"`'
    )


def test_equals_quotes_the_reply_that_matched() -> None:
    v = run({"equals": "Anything else?"}, convo("Hi", " Anything else? "))
    assert v.evidence == ('turn 2: "Anything else?"',)


@pytest.mark.parametrize("length", [160, 161])
def test_quotes_are_cut_only_past_160_characters(length: int) -> None:
    text = "y" * length
    v = run({"equals": "no"}, convo(text))
    shown = text if length == 160 else "y" * 160 + "…"
    assert v.reason == f'expected the reply to equal "no"; turn 1 said: "{shown}"'


INTEGER = {"type": "integer"}
ITEMS = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {"type": "object", "properties": {"id": {"type": "integer"}}},
        }
    },
}


@pytest.mark.parametrize("reply", ["```1```", "```\n1\n```", "```json\n1\n```", " 1 "])
def test_json_schema_reads_fenced_json_in_every_fence_form(reply: str) -> None:
    assert run({"json_schema": INTEGER}, convo(reply)).status == "met"


@pytest.mark.parametrize("reply", ["```\n1\nabc", "abc\n1\n```", "``````"])
def test_a_fence_that_is_not_closed_on_both_ends_is_not_json(reply: str) -> None:
    assert run({"json_schema": INTEGER}, convo(reply)).status == "not_met"


def test_json_schema_names_where_the_reply_breaks_it() -> None:
    v = run({"json_schema": ITEMS}, convo('{"items": [{"id": 1}, {"id": "x"}]}'))
    assert v.reason == (
        "turn 1 is JSON but does not match the schema at items/1/id: 'x' is not of type "
        """'integer'; it said: "{\\"items\\": [{\\"id\\": 1}, {\\"id\\": \\"x\\"}]}\""""
    )
    root = run({"json_schema": INTEGER}, convo('"one"'))
    assert root.reason.startswith(
        "turn 1 is JSON but does not match the schema at (root): 'one' is not of type "
        "'integer'; it said: "
    )


def test_tool_called_lists_every_missing_and_forbidden_tool() -> None:
    t = convo(agent("", ToolCall.from_arguments("x", {}), ToolCall.from_arguments("y", {})))
    v = run({"tool_called": {"include": ["a", "b"], "exclude": ["x", "y"]}}, t)
    assert v.reason == (
        "expected a call to a, b; expected no call to x, y; tools called in turn 1: x, y"
    )


def test_tool_args_failure_shows_at_most_three_calls_and_how_they_had_to_match() -> None:
    calls = [ToolCall.from_arguments("f", {"n": n}) for n in range(4)]
    t = convo(agent("", *calls))
    v = run({"tool_args": {"tool": "f", "args": {"n": 9}, "match": "exact"}}, t)
    assert v.reason == (
        'expected f to be called with exactly {"n": 9}; it was called with '
        '{"n": 0} at turn 1; {"n": 1} at turn 1; {"n": 2} at turn 1'
    )


def test_tool_args_says_when_arguments_are_not_json_without_a_parse_error() -> None:
    odd = ToolCall(name="f", arguments_raw="<xml/>", arguments=None)
    v = run({"tool_args": {"tool": "f", "args": {}}}, convo(agent("", odd)))
    assert v.reason.endswith("it was called with <xml/> (not JSON) at turn 1")


@pytest.mark.parametrize(
    ("want", "got"),
    [
        ({"x": ["a", "b"]}, {"x": "ab"}),
        ({"x": {"a": 1}}, {"x": "a"}),
        ({"x": "ab"}, {"x": ["a", "b"]}),
    ],
)
@pytest.mark.parametrize("match", ["exact", "subset"])
def test_tool_args_never_match_a_list_or_object_to_a_string(
    want: dict[str, Any], got: dict[str, Any], match: str
) -> None:
    t = convo(agent("", ToolCall.from_arguments("f", got)))
    assert run({"tool_args": {"tool": "f", "args": want, "match": match}}, t).status == "not_met"


def test_a_reply_exactly_at_the_latency_limit_is_not_under_it() -> None:
    at = Message(role="agent", content="ok", latency_ms=2000)
    v = run({"latency_below": 2000}, convo(at))
    assert (v.status, v.reason) == (
        "not_met",
        "expected every reply in under 2000 ms; slower: turn 1: 2000 ms",
    )


def test_latency_lists_five_slow_replies_and_names_the_slowest() -> None:
    slow = [Message(role="agent", content="ok", latency_ms=1000 + n) for n in range(6)]
    v = run({"latency_below": 500}, convo(*slow))
    assert v.reason == (
        "expected every reply in under 500 ms; slower: turn 1: 1000 ms, turn 2: 1001 ms, "
        "turn 3: 1002 ms, turn 4: 1003 ms, turn 5: 1004 ms"
    )
    first_slowest = convo(
        Message(role="agent", content="a", latency_ms=300),
        Message(role="agent", content="b", latency_ms=100),
    )
    assert run({"latency_below": 500}, first_slowest).evidence == ("slowest reply: turn 1, 300 ms",)
