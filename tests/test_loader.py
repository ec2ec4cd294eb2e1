"""The YAML/JSON test-file loader: scenarios, discovery, errors at file:line:column, schema."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import jsonschema
import pytest

from sparring.errors import ConfigError, UserError
from sparring.loaders import load_paths, load_text, test_file_json_schema
from sparring.scenario import (
    ContainsCheck,
    JsonSchemaCheck,
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
    ToolArgsCheck,
    ToolCalledCheck,
)
from sparring.target_specs import CallableTargetSpec, HttpTargetSpec, OpenAIChatTargetSpec

SUITE = Path(__file__).parent / "fixtures" / "loader" / "suite"
TARGET = "target: {url: http://127.0.0.1:8787/chat}\n"


def write(directory: Path, text: str, name: str = "t.yaml") -> Path:
    path = directory / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def load_error(path: Path) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_paths([path])
    return info.value


def lines_of(error: ConfigError) -> list[str]:
    return str(error).splitlines()


# --- valid files -------------------------------------------------------------------------


def test_test_set_gives_each_kind_the_file_target_and_a_source_line() -> None:
    simulated, scripted, single = load_paths([SUITE / "support.yaml"])

    path = str(SUITE / "support.yaml")
    assert isinstance(simulated, SimulatedScenario)
    assert simulated.source == f"{path}:8"
    assert simulated.display_name == "Refund for a late order"
    assert simulated.target == HttpTargetSpec(
        url="http://127.0.0.1:8787/chat",
        response_path="reply",
        tool_calls_path="tool_calls",
        body_template={"message": "{{input}}", "history": "{{history}}"},
    )
    assert [(c.id, c.kind) for c in simulated.all_criteria] == [
        ("c1", "success"),
        ("offers-fix", "success"),
        ("r1", "restriction"),
    ]
    assert (simulated.trials, simulated.threshold, simulated.max_turns) == (3, 0.66, 4)

    assert isinstance(scripted, ScriptedScenario)
    assert scripted.source == f"{path}:23"
    assert scripted.target == simulated.target
    assert scripted.threshold == 0.8
    first, second = scripted.turns
    assert first.checks == [
        ContainsCheck(value="order number"),
        ToolCalledCheck(exclude=["lookup_order"]),
    ]
    assert first.should == ["ask for the order number"]
    assert second.checks[0] == ToolArgsCheck(tool="lookup_order", args={"order_id": "10234"})

    assert isinstance(single, SingleTurnScenario)
    assert single.target == CallableTargetSpec(ref="tests.support.agents:echo")
    assert single.expected_output == "No; card details are never taken in chat."
    assert [c.type for c in single.checks] == ["regex", "not_contains", "json_schema"]
    assert single.checks[2] == JsonSchemaCheck(schema={"type": "object"}, turn=-1)


def test_single_scenario_file_keeps_its_own_target() -> None:
    (scenario,) = load_paths([SUITE / "nested" / "greeting.yml"])

    assert isinstance(scenario, SingleTurnScenario)
    assert scenario.should == ["greet the user back"]
    assert scenario.target == OpenAIChatTargetSpec(
        base_url="http://127.0.0.1:9000/v1", model="support-bot"
    )
    assert scenario.source == f"{SUITE / 'nested' / 'greeting.yml'}:2"  # after the comment


def test_json_file_loads_with_lines() -> None:
    question, exact = load_paths([SUITE / "nested" / "billing.json"])

    assert isinstance(question, SimulatedScenario)
    assert question.criteria[0].text.startswith("The assistant explains")
    assert exact.checks[0].type == "equals"
    assert [question.source, exact.source] == [
        f"{SUITE / 'nested' / 'billing.json'}:{n}" for n in (4, 6)
    ]


def test_directory_is_searched_recursively_sorted_skipping_hidden_and_other_files() -> None:
    scenarios = load_paths([SUITE])

    assert [s.id for s in scenarios] == [
        "billing-question",
        "billing-exact",
        "greeting",  # nested/ sorts before support.yaml
        "refund-late-order",
        "order-status",
        "no-card-payments",
    ]


def test_a_file_named_twice_is_loaded_once() -> None:
    scenarios = load_paths([SUITE / "support.yaml", SUITE])
    assert len(scenarios) == 6
    assert scenarios[0].id == "refund-late-order"


def test_several_documents_in_one_file(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        id: one
        goal: g
        criteria: [x]
        target: {url: "http://127.0.0.1:8787/chat"}
        ---
        id: two
        prompt: p
        expected_output: q
        target: {url: "http://127.0.0.1:8787/chat"}
        """,
    )
    assert [(s.id, s.source) for s in load_paths([path])] == [
        ("one", f"{path}:1"),
        ("two", f"{path}:6"),
    ]


