"""Data-driven scenarios: `cases:` / `cases_from:` rows filling `{{vars.NAME}}` templates."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from sparring.errors import ConfigError
from sparring.loaders import load_paths, test_file_json_schema
from sparring.scenario import ScriptedScenario, SimulatedScenario, SingleTurnScenario

TARGET = "target: {url: 'http://127.0.0.1:9/chat', tool_calls_path: tool_calls}\n"


def write(directory: Path, text: str, name: str = "t.yaml") -> Path:
    """Write a test file; one without a top-level `id:` gets the shared TARGET first."""
    text = textwrap.dedent(text)
    path = directory / name
    path.write_text(text if text.startswith("id:") else TARGET + text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    return str(caught.value)


def test_inline_rows_make_one_scenario_each_with_the_row_id_or_number(tmp_path: Path) -> None:
    test = write(
        tmp_path,
        """\
        scenarios:
          - id: refund
            prompt: "Can I get a refund for order {{vars.order}}?"
            expected_output: "{{ vars.answer }}"
            checks: [{contains: "{{vars.answer}}"}]
            criteria: ["Mentions order {{vars.order}}"]
            cases:
              - {id: late-order, order: "10237", answer: delayed}
              - {order: "10236", answer: 30-day}
          - id: plain
            prompt: Hello
            should: greet the customer
        """,
    )
    first, second, plain = load_paths([test])
    assert [first.id, second.id, plain.id] == ["refund[late-order]", "refund[2]", "plain"]
    assert isinstance(first, SingleTurnScenario) and isinstance(second, SingleTurnScenario)
    assert first.prompt == "Can I get a refund for order 10237?"
    assert first.expected_output == "delayed" and second.expected_output == "30-day"
    assert [c.text for c in second.criteria] == ["Mentions order 10236"]
    assert second.checks[0].model_dump()["value"] == "30-day"
    assert first.source == second.source == f"{test}:3"


def test_csv_rows_fill_a_simulated_template_relative_to_the_test_file(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "rows.csv").write_text(
        "\ufeffid,mood,order\nimpatient,short and impatient,10237\n\ncalm,calm and polite,10234\n",
        encoding="utf-8",
    )
    test = write(
        tmp_path,
        """\
        scenarios:
          - id: status
            persona: "A {{vars.mood}} customer"
            goal: "Learn where order {{vars.order}} is"
            opening_message: "Where is order #{{vars.order}}?"
            cases_from: data/rows.csv
        """,
    )
    impatient, calm = load_paths([test])
    assert isinstance(impatient, SimulatedScenario) and isinstance(calm, SimulatedScenario)
    assert [impatient.id, calm.id] == ["status[impatient]", "status[calm]"]
    assert calm.persona == "A calm and polite customer"
    assert calm.opening_message == "Where is order #10234?"


def test_jsonl_values_keep_their_type_in_a_whole_placeholder(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "short", "turns": 2, "tools": ["lookup_order"]}\n\n'
        '{"id": "long", "turns": 5, "tools": ["lookup_order", "create_refund"]}\n',
        encoding="utf-8",
    )
    test = write(
        tmp_path,
        """\
        id: chat
        target: {url: 'http://127.0.0.1:9/chat', tool_calls_path: tool_calls}
        goal: "Talk for {{vars.turns}} turns, tools {{vars.tools}}"
        max_turns: "{{vars.turns}}"
        checks: [{tool_called: {include: "{{vars.tools}}"}}]
        cases_from: rows.jsonl
        """,
    )
    short, long = load_paths([test])  # one scenario at the top level, over two rows
    assert isinstance(short, SimulatedScenario) and isinstance(long, SimulatedScenario)
    assert (short.max_turns, long.max_turns) == (2, 5)
    assert long.goal == 'Talk for 5 turns, tools ["lookup_order", "create_refund"]'
    assert long.checks[0].model_dump()["include"] == ["lookup_order", "create_refund"]


def test_scripted_turns_are_filled_too(tmp_path: Path) -> None:
    test = write(
        tmp_path,
        """\
        scenarios:
          - id: ask
            turns:
              - user: "Order {{vars.order}} please"
                should: "mention order {{vars.order}}"
            cases: [{order: "1"}, {order: "2"}]
        """,
    )
    scenarios = load_paths([test])
    assert all(isinstance(s, ScriptedScenario) for s in scenarios)
    assert [s.turns[0].user for s in scenarios if isinstance(s, ScriptedScenario)] == [
        "Order 1 please",
        "Order 2 please",
    ]


def test_unknown_variable_is_named_at_its_line_with_did_you_mean(tmp_path: Path) -> None:
    test = write(
        tmp_path,
        """\
        scenarios:
          - id: refund
            prompt: "Refund {{vars.ordr}}?"
            should: confirm the refund
            cases: [{order: "1"}]
        """,
    )
    message = error_of(test)
    assert f"{test}:4:" in message
    assert "unknown variable 'ordr'" in message and "did you mean {{vars.order}}?" in message


def test_a_row_missing_a_variable_names_the_rows_file_row_and_line(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_text('{"order": "1"}\n{"id": "x"}\n', encoding="utf-8")
    test = write(
        tmp_path,
        """\
        scenarios:
          - id: refund
            prompt: "Refund {{vars.order}}?"
            should: confirm the refund
            cases_from: rows.jsonl
        """,
    )
    message = error_of(test)
    assert f"{tmp_path / 'rows.jsonl'}:2: row 2 of rows.jsonl has no value for 'order'" in message
    assert f"used by {{{{vars.order}}}} at {test}:4:" in message


@pytest.mark.parametrize(
    ("rows", "expected"),
    [
        ("", "rows.csv: the rows file is empty"),
        ("id,order\n", "rows.csv: the rows file has a header but no rows"),
        ("id,order\na,1\nb,2,3\n", "rows.csv:3: bad CSV: row 2 of rows.csv has 3 values, but "),
        ('id,order\na,"1\n', "rows.csv:2: bad CSV: unexpected end of data"),
        ("id,id\na,1\n", "rows.csv:1: bad CSV: column 'id' appears twice"),
        ("id,order\na b,1\n", "rows.csv:2: row 1 of rows.csv has id 'a b', which is not an id"),
        ("id,order\na,1\na,2\n", "rows.csv:3: row 2 of rows.csv repeats id 'a' of row 1"),
    ],
)
def test_bad_csv_files_are_errors_at_their_line(tmp_path: Path, rows: str, expected: str) -> None:
    (tmp_path / "rows.csv").write_text(rows, encoding="utf-8")
    test = write(
        tmp_path,
        "scenarios:\n  - {id: r, prompt: 'o {{vars.order}}', should: x, cases_from: rows.csv}\n",
    )
    assert f"{tmp_path / expected}" in error_of(test)


@pytest.mark.parametrize(
    ("keys", "expected"),
    [
        ("cases: []", "`cases:` must be a non-empty list of rows"),
        ("cases: [1]", "row 1 of `cases` is not a mapping"),
        ("cases: [{order: 1}]\n    cases_from: r.csv", "not both; remove one"),
        ("cases_from: missing.csv", "does not exist; check the path (relative to the test file)"),
        ("cases_from: rows.txt", "is not a .csv or .jsonl file"),
    ],
)
def test_bad_case_keys_are_errors(tmp_path: Path, keys: str, expected: str) -> None:
    test = write(
        tmp_path,
        f"scenarios:\n  - id: r\n    prompt: 'o {{{{vars.order}}}}'\n    should: x\n    {keys}\n",
    )
    message = error_of(test)
    assert expected in message and str(test) in message


def test_a_placeholder_without_rows_is_an_error(tmp_path: Path) -> None:
    test = write(tmp_path, "scenarios:\n  - {id: r, prompt: 'o {{vars.order}}', should: x}\n")
    assert "{{vars.order}} at scenarios[0].prompt has no rows to fill it" in error_of(test)


def test_filled_values_are_validated_like_written_ones(tmp_path: Path) -> None:
    test = write(
        tmp_path,
        "scenarios:\n  - {id: r, goal: g, max_turns: '{{vars.n}}', cases: [{n: 99}]}\n",
    )
    assert f"{test}:3:" in error_of(test)


def test_the_json_schema_accepts_cases_and_cases_from() -> None:
    validator = jsonschema.Draft202012Validator(test_file_json_schema())
    extras: list[dict[str, Any]] = [{"cases": [{"id": "a", "order": "1"}]}, {"cases_from": "r.csv"}]
    for extra in extras:
        document: dict[str, Any] = {"id": "r", "target": {"url": "http://x/chat"}, "prompt": "o"}
        assert validator.is_valid({**document, **extra}), extra  # pyright: ignore[reportUnknownMemberType]
    bad = {"id": "r", "prompt": "o", "cases_from": "rows.txt"}
    assert not validator.is_valid(bad)  # pyright: ignore[reportUnknownMemberType]
