"""Grounded verdicts, empty replies and sampling on the record (issue 9, items 3, 5 and 6).

A `met` for a success criterion or a `should` must quote the conversation; a `should` about
an empty reply is `not_met` without a model call; judge calls send a fixed seed where the
provider takes one, and the JSON report records each model's settings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sparring.api import ConditionsNotMet, ConditionsUndecided, open_session
from sparring.judging.answers import UNVERIFIED_QUOTE
from sparring.judging.judge import NO_REPLY, ShouldItem, judge_conversation
from sparring.judging.sampling import JUDGE_SEED, model_settings, models_used
from sparring.judging.should import Condition, JudgeSettings, judge_shoulds
from sparring.loaders import load_text
from sparring.models.openai import OpenAIModel
from sparring.models.scripted import ScriptedModel
from sparring.results import ModelSettings, RunResult
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario, SimulatedScenario
from sparring.simulator import next_user_message
from sparring.target_specs import OpenAIChatTargetSpec
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, ToolCall, Transcript
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio

HELLO = Transcript(
    messages=(
        Message(role="user", content="What is the tracking number of order 10234?"),
        Message(role="agent", content="Hello"),
    )
)
SCENARIO = SimulatedScenario(
    id="s",
    goal="Track order 10234",
    persona="A customer",
    criteria=["The assistant gives the tracking number"],
    restrictions=["Asks for the card number"],
)
UNGROUNDED = (
    "the judge cited nothing from the agent's reply at turn 1 or its tool calls (a quote "
    'needs 4 or more letters or digits, or all of a shorter reply), so its "met" does not count'
)


def entry(verdict: str, *quotes: str) -> dict[str, Any]:
    return {"reason": "It does.", "evidence": list(quotes), "turns": [1], "verdict": verdict}


def answer(**entries: dict[str, Any]) -> dict[str, Any]:
    return {"verdicts": entries, "replies": {}}


# --- item 5: a met must quote the conversation ----------------------------------------------


async def test_the_small_model_case_two_false_shoulds_citing_nothing_are_errors_not_met() -> None:
    shoulds = [
        ShouldItem("t1.should1", 1, "give the tracking number of order 10234 and the carrier"),
        ShouldItem("t1.should2", 1, "quote the price of the tent in euros"),
    ]
    said = answer(
        c1=entry("met", "ZX-1 via DHL"),
        r1=entry("met"),
        **{
            "t1.should1": entry("met", "tracking number ZX-1, carrier DHL"),
            "t1.should2": entry("met"),
        },
    )
    outcome = await judge_conversation(
        ScriptedModel([said]), scenario=SCENARIO, transcript=HELLO, shoulds=shoulds
    )
    by_id = {v.id: v for v in outcome.verdicts}
    assert [by_id[i].status for i in ("c1", "r1", "t1.should1", "t1.should2")] == [
        "error",
        "met",  # a restriction met (the behaviour did not happen) needs no quote
        "error",
        "error",
    ]
    assert by_id["t1.should2"].reason == f"{UNGROUNDED} (its reason: It does.)"
    assert by_id["t1.should1"].evidence == (
        f"{UNVERIFIED_QUOTE} tracking number ZX-1, carrier DHL",
    )


async def test_one_quote_found_grounds_a_met_and_not_met_needs_none() -> None:
    said = answer(
        c1=entry("met", "made up", "  hello "),  # case and spacing do not matter
        r1=entry("not_met"),
        **{"t1.should1": entry("not_met")},
    )
    outcome = await judge_conversation(
        ScriptedModel([said]),
        scenario=SCENARIO,
        transcript=HELLO,
        shoulds=[ShouldItem("t1.should1", 1, "greet")],
    )
    assert [v.status for v in outcome.verdicts] == ["met", "not_met", "not_met"]
    assert outcome.verdicts[0].evidence == (f"{UNVERIFIED_QUOTE} made up", "hello")


async def test_a_tool_call_shown_to_the_judge_is_evidence_but_an_empty_reply_is_not() -> None:
    called = Transcript(
        messages=(
            Message(role="user", content="Refund order 4411"),
            Message(
                role="agent",
                content="",
                tool_calls=(ToolCall.from_arguments("create_refund", {"order_id": "4411"}),),
            ),
            Message(role="user", content="And?"),
            Message(role="agent", content=""),
        )
    )
    for quote, status in [
        ("(tool call) create_refund", "met"),
        ('{"order_id": "4411"}', "met"),
        ("(empty reply)", "error"),
        ("empty reply", "error"),
        ("…", "error"),
    ]:
        said = answer(c1=entry("met", quote), r1=entry("met"))
        outcome = await judge_conversation(
            ScriptedModel([said]), scenario=SCENARIO, transcript=called
        )
        assert outcome.verdicts[0].status == status, quote


async def test_require_evidence_false_in_a_test_file_keeps_an_unquoted_met() -> None:
    text = (
        "target: {url: http://127.0.0.1:8787/chat}\n"
        "id: loose\nprompt: Hi\ncriteria: [Greets]\nrequire_evidence: false\n"
    )
    (loose,) = load_text(text, path="loose.yaml")
    (strict,) = load_text(text.replace("require_evidence: false\n", ""), path="strict.yaml")
    assert (loose.require_evidence, strict.require_evidence) == (False, True)
    statuses = []
    for scenario in (loose, strict):
        result = await run_scenarios(
            [scenario],
            targets=lambda s: ScriptedTarget(["Hi there!"]),
            user_model=None,
            judge_model=ScriptedModel([answer(c1=entry("met"))]),
        )
        statuses.append(result.scenarios[0].trials[0].status)
    assert statuses == ["passed", "error"]  # never a pass without a quote, by default


async def test_a_python_should_needs_a_quote_unless_told_otherwise() -> None:
    model = ScriptedModel(handler=lambda messages, schema: entry("met", "made up"))
    condition = Condition("t1.should1", "give the tracking number")
    for require, status in [(True, "error"), (False, "met")]:
        [verdict] = await judge_shoulds(
            [condition],
            transcript=HELLO,
            turn=1,
            judge=JudgeSettings(model=model, require_evidence=require),
        )
        assert verdict.status == status
    assert verdict.evidence == (f"{UNVERIFIED_QUOTE} made up",)


async def test_response_should_takes_require_evidence_too() -> None:
    model = ScriptedModel(handler=lambda messages, schema: entry("met", "made up"))
    async with open_session(lambda history: "Hello", model=model) as session:
        response = await session.send("Where is order 10234?")
        with pytest.raises(ConditionsUndecided, match="the judge cited nothing"):
            await response.should("give the tracking number")
        [loose] = await response.should("give the tracking number", require_evidence=False)
    assert loose.status == "met"


# --- item 3: a should about an empty reply is not_met without asking ------------------------


@pytest.mark.parametrize("reply", ["", "   \n\t", None])
async def test_a_should_about_an_empty_reply_is_not_met_without_a_model_call(
    reply: str | None,
) -> None:
    model = ScriptedModel([])
    with ScriptedOpenAIServer([Reply(reply)]) as agent:  # `None`: "content": null
        spec = OpenAIChatTargetSpec(base_url=agent.base_url, model="agent", api_key="k")
        async with open_session(spec, model=model) as session:
            response = await session.send("Hi")
            with pytest.raises(ConditionsNotMet) as caught:
                await response.should("greet the customer")
    assert model.calls == []
    assert NO_REPLY in str(caught.value)


async def test_yaml_shoulds_on_an_empty_reply_are_not_met_and_the_rest_still_judged() -> None:
    transcript = Transcript(
        messages=(
            Message(role="user", content="Hi"),
            Message(role="agent", content="Hello there"),
            Message(role="user", content="Still there?"),
            Message(role="agent", content="  "),
        )
    )
    scenario = ScriptedScenario(id="s", turns=[{"user": "Hi"}, {"user": "Still there?"}])
    model = ScriptedModel([answer(**{"t1.should1": entry("met", "Hello there")})])
    outcome = await judge_conversation(
        model,
        scenario=scenario,
        transcript=transcript,
        shoulds=[ShouldItem("t1.should1", 1, "greet"), ShouldItem("t2.should1", 2, "answer")],
    )
    assert [(v.status, v.reason) for v in outcome.verdicts] == [
        ("met", "It does."),
        ("not_met", "the agent sent no reply"),
    ]
    assert list(model.calls[0][1]["properties"]["verdicts"]["required"]) == ["t1.should1"]
    only_empty = await judge_conversation(
        ScriptedModel([]),
        scenario=scenario,
        transcript=transcript,
        shoulds=[ShouldItem("t2.should1", 2, "answer")],
    )
    assert [v.status for v in only_empty.verdicts] == ["not_met"]


# --- item 6: a fixed seed for the judge, settings on the record -----------------------------


async def test_judge_and_should_calls_send_the_seed_the_simulated_user_none() -> None:
    judge = ScriptedModel([answer(c1=entry("met", "Hello"), r1=entry("met"))])
    await judge_conversation(judge, scenario=SCENARIO, transcript=HELLO)
    should = ScriptedModel([entry("met", "Hello")])
    await judge_shoulds(
        [Condition("t1.should1", "greet")],
        transcript=HELLO,
        turn=1,
        judge=JudgeSettings(model=should),
    )
    user = ScriptedModel([{"message": "Hi", "done": False, "done_reason": None}])
    await next_user_message(user, scenario=SCENARIO, transcript=Transcript(), may_stop=False)
    assert (judge.seeds, should.seeds, user.seeds) == ([JUDGE_SEED], [JUDGE_SEED], [None])


def test_model_settings_split_the_spec_and_say_what_is_sent() -> None:
    openai = OpenAIModel(
        name="openai-compatible:judge", model="judge", base_url="http://127.0.0.1:9/v1", api_key="k"
    )

    class Anthropic(ScriptedModel):
        sends_seed = False
        max_tokens = 4096

    assert model_settings("judge", openai, temperature=0.0) == ModelSettings(
        role="judge",
        spec="openai-compatible:judge",
        provider="openai-compatible",
        model="judge",
        temperature=0.0,
        seed=JUDGE_SEED,
        max_tokens=None,
    )
    seedless = model_settings("judge", Anthropic(name="anthropic:claude"), temperature=0.0)
    assert (seedless.provider, seedless.seed, seedless.max_tokens) == ("anthropic", None, 4096)
    user = model_settings("user", ScriptedModel(), temperature=0.7)
    assert (user.provider, user.model, user.seed) == ("custom", "scripted", None)
    assert models_used(None, None, user_temperature=0.7, judge_temperature=0) == []


async def test_the_json_report_records_each_models_settings() -> None:
    user = ScriptedModel(
        handler=lambda m, s: {"message": "Hi", "done": False, "done_reason": None},
        name="ollama:qwen2.5:7b",
    )
    judge = ScriptedModel([answer(c1=entry("met", "Hello"), r1=entry("met"))], name="openai:j")
    scenario = SimulatedScenario(
        id="s", goal="Say hi", persona="A user", max_turns=1, criteria=["Greets"]
    )
    result = await run_scenarios(
        [scenario],
        targets=lambda s: ScriptedTarget(["Hello"]),
        user_model=user,
        judge_model=judge,
        settings=RunSettings(user_temperature=0.9, judge_temperature=0.1),
    )
    report = json.loads(result.model_dump_json())
    assert report["models"] == [
        {
            "role": "user",
            "spec": "ollama:qwen2.5:7b",
            "provider": "ollama",
            "model": "qwen2.5:7b",
            "temperature": 0.9,
            "seed": None,
            "max_tokens": None,
        },
        {
            "role": "judge",
            "spec": "openai:j",
            "provider": "openai",
            "model": "j",
            "temperature": 0.1,
            "seed": JUDGE_SEED,
            "max_tokens": None,
        },
    ]
    assert RunResult.model_validate(report).models == result.models