def test_pattern_is_searched_in_id_and_name() -> None:
    assert [s.id for s in load_paths([SUITE], pattern="^billing")] == [
        "billing-question",
        "billing-exact",
    ]
    assert [s.id for s in load_paths([SUITE], pattern="late order")] == ["refund-late-order"]
    assert load_paths([SUITE], pattern="nothing-like-this") == []


def test_invalid_pattern_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"pattern '\(refund' is not a valid regular"):
        load_paths([SUITE], pattern="(refund")


def test_load_text_reads_one_file_from_a_string() -> None:
    (scenario,) = load_text(f"id: a\nprompt: hi\nshould: greet\n{TARGET}", path="inline.yaml")
    assert scenario.source == "inline.yaml:1"


# --- paths -------------------------------------------------------------------------------


def test_missing_path_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist"):
        load_paths([tmp_path / "nope.yaml"])


def test_directory_without_test_files_says_where_and_what_was_looked_for(tmp_path: Path) -> None:
    write(tmp_path, "x", name="readme.md")
    write(tmp_path, "id: a\n", name=".hidden/a.yaml")
    with pytest.raises(UserError) as info:
        load_paths([tmp_path])
    assert not isinstance(info.value, ConfigError)
    assert f"no test files found under {str(tmp_path)!r}" in str(info.value)
    assert "*.yaml, *.yml and *.json" in str(info.value)


# --- YAML syntax and shape ---------------------------------------------------------------


def test_yaml_syntax_error_has_line_column_and_hint(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        id: a
        goal: Ask: where is my order?
        """,
    )
    error = load_error(path)
    assert (error.path, error.line, error.column) == (str(path), 2, 10)
    assert str(error) == (
        f"{path}:2:10: invalid YAML: mapping values are not allowed here; "
        "quote a value that contains ': ', e.g. goal: \"Ask: where is my "
        'order?"'
    )


def test_duplicate_key_is_an_error_at_the_second_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        scenarios:
          - id: a
            goal: first
            goal: second
        """,
    )
    error = load_error(path)
    assert (error.line, error.column) == (4, 5)
    assert 'duplicate key "goal"' in error.message
    assert "remove or rename one of them" in error.message


def test_tab_indentation_is_explained(tmp_path: Path) -> None:
    path = write(tmp_path, "scenarios:\n\t- id: a\n")
    assert lines_of(load_error(path)) == [
        f"{path}:2:1: invalid YAML: found character '\\t' that cannot start any token; "
        "indent with spaces, not tabs"
    ]


def test_json_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    path = write(
        tmp_path, '{\n  "scenarios": [\n    {"id": "a" "goal": "g"}\n  ]\n}\n', name="t.json"
    )
    error = load_error(path)
    assert (error.line, error.column) == (3, 16)
    assert error.message.startswith("invalid YAML: expected ',' or '}'")


def test_top_level_list_is_an_error_with_the_fix(tmp_path: Path) -> None:
    path = write(tmp_path, "- id: a\n  goal: g\n")
    error = load_error(path)
    assert (error.line, error.column) == (1, 1)
    assert error.message.startswith("expected a mapping at the top level, got a list;")
    assert error.message.endswith("put the list under `scenarios:`")


def test_empty_file_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "# only a comment\n")
    assert str(load_error(path)).startswith(f"{path}: the file is empty; a test file is")


# --- validation errors -------------------------------------------------------------------


