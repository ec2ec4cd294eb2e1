"""Templates filled on parsed JSON, text templates, response paths, tool-call shapes."""

import json

import pytest

from sparring.errors import TargetError, UserError
from sparring.secrets import Secrets
from sparring.targets.response_paths import ResponsePath, ResponsePathError, extract_path
from sparring.targets.templates import (
    JsonTemplate,
    TextTemplate,
    chat_history,
    compile_body,
    fill_template,
    fill_text,
    last_user_message,
    placeholder_names,
    render_reply,
    secret_names,
    tool_calls_from,
)
from sparring.transcript import Message, ToolCall, Transcript

SECRETS = Secrets({"BOT_KEY": "k-42"})
HISTORY = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]


def fill(template: object, message: str = 'say "hi"\nplease') -> object:
    return fill_template(template, message=message, history=HISTORY, secrets=SECRETS)  # type: ignore[arg-type]


def test_whole_placeholder_takes_the_value_type() -> None:
    body = fill(
        {
            "message": "{{input}}",
            "m": "{{ message }}",
            "history": "{{history}}",
            "key": "{{secrets.BOT_KEY}}",
        }
    )
    assert body == {
        "message": 'say "hi"\nplease',
        "m": 'say "hi"\nplease',
        "history": HISTORY,
        "key": "k-42",
    }
    assert json.loads(json.dumps(body)) == body


def test_placeholders_inside_longer_strings_and_nested() -> None:
    body = fill(
        {
            "a": ["x", {"b": "pre {{input}} / {{history}} / Bearer {{secrets.BOT_KEY}}"}],
            "n": 3,
            "f": False,
            "z": None,
        }
    )
    assert body == {
        "a": ["x", {"b": 'pre say "hi"\nplease / ' + json.dumps(HISTORY) + " / Bearer k-42"}],
        "n": 3,
        "f": False,
        "z": None,
    }


def test_unknown_placeholders_and_keys_stay_as_typed() -> None:
    assert fill({"{{input}}": "{{nope}} {{ secrets.bad-name }}"}) == {
        "{{input}}": "{{nope}} {{ secrets.bad-name }}"
    }


def test_inserted_values_are_never_rescanned() -> None:
    history = [{"role": "assistant", "content": "{{secrets.BOT_KEY}}"}]
    body = fill_template(
        {"m": "{{input}}", "h": "{{history}}", "t": "{{history}}!"},
        message="{{secrets.BOT_KEY}}",
        history=history,
        secrets=SECRETS,
    )
    assert "k-42" not in json.dumps(body)


def test_first_turn_history_is_an_empty_list() -> None:
    assert fill_template({"h": "{{history}}"}, message="x", history=[], secrets=SECRETS) == {
        "h": []
    }


def test_missing_secret_is_a_user_error() -> None:
    with pytest.raises(UserError, match="NOPE"):
        fill({"k": "{{secrets.NOPE}}"})


def test_compile_body_string_forms() -> None:
    json_body = compile_body('{"q": "{{input}}"}')
    assert isinstance(json_body, JsonTemplate)
    assert json_body.fill(message='a"b', history=[], secrets=SECRETS) == {"q": 'a"b'}
    raw = compile_body("question: {{input}}")
    assert isinstance(raw, TextTemplate)
    assert raw.fill(message="why?", history=[], secrets=SECRETS) == "question: why?"
    assert isinstance(compile_body('"just a json string"'), TextTemplate)
    assert isinstance(compile_body([{"x": 1}]), JsonTemplate)


def test_template_is_reusable_and_constant_parts_are_kept() -> None:
    template = JsonTemplate({"fixed": {"a": [1, 2]}, "m": "{{input}}"})
    first = template.fill(message="1", history=[], secrets=SECRETS)
    second = template.fill(message="2", history=[], secrets=SECRETS)
    assert first == {"fixed": {"a": [1, 2]}, "m": "1"}
    assert second == {"fixed": {"a": [1, 2]}, "m": "2"}


def test_fill_text_url_encodes_query_values_only() -> None:
    secrets = Secrets({"BASE": "http://h:1/api", "KEY": "a&b"})
    url = fill_text(
        "{{secrets.BASE}}/chat?q={{input}}&key={{secrets.KEY}}",
        message="x y#&z",
        history=[],
        secrets=secrets,
        url=True,
    )
    assert url == "http://h:1/api/chat?q=x%20y%23%26z&key=a%26b"
    assert (
        fill_text("Bearer {{secrets.BOT_KEY}}", message="", history=[], secrets=SECRETS)
        == "Bearer k-42"
    )
    assert not TextTemplate("plain").has_placeholders


