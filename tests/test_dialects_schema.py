"""pytest-agent-eval transcripts written exactly as its published schema (`transcript.json`),
its YAML reference and its README show them, `[tool.agent_eval]` (groups, `live`) and
`pytest --agent-eval-live`; Plainwright's A2A target keys and limits."""

from __future__ import annotations

import json
import textwrap
import warnings
from pathlib import Path
from typing import Any

import anyio
import pytest

from sparring.config import GroupGate, load_settings
from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.loaders.dialects import DialectNote
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.runner import run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.scenario.checks import ContainsCheck, RegexCheck, ToolArgsCheck, ToolCalledCheck
from sparring.scenario.evaluations import ToolArgsJudge
from sparring.target_specs import A2ATargetSpec
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, ToolCall
from tests.test_dialects import conversation_test

pytest_plugins = ["pytester"]

PYPROJECT = """\
[tool.agent_eval]
model = "openai:gpt-4o"  # used by the LLM-as-judge
runs = 1
yaml_dirs = ["tests/evals"]
target = { type = "callable", ref = "booking_agent:reply" }  # sparring's
"""

# docs/yaml-api.md, "Full annotated transcript", as written there
ANNOTATED = """\
# tests/evals/booking.yaml

# Unique ID — used as the pytest test name
id: booking_confirmation

# Fraction of runs that must pass (0.0 – 1.0)
threshold: 0.8

# Number of times to run the full transcript
runs: 3

# Optional tags for quality-gate filtering
tags:
  - gate:booking
  - smoke

turns:
  - user: "Book me a table for 2 tomorrow at 10am."

    expect:
      # Reply must contain at least one of these strings (case-insensitive)
      reply_contains_any:
        - "confirmed"
        - "booked"

      # Reply must contain ALL of these strings (case-insensitive)
      reply_contains_all:
        - "tomorrow"
        - "10"

      # Tool names that must appear in this turn's tool calls
      tool_calls_include:
        - create_booking

      # Tool names that must NOT appear in this turn's tool calls
      tool_calls_exclude:
        - cancel_booking

      # LLM-as-judge rubric (requires a model in [tool.agent_eval])
      judge:
        rubric: >
          The reply must confirm a booking with a date, time, and
          reference number. The tone should be friendly and professional.
        model: "openai:gpt-4o"   # optional — overrides [tool.agent_eval] model

  - user: "Can you email me the confirmation?"
    expect:
      reply_contains_any:
        - "email"
        - "sent"
"""

# every other key of the schema's `expect`
TOOLS = r"""
id: booking_tools
turns:
  - user: "Book me a slot tomorrow at 10am."
    expect:
      reply_matches_any: ['BK-\d+', 'ref(\d)\1']
      reply_matches_all: ['BOOKED', 'tomorrow']
      tool_calls_include: [check_availability, create_booking]
      tool_calls_ordered: true
      tool_calls_args:
        - tool: create_booking
          args: {time: "10am"}
        - tool: check_availability
          args: {date: "tomorrow", time: "10am"}
          mode: exact
        - tool: create_booking
          judge:
            rubric: "The booking is for tomorrow at 10am."
"""