def test_unknown_key_gets_did_you_mean_at_its_line_and_column(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: refund
            persna: A frustrated customer
            goal: Get a refund
            criteria: [The assistant offers a refund]
        """,
    )
    error = load_error(path)
    assert (error.path, error.line, error.column) == (str(path), 4, 5)
    assert str(error) == (
        f"{path}:4:5: unknown key 'persna' in scenarios[0] (simulated "
        "scenario); did you mean 'persona'?"
    )


def test_key_of_another_scenario_kind_says_why_this_kind(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: scripted-with-opening-message
            opening_message: p
            turns: [{user: hi, should: greet}]
          - id: simulated-with-turns
            kind: simulated
            goal: g
            criteria: [x]
            turns: [{user: hi}]
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:4:5: unknown key 'opening_message' in scenarios[0] (scripted scenario); "
        "`opening_message` "
        "belongs to simulated scenarios, and this is a scripted scenario because it has "
        "`turns:`",
        f"{path}:10:5: unknown key 'turns' in scenarios[1] (simulated scenario); `turns` "
        "belongs to scripted scenarios, and this is a simulated scenario because it says "
        "`kind: simulated`",
    ]


def test_check_errors_name_the_check_and_suggest(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: a
            prompt: p
            checks:
              - contain: refund
              - type: contans
              - {contains: x, regex: y}
              - {type: contains, value: x, pattern: y}
              - {contains: x, case_sensitve: true}
              - just text
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:6:9: scenarios[0].checks[0]: unknown check 'contain'; did you mean 'contains'?",
        f"{path}:7:9: scenarios[0].checks[1]: unknown check type 'contans'; did you mean "
        "'contains'? check types: contains, not_contains, regex, not_regex, not_pii, "
        "equals, json_schema, tool_called, tool_args, latency_below, end_reason",
        f"{path}:8:23: scenarios[0].checks[2]: one check per list item, found contains and "
        "regex; write each as its own `- ` item",
        f"{path}:9:36: unknown key 'pattern' in scenarios[0].checks[3] (contains check); "
        "`pattern` belongs to regex checks and not_regex checks, and this is a contains check "
        "because it says `type: contains`",
        f"{path}:10:23: unknown key 'case_sensitve' in scenarios[0].checks[4] (contains "
        "check); did you mean 'case_sensitive'?",
        f"{path}:11:9: scenarios[0].checks[5]: a check is a mapping such as `- contains: "
        '"refund"` or `- {type: regex, pattern: "\\\\d+"}`, got text \'just text\'',
    ]


def test_value_errors_point_at_the_value_without_pydantic_boilerplate(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: a
            goal: g
            criteria: The assistant offers a refund
            threshold: 8
            checks:
              - contains: 3
              - {contains: [x], match: al}
              - regex: "("
        """,
    )
    error = load_error(path)
    assert lines_of(error) == [
        f"{path}:5:15: scenarios[0].criteria: expected a list, got text 'The assistant offers "
        'a refund\'; write a list, e.g. `criteria: ["..."]`, or one `- ...` item per line',
        f"{path}:6:16: scenarios[0].threshold: threshold 8 is ambiguous: did you mean 0.8 "
        "(80%)? Write a fraction (0.8) or a percentage ('80%' or 80; for 8% write '8%')",
        f"{path}:8:19: scenarios[0].checks[0].contains: expected text or a list, got the "
        'number 3; quote it: contains: "3"',
        f"{path}:9:32: scenarios[0].checks[1].match: expected one of any, all, got text 'al'; "
        "did you mean 'all'?",
        f"{path}:10:16: scenarios[0].checks[2].regex: invalid regular expression '(': missing "
        ") at position 1",
    ]
    assert "errors.pydantic.dev" not in str(error) and "Value error" not in str(error)


def test_unknown_key_that_suggests_a_missing_one_is_reported_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: a
            turns:
              - usr: Where is my order?
                should: ask for the order number
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:5:9: unknown key 'usr' in scenarios[0].turns[0] (scripted turn); did you "
        "mean 'user'?"
    ]


def test_missing_key_and_model_rule_errors_point_at_the_mapping(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: a
            kind: scripted
            criteria: [x]
          - id: b
            goal: g
            criteria: [x]
            min_turns: 9
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:3:5: missing required key 'turns' in scenarios[0] (scripted scenario); a "
        "scripted scenario lists its user messages under `turns:`",
        f"{path}:6:5: scenarios[1] (simulated scenario): min_turns (9) is above max_turns "
        "(6); lower min_turns or raise max_turns",
    ]


def test_file_level_and_target_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {ulr: "http://127.0.0.1:1/chat"}
        trials: 3
        scenarios:
          - id: a
            goal: g
            criteria: [x]
            target: {url: "http://127.0.0.1:1/chat", methd: GET}
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:1:10: unknown key 'ulr' in target (target); did you mean 'url'?",
        f"{path}:2:1: unknown key 'trials' at the top level (test file); `trials` is a "
        "scenario setting: put it in each scenario under `scenarios:`",
        f"{path}:7:46: unknown key 'methd' in scenarios[0].target (http target); did you "
        "mean 'method'?",
    ]


