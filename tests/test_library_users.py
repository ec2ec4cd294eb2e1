"""Evaluations and simulated users defined once (library files), used by name from scenarios;
the simulated user plays a reusable user's system prompt."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from sparring.api import Suite, SuiteRun, load_library
from sparring.errors import ConfigError, UserError
from sparring.judging.judge import judge_conversation
from sparring.loaders import load_paths, load_text
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.scenario import AnyScenario, ScriptedScenario, SimulatedScenario
from sparring.scenario.evaluations import Evaluation
from sparring.simulator import next_user_message
from sparring.transcript import Message, Transcript

pytest_plugins = ["pytester"]

LIBRARY = """\
evaluations:
  - name: empathy
    prompt: How well does the assistant acknowledge the customer's frustration?
    insights:
      - {name: acknowledged, type: boolean, pass_when: true}
  - name: resolution
    prompt: How was the problem resolved?
    insights:
      - name: outcome
        type: category
        options: [refund, replacement, none]
        pass_when: [refund, replacement]
simulated_users:
  - name: frustrated-late-delivery
    job_title: Office manager
    description: Her order of printer paper is a week late; short, impatient messages.
    evaluations: [empathy]
  - name: caller
    system_prompt: You are Sam, calling from a noisy car, and you mumble.
    mode: voice
"""

TESTS = """\
target: {url: "http://127.0.0.1:9/chat"}
scenarios:
  - id: late
    goal: Get a refund for the late order
    user: frustrated-late-delivery
    evaluations: [resolution]
  - id: call
    goal: Book a table
    user: caller
  - id: plain
    goal: Ask the opening hours
