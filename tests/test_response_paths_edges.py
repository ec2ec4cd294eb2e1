"""Response-path edges a mutation run found unpinned (issue 8): list bounds, `[*]` over an
empty list, `extract_optional`'s other routes, and the full text of the errors."""

import pytest
from pydantic import JsonValue

from sparring.errors import UserError
from sparring.secrets import Secrets
from sparring.targets.response_paths import ResponsePath, ResponsePathError, extract_path

BODY = {
    "data": {"messages": [{"text": "first"}, {"text": "last"}]},
    "sources": [{"text": "s1"}, {"url": "u"}],
    "ok": False,
    "nothing": None,
    "empty": {},
}


def _scrub() -> Secrets:
    secrets = Secrets({"K": "sekrit-value"})
    secrets.get("K")  # only values looked up are scrubbed
    return secrets


def _error(path: str, body: object, option: str = "response_path") -> ResponsePathError:
    with pytest.raises(ResponsePathError) as info:
        ResponsePath(path, option=option).extract(body)  # type: ignore[arg-type]
    return info.value


@pytest.mark.parametrize(
    ("path", "body", "expected"),
    [
        ("$[1]", ["a", "b"], "b"),
        ('$["odd.key"]', {"odd.key": 1}, 1),
        ('[""]', {"": "empty key"}, "empty key"),
        ("sources[*].text", {"sources": []}, []),
        ("sources[*]", {"sources": []}, []),
    ],
)
def test_more_path_forms(path: str, body: object, expected: object) -> None:
    assert extract_path(body, path) == expected  # type: ignore[arg-type]


@pytest.mark.parametrize("path", ["data.messages[2]", "data.messages.2", "data.messages[-3]"])
def test_an_index_just_past_either_end_is_a_missing_path(path: str) -> None:
    error = _error(path, BODY)
    assert "is out of range (list of 2)" in str(error)


def test_the_full_error_for_a_nested_path() -> None:
    with pytest.raises(ResponsePathError) as info:
        extract_path(BODY, "data.messages[1].text.x")  # type: ignore[arg-type]
    error = info.value
    assert str(error) == (
        "response_path 'data.messages[1].text.x' not found in the reply: "
        "at 'data.messages[1].text', cannot take 'x' of a str. "
        f"Body starts: {error.body_excerpt!r}. "
        "Fix `response_path` to point at the reply ('$' takes the whole body)."
    )
    assert error.key == "x" and error.body_excerpt.startswith('{"data": {"messages": ')


@pytest.mark.parametrize(
    ("path", "at"),
    [
        ("answer", "at '$', no key 'answer' (keys there: data, sources, ok, nothing, empty)."),
        ("empty.answer", "at 'empty', no key 'answer' (keys there: none)."),
        ('["data"].messages[5]', "at \"['data'].messages\", index 5 is out of range (list of 2)."),
        ("sources[*].title", "at 'sources[*]', no key 'title' (keys there: url)."),
        ("data[*]", "at 'data', expected a list, found an object."),
        ("data.messages[0][0]", "at 'data.messages[0]', expected a list, found an object."),
        (
            "data.messages.text",
            "at 'data.messages', expected an object with key 'text', found a list.",
        ),
        ("ok.x", "at 'ok', cannot take 'x' of a boolean."),
        ("nothing[0]", "at 'nothing', cannot take '[0]' of null."),
        (
            "data['messages'][0].text[0]",
            "at \"data['messages'][0].text\", cannot take '[0]' of a str.",
        ),
    ],
)
def test_the_error_says_where_the_path_stopped_and_why(path: str, at: str) -> None:
    assert f"not found in the reply: {at}" in str(_error(path, BODY))


def test_a_tool_calls_path_error_says_to_point_at_the_list_of_tool_calls() -> None:
    error = _error("calls", {"reply": "x"}, option="tool_calls_path")
    assert str(error).startswith("tool_calls_path 'calls' not found in the reply: at '$'")
    assert str(error).endswith("Fix `tool_calls_path` to point at the list of tool calls.")


def test_the_body_excerpt_is_the_first_300_characters() -> None:
    error = _error("answer", {"text": "x" * 1000})
    assert error.body_excerpt == ('{"text": "' + "x" * 1000)[:300]


def test_a_bad_path_says_how_to_write_one() -> None:
    with pytest.raises(UserError) as info:
        ResponsePath("a..b")
    assert str(info.value) == (
        "response path 'a..b' is not valid at '..b': write keys and indexes like "
        "`data.items[0].text`, `a.b`, `x[*].y`"
    )


CALLS = "tool_calls_path"


def test_extract_optional_of_the_whole_body_or_a_trailing_wildcard_or_index() -> None:
    body: JsonValue = {"calls": [{"name": "a"}]}
    assert ResponsePath("$", option=CALLS).extract_optional(body) == body
    assert ResponsePath("", option=CALLS).extract_optional(body) == body
    assert ResponsePath("calls[*]", option=CALLS).extract_optional(body) == [{"name": "a"}]
    assert ResponsePath("calls[0]", option=CALLS).extract_optional(body) == {"name": "a"}
    # Only a last KEY may be left out: a missing list or index is an error, not "no calls".
    with pytest.raises(ResponsePathError, match="expected a list, found an object"):
        ResponsePath("calls[0]", option=CALLS).extract_optional({"calls": {"tool_calls": []}})
    with pytest.raises(ResponsePathError, match="no key 'calls'"):
        ResponsePath("calls[*]", option=CALLS).extract_optional({"tool_calls": []})


def test_extract_optional_typo_error_names_the_path_and_the_fix() -> None:
    with pytest.raises(ResponsePathError) as info:
        ResponsePath("tool_call", option=CALLS).extract_optional({"tool_calls": []})
    error, text = info.value, str(info.value)
    assert error.path == "tool_call" and error.key == "tool_call"
    assert text.startswith("tool_calls_path 'tool_call' not found in the reply: at ")
    # The reason ends with "?": no period is added after it.
    assert "no key 'tool_call'; did you mean 'tool_calls'? Body starts: " in text
    assert text.endswith(
        "Body starts: '{\"tool_calls\": []}'. "
        "Fix `tool_calls_path` to point at the list of tool calls."
    )


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("calls[0]", {"calls": {"x": 1}, "echo": "sekrit-value"}),  # a trailing index
        ("message.tool_calls", {"echo": "sekrit-value"}),  # an earlier step is missing
        ("tool_call", {"tool_calls": [], "echo": "sekrit-value"}),  # a typo
    ],
)
def test_extract_optional_errors_never_show_a_secret(path: str, body: object) -> None:
    with pytest.raises(ResponsePathError) as info:
        ResponsePath(path, option=CALLS).extract_optional(body, scrub=_scrub().scrub)  # type: ignore[arg-type]
    assert "sekrit" not in str(info.value) and "sekrit" not in info.value.body_excerpt
    assert "***" in info.value.body_excerpt