def test_single_scenario_file_errors_are_at_the_top_level(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        goal: g
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:1:1: missing required key 'id' at the top level (simulated scenario); a "
        "test file holds `target:` and `scenarios:` (a list), or is one scenario with its "
        "own `id:`"
    ]


def test_json_validation_error_has_line_and_column(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        {
          "target": {"url": "http://127.0.0.1:1/chat"},
          "scenarios": [
            {"id": "a", "goal": "g", "persna": "p", "criteria": ["x"]}
          ]
        }
        """,
        name="t.json",
    )
    error = load_error(path)
    assert (error.line, error.column) == (4, 30)
    assert error.message.endswith("did you mean 'persona'?")


def test_errors_of_every_file_are_reported_together_and_capped(tmp_path: Path) -> None:
    write(tmp_path, "a: [\n", name="a.yaml")
    checks = "".join(f"      - contans: x{i}\n" for i in range(25))
    write(
        tmp_path,
        f"{TARGET}scenarios:\n  - id: b\n    prompt: p\n    checks:\n{checks}",
        name="b.yaml",
    )
    error = load_error(tmp_path)
    lines = lines_of(error)
    assert (error.path, error.line) == (str(tmp_path / "a.yaml"), 2)
    assert lines[1].startswith(
        f"{tmp_path / 'b.yaml'}:6:9: scenarios[0].checks[0]: unknown check 'contans'"
    )
    assert len(lines) == 21 and lines[-1] == "... and 6 more problems"


# --- after validation --------------------------------------------------------------------


def test_scenario_with_nothing_to_check_says_what_to_add(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: "http://127.0.0.1:8787/chat"}
        scenarios:
          - id: chat
            goal: g
          - id: ask
            prompt: p
          - id: script
            turns: [{user: hi}]
        """,
    )
    assert lines_of(load_error(path)) == [  # 'chat' is judged on its goal
        f"{path}:5:5: scenario 'ask' has nothing to check; add `expected_output:`, `should:`, "
        "`checks:` or `criteria:`",
        f"{path}:7:5: scenario 'script' has nothing to check; add `should:` or `checks:` to a "
        "turn, or `criteria:` / `checks:` to the scenario",
    ]


