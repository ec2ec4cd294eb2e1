"""Record and replay under the pytest plugin: `--sparring-record DIR`, `--sparring-replay
DIR`, `--sparring-replay-strict`, `--sparring-live-role ROLE`, with the cassettes of
`sparring run --record` (either records, the other replays), one merged cassette directory
under pytest-xdist, and the replay summary line in pytest's terminal summary (issue 11,
section 3).

Each inner project (`pytester`) talks to a real HTTP agent on 127.0.0.1 (`EchoServer`,
stopped before a replay: unreachable) and registers a `scripted` model provider that logs
every call: `scripted:judge` finds everything met, `scripted:not_met` nothing, and the
simulated user thanks the agent and stops.
"""

from __future__ import annotations

import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.models.registry import PROVIDERS
from tests.support.echo_server import Answer, EchoRequest, EchoServer

pytest_plugins = ["pytester"]

MODELS = """
from sparring.models.registry import register_provider
from sparring.models.scripted import ScriptedModel


def _quote(messages):  # a `met` must quote the conversation: the agent's last reply
    text = " ".join(m["content"] for m in messages)
    return text.rsplit("<<<BEGIN agent message>>>", 1)[-1].split("<<<END", 1)[0].strip()


def _verdict(name, messages):
    verdict = "not_met" if name == "not_met" else "met"
    return {"verdict": verdict, "reason": f"the judge says {verdict}",
            "evidence": [_quote(messages)], "turns": []}


def _handler(name):
    def answer(messages, schema):
        with open("model_calls.log", "a") as log:
            log.write(name + "\\n")
        props = (schema or {}).get("properties", {})
        if "verdicts" in props:
            return {"verdicts": {i: _verdict(name, messages)
                                 for i in props["verdicts"]["required"]},
                    "replies": {t: {"note": "fine", "score": 1}
                                for t in props["replies"]["required"]}}
        if "verdict" in props:
            return _verdict(name, messages)
        return {"message": "Thanks", "done": True, "done_reason": "goal_achieved"}
    return answer


def register():
    register_provider("scripted", lambda spec, name, options: ScriptedModel(
        handler=_handler(name), name=spec))
"""

CONFTEST = """
from sparring.models.registry import PROVIDERS
import scripted_models


def pytest_configure(config):
    scripted_models.register()


def pytest_unconfigure(config):
    PROVIDERS.pop("scripted", None)
"""

SCENARIOS = """
target:
  url: "{url}"
  body_template: {{message: "{{{{input}}}}"}}
  response_path: reply
scenarios:
  - id: booking
    trials: 2
    turns:
      - user: "Book me a slot at 10am"
        should: confirm the booking
  - id: refund
    opening_message: "I want a refund"
    goal: Get a refund
    max_turns: 2
    criteria: ["The agent answers the customer"]
  - id: cancel
    turns:
      - user: "Cancel my slot"
        checks:
          - contains: refunded
"""
"""Two scenarios pass (a judged one, a simulated one), one fails a check."""

ONLY_CHECKS = """
target:
  url: "{url}"
  body_template: {{message: "{{{{input}}}}"}}
  response_path: reply
scenarios:
  - id: checked
    turns:
      - user: "Book me a slot"
        checks:
          - contains: Book
"""

LIVE = ("--sparring-live", "--sparring-no-store")
STRICT = ("--sparring-replay", "tapes", "--sparring-replay-strict", "--sparring-no-store")


def echo(request: EchoRequest) -> Answer:
    return Answer({"reply": f"You said: {request.body['message']}"})


@pytest.fixture
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo) as server:
        yield server


def project(pytester: pytest.Pytester, url: str, *, model: str | None, text: str) -> None:
    """The inner project: settings (with `model`, or none), the scripted models, the tests."""
    setting = f'model = "{model}"\n' if model else ""
    pytester.makepyprojecttoml(f'[tool.sparring]\nyaml_dirs = ["evals"]\n{setting}')
    pytester.makepyfile(scripted_models=MODELS)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir(exist_ok=True)
    (pytester.path / "evals/shop.yaml").write_text(textwrap.dedent(text).format(url=url))


def model_calls(pytester: pytest.Pytester) -> int:
    log = pytester.path / "model_calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def record(pytester: pytest.Pytester, agent: EchoServer, text: str = SCENARIOS) -> str:
    """Record the scenarios live into `tapes`; the agent's URL (stopped after)."""
    url = agent.url("/chat")
    project(pytester, url, model="scripted:judge", text=text)
    result = pytester.runpytest(*LIVE, "--sparring-record", "tapes")
    assert "recorded to tapes" in result.stdout.str()
    return url