BODY = {
    "reply": "hi",
    "ok": False,
    "count": 0,
    "empty": "",
    "nothing": None,
    "choices": [{"message": {"content": "from choices"}}],
    "data": {"messages": [{"text": "first"}, {"text": "last"}]},
    "sources": [{"text": "s1"}, {"url": "u"}, {"text": "s2"}],
    "odd.key": "dotted",
    "0": "zero key",
    "nums": [{"v": 1}, {"v": 2}],
}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", BODY),
        ("", BODY),
        ("  ", BODY),
        ("reply", "hi"),
        ("$.reply", "hi"),
        ("choices.0.message.content", "from choices"),
        ("choices[0].message.content", "from choices"),
        ("data.messages[-1].text", "last"),
        ("data.messages.-2.text", "first"),
        ("sources[*].text", "s1\ns2"),
        ("sources.*.text", "s1\ns2"),
        ("nums[*].v", [1, 2]),
        ('["odd.key"]', "dotted"),
        ("['0']", "zero key"),
        ("0", "zero key"),
        ("ok", False),
        ("count", 0),
        ("empty", ""),
        ("nothing", None),
    ],
)
def test_extract_path_forms(path: str, expected: object) -> None:
    assert extract_path(BODY, path) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("path", "key", "fragment"),
    [
        ("answer", "answer", "no key 'answer' (keys there: reply, ok"),
        ("choices.3.message", "3", "index 3 is out of range (list of 1)"),
        ("data.messages.text", "text", "expected an object with key 'text', found a list"),
        ("reply.text", "text", "cannot take 'text' of a str"),
        ("reply[*]", "[*]", "expected a list, found a str"),
        ("sources[*].title", "title", "no key 'title'"),
        ("data[0]", "[0]", "expected a list, found an object"),
    ],
)
def test_missing_path_names_path_key_and_body(path: str, key: str, fragment: str) -> None:
    with pytest.raises(ResponsePathError) as info:
        extract_path(BODY, path)  # type: ignore[arg-type]
    error = info.value
    assert isinstance(error, TargetError)
    assert error.path == path and error.key == key
    assert fragment in str(error) and repr(path) in str(error)
    assert error.body_excerpt.startswith('{"0": "zero key"') and "Body starts" in str(error)


def test_missing_path_excerpt_is_scrubbed() -> None:
    secrets = Secrets({"K": "sekrit"})
    secrets.get("K")
    with pytest.raises(ResponsePathError) as info:
        ResponsePath("x").extract({"echo": "sekrit"}, scrub=secrets.scrub)
    assert "sekrit" not in str(info.value) and "***" in str(info.value)


@pytest.mark.parametrize("path", ["a..b", "a[", "a[x]", "a]"])
def test_bad_path_syntax_is_a_user_error(path: str) -> None:
    with pytest.raises(UserError, match="not valid"):
        ResponsePath(path)


def test_render_reply() -> None:
    assert render_reply("t") == "t"
    assert render_reply(None) == ""
    assert render_reply(False) == "false"
    assert render_reply(0) == "0"
    assert render_reply({"b": 1, "a": "é"}) == '{"a": "é", "b": 1}'


def test_tool_calls_shapes() -> None:
    calls = tool_calls_from(
        [
            {"name": "lookup", "arguments": {"id": 1}},
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"amount": 5}'},
            },
            {"name": "bad_args", "arguments": "{oops"},
            {"name": "anthropic_style", "input": {"q": "x"}},
            ToolCall.from_arguments("given", {}),
        ],
        where="test",
    )
    assert [c.name for c in calls] == ["lookup", "refund", "bad_args", "anthropic_style", "given"]
    assert calls[0].arguments == {"id": 1}
    assert calls[1].arguments == {"amount": 5} and calls[1].id == "call_1"
    assert calls[2].arguments is None and calls[2].arguments_error
    assert calls[3].arguments == {"q": "x"}
    assert tool_calls_from(None, where="t") == ()
    assert [c.name for c in tool_calls_from({"name": "one"}, where="t")] == ["one"]


def test_tool_call_without_name_is_an_error() -> None:
    with pytest.raises(TargetError, match=r"test: tool call 2 is not an object with a `name`"):
        tool_calls_from([{"name": "ok"}, {"arguments": {}}], where="test")


def test_history_helpers() -> None:
    transcript = Transcript(
        messages=(
            Message(role="system", content="sys"),
            Message(role="user", content="a"),
            Message(role="agent", content="b"),
            Message(role="tool", content="t"),
            Message(role="user", content="c"),
        )
    )
    assert chat_history(transcript.messages) == [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    assert last_user_message(transcript) == (
        "c",
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
    )
    with pytest.raises(ValueError, match="ending with a user message"):
        last_user_message(Transcript())


def test_secret_names() -> None:
    assert secret_names(
        [
            "{{secrets.A}}/x?k={{ secrets.B }}",
            {"h": "Bearer {{secrets.C}}"},
            {"{{secrets.KEY_IGNORED}}": ["{{secrets.A}}", 1, None]},
        ]
    ) == {"A", "B", "C"}


def test_placeholder_names() -> None:
    assert placeholder_names(
        {
            "q": "say {{ input }}",
            "h": ["{{history}}", 3],
            "{{message}}": "key ignored",
            "k": "{{secrets.A}} {{inputs}}",
        }
    ) == {"input", "history", "secrets.A"}
    assert placeholder_names("{{message}}") == {"message"}
    assert placeholder_names(None) == set()


def test_misspelt_placeholders_get_the_fix_and_other_braces_pass() -> None:
    from sparring.targets.templates import misspelt_placeholders

    template = {
        "auth": "Bearer {{secret.BOT_KEY}}",
        "q": "{{Input}}",
        "h": "{{histroy}}",
        "ok": "{{input}} {{secrets.X}} {{history}}",
        "literal": "{{user_id}}",
    }
    assert misspelt_placeholders(template) == [
        "{{Input}} (did you mean {{input}}?)",
        "{{histroy}} (did you mean {{history}}?)",
        "{{secret.BOT_KEY}} (did you mean {{secrets.BOT_KEY}}?)",
    ]


def test_an_omitted_tool_calls_key_next_to_a_similar_count_is_no_typo() -> None:

    path = ResponsePath("tool_calls", option="tool_calls_path")
    assert path.extract_optional({"reply": "x", "tool_call_count": 0}) is None
    with pytest.raises(ResponsePathError, match="did you mean 'tool_calls'"):
        ResponsePath("tool_call", option="tool_calls_path").extract_optional(
            {"reply": "x", "tool_calls": []}
        )
