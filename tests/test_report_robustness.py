"""Reports are never lost (issue 9, items 8 and 9): text that is not valid Unicode is repaired
where it enters a result, a report that cannot be written leaves the others written (exit 3),
and bad numbers, headers and deep JSON are clear errors, never tracebacks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from rich.console import Console

from sparring.errors import ModelError, TargetError, UserError
from sparring.events import RunFinished
from sparring.loaders.yaml import load_paths
from sparring.models.chat_completion import MalformedCompletion, parse_chat_completion
from sparring.models.registry import resolve_model
from sparring.reports.console import ConsoleView
from sparring.reports.json import render_json
from sparring.reports.junit import render_junit
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.runner import run_scenarios
from sparring.scenario import ScriptedScenario, parse_threshold
from sparring.secrets import Secrets
from sparring.target_specs import HttpTargetSpec
from sparring.targets.http import HttpTarget
from sparring.transcript import (
    MAX_JSON_DEPTH,
    JsonTooDeep,
    Message,
    ToolCall,
    Transcript,
    parse_json,
)
from tests.support.echo_server import Answer, EchoRequest, EchoServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer

BAD = "bad \ud800 text \udfff"
"""Lone surrogates: what `json.loads('"\\ud800"')` or a YAML `"\\ud800"` escape gives."""
DEEP = "[" * 100_000 + "]" * 100_000


def _result_full_of_bad_text() -> RunResult:
    verdict = Verdict(
        id="c1", kind="criterion", description=BAD, status="not_met", reason=BAD, evidence=(BAD,)
    )
    trial = TrialResult(
        scenario_id="s",
        trial=1,
        status="failed",
        end_reason="max_turns",
        verdicts=[verdict],
        error=BAD,
        transcript=Transcript(messages=(Message(role="agent", content=BAD, raw={BAD: [BAD]}),)),
    )
    scenario = ScenarioResult(
        scenario_id="s", name=BAD, kind="scripted", source=BAD, threshold=1, trials=[trial]
    )
    return RunResult(
        sparring_version="0", run_id="r", started_at="now", scenarios=[scenario], hook_errors=[BAD]
    )


def test_lone_surrogates_are_repaired_where_they_enter_a_result() -> None:
    result = _result_full_of_bad_text()
    dumped = result.model_dump_json()  # would raise on a lone surrogate
    assert "bad \ufffd text \ufffd" in json.loads(dumped)["hook_errors"][0]
    trial = result.scenarios[0].trials[0]
    assert trial.verdicts[0].reason == "bad \ufffd text \ufffd"
    assert trial.transcript.messages[0].raw == {
        "bad \ufffd text \ufffd": ["bad \ufffd text \ufffd"]
    }
    call = ToolCall.from_arguments("look\udc00up", {"id": "x\ud800"})
    assert (call.name, call.arguments) == ("look\ufffdup", {"id": "x\ufffd"})


def test_every_report_and_the_console_summary_render_text_that_was_invalid(
    tmp_path: Path,
) -> None:
    result = _result_full_of_bad_text()
    for text in (render_json(result), render_junit(result), render_markdown(result)):
        text.encode("utf-8")  # strict: a lone surrogate would raise here
    with open(tmp_path / "console.txt", "w", encoding="utf-8") as out:  # strict, like stdout
        ConsoleView(console=Console(file=out, force_terminal=True, width=100), live=False)(
            RunFinished(result)
        )
    shown = (tmp_path / "console.txt").read_text(encoding="utf-8")
    assert "bad \ufffd text" in shown and "console view failed" not in shown


AGENT = """
import os

def reply(history):
    if "break the markdown report" in history[-1]["content"]:
        os.mkdir("r.md")  # the path checked before the run is now a directory
    return ("shipped \\ud83d today", [{"name": "track\\udc00", "arguments": {"id\\ud800": "x"}}])
"""

SUITE = """
target: {type: callable, ref: "agent:reply"}
scenarios:
  - id: surrogates
    name: "bad \\ud800 name"
    turns:
      - user: "hi \\ud800"
        checks: [{contains: "shipped \\ud800"}, {tool_called: ["track\\ud800"]}]
"""

PYTHON_TEST = """
from sparring.api import Suite

from agent import reply

suite = Suite(target=reply)


@suite.scenario
async def test_surrogates_in_an_assertion():
    async with suite.session() as session:
        await session.send("hi")
        assert False, "the test says \\udc01"
"""


def _sparring(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        cwd=tmp_path,
        env={**env, "COLUMNS": "200"},
        capture_output=True,
        timeout=120,
    )


def test_invalid_unicode_from_yaml_python_tests_and_the_agent_never_breaks_a_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "test_bad.py").write_text(PYTHON_TEST, encoding="utf-8")
    reports = ["-o", "r.json", "--junit", "r.xml", "--markdown", "r.md"]
    done = _sparring(tmp_path, "run", "suite.yaml", "test_bad.py", *reports)
    output = (done.stdout + done.stderr).decode("utf-8")  # strict: valid UTF-8
    assert done.returncode == 1, output  # both fail on purpose; nothing crashed
    assert "Traceback" not in output
    for name in ("r.json", "r.xml", "r.md"):
        assert "\ufffd" in (tmp_path / name).read_text(encoding="utf-8")  # strict
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["scenarios"][0]["name"] == "bad \ufffd name"


def test_a_report_that_cannot_be_written_leaves_the_others_and_exits_3(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(
        'target: {type: callable, ref: "agent:reply"}\nscenarios:\n'
        '  - {id: ok, prompt: "break the markdown report", checks: [{contains: shipped}]}\n',
        encoding="utf-8",
    )
    done = _sparring(
        tmp_path, "run", "suite.yaml", "-o", "r.json", "--junit", "r.xml", "--markdown", "r.md"
    )
    stderr = done.stderr.decode("utf-8")
    assert done.returncode == 3, stderr
    assert "could not write the Markdown report to r.md" in stderr
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["exit_code"] == 0
    assert (tmp_path / "r.xml").read_text(encoding="utf-8").startswith("<?xml")


BROKEN_JUNIT = """
import sys

