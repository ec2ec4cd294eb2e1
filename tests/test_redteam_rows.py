"""Red-team scenarios over data rows (`cases:`), and errors that never escape as tracebacks:
every row x attack gets a valid, unique id; a red-team scenario whose attacks would not be
valid is an error at its file:line when it loads, or on the command line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from sparring.cli.main import cli
from sparring.errors import ConfigError, UserError
from sparring.loaders import load_paths
from sparring.redteam import attack_scenarios, expand_red_team
from sparring.scenario import NotContainsCheck, RedTeamScenario
from sparring.scenario.red_team import ATTACK_ID_ROOM, PLUGINS, STRATEGIES

ROWS = """\
target: {type: callable, ref: "sparring.demo.agent:chat"}
scenarios:
  - id: rt
    kind: red_team
    plugins: [canary_leak]
    strategy: [plain, crescendo]
    canaries: ["{{vars.code}}"]
    cases:
      - {id: one, code: NW-STAFF-7731}
      - {id: two, code: NW-STAFF-9999}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "t.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env={"OPENAI_API_KEY": None, "COLUMNS": "200"})


def test_every_row_and_attack_gets_a_valid_unique_id_with_the_row_last(tmp_path: Path) -> None:
    attacks = expand_red_team(load_paths([write(tmp_path, ROWS)]))
    assert [a.id for a in attacks] == [
        "rt/canary_leak/plain/ask-directly[one]",
        "rt/canary_leak/plain/pretend-staff[one]",
        "rt/canary_leak/crescendo[one]",
        "rt/canary_leak/plain/ask-directly[two]",
        "rt/canary_leak/plain/pretend-staff[two]",
        "rt/canary_leak/crescendo[two]",
    ]
    leaks = [c for c in attacks[3].checks if isinstance(c, NotContainsCheck)]
    assert [c.value for c in leaks] == [["NW-STAFF-9999"]]  # the row's own canary


def test_ids_without_rows_stay_as_they_were() -> None:
    red_team = RedTeamScenario(id="rt", plugins=["jailbreak"], strategy=["base64", "crescendo"])
    assert [a.id for a in attack_scenarios(red_team)] == [
        "rt/jailbreak/base64/no-rules-persona",
        "rt/jailbreak/base64/hypothetical",
        "rt/jailbreak/crescendo",
    ]


def test_list_and_redteam_run_red_team_rows(tmp_path: Path) -> None:
    path = str(write(tmp_path, ROWS))
    listed = invoke("run", path, "--list")
    assert listed.exit_code == 0, listed.output
    assert "rt/canary_leak/plain/pretend-staff[two]" in listed.output
    attacked = invoke("redteam", path, "--no-store", "-q")
    assert attacked.exit_code == 0, attacked.output
    assert "| canary_leak | critical |" in attacked.output


def test_the_longest_red_team_id_leaves_room_for_every_attack() -> None:
    longest = "r" * (128 - ATTACK_ID_ROOM - 5) + "[row]"
    red_team = RedTeamScenario(
        id=longest,
        plugins=list(PLUGINS),
        strategy=list(STRATEGIES),
        canaries=["NW-STAFF-7731"],
    )
    assert all(len(a.id) <= 128 for a in attack_scenarios(red_team))  # and they validated


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("id: " + "a" * 81, "at most 80 characters"),
        (
            "restrictions: [{id: attack_resisted, text: Never rude}]",
            "'attack_resisted' is reserved",
        ),
        ("checks: [{contains: a, turn: 2}]", "a single-shot attack is one message"),
        ("strategy: crescendo\n    checks: [{contains: a, turn: 9}]", r"at most max_turns \(5\)"),
    ],
)
def test_what_attacks_could_not_take_is_an_error_where_it_is_written(
    tmp_path: Path, fields: str, message: str
) -> None:
    text = "target: {url: 'http://127.0.0.1:9/chat'}\nscenarios:\n  - kind: red_team\n"
    text += "    " + fields + ("\n" if fields.startswith("id:") else "\n    id: rt\n")
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        load_paths([path])
    line = 4 if fields.startswith("id:") else 3  # a field's own line, else the scenario's
    assert str(caught.value).startswith(f"{path}:{line}:")


def test_an_invalid_attack_is_a_config_error_at_the_red_team_scenario() -> None:
    # changed without validation (model_copy), so only the last guard can catch it: it names
    # where the scenario came from instead of raising a traceback
    valid = RedTeamScenario(id="rt", plugins=["jailbreak"])
    red_team = valid.model_copy(update={"id": "x" * 120, "source": "tests/t.yaml:7"})
    with pytest.raises(ConfigError, match="makes attacks that are not valid") as caught:
        expand_red_team([red_team])
    assert (caught.value.path, caught.value.line) == ("tests/t.yaml", 7)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--attempts", "500"), "--attempts 500: give 1 to 100 attempts per attack"),
        (("--plugins", "jailbrake"), "unknown plugin 'jailbrake'; did you mean jailbreak?"),
        (("--strategies", "bas64"), "unknown strategy 'bas64'; did you mean base64?"),
        (("--strategies", ","), "--strategies ',' names nothing"),
    ],
)
def test_bad_command_line_values_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    done = invoke("redteam", str(write(tmp_path, ROWS)), "--no-store", *args)
    assert isinstance(done.exception, UserError), done.output  # `sparring` exits 2 with it
    assert message in str(done.exception)


def test_options_that_make_a_scenario_invalid_are_a_usage_error_at_its_line(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """\
        target: {type: callable, ref: "sparring.demo.agent:chat"}
        scenarios:
          - {id: rt, kind: red_team, strategy: crescendo, checks: [{contains: a, turn: 3}]}
        """,
    )
    done = invoke("redteam", str(path), "--no-store", "--strategies", "plain")
    assert isinstance(done.exception, UserError), done.output
    assert f"{path}:3: with these options red_team scenario 'rt' is not valid" in str(
        done.exception
    )
    assert "a single-shot attack is one message" in str(done.exception)