def test_scenarios_without_any_target_are_named(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        scenarios:
          - id: a
            prompt: p
            should: answer
          - id: b
            prompt: p
            should: answer
            target: {ref: "agents:b"}
          - id: c
            prompt: p
            should: answer
        """,
    )
    error = load_error(path)
    assert (error.line, error.column) == (2, 5)
    assert error.message.startswith(
        "no target for scenarios 'a', 'c'; add `target:` at the "
        "top of the file (shared by its scenarios) or to each"
    )


def test_duplicate_ids_across_files_name_both_places(tmp_path: Path) -> None:
    scenario = "  - id: same\n    prompt: p\n    should: answer\n"
    first = write(tmp_path, f"{TARGET}scenarios:\n{scenario}", name="a.yaml")
    second = write(
        tmp_path,
        f"{TARGET}scenarios:\n  - id: other\n    prompt: p\n    should: answer\n{scenario}",
        name="b.yaml",
    )
    assert lines_of(load_error(tmp_path)) == [
        f"{second}:6:5: duplicate scenario id 'same', also used at {first}:3:5; scenario ids "
        "must be unique across the loaded files: rename one"
    ]


# --- JSON Schema -------------------------------------------------------------------------


def test_schema_is_draft_2020_12_and_accepts_every_valid_fixture() -> None:
    schema = test_file_json_schema()
    validator = jsonschema.Draft202012Validator(schema)

    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == "sparring test file"
    from ruamel.yaml import YAML

    for file in (SUITE / "support.yaml", SUITE / "nested" / "greeting.yml"):
        data = json.loads(json.dumps(YAML(typ="safe").load(file.read_text())))
        assert list(validator.iter_errors(data)) == [], file
    data = json.loads((SUITE / "nested" / "billing.json").read_text())
    assert list(validator.iter_errors(data)) == []


@pytest.mark.parametrize(
    "scenario",
    [
        {"id": "a", "goal": "g", "persna": "p"},
        {"id": "a", "goal": "g", "checks": [{"contans": "x"}]},
        {"id": "a", "goal": "g", "checks": [{"contains": "x", "regex": "y"}]},
        {"id": "a", "goal": "g", "threshold": 8},
        {"id": "a", "turns": [{"usr": "hi"}]},
    ],
)
def test_schema_rejects_what_the_loader_rejects(scenario: dict[str, object]) -> None:
    validator = jsonschema.Draft202012Validator(test_file_json_schema())
    assert not validator.is_valid({"scenarios": [scenario]})


def test_schema_is_a_fresh_copy() -> None:
    test_file_json_schema()["title"] = "changed"
    assert test_file_json_schema()["title"] == "sparring test file"


def test_importing_the_loader_does_not_import_ruamel() -> None:
    code = "import sys, sparring.loaders; print('ruamel.yaml' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- hostile and broken input ------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "where", "char"),
    [
        (b"a: \x00\x01\n", (1, 4), "U+0000 (NUL)"),
        (b'id: a\ngoal: "ring \x07 bell"\n', (2, 13), "U+0007 (BEL)"),
    ],
)
def test_control_character_is_an_error_at_its_position(
    tmp_path: Path, raw: bytes, where: tuple[int, int], char: str
) -> None:
    path = tmp_path / "t.yaml"
    path.write_bytes(raw)
    error = load_error(path)
    assert (error.line, error.column) == where
    assert error.message.startswith(
        f"invalid YAML: character {char} is not allowed in a YAML file; delete it"
    )
    assert "double-quoted string write it as the escape" in error.message


def test_data_nested_deeper_than_the_parser_can_go_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 2000)))
    error = load_error(path)
    assert str(error) == (
        f"{path}: invalid YAML: the data is nested too deeply (more than "
        "100 levels of mappings and lists); a test file needs only a few "
        "levels: flatten it"
    )


def test_data_nested_more_than_100_levels_is_an_error_where_it_gets_too_deep(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "a: " + "[" * 150 + "]" * 150 + "\n")
    error = load_error(path)
    assert (error.line, error.column) == (1, 103)
    assert error.message.startswith("the data is nested too deeply (more than 100 levels")


def test_alias_bomb_is_stopped_at_the_entry_that_expands(tmp_path: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    path = write(tmp_path, "\n".join(lines) + "\n")  # ~500 bytes, 9**10 values expanded
    error = load_error(path)
    assert (error.line, error.column) == (6, 1)  # a5 is where the count passes 100,000
    assert error.message == (
        "the file expands to too much data: more than 100,000 values once its YAML aliases "
        "(`*name`) in this entry are replaced by their anchors' data; use fewer aliases, or "
        "write the data out"
    )


def test_aliases_within_the_limit_are_expanded(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        scenarios:
          - id: a
            prompt: p
            checks: &shared [{{contains: refund}}]
          - id: b
            prompt: q
            checks: *shared
        """,
    )
    assert [s.checks for s in load_paths([path])] == [[ContainsCheck(value="refund")]] * 2


def test_tag_that_cannot_be_read_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, "id: a\ntrials: !!int many\n")
    assert load_error(path).message == (
        "invalid YAML: invalid literal for int() with base 10: 'many'; check values written "
        "with a tag such as `!!int` or `!!float`, and quote long numbers"
    )


def test_checks_that_can_never_fail_are_rejected_at_their_line(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        id: a
        prompt: p
        checks:
          - contains: ""
          - not_contains: []
          - tool_called: {{}}
          - {{tool_args: {{tool: "", args: {{}}}}}}
          - regex: ""
          - {{json_schema: {{type: 5}}}}
          - {{contains: x, turn: 0}}
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:5:15: checks[0].contains: every reply contains the empty text, so this check "
        'could never fail; give the text to look for, e.g. `contains: "refund"`',
        f"{path}:6:19: checks[1].not_contains: `not_contains: []` lists no text, so this "
        'check could never fail; list at least one text, e.g. `not_contains: ["refund"]`',
        f"{path}:7:5: checks[2] (tool_called check): tool_called names no tool in `include` or "
        "`exclude`, so it could never fail; name the tools, e.g. `tool_called: "
        "[lookup_order]` or `tool_called: {exclude: [refund]}`",
        f"{path}:8:24: checks[3].tool_args.tool: `tool` is empty; name the tool whose "
        "arguments are checked, e.g. `tool_args: {tool: lookup_order, args: {order_id: "
        '"10234"}}`',
        f"{path}:9:12: checks[4].regex: an empty pattern matches every reply, so this check "
        'could never fail; write the pattern to look for, e.g. `regex: "\\d{5}"`',
        f"{path}:10:5: checks[5] (json_schema check): invalid JSON Schema at `schema.type`: 5 "
        "is not valid under any of the given schemas; fix it so it follows "
        "https://json-schema.org (e.g. `{type: object, required: [id]}`)",
        f"{path}:11:25: checks[6].turn: there is no turn 0: turns count from 1 (the first "
        "reply), and negative numbers count from the end (-1 is the last reply)",
    ]


