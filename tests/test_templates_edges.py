"""Template and tool-call edges a mutation run found unpinned (issue 8): constant lists in
bodies, `{{history}}` in text templates, non-ASCII text, query encoding, tool-call fields."""

import pytest
from pydantic import JsonValue

from sparring.errors import TargetError
from sparring.secrets import Secrets
from sparring.targets.templates import (
    TextTemplate,
    compile_body,
    fill_template,
    fill_text,
    last_user_message,
    misspelt_placeholders,
    tool_calls_from,
)
from sparring.transcript import Message, Transcript

SECRETS = Secrets({"BOT_KEY": "k-42"})
HISTORY = [
    {"role": "user", "content": "Où est ma commande ? 👋"},
    {"role": "assistant", "content": "Elle arrive — c’est promis."},
]
HISTORY_TEXT = (
    '[{"role": "user", "content": "Où est ma commande ? 👋"}, '
    '{"role": "assistant", "content": "Elle arrive — c’est promis."}]'
)


def test_constant_lists_in_a_body_are_sent_as_written() -> None:
    body = fill_template(
        {
            "tags": ["support", "fr"],
            "mixed": ["{{input}}", ["fixed"], {"k": [1, None]}],
            "m": "{{input}}",
        },
        message="hi",
        history=[],
        secrets=SECRETS,
    )
    assert body == {
        "tags": ["support", "fr"],
        "mixed": ["hi", ["fixed"], {"k": [1, None]}],
        "m": "hi",
    }


def test_a_body_template_given_as_json_values_is_filled() -> None:
    template = compile_body({"q": "{{input}}", "h": "{{history}}", "n": 2})
    assert template.fill(message="hi", history=HISTORY, secrets=SECRETS) == {
        "q": "hi",
        "h": HISTORY,
        "n": 2,
    }


def test_history_in_text_templates_is_json_with_text_as_written() -> None:
    # Raw bodies, URLs and headers get the history as JSON text; non-ASCII stays as typed
    # (not `\u00e9` escapes), as the agent would see it in a JSON body.
    assert (
        TextTemplate("ctx={{history}}").fill(message="x", history=HISTORY, secrets=SECRETS)
        == "ctx=" + HISTORY_TEXT
    )
    assert (
        fill_text("ctx={{history}}", message="x", history=HISTORY, secrets=SECRETS)
        == "ctx=" + HISTORY_TEXT
    )
    body = fill_template(
        {"prompt": "history: {{history}}"}, message="x", history=HISTORY, secrets=SECRETS
    )
    assert body == {"prompt": "history: " + HISTORY_TEXT}


def test_text_templates_without_url_are_never_percent_encoded() -> None:
    message = "why? a&b c/d #1"
    assert fill_text("Q? {{input}}", message=message, history=[], secrets=SECRETS) == (
        "Q? " + message
    )
    assert TextTemplate("ask?{{input}}").fill(message=message, history=[], secrets=SECRETS) == (
        "ask?" + message
    )
    raw = compile_body("question? {{input}}")
    assert isinstance(raw, TextTemplate)
    assert raw.fill(message=message, history=[], secrets=SECRETS) == "question? " + message


def test_every_reserved_character_of_a_query_value_is_encoded() -> None:
    # `/`, `?`, `=` too: the value stays one opaque parameter, e.g. a message holding a URL.
    url = fill_text(
        "http://h:1/chat?q={{input}}",
        message="see https://x/y?a=1",
        history=[],
        secrets=SECRETS,
        url=True,
    )
    assert url == "http://h:1/chat?q=see%20https%3A%2F%2Fx%2Fy%3Fa%3D1"


def test_a_text_template_without_placeholders_is_sent_as_written() -> None:
    template = TextTemplate("plain {{nope}} text")
    assert not template.has_placeholders
    assert template.fill(message="x", history=[], secrets=SECRETS) == "plain {{nope}} text"


def test_correct_placeholders_are_never_reported_as_typos() -> None:
    template: JsonValue = {
        "a": "{{message}}",
        "b": "{{ input }}",
        "c": ["{{history}}"],
        "d": "Bearer {{secrets.BOT_KEY}}",
    }
    assert misspelt_placeholders(template) == []


def test_common_typos_of_message_and_secrets_get_the_fix() -> None:
    assert misspelt_placeholders(["{{mesage}}", "{{Message}}", "{{secrest.KEY}}"]) == [
        "{{Message}} (did you mean {{message}}?)",
        "{{mesage}} (did you mean {{message}}?)",
        "{{secrest.KEY}} (did you mean {{secrets.KEY}}?)",
    ]


def _transcript(*turns: tuple[str, str]) -> Transcript:
    return Transcript(messages=tuple(Message(role=r, content=c) for r, c in turns))  # type: ignore[arg-type]


def test_the_history_sent_to_a_target_is_every_turn_before_the_last_message() -> None:
    transcript = _transcript(("user", "a"), ("agent", "b"), ("user", "c"))
    assert last_user_message(transcript) == (
        "c",
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    )


def test_a_transcript_ending_with_the_agents_reply_is_refused() -> None:
    transcript = _transcript(("system", "s"), ("user", "a"), ("agent", "b"))
    with pytest.raises(ValueError) as info:
        last_user_message(transcript)
    assert str(info.value) == "a target session is sent a transcript ending with a user message"


def test_tool_call_args_alias_result_and_id() -> None:
    calls = tool_calls_from(
        [
            {"name": "lookup", "args": {"id": 1}, "id": "c1", "result": {"found": True}},
            {"name": "refund", "id": 7},  # a non-string id is not an id
        ],
        where="test",
    )
    assert calls[0].arguments == {"id": 1}
    assert calls[0].id == "c1" and calls[0].result == {"found": True}
    assert calls[1].arguments == {} and calls[1].id is None and calls[1].result is None


@pytest.mark.parametrize(
    ("item", "shown"),
    [
        ("lookup", "lookup"),
        (None, "null"),
        ({"arguments": {"id": 1}}, '{"arguments": {"id": 1}}'),
        ({"function": {"arguments": "{}"}}, '{"function": {"arguments": "{}"}}'),
        ({"lookup"}, "{'lookup'}"),  # not JSON (a callable target's Python object): its repr
        ("x" * 500, "x" * 200),
    ],
)
def test_a_tool_call_that_is_not_an_object_with_a_name_is_a_target_error(
    item: object, shown: str
) -> None:
    with pytest.raises(TargetError) as info:
        tool_calls_from([{"name": "ok"}, item], where="tool_calls_path 'calls'")
    assert str(info.value) == (
        f"tool_calls_path 'calls': tool call 2 is not an object with a `name`: {shown!r}; "
        'expected items like {"name": "lookup", "arguments": {"id": 1}}'
    )