import sparring.reports.junit as junit
from sparring.cli.main import main


def broken(result):
    raise RuntimeError("the JUnit writer broke")


junit.render_junit = broken  # a bug in one writer
sys.argv = ["sparring", *sys.argv[1:]]
main()
"""


def test_any_writer_failure_is_named_and_the_other_reports_are_written(tmp_path: Path) -> None:
    (tmp_path / "agent.py").write_text(AGENT, encoding="utf-8")
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    (tmp_path / "broken.py").write_text(BROKEN_JUNIT, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    reports = ["-o", "r.json", "--junit", "r.xml", "--markdown", "r.md"]
    done = subprocess.run(
        [sys.executable, "broken.py", "run", "suite.yaml", *reports],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stderr  # the run itself failed (1): a lost report wins
    assert "could not write the JUnit report to r.xml: RuntimeError: the JUnit writer broke" in (
        done.stderr
    )
    assert "Traceback" not in done.stderr
    assert (tmp_path / "r.json").exists() and (tmp_path / "r.md").exists()
    assert not (tmp_path / "r.xml").exists()


# --- item 9: clear errors, never a traceback ------------------------------------------------


def test_a_threshold_too_large_for_a_float_is_a_user_error_with_file_and_line(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="far out of range"):
        parse_threshold(10**400)
    path = tmp_path / "big.yaml"
    path.write_text(
        "target: {type: callable, ref: 'agent:reply'}\nscenarios:\n"
        f"  - id: big\n    threshold: {10**400}\n    prompt: hi\n    checks: [{{contains: x}}]\n",
        encoding="utf-8",
    )
    with pytest.raises(UserError, match=r"big\.yaml:4:\d+: .*threshold.*far out of range"):
        load_paths([str(path)])
    done = _sparring(tmp_path, "run", "big.yaml")
    assert done.returncode == 2
    assert b"Traceback" not in done.stderr


def test_a_content_length_header_is_a_user_error_with_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="header 'content-length' cannot be set"):
        HttpTargetSpec(url="http://127.0.0.1:9/chat", headers={"content-length": "5"})
    path = tmp_path / "headers.yaml"
    path.write_text(
        "target:\n  url: http://127.0.0.1:9/chat\n  headers:\n    Content-Length: '12'\n"
        "scenarios:\n  - {id: a, prompt: hi, checks: [{contains: x}]}\n",
        encoding="utf-8",
    )
    with pytest.raises(UserError, match=r"headers\.yaml:4:\d+: .*'Content-Length' cannot be set"):
        load_paths([str(path)])


def _deep(request: EchoRequest) -> Answer:
    if request.path == "/stream":
        return Answer(events=["hello", DEEP])
    return Answer(DEEP.encode(), status=200)


@pytest.mark.anyio
@pytest.mark.parametrize("path", ["/chat", "/stream"])
async def test_deeply_nested_json_from_an_http_target_is_a_target_error(path: str) -> None:
    with EchoServer(_deep) as server:
        spec = HttpTargetSpec(url=server.url(path))
        async with httpx.AsyncClient(follow_redirects=False) as client:
            target = HttpTarget(spec, client=client, secrets=Secrets({}))
            with pytest.raises(TargetError, match=f"nested more than {MAX_JSON_DEPTH} levels"):
                await target.send("hi", [])
            scenario = ScriptedScenario.model_validate(
                {"id": "deep", "turns": [{"user": "hi", "checks": [{"contains": "x"}]}]}
            )
            result = await run_scenarios(
                [scenario], targets=lambda s: target, user_model=None, judge_model=None
            )
    trial = result.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("error", "target_error")
    assert "nested more than" in (trial.error or "")


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 900, 100_000])
def test_parse_json_refuses_nesting_deeper_than_reports_can_hold(depth: int) -> None:
    assert parse_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    assert parse_json('{"a": NaN}') == {"a": "NaN"}
    with pytest.raises(JsonTooDeep):
        parse_json('{"a": ' * depth + "1" + "}" * depth)


def test_deeply_nested_tool_arguments_are_an_arguments_error_not_a_crash() -> None:
    call = ToolCall.from_arguments("lookup", DEEP)
    assert call.arguments is None
    assert "nested more than" in (call.arguments_error or "")


@pytest.mark.anyio
async def test_deeply_nested_json_from_a_model_is_a_model_error() -> None:
    with pytest.raises(MalformedCompletion, match="nested more than"):
        parse_chat_completion(DEEP.encode())
    with ScriptedOpenAIServer([Reply(body=DEEP)]) as server:
        model = resolve_model("openai-compatible:judge", base_url=server.base_url, max_retries=0)
        with pytest.raises(ModelError, match="nested more than"):
            await model.complete([{"role": "user", "content": "hi"}], temperature=0)
        await model.aclose()