def test_checks_that_can_never_see_their_turn_are_rejected_at_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        scenarios:
          - id: a
            turns:
              - user: hi
                checks:
                  - {{contains: x, turn: 2}}
              - user: bye
            checks:
              - {{contains: y, turn: -3}}
          - id: b
            prompt: p
            expected_output: Paris
            criteria:
              - {{id: expected_output, text: says Paris}}
          - id: c
            goal: g
            max_turns: 3
            checks:
              - {{contains: x, turn: 4}}
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:3:5: scenarios[0] (scripted scenario): turns[0].checks[0] looks at turn 2, but "
        "a check in turn 1 can only look at turns 1..1 (or negative turns); move it to turn "
        "2's checks or to the scenario's `checks:`",
        f"{path}:11:5: scenarios[1] (single-turn scenario): criterion id 'expected_output' is "
        "reserved when `expected_output` is given: sparring judges the expected output as a "
        "criterion with that id; rename this criterion (e.g. `id: expected_answer`)",
        f"{path}:16:5: scenarios[2] (simulated scenario): checks[0] looks at turn 4, but the "
        "conversation has at most max_turns (3) turns; use 1 to 3 (or -1 to -3) or raise "
        "max_turns",
    ]


def test_json_schema_ref_that_cannot_resolve_is_rejected_at_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        id: a
        prompt: p
        checks:
          - json_schema: {{$ref: "#/definitions/nope"}}
          - json_schema: {{$ref: "https://example.com/order.json"}}
          - json_schema: {{$defs: {{id: {{type: integer}}}}, $ref: "#/$defs/id"}}
        """,
    )
    fix = 'put the referenced schema under `$defs` and write `$ref: "#/$defs/<name>"`'
    assert lines_of(load_error(path)) == [
        f"{path}:5:5: checks[0] (json_schema check): invalid JSON Schema: `$ref: "
        f"'#/definitions/nope'` points to nothing: the schema has no `#/definitions`; {fix}",
        f"{path}:6:5: checks[1] (json_schema check): invalid JSON Schema: `$ref: "
        "'https://example.com/order.json'` points outside the schema, and sparring does not "
        f"fetch schemas from files or URLs; {fix}",
    ]


def test_target_url_without_http_scheme_is_rejected_at_its_value(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target: {url: chat.example.com/api}
        scenarios:
          - id: a
            prompt: p
            should: answer
            target: {base_url: "ftp://127.0.0.1/v1", model: m}
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:1:15: target.url: url 'chat.example.com/api' is not an HTTP address (it has "
        "no scheme); start the url with http:// or https://, e.g. "
        "'https://chat.example.com/api'",
        f"{path}:6:24: scenarios[0].target.base_url: base_url 'ftp://127.0.0.1/v1' is not an "
        "HTTP address (it starts with ftp://); start the url with http:// or https://, e.g. "
        "'http://127.0.0.1/v1'",
    ]


def test_reserved_criterion_id_is_rejected(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        id: a
        goal: g
        criteria:
          - {{id: t1.should1, text: Is polite}}
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:5:10: criteria[0].id: id 't1.should1' is reserved for should assertions; "
        "pick another id"
    ]


def test_response_paths_that_do_not_parse_are_errors_at_their_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
        target:
          url: http://127.0.0.1:8787/chat
          response_path: "a..b["
        scenarios:
          - id: a
            prompt: p
            should: answer
            target: {url: "http://127.0.0.1:1/x", tool_calls_path: "calls["}
          - id: b
            prompt: p
            should: answer
        """,
    )
    error = load_error(path)
    assert lines_of(error) == [
        f"{path}:3:18: target.response_path: response path 'a..b[' is not valid at '..b[': "
        "write keys and indexes like `data.items[0].text`, `a.b`, `x[*].y`",
        f"{path}:8:60: scenarios[0].target.tool_calls_path: response path 'calls[' is not "
        "valid at '[': write keys and indexes like `data.items[0].text`, `a.b`, `x[*].y`",
    ]