def test_a_strict_replay_gives_the_recorded_verdicts_with_no_model_and_no_agent(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = record(pytester, agent)
    calls = model_calls(pytester)
    assert calls > 0
    agent.__exit__()  # unreachable from now on
    project(pytester, url, model=None, text=SCENARIOS)
    result = pytester.runpytest(*STRICT, "-rA")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*sparring scenario 'cancel' failed: 0/1 trials passed*",
            "*t1.check1 (contains*refunded*) not met*You said: Cancel my slot*",
            "*= sparring replay =*",
            "replay: agent: 4 replayed, 0 live; user: 1 replayed, 0 live; "
            "judge: 3 replayed, 0 live",
            "PASSED evals/shop.yaml::booking",
            "PASSED evals/shop.yaml::refund",
        ]
    )
    assert "not judged" not in result.stdout.str()  # judged from the cassettes, not skipped
    assert model_calls(pytester) == calls


def test_a_strict_miss_fails_the_test_naming_the_pytest_options(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = record(pytester, agent)
    agent.__exit__()
    changed = SCENARIOS.replace("at 10am", "at 11am").replace("answers the", "greets the")
    project(pytester, url, model=None, text=changed)
    result = pytester.runpytest(*STRICT)
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*sparring scenario 'booking' error: 0/2 trials passed*",
            "*replay: no recorded agent reply for turn 1 (the user says 'Book me a slot at "
            "11am') of scenario 'booking' trial 1 in tapes?agent.jsonl*; record it again "
            "(`--sparring-record DIR`) or let the agent answer live "
            "(`--sparring-live-role agent`)*",
            "*sparring scenario 'refund' error*",
            "*replay: no recorded judge answer*(`--sparring-live-role judge`)*",
        ]
    )


def test_a_role_with_nothing_recorded_is_a_strict_miss_not_a_skipped_verdict(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = record(pytester, agent, text=ONLY_CHECKS)  # the judge was never asked
    agent.__exit__()
    judged = ONLY_CHECKS + "        should: confirm the booking\n"
    project(pytester, url, model=None, text=judged)
    result = pytester.runpytest(*STRICT)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*replay: no recorded judge answer for the prompt ending*"])


def test_live_role_judge_grades_the_recorded_conversations_again(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = record(pytester, agent)
    agent.__exit__()
    project(pytester, url, model="scripted:not_met", text=SCENARIOS)
    result = pytester.runpytest(*STRICT, "--sparring-live-role", "judge")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*booking*not met: the judge says not_met*",
            "replay: agent: 4 replayed, 0 live; user: 1 replayed, 0 live; "
            "judge: 0 replayed, 3 live",
        ]
    )


@pytest.fixture
def sparring_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """`sparring run` in this process, in the inner project, with its scripted models."""
    monkeypatch.setattr(sys, "path", [str(pytester.path), *sys.path])
    yield
    PROVIDERS.pop("scripted", None)
    sys.modules.pop("scripted_models", None)


def run_cli(*args: str) -> tuple[int, str]:
    import scripted_models  # pyright: ignore[reportMissingImports]

    scripted_models.register()  # pyright: ignore[reportUnknownMemberType]
    done = CliRunner().invoke(cli, ["run", "evals", "--no-live", "--no-store", *args])
    return done.exit_code, done.output


def test_a_cassette_recorded_by_sparring_run_replays_under_pytest(
    pytester: pytest.Pytester, agent: EchoServer, sparring_run: None
) -> None:
    url = agent.url("/chat")
    project(pytester, url, model="scripted:judge", text=SCENARIOS)
    code, output = run_cli("--record", "tapes")
    assert code == 1, output  # `cancel` fails
    agent.__exit__()
    project(pytester, url, model=None, text=SCENARIOS)
    result = pytester.runpytest(*STRICT)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["replay: agent: 4 replayed, 0 live; *judge: 3 replayed, 0 live"])


def test_a_cassette_recorded_under_pytest_replays_with_sparring_run(
    pytester: pytest.Pytester, agent: EchoServer, sparring_run: None
) -> None:
    url = record(pytester, agent)
    agent.__exit__()
    project(pytester, url, model=None, text=SCENARIOS)
    code, output = run_cli("--replay", "tapes", "--replay-strict", "-o", "r.json")
    assert code == 1, output
    assert "replay: agent: 4 replayed, 0 live; user: 1 replayed, 0 live; judge: 3" in output
    report = json.loads((pytester.path / "r.json").read_text())
    statuses = {s["scenario_id"]: s["status"] for s in report["scenarios"]}
    assert statuses == {"booking": "passed", "refund": "passed", "cancel": "failed"}