"""


def write(directory: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (directory / name).write_text(text, encoding="utf-8")
    return directory


def by_id(scenarios: Sequence[object]) -> dict[str, SimulatedScenario]:
    return {s.id: s for s in scenarios if isinstance(s, SimulatedScenario)}


def names(scenario: SimulatedScenario) -> list[str]:
    return [e.name for e in scenario.defined_evaluations]


def names_of(scenario: AnyScenario) -> list[str]:
    return [e.name for e in scenario.defined_evaluations]


def problem_lines(error: ConfigError) -> list[str]:
    return str(error).splitlines()


# --- loading --------------------------------------------------------------------------


def test_names_resolve_from_a_library_file_among_the_tests(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "refunds.yaml": TESTS})
    loaded = by_id(load_paths([tmp_path], library=[]))
    assert set(loaded) == {"late", "call", "plain"}  # the library file holds no scenario
    late = loaded["late"]
    assert late.simulated_user is not None
    assert late.simulated_user.job_title == "Office manager"
    assert names(late) == ["resolution", "empathy"]  # its own, then the user's
    assert all(isinstance(e, Evaluation) for e in late.evaluations)
    call = loaded["call"]
    assert call.simulated_user is not None and call.simulated_user.mode == "voice"
    assert names(call) == []
    assert loaded["plain"].simulated_user is None


def test_library_from_the_setting_and_from_a_document_of_the_test_file(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY})
    tests = tmp_path / "tests"
    tests.mkdir()
    write(tests, {"refunds.yaml": TESTS})
    assert names(by_id(load_paths([tests], library=[tmp_path / "library.yaml"]))["late"]) == [
        "resolution",
        "empathy",
    ]
    one_file = LIBRARY + "---\n" + TESTS  # a library document beside the test document
    assert by_id(load_text(one_file, path="t.yaml", library=[]))["call"].simulated_user


def test_the_library_setting_is_read_relative_to_its_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".git").mkdir()
    write(tmp_path, {"sparring.toml": 'library = ["shared"]\n'})
    (tmp_path / "shared").mkdir()
    write(tmp_path / "shared", {"users.yaml": LIBRARY})
    (tmp_path / "tests").mkdir()
    write(tmp_path / "tests", {"refunds.yaml": TESTS})
    monkeypatch.chdir(tmp_path / "tests")
    assert by_id(load_paths(["refunds.yaml"]))["late"].simulated_user is not None


def test_a_user_listing_an_evaluation_the_scenario_lists_too_gets_it_once(
    tmp_path: Path,
) -> None:
    tests = TESTS.replace("evaluations: [resolution]", "evaluations: [empathy]")
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": tests})
    assert names(by_id(load_paths([tmp_path], library=[]))["late"]) == ["empathy"]


# --- errors ---------------------------------------------------------------------------


def test_unknown_names_say_where_and_what_is_known(tmp_path: Path) -> None:
    tests = TESTS.replace("user: frustrated-late-delivery", "user: frustrated-late-delvery")
    tests = tests.replace("evaluations: [resolution]", "evaluations: [resolution, empaty]")
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": tests})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    lines = problem_lines(caught.value)
    assert lines[0] == (
        f"{tmp_path / 't.yaml'}:5:11: unknown simulated user 'frustrated-late-delvery'; "
        "did you mean 'frustrated-late-delivery'? known simulated users: caller, "
        "frustrated-late-delivery"
    )
    assert lines[1] == (
        f"{tmp_path / 't.yaml'}:6:31: unknown evaluation 'empaty'; did you mean 'empathy'? "
        "known evaluations: empathy, resolution"
    )


def test_no_library_at_all_says_how_to_define_one(tmp_path: Path) -> None:
    write(tmp_path, {"t.yaml": TESTS})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    assert "unknown simulated user 'frustrated-late-delivery': none is defined; define it " in (
        caught.value.message
    )
    assert "under `simulated_users:` in a library file" in caught.value.message


def test_a_name_defined_twice_names_both_places(tmp_path: Path) -> None:
    write(tmp_path, {"a.yaml": LIBRARY, "b.yaml": LIBRARY.split("simulated_users:")[0]})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    lines = problem_lines(caught.value)
    assert lines[0] == (
        f"{tmp_path / 'b.yaml'}:2:5: evaluation 'empathy' is defined twice, also at "
        f"{tmp_path / 'a.yaml'}:2:5; names are unique across the loaded library files: "
        "rename or remove one"
    )
    assert len(lines) == 2  # 'resolution' too


def test_a_users_unknown_evaluation_is_reported_in_the_library_file(tmp_path: Path) -> None:
    library = LIBRARY.replace("evaluations: [empathy]", "evaluations: [empathy, resolutoin]")
    write(tmp_path, {"library.yaml": library})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path / "library.yaml"], library=[])
    assert str(caught.value) == (
        f"{tmp_path / 'library.yaml'}:17:28: simulated user 'frustrated-late-delivery': "
        "unknown evaluation 'resolutoin'; did you mean 'resolution'? known evaluations: "
        "empathy, resolution"
    )


def test_bad_definitions_point_at_the_key_with_did_you_mean() -> None:
    text = LIBRARY.replace("job_title: Office manager", "job_tilte: Office manager")
    with pytest.raises(ConfigError) as caught:
        load_text(text, path="lib.yaml", library=[])
    assert str(caught.value) == (
        "lib.yaml:15:5: unknown key 'job_tilte' in simulated_users[0] (simulated user); "
        "did you mean 'job_title'?"
    )


def test_an_inline_evaluations_typo_points_at_the_insight_key() -> None:
    text = (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - id: a\n"
        "    goal: g\n"
        "    evaluations:\n"
        "      - name: inline\n"
        "        prompt: assess\n"
        "        insights:\n"
        "          - {name: ok, type: boolean, wieght: 2}\n"
    )
    with pytest.raises(ConfigError) as caught:
        load_text(text, path="t.yaml", library=[])
    assert str(caught.value) == (
        "t.yaml:9:39: unknown key 'wieght' in scenarios[0].evaluations[0].insights[0] "
        "(insight); did you mean 'weight'?"
    )


def test_user_and_persona_together_and_an_evaluation_listed_twice(tmp_path: Path) -> None:
    tests = TESTS.replace("    user: caller\n", "    user: caller\n    persona: Someone\n").replace(
        "evaluations: [resolution]", "evaluations: [resolution, resolution]"
    )
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": tests})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    lines = problem_lines(caught.value)
    assert lines[0].endswith("t.yaml:6:18: evaluations lists 'resolution' twice: keep one")
    assert "t.yaml:10:14: `persona:` and `user: caller` both say who" in lines[1]


def test_a_library_setting_file_with_scenarios_or_a_missing_path(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    with pytest.raises(ConfigError, match="a library file holds only `evaluations:`"):
        load_paths([tmp_path / "library.yaml"], library=[tmp_path / "t.yaml"])
    with pytest.raises(UserError, match="library path '.*nope' .*does not exist"):
        load_paths([tmp_path], library=[tmp_path / "nope"])


# --- the simulated user plays it ------------------------------------------------------

CHAT = Transcript(
    messages=(
        Message(role="user", content="Where is my order?"),
        Message(role="agent", content="Which order number?"),
    )
)


async def system_prompt_for(scenario: SimulatedScenario) -> str:
    model = ScriptedModel([{"message": "It's 4411.", "done": False, "done_reason": None}])
    await next_user_message(model, scenario=scenario, transcript=CHAT, may_stop=True)
    return model.calls[0][0][0]["content"]


@pytest.mark.anyio
async def test_a_system_prompt_is_the_whole_persona_and_the_goal_still_applies(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    loaded = by_id(load_paths([tmp_path], library=[]))
    system = await system_prompt_for(loaded["call"])
    assert "You are Sam, calling from a noisy car, and you mumble.\nYour goal: Book a table" in (
        system
    )
    assert "Who you are:" not in system
    assert "A typical first-time user" not in system  # the default persona is not played
    described = await system_prompt_for(loaded["late"])
    assert (
        "Who you are: Her order of printer paper is a week late; short, impatient messages. "
        "Job title: Office manager.\nYour goal: Get a refund for the late order"
    ) in described


@pytest.mark.anyio
async def test_the_guard_treats_the_users_system_prompt_as_the_persona(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    scenario = by_id(load_paths([tmp_path], library=[]))["call"]
    leak = "You are Sam, calling from a noisy car, and you mumble."
    model = ScriptedModel(
        [
            {"message": leak, "done": False, "done_reason": None},
            {"message": "table for two at eight", "done": False, "done_reason": None},
        ]
    )
    turn = await next_user_message(model, scenario=scenario, transcript=CHAT, may_stop=True)
    assert turn.message == "table for two at eight"
    assert "the persona word for word" in model.calls[1][0][-1]["content"]


def test_a_scenario_judged_only_by_evaluations_has_something_to_check(tmp_path: Path) -> None:
    tests = (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - id: scripted-scored\n"
        "    turns: [{user: hi}]\n"
        "    evaluations: [empathy]\n"
    )
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": tests})
    (loaded,) = load_paths([tmp_path], library=[])
    assert [e.name for e in loaded.defined_evaluations] == ["empathy"]


def test_the_shipped_examples_use_the_library() -> None:
    examples = Path(__file__).parents[1] / "examples"
    files = [examples / "library.yaml", examples / "simulated_users.yaml"]
    loaded = by_id(load_paths(files, library=[]))
    late = loaded["users/late-delivery"]
    assert late.simulated_user is not None and names(late) == ["resolution", "empathy"]


# --- Python tests -----------------------------------------------------------------------


def user_turns(messages: Sequence[ChatMessage], schema: Any) -> Any:
    """The simulated user: one message, then done."""
    if any("Booked" in m["content"] for m in messages):
        return {"message": "", "done": True, "done_reason": "goal_achieved"}
    return {"message": "A table for two at eight, please.", "done": False, "done_reason": None}


def booked(history: list[dict[str, str]]) -> str:
    return "Booked."


def test_a_python_suite_plays_a_library_user_and_takes_its_evaluations(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY})
    library = load_library([tmp_path / "library.yaml"])
    model = ScriptedModel(handler=user_turns)
    suite = Suite(
        target=booked,
        model=model,
        persona=library.simulated_user("caller"),
        goal="Book a table",
    )

    @suite.scenario
    async def test_books() -> None:
        async with suite.session() as session:
            await session.simulate(turns=2)

    (scenario,) = suite.run(store=False).scenarios
    assert scenario.status == "passed", scenario.trials[0].error
    system = model.calls[0][0][0]["content"]
    assert "You are Sam, calling from a noisy car, and you mumble.\nYour goal: Book a table" in (
        system
    )
    late = library.simulated_user("frustrated-late-delivery")
    scored = Suite(
        target="http://127.0.0.1:9/chat",
        persona=late,
        evaluations=library.evaluations_for(late, "resolution"),
    )

    @scored.scenario
    async def test_scored() -> None: ...

    (code,) = SuiteRun([scored]).scenarios()
    assert [e.name for e in code.evaluations] == ["empathy", "resolution"]


def test_python_library_errors_name_what_is_known(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY})
    library = load_library([tmp_path])
    with pytest.raises(UserError, match="unknown simulated user 'callr'; did you mean 'caller'"):
        library.simulated_user("callr")
    with pytest.raises(UserError, match="unknown evaluation 'empaty'; did you mean 'empathy'"):
        library.evaluations_for("caller", "empaty")
    late = library.simulated_user("frustrated-late-delivery")
    with pytest.raises(UserError, match="has evaluations empathy attached: pass them too"):
        Suite(target="http://127.0.0.1:9/chat", persona=late)
    with pytest.raises(ConfigError, match="job_tilte"):
        bad = LIBRARY.replace("job_title", "job_tilte")
        write(tmp_path, {"library.yaml": bad})
        load_library([tmp_path])


@pytest.mark.anyio
async def test_the_judge_sees_the_persona_the_simulated_user_played(tmp_path: Path) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    scenario = by_id(load_paths([tmp_path], library=[]))["call"]
    chat = Transcript(
        messages=(
            Message(role="user", content="A table please"),
            Message(role="agent", content="Booked for two."),
        )
    )
    judge = ScriptedModel(handler=lambda messages, schema: "not an answer")
    await judge_conversation(judge, scenario=scenario, transcript=chat)
    prompt = judge.calls[0][0][-1]["content"]
    assert "The user's persona: You are Sam, calling from a noisy car, and you mumble." in prompt


def test_the_readme_example_loads_and_its_error_is_as_shown(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = readme.split("#### Reusable simulated users and evaluations (library files)\n")[1]
    blocks = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)[:2]
    files = {block.splitlines()[0].removeprefix("# tests/"): block for block in blocks}
    write(tmp_path, files)
    (late,) = load_paths([tmp_path], library=[])
    assert isinstance(late, SimulatedScenario) and names(late) == ["resolution", "empathy"]
    typo = files["late.yaml"].replace(
        "user: frustrated-late-delivery", "user: frustrated-late-delvery"
    )
    write(tmp_path, {"late.yaml": typo})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    shown = str(caught.value).replace(str(tmp_path), "tests")
    assert shown in section


def schema_errors(data: Any) -> list[str]:
    import jsonschema

    from sparring.loaders import test_file_json_schema

    validator = jsonschema.Draft202012Validator(test_file_json_schema())
    return [e.message for e in validator.iter_errors(data)]  # pyright: ignore[reportUnknownMemberType]


def test_the_json_schema_accepts_library_files_and_refuses_a_typo() -> None:
    from sparring.loaders._parse import parse_documents

    library = parse_documents(LIBRARY, path="library.yaml")[0].data
    assert schema_errors(library) == []
    examples = Path(__file__).parents[1] / "examples"
    for name in ("library.yaml", "simulated_users.yaml"):
        text = (examples / name).read_text(encoding="utf-8")
        assert schema_errors(parse_documents(text, path=name)[0].data) == [], name
    library["simulated_users"][0]["job_tilte"] = "x"
    assert schema_errors(library)
    assert schema_errors({"simulated_users": [{"name": "x", "mode": "video"}]})


def test_a_library_file_both_among_the_tests_and_in_the_setting_is_read_once(
    tmp_path: Path,
) -> None:
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    loaded = by_id(load_paths([tmp_path], library=[tmp_path / "library.yaml"]))
    assert names(loaded["late"]) == ["resolution", "empathy"]


def test_a_test_file_named_on_its_own_finds_the_library_next_to_it(tmp_path: Path) -> None:
    other = (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - {id: elsewhere, prompt: hi, checks: [{contains: x}]}\n"
    )
    kept = LIBRARY.split("simulated_users:")[0]
    both = kept.replace("empathy", "kindness").replace("resolution", "outcome") + "---\n" + other
    write(
        tmp_path,
        {
            "library.yaml": LIBRARY,
            "t.yaml": TESTS,
            "broken.yaml": "scenarios: [\n",  # not a library: never read as one
            "mixed.yaml": both,  # its library document counts, its scenarios do not
        },
    )
    loaded = load_paths([tmp_path / "t.yaml"], library=[])
    assert [s.id for s in loaded] == ["late", "call", "plain"]
    assert names(by_id(loaded)["late"]) == ["resolution", "empathy"]
    (tmp_path / "library.yaml").write_text(LIBRARY.replace("job_title", "job_tilte"))
    with pytest.raises(ConfigError, match="library.yaml:15:5: unknown key 'job_tilte'"):
        load_paths([tmp_path / "t.yaml"], library=[])


PLUGIN_LATE = """\
target: {ref: "shop_agent:reply"}
scenarios:
  - id: late_booking
    user: caller
    opening_message: Book me a slot
    goal: Book a slot
    max_turns: 1
    criteria: ["The agent books a slot"]