def test_wrong_items_of_a_list_are_named_once_each(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        id: a
        prompt: p
        checks:
          - contains: [refund, 2, 3.5]
        """,
    )
    assert lines_of(load_error(path)) == [
        f'{path}:5:24: checks[0].contains[1]: expected text, got the number 2; quote it: "2"',
        f'{path}:5:27: checks[0].contains[2]: expected text, got the number 3.5; quote it: "3.5"',
    ]


def test_number_where_text_is_expected_says_quote_it(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        id: a
        turns:
          - user: 10234
            should: confirm the order
        """,
    )
    assert lines_of(load_error(path)) == [
        f'{path}:4:11: turns[0].user: expected text, got the number 10234; quote it: user: "10234"'
    ]


def test_target_without_scenarios_says_to_add_them(tmp_path: Path) -> None:
    path = write(tmp_path, f"{TARGET}scenario:\n  - id: a\n")
    assert lines_of(load_error(path)) == [
        f"{path}:1:1: no scenarios in this file; add `scenarios:` (a list of scenarios) or "
        "write one scenario at the top level (with its own `id:`)",
        f"{path}:2:1: unknown key 'scenario' at the top level; did you mean 'scenarios'?",
    ]


def test_numbers_out_of_range_say_the_allowed_range(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        f"""
        {TARGET.strip()}
        scenarios:
          - id: a
            goal: g
            criteria: [x]
            trials: 0
            max_turns: 0
            checks: [latency_below: 0]
          - id: b
            turns: []
        """,
    )
    assert lines_of(load_error(path)) == [
        f"{path}:6:13: scenarios[0].trials: trials must be at least 1 and at most 100, got 0",
        f"{path}:7:16: scenarios[0].max_turns: max_turns must be at least 1 and at most 50, got 0",
        f"{path}:8:29: scenarios[0].checks[0].latency_below: latency_below must be more than "
        "0, got 0",
        f"{path}:10:12: scenarios[1].turns: turns must not be empty; list at least one item",
    ]


def test_tool_checks_need_a_tool_calls_path_on_http_targets() -> None:
    text = textwrap.dedent("""\
        target: {url: "http://127.0.0.1:9/chat", response_path: reply}
        scenarios:
          - id: a
            turns:
              - user: hi
                checks: [{tool_called: {exclude: [lookup_order]}}]
          - id: b
            target: {url: "http://127.0.0.1:9/chat", tool_calls_path: tool_calls}
            prompt: hi
            checks: [{tool_args: {tool: lookup_order, args: {order_id: "1"}}}]
        """)
    with pytest.raises(ConfigError) as info:
        load_text(text, path="t.yaml")
    assert str(info.value).startswith("t.yaml:3:5: scenario 'a' checks tool calls")
    assert "add `tool_calls_path:`" in str(info.value)
    assert "'b'" not in str(info.value)


def test_tool_checks_need_a_tool_calls_path_on_a2a_targets_too() -> None:
    text = textwrap.dedent("""\
        scenarios:
          - id: a
            target: {type: a2a, url: "http://127.0.0.1:9/a2a"}
            prompt: hi
            checks: [{tool_called: [lookup_order]}]
          - id: b
            target: {type: a2a, url: "http://127.0.0.1:9/a2a", tool_calls_path: metadata.toolCalls}
            prompt: hi
            checks: [{tool_called: [lookup_order]}]
        """)
    with pytest.raises(ConfigError) as info:
        load_text(text, path="t.yaml")
    assert str(info.value).startswith(
        "t.yaml:2:5: scenario 'a' checks tool calls, but its a2a target does not say where they are"
    )
    assert "`tool_calls_path: metadata.toolCalls`" in str(info.value)
    assert "'b'" not in str(info.value)


def test_a_json_report_saved_among_the_tests_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        textwrap.dedent("""\
        target: {url: "http://127.0.0.1:9/chat"}
        scenarios: [{id: a, prompt: hi, checks: [{contains: hi}]}]
        """)
    )
    (tmp_path / "results.json").write_text(
        json.dumps(
            {"schema_version": "1", "sparring_version": "0.1.0", "run_id": "x", "scenarios": []}
        )
    )
    assert [s.id for s in load_paths([tmp_path])] == ["a"]