def test_under_xdist_workers_record_one_cassette_directory_that_replays(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = agent.url("/chat")
    project(pytester, url, model="scripted:judge", text=SCENARIOS)
    (pytester.path / "evals/more.yaml").write_text(textwrap.dedent(ONLY_CHECKS).format(url=url))
    workers = ("-p", "xdist", "-n", "2")
    recorded = pytester.runpytest_subprocess(*workers, *LIVE, "--sparring-record", "tapes")
    recorded.assert_outcomes(passed=3, failed=1)
    recorded.stdout.fnmatch_lines(["replay: agent: 0 replayed, 5 live; *; recorded to tapes"])
    assert sorted(p.name for p in (pytester.path / "tapes").iterdir()) == [
        "agent.jsonl",
        "judge.jsonl",
        "user.jsonl",
    ]  # the workers' own directories merged, then removed
    agent.__exit__()
    project(pytester, url, model=None, text=SCENARIOS)
    for args in (workers, ()):
        replayed = pytester.runpytest_subprocess(*args, *STRICT)
        replayed.assert_outcomes(passed=3, failed=1)
        replayed.stdout.fnmatch_lines(
            [
                "replay: agent: 5 replayed, 0 live; user: 1 replayed, 0 live; "
                "judge: 3 replayed, 0 live"
            ]
        )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--sparring-replay-strict"],
            "*--sparring-replay-strict goes with --sparring-replay DIR*",
        ),
        (
            ["--sparring-live-role", "judge"],
            "*--sparring-live-role goes with --sparring-replay DIR*",
        ),
        (
            ["--sparring-replay", "nowhere"],
            "*--sparring-replay nowhere: no such directory; record one first with "
            "`--sparring-record nowhere`*",
        ),
    ],
)
def test_bad_replay_options_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    project(pytester, "http://127.0.0.1:9/chat", model=None, text=ONLY_CHECKS)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


PYTHON_TESTS = """
import pytest

from sparring import Suite

suite = Suite(target="{url}")


@suite.scenario
async def test_suite_books():
    async with suite.session() as session:
        response = await session.send("Book me a slot")
        await response.should("confirm the booking")


@pytest.mark.sparring(trials=2)
async def test_marked_books(sparring):
    async with sparring.session("{url}") as session:
        response = await session.send("Book me a slot at noon")
        await response.should("confirm the booking")
"""


def test_python_tests_sessions_and_shoulds_replay_strictly(
    pytester: pytest.Pytester, agent: EchoServer
) -> None:
    url = agent.url("/chat")
    project(pytester, url, model="scripted:judge", text=ONLY_CHECKS)
    pytester.makepyfile(test_python=PYTHON_TESTS.format(url=url))
    recorded = pytester.runpytest(*LIVE, "--sparring-record", "tapes")
    recorded.assert_outcomes(passed=3)
    calls = model_calls(pytester)
    agent.__exit__()
    project(pytester, url, model=None, text=ONLY_CHECKS)
    result = pytester.runpytest(*STRICT)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["replay: agent: 4 replayed, 0 live; judge: 3 replayed, 0 live"])
    assert "not judged" not in result.stdout.str()
    assert model_calls(pytester) == calls


def test_merging_worker_cassettes_reads_every_part_before_writing(tmp_path: Path) -> None:
    from sparring.errors import UserError
    from sparring.runner.replay_cassettes import CassetteWriter, merge_cassettes

    for worker, text in (("gw0", "one"), ("gw1", "two")):
        writer = CassetteWriter("agent", tmp_path / worker, scrub=str)
        writer.write({"key": text, "scenario": text, "trial": 1, "seq": 1, "reply": text})
        writer.close()
    merge_cassettes([tmp_path / "gw0", tmp_path / "gw1"], tmp_path / "tapes")
    merged = (tmp_path / "tapes/agent.jsonl").read_text().splitlines()
    assert [json.loads(line).get("reply") for line in merged] == [None, "one", "two"]
    assert (tmp_path / "tapes/judge.jsonl").read_text().count("\n") == 1  # the header
    with (tmp_path / "gw1/agent.jsonl").open("a") as damaged:
        damaged.write('{"key": "x"}\n')
    with pytest.raises(UserError, match=r"gw1/agent.jsonl:3: the line was changed"):
        merge_cassettes([tmp_path / "gw0", tmp_path / "gw1"], tmp_path / "tapes")
    assert (tmp_path / "tapes/agent.jsonl").read_text().splitlines() == merged


def test_a_session_without_the_options_imports_nothing_of_replay(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, "http://127.0.0.1:9/chat", model=None, text=ONLY_CHECKS)
    pytester.makepyfile(
        test_plain="""
        import sys

        def test_nothing_of_replay_is_loaded():
            assert not [m for m in sys.modules if m.startswith("sparring.runner")]
        """
    )
    pytester.runpytest_subprocess("test_plain.py").assert_outcomes(passed=1)