"""


def test_the_pytest_plugin_finds_the_library_in_its_yaml_dirs(pytester: pytest.Pytester) -> None:
    from tests.test_pytest_plugin import make_project

    library = LIBRARY.replace("evaluations: [empathy]", "evaluations: []")
    files = {"evals/library.yaml": library, "evals/late.yaml": PLUGIN_LATE}
    make_project(pytester, settings='model = "scripted:met"\n', files=files)
    result = pytester.runpytest("--sparring-live", "-v")
    result.assert_outcomes(passed=1)
    assert any("evals/late.yaml::late_booking PASSED" in line for line in result.outlines)


def user_and_judge(messages: Sequence[ChatMessage], schema: Any) -> Any:
    """One model for both roles: the simulated user says one thing and is done; the judge
    meets every item and gives every insight a value of its type, quoting the reply."""
    given = cast(dict[str, Any], schema or {})
    properties = cast(dict[str, Any], given.get("properties", {}))
    if "done_reason" in properties:
        if any("Refunded" in m["content"] for m in messages):
            return {"message": "", "done": True, "done_reason": "goal_achieved"}
        return {"message": "Where is my daypack?!", "done": False, "done_reason": None}
    quote = "Refunded in full"
    by_type = {"boolean": True, "number": 0.8, "string": "refund"}
    asked = cast(dict[str, dict[str, Any]], properties.get("insights", {}).get("properties", {}))
    insights = {
        i: {
            "reasoning": "r",
            "evidence": [quote],
            "turns": [1],
            "value": by_type.get(str(spec["properties"]["value"].get("type")), "refund"),
        }
        for i, spec in asked.items()
    }
    ids = cast(list[str], properties.get("verdicts", {}).get("required", []))
    verdicts = {
        i: {"reason": "r", "evidence": [quote], "turns": [1], "verdict": "met"} for i in ids
    }
    return {"verdicts": verdicts, "insights": insights, "replies": {}}


@pytest.mark.anyio
async def test_a_run_plays_the_user_and_scores_its_evaluations(tmp_path: Path) -> None:
    from sparring.runner import RunSettings, run_scenarios
    from sparring.targets.scripted import ScriptedTarget

    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": TESTS})
    late = by_id(load_paths([tmp_path], library=[]))["late"]
    model = ScriptedModel(handler=user_and_judge)
    result = await run_scenarios(
        [late],
        targets=lambda _s: ScriptedTarget(["Refunded in full, sorry for the wait."] * 3),
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=1),
    )
    (trial,) = result.scenarios[0].trials
    system = model.calls[0][0][0]["content"]
    assert "Who you are: Her order of printer paper is a week late" in system
    judge_prompt = " ".join(m["content"] for m in model.calls[-1][0])
    assert "How was the problem resolved?" in judge_prompt
    assert "acknowledge the customer's frustration" in judge_prompt
    assert {i.evaluation for i in trial.insights} == {"resolution", "empathy"}


@pytest.mark.anyio
async def test_a_scripts_simulate_steps_play_its_user(tmp_path: Path) -> None:
    from sparring.runner import RunSettings, run_scenarios
    from sparring.targets.scripted import ScriptedTarget

    script = (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - id: mixed\n"
        "    user: frustrated-late-delivery\n"
        "    goal: Get a refund\n"
        "    turns:\n"
        "      - user: Hi\n"
        "      - simulate: 1\n"
    )
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": script})
    (mixed,) = load_paths([tmp_path], library=[])
    assert isinstance(mixed, ScriptedScenario) and mixed.simulated_user is not None
    assert names_of(mixed) == ["empathy"]
    model = ScriptedModel(handler=user_and_judge)
    await run_scenarios(
        [mixed],
        targets=lambda _s: ScriptedTarget(["Sorry, which order?"] * 3),
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=1),
    )
    system = model.calls[0][0][0]["content"]
    assert "Who you are: Her order of printer paper is a week late" in system


def test_a_script_whose_user_brings_no_evaluation_still_needs_something_to_check(
    tmp_path: Path,
) -> None:
    script = (
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n"
        "  - id: mixed\n"
        "    user: caller\n"
        "    goal: Book a table\n"
        "    turns: [{simulate: 1}]\n"
    )
    write(tmp_path, {"library.yaml": LIBRARY, "t.yaml": script})
    with pytest.raises(ConfigError) as caught:
        load_paths([tmp_path], library=[])
    assert str(caught.value).endswith(
        "t.yaml:3:5: scenario 'mixed' has nothing to check; add "
        "`should:` or `checks:` to a turn, or `criteria:` / `checks:` to the scenario"
    )


def test_an_empty_python_library_says_how_to_load_one() -> None:
    with pytest.raises(UserError, match=r"no library was loaded; give load_library\(\) its"):
        load_library([]).simulated_user("caller")