def project(tmp_path: Path, **files: str) -> Path:
    """A pytest-agent-eval project (plus sparring's `target`), its transcripts in tests/evals."""
    (tmp_path / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (tmp_path / ".git").mkdir()
    evals = tmp_path / "tests" / "evals"
    evals.mkdir(parents=True)
    for name, text in files.items():
        (evals / f"{name}.yaml").write_text(text, encoding="utf-8")
    return evals


def load_one(path: Path) -> tuple[ScriptedScenario, list[str]]:
    """The one scenario of `path`, and the notes given loading it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (scenario,) = load_paths([path])
    assert isinstance(scenario, ScriptedScenario)
    return scenario, [str(w.message) for w in caught if issubclass(w.category, DialectNote)]


def test_the_annotated_transcript_loads_with_pytest_agent_evals_meaning(tmp_path: Path) -> None:
    scenario, notes = load_one(project(tmp_path, booking=ANNOTATED) / "booking.yaml")
    assert (scenario.id, scenario.threshold, scenario.trials) == ("booking_confirmation", 0.8, 3)
    assert scenario.tags == ["gate:booking", "smoke"]
    first, second = scenario.turns
    assert first.checks == [
        ContainsCheck(value=["confirmed", "booked"], match="any"),
        ContainsCheck(value=["tomorrow", "10"], match="all"),
        ToolCalledCheck(include=["create_booking"], exclude=["cancel_booking"]),
    ]
    assert first.should == [
        "meet this rubric: The reply must confirm a booking with a date, time, and reference "
        "number. The tone should be friendly and professional."
    ]
    assert second.checks == [ContainsCheck(value=["email", "sent"], match="any")]
    assert any("judge model 'openai:gpt-4o' is not used" in n for n in notes)


def test_every_expect_key_of_the_schema_becomes_its_check(tmp_path: Path) -> None:
    scenario, _ = load_one(project(tmp_path, tools=TOOLS) / "tools.yaml")
    assert scenario.threshold == 0.8  # pytest-agent-eval's default: set nowhere
    assert scenario.turns[0].checks == [
        RegexCheck(pattern=r"(?|(?:BK-\d+)|(?:ref(\d)\1))", ignore_case=True),
        RegexCheck(pattern="BOOKED", ignore_case=True),
        RegexCheck(pattern="tomorrow", ignore_case=True),
        ToolCalledCheck(include=["check_availability", "create_booking"], ordered=True),
        ToolArgsCheck(tool="create_booking", args={"time": "10am"}, match="subset"),
        ToolArgsCheck(
            tool="check_availability", args={"date": "tomorrow", "time": "10am"}, match="exact"
        ),
    ]
    assert scenario.tool_args_judge == [
        ToolArgsJudge(tool="create_booking", rubric="The booking is for tomorrow at 10am.")
    ]


def booking_reply(*calls: tuple[str, dict[str, Any]], text: str) -> ScriptedTarget:
    """An agent answering every message with `text` and the tool `calls`."""
    tool_calls = tuple(ToolCall.from_arguments(name, args) for name, args in calls)
    return ScriptedTarget([Message(role="agent", content=text, tool_calls=tool_calls)])


CHECKED = ("check_availability", {"date": "tomorrow", "time": "10am"})
BOOKED = ("create_booking", {"time": "10am", "party": 2})


@pytest.mark.parametrize(
    ("agent", "status", "reason"),
    [
        # the patterns and texts match whatever the case, as in pytest-agent-eval
        (booking_reply(CHECKED, BOOKED, text="booked for Tomorrow, ref bk-7"), "passed", ""),
        (booking_reply(CHECKED, BOOKED, text="Booked tomorrow: REF33"), "passed", ""),
        (
            booking_reply(BOOKED, CHECKED, text="Booked tomorrow: BK-7"),
            "failed",
            "expected calls to check_availability, create_booking in that order",
        ),
        (
            booking_reply(
                ("check_availability", {"date": "tomorrow", "time": "10am", "x": 1}),
                BOOKED,
                text="Booked tomorrow: BK-7",
            ),
            "failed",
            "expected check_availability to be called with exactly",
        ),
        (booking_reply(CHECKED, BOOKED, text="Booked tomorrow."), "failed", "expected turn 1"),
    ],
)
def test_a_schema_transcript_runs_with_pytest_agent_evals_semantics(
    tmp_path: Path, agent: ScriptedTarget, status: str, reason: str
) -> None:
    scenario, _ = load_one(project(tmp_path, tools=TOOLS) / "tools.yaml")
    judge = ScriptedModel(
        handler=lambda messages, schema: example_for_schema(schema or {}, text="10am")
    )

    async def run() -> Any:
        return await run_scenarios(
            [scenario], targets=lambda s: agent, user_model=None, judge_model=judge
        )

    (result,) = anyio.run(run).scenarios
    assert result.status == status
    verdicts = result.trials[0].verdicts
    failed = " ".join(v.reason for v in verdicts if v.status != "met")
    assert reason in failed
    if status == "passed":
        assert {v.id for v in verdicts} >= {"t1.check1", "tool_args.create_booking"}


def test_the_default_threshold_is_pytest_agent_evals_unless_set(tmp_path: Path) -> None:
    evals = project(
        tmp_path, tools=TOOLS, own=TOOLS.replace("id: booking_tools", "id: own\nthreshold: 1")
    )
    assert load_one(evals / "tools.yaml")[0].threshold == 0.8
    assert load_one(evals / "own.yaml")[0].threshold == 1.0
    (tmp_path / "pyproject.toml").write_text(PYPROJECT + "threshold = 0.5\n")
    assert load_one(evals / "tools.yaml")[0].threshold == 0.5


VOICE = """\
# tests/evals/booking_voice.yaml
id: booking_voice
turns:
  - user: "Book me a slot tomorrow at 10am."
    audio: booking_t1.wav # resolved relative to this YAML's directory
    expect:
      tool_calls_include: [create_booking]
      reply_contains_any: [confirmed, booked]
"""


def test_a_missing_wav_matters_only_to_a_voice_target(tmp_path: Path) -> None:
    evals = project(tmp_path, booking_voice=VOICE)
    scenario, notes = load_one(evals / "booking_voice.yaml")
    assert scenario.turns[0].audio is None  # the text is sent
    assert any(
        n.startswith("`audio:` is not used: the target is not a voice target") for n in notes
    )
    voice = VOICE.replace("turns:", "target: {type: voice, callable: 'app:session'}\nturns:")
    (evals / "booking_voice.yaml").write_text(voice)
    with pytest.raises(ConfigError) as caught, warnings.catch_warnings():
        warnings.simplefilter("ignore", DialectNote)
        load_paths([evals / "booking_voice.yaml"])
    assert "booking_voice.yaml:6:" in str(caught.value)
    assert "booking_t1.wav" in str(caught.value) and "sparring synthesize" in str(caught.value)


@pytest.mark.parametrize(
    ("expect", "line", "message"),
    [
        ("reply_matches_any: ['ok', 'BK-(\\d+']", 5, "invalid regular expression 'BK-(\\\\d+'"),
        (
            "tool_calls_args:\n        - {tool: create_booking, args: {}, mode: fuzzy}",
            6,
            "`mode: fuzzy` is not a mode: write `subset`",
        ),
        (
            "tool_calls_args:\n        - tool: create_booking",
            6,
            "a `tool_calls_args` item needs `args`",
        ),
        ("tool_calls_ordred: true", 5, "did you mean 'tool_calls_ordered'?"),
        ("judge: {rubric: x, modle: y}", 5, "unknown key 'modle' in turns[0].expect.judge"),
        ("- reply_contains_any: [x]", 4, "`expect:` must be a mapping"),
    ],
)
def test_schema_mistakes_are_load_errors_at_file_line(
    tmp_path: Path, expect: str, line: int, message: str
) -> None:
    text = f"id: t\nturns:\n  - user: Hi\n    expect:\n      {expect}\n"
    path = project(tmp_path, t=text) / "t.yaml"
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    assert f"{path}:{line}:" in str(caught.value)
    assert message in str(caught.value)


GROUPS = """
[tool.agent_eval.groups.booking]
threshold = 0.5
tags = ["gate:booking"]
pytest_markers = ["booking"]
must_pass = ["booking_multi_turn"]
"""


def test_agent_eval_groups_live_and_judge_model_are_settings(tmp_path: Path) -> None:
    project(tmp_path)
    with (tmp_path / "pyproject.toml").open("a") as f:
        f.write('judge_model = "openai:gpt-4o-mini"\nlive = true\n' + GROUPS)
    settings = load_settings({}, cwd=tmp_path, env={})
    assert (settings.judge_model, settings.live) == ("openai:gpt-4o-mini", True)
    assert settings.groups == {
        "booking": GroupGate(
            threshold=0.5,
            tags=("gate:booking",),
            markers=("booking",),
            must_pass=("booking_multi_turn",),
        )
    }
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    assert not load_settings({}, cwd=tmp_path, env={}).live
    assert load_settings({}, cwd=tmp_path, env={"EVAL_LIVE": "1"}).live


# --- pytest, as pytest-agent-eval's users run it -------------------------------------------

BOOKING_AGENT = """
def reply(history):
    text = history[-1]["content"].lower()
    if "move it" in text:
        return ("Done: your 10am booking is moved to 11am.",
                [{"name": "update_booking", "arguments": {"time": "11am"}}])
    if "email" in text:
        return "I've sent the confirmation email.", [{"name": "send_email", "arguments": {}}]
    if "book" in text:
        return ("Booked! Confirmed for tomorrow at 10am, reference BK-12.",
                [{"name": "create_booking", "arguments": {"time": "10am"}}])
    return "Sorry, I can only book slots."
"""

CONFTEST = """
from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel


def _replies(messages):  # a `met` must quote the reply: every agent reply in the prompt
    text = " ".join(m["content"] for m in messages)
    parts = text.split("<<<BEGIN agent message>>>")[1:]
    return [p.split("<<<END", 1)[0].strip() for p in parts]


def _met(messages, schema):
    props = schema["properties"]
    met = {"verdict": "met", "reason": "the judge says met", "evidence": _replies(messages),
           "turns": []}
    return {"verdicts": {i: met for i in props["verdicts"]["required"]},
            "replies": {t: {"note": "fine", "score": 1} for t in props["replies"]["required"]}}


def pytest_configure(config):
    register_provider("scripted", lambda spec, name, options: ScriptedModel(
        handler=_met, name=spec))


def pytest_unconfigure(config):
    PROVIDERS.pop("scripted", None)
"""

# the seed's README examples, as written there
SINGLE = """\
# tests/evals/booking_single_turn.yaml
# yaml-language-server: $schema=https://datarootsio.github.io/pytest-agent-eval/schema/transcript.json
id: booking_single_turn
threshold: 0.8
runs: 3
turns:
  - user: "Book me a slot tomorrow at 10am."
    expect:
      reply_contains_any: ["confirmed", "booked"]
      tool_calls_include: ["create_booking"]
      judge:
        rubric: "Reply must confirm the booking and include a reference number."
"""

MULTI = """\
# tests/evals/booking_multi_turn.yaml
id: booking_multi_turn
threshold: 0.66 # tolerate 1/3 flaky runs
runs: 3
tags: [gate:booking, smoke]
turns:
  # Turn 1 — initial booking
  - user: "Book me a slot tomorrow at 10am."
    expect:
      reply_contains_any: ["confirmed", "booked"]
      tool_calls_include: ["create_booking"]
  # Turn 2 — agent must remember the booking from turn 1
  - user: "Actually, can you move it to 11am instead?"
    expect:
      tool_calls_include: ["update_booking"]
      tool_calls_exclude: ["create_booking"] # must update, not double-book
      judge:
        rubric: "Confirms the new time AND references the original 10am booking."
  # Turn 3 — context propagates further
  - user: "Email me the confirmation."
    expect:
      tool_calls_include: ["send_email"]
      reply_contains_any: ["sent", "email"]
"""

EDGE = """\
id: booking_edge_case
tags: [gate:booking]
turns:
  - user: "Can I bring my dog?"
    expect:
      reply_contains_any: ["dogs welcome"]
"""


NOTES_SHOWN = "default::sparring.loaders.dialects.DialectNote"
"""Notes are warnings: shown in pytest's summary (this suite makes warnings errors)."""


def pytest_agent_eval_project(pytester: pytest.Pytester) -> None:
    """A pytest-agent-eval project with sparring installed in place of pytest-agent-eval."""
    pytester.makepyprojecttoml(PYPROJECT.replace("openai:gpt-4o", "scripted:met") + GROUPS)
    pytester.makepyfile(booking_agent=BOOKING_AGENT)
    pytester.makeconftest(CONFTEST)
    evals = pytester.path / "tests" / "evals"
    evals.mkdir(parents=True)
    for name, text in (
        ("single_turn", SINGLE),
        ("multi_turn", MULTI),
        ("voice", VOICE),
        ("edge_case", EDGE),
    ):
        (evals / f"booking_{name}.yaml").write_text(text, encoding="utf-8")


@pytest.mark.parametrize(("args", "env"), [(["--agent-eval-live"], {}), ([], {"EVAL_LIVE": "1"})])
def test_pytest_agent_eval_live_runs_the_transcripts_and_their_group_gate(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
) -> None:
    pytest_agent_eval_project(pytester)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest("-v", "-W", NOTES_SHOWN, *args)
    result.stdout.fnmatch_lines_random(
        [
            "*booking_single_turn.yaml::booking_single_turn PASSED*",
            "*booking_multi_turn.yaml::booking_multi_turn PASSED*",
            "*booking_voice.yaml::booking_voice PASSED*",  # no WAV: the text is sent
            "*booking_edge_case.yaml::booking_edge_case FAILED*",
            "booking: 1/2 passed*50% required*: PASSED",
            "  must_pass: booking_multi_turn ok",
            "exit code overridden to 0*",
        ]
    )
    assert result.ret == 0  # the failure is inside the booking group, whose gate is met


def test_without_agent_eval_live_checks_run_and_rubrics_wait(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVAL_LIVE", raising=False)
    monkeypatch.delenv("SPARRING_LIVE", raising=False)
    pytest_agent_eval_project(pytester)
    result = pytester.runpytest("-W", NOTES_SHOWN)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines_random(
        [
            "*= sparring: passed without their judged parts =*",
            "tests/evals/booking_single_turn.yaml::booking_single_turn: not judged: *",
            "tests/evals/booking_multi_turn.yaml::booking_multi_turn: not judged: *",
        ]
    )


# --- Plainwright A2A targets -------------------------------------------------------------


def a2a_test(tmp_path: Path, **target: Any) -> Path:
    path = tmp_path / "conversation-test.json"
    test = conversation_test(
        "http://b", target={"agent_url": "https://agent.example.com", **target}
    )
    path.write_text(json.dumps(test, indent=2))
    return path


def test_plainwright_a2a_rpc_url_loads_with_a_note(tmp_path: Path) -> None:
    path = a2a_test(tmp_path, rpc_url="https://agent.example.com/rpc", timeout_s=300)
    with pytest.warns(DialectNote, match=r"rpc_url 'https://agent.example.com/rpc' is not used"):
        (scenario,) = load_paths([path])
    assert isinstance(scenario.target, A2ATargetSpec)
    assert (scenario.target.url, scenario.target.timeout_s) == ("https://agent.example.com", 300)


@pytest.mark.parametrize("timeout", [0, 301, 0.5])
def test_plainwright_a2a_timeout_is_1_to_300_seconds(tmp_path: Path, timeout: float) -> None:
    path = a2a_test(tmp_path, timeout_s=timeout)
    with pytest.raises(ConfigError) as caught:
        load_paths([path])
    line = next(n for n, t in enumerate(path.read_text().splitlines(), 1) if "timeout_s" in t)
    assert str(caught.value).startswith(f"{path}:{line}:")
    assert f"timeout_s is {timeout}; Plainwright allows 1 to 300 seconds" in str(caught.value)


def test_the_dialect_notes_are_not_given_for_native_files(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            id: native
            target: {url: 'http://127.0.0.1:9/chat'}
            turns:
              - user: Hi
                checks: [{regex: hi}]
            """
        )
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (scenario,) = load_paths([path])
    assert isinstance(scenario, ScriptedScenario)
    assert scenario.turns[0].checks == [RegexCheck(pattern="hi")]  # native regex keeps case
