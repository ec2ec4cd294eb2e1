"""`sparring` end to end, as a user runs it: a subprocess against real local servers."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sparring.demo.server import DemoServer
from sparring.models.scripted import example_for_schema
from tests.support.judging import agent_quote
from tests.support.openai_server import Reply, ScriptedOpenAIServer

EXAMPLES = Path(__file__).parent.parent / "examples"


def sparring(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env |= {k: v for k, v in os.environ.items() if k == "SPARRING_STORE"}  # tests' own
    env["COLUMNS"] = "200"  # console lines are searched below: the same at any terminal width
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def examples_against(tmp_path: Path, url: str) -> Path:
    """Copy examples/ into tmp_path with the demo agent's address replaced by `url` (and the
    files the examples send)."""
    out = tmp_path / "examples"
    out.mkdir()
    shutil.copytree(EXAMPLES / "files", out / "files")
    for path in EXAMPLES.glob("*.yaml"):
        text = path.read_text(encoding="utf-8").replace("http://127.0.0.1:8787", url)
        (out / path.name).write_text(text, encoding="utf-8")
    return out


def valid_answer(request: dict[str, Any]) -> Reply:
    """Answer any structured request of sparring's models with a schema-valid object; the
    simulated user asks anew each turn (a word for word repeat is never sent)."""
    schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
    text = "Where is my order 10234?"
    if "verdicts" in schema.get("properties", {}):  # the judge quotes the agent
        text = agent_quote(request["messages"])
    if "done_reason" in schema.get("properties", {}):
        text += f" Asking again ({len(request['messages'][-1]['content'])})."
    return Reply(json.dumps(example_for_schema(schema, text=text)))


def test_examples_pass_against_the_demo_agent_without_a_model(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo:
        demo.start()
        suite = examples_against(tmp_path, demo.url)
        done = sparring(
            "run",
            str(suite),
            "--output",
            str(tmp_path / "r.json"),
            "--junit",
            str(tmp_path / "j.xml"),
            "--markdown",
            str(tmp_path / "r.md"),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["schema_version"] == "1"
    assert report["exit_code"] == 0
    assert report["counts"]["passed"] >= 10
    assert {s["kind"] for s in report["scenarios"]} == {"simulated", "scripted", "single_turn"}
    assert "no model configured" in done.stderr + done.stdout
    assert "passed (1 not judged)" in done.stdout  # a row never hides unjudged parts

    assert "<testsuite" in (tmp_path / "j.xml").read_text()
    assert "| Scenario" in (tmp_path / "r.md").read_text()


SUITE = """\
target:
  url: {url}/chat
  body_template: {{message: "{{{{input}}}}", history: "{{{{history}}}}"}}
  response_path: reply
  tool_calls_path: tool_calls
scenarios:
  - id: finished-first
    turns:
      - user: Hello
        checks: [{{contains: "Northwind"}}]
  - id: simulated-status
    persona: A customer who wants to know where order 10234 is.
    goal: Learn the status of order 10234.
    max_turns: 3
    min_turns: 3
    criteria: [The assistant asks for the order number before giving a status]
    restrictions: [The assistant asks for a card number]
"""


def test_models_run_through_an_openai_compatible_server(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo, ScriptedOpenAIServer([valid_answer] * 4) as llm:
        demo.start()
        (tmp_path / "suite.yaml").write_text(SUITE.format(url=demo.url))
        done = sparring(
            "run",
            str(tmp_path / "suite.yaml"),
            "--model",
            "openai-compatible:t",
            "--base-url",
            llm.base_url,
            "--output",
            str(tmp_path / "r.json"),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    trial = json.loads((tmp_path / "r.json").read_text())["scenarios"][1]["trials"][0]
    assert trial["status"] == "passed"
    assert [v["id"] for v in trial["verdicts"]] == ["c1", "r1"]
    assert len(trial["transcript"]["messages"]) == 6
    assert len(llm.requests) == 3 + 1  # one call per user turn, one judge call
    assert all(r["model"] == "t" for r in llm.requests)


def test_stopping_the_agent_mid_run_turns_the_trial_into_an_error(tmp_path: Path) -> None:
    demo = DemoServer(port=0)
    calls = 0

    def user_then_stop_agent(request: dict[str, Any]) -> Reply:
        nonlocal calls
        calls += 1
        if calls == 2:  # the simulated user writes turn 2 after the agent went away
            demo.stop()
        return valid_answer(request)

    with demo, ScriptedOpenAIServer([user_then_stop_agent] * 4) as llm:
        demo.start()
        (tmp_path / "suite.yaml").write_text(SUITE.format(url=demo.url))
        done = sparring(
            "run",
            str(tmp_path / "suite.yaml"),
            "--model",
            "openai-compatible:t",
            "--base-url",
            llm.base_url,
            "--parallel",
            "1",
            "--output",
            str(tmp_path / "r.json"),
        )
    assert done.returncode == 3, done.stdout + done.stderr
    first, second = json.loads((tmp_path / "r.json").read_text())["scenarios"]
    assert first["status"] == "passed"
    trial = second["trials"][0]
    assert (trial["status"], trial["end_reason"]) == ("error", "target_error")
    assert demo.url.removeprefix("http://") in trial["error"]
    assert [m["role"] for m in trial["transcript"]["messages"]] == ["user", "agent", "user"]


def test_yaml_typo_names_file_line_and_the_intended_key(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(
        "target: {url: http://127.0.0.1:9/chat}\nscenarios:\n  - id: a\n"
        "    goal: Get help\n    persna: Busy parent\n    criteria: [Helps]\n"
    )
    done = sparring("run", str(path))
    assert done.returncode == 2
    assert f"{path}:5:5" in done.stderr
    assert "did you mean 'persona'" in done.stderr


def test_threshold_typo_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(
        "target: {url: http://127.0.0.1:9/chat}\nscenarios:\n  - id: a\n"
        "    prompt: Hi\n    checks: [{contains: hi}]\n    threshold: 8\n"
    )
    done = sparring("run", str(path))
    assert done.returncode == 2
    assert "did you mean 0.8" in done.stderr


def test_list_schema_and_init(tmp_path: Path) -> None:
    listed = sparring("run", str(EXAMPLES), "--list")
    assert listed.returncode == 0
    assert "refunds/inside-30-days" in listed.stdout
    schema = json.loads(sparring("schema").stdout)
    assert schema["$schema"].endswith("2020-12/schema")
    assert sparring("init", "--dir", str(tmp_path)).returncode == 0
    assert sparring("run", str(tmp_path / "tests" / "conversations"), "--list").returncode == 0
    again = sparring("init", "--dir", str(tmp_path))
    assert again.returncode == 2
    assert "already exist" in again.stderr


def test_list_shows_yaml_and_python_sources_relative_to_the_current_directory(
    tmp_path: Path,
) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "order_status.yaml").write_text(
        (EXAMPLES / "order_status.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tests / "test_bot.py").write_text(
        "from sparring.api import Suite\n\nsuite = Suite(target='http://127.0.0.1:9/chat')\n"
        "\n\n@suite.scenario\nasync def test_hello() -> None:\n    pass\n",
        encoding="utf-8",
    )
    listed = sparring(
        "run", str(tests / "order_status.yaml"), str(tests / "test_bot.py"), "--list", cwd=tmp_path
    )
    assert listed.returncode == 0, listed.stderr
    sources = [line.rsplit("  ", 1)[-1] for line in listed.stdout.splitlines()[:-1]]
    assert any(s.startswith("tests/order_status.yaml:") for s in sources), sources
    assert "tests/test_bot.py:6" in sources  # the decorator line
    assert not any(str(tmp_path) in s for s in sources)


def test_unknown_model_provider_is_a_usage_error(tmp_path: Path) -> None:
    done = sparring("run", str(EXAMPLES), "--model", "opneai:gpt-4o-mini")
    assert done.returncode == 2
    assert "Did you mean 'openai:gpt-4o-mini'" in done.stderr


@pytest.mark.parametrize(
    "args", [["run"], ["run", "no/such/dir"], ["run", str(EXAMPLES), "-k", "nomatch"]]
)
def test_bad_paths_are_usage_errors(args: list[str]) -> None:
    done = sparring(*args)
    assert done.returncode == 2
    assert done.stderr.strip()


def test_report_paths_are_checked_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    done = sparring("run", str(EXAMPLES), "--output", str(tmp_path / "afile" / "r.json"))
    assert done.returncode == 2
    assert "is not a writable directory" in done.stderr
    done = sparring("run", str(EXAMPLES), "--junit", str(tmp_path))
    assert done.returncode == 2
    assert "is a directory" in done.stderr


def test_demo_agent_command_not_found_is_explained() -> None:
    done = sparring("demo-agent", "--port", "0", "--", "no-such-command-xyz")
    assert done.returncode == 2
    assert "'no-such-command-xyz' not found" in done.stderr
    assert "Traceback" not in done.stderr


HANGING_AGENT = """\
import time

def agent(history):
    if "hang" in history[-1]["content"]:
        time.sleep(60)
    return "fine"
"""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as for a background job of a shell script


@pytest.mark.parametrize(
    ("signum", "background", "times"),
    [
        (signal.SIGINT, False, 1),
        (signal.SIGTERM, False, 1),
        (signal.SIGTERM, True, 1),
        (signal.SIGINT, False, 3),
        (signal.SIGTERM, False, 3),
        (signal.SIGHUP, False, 1),  # the terminal or SSH session closed
        (signal.SIGHUP, False, 3),
    ],
)
def test_interrupt_keeps_the_trials_that_finished(
    tmp_path: Path, signum: int, background: bool, times: int
) -> None:
    (tmp_path / "hanging_agent.py").write_text(HANGING_AGENT)
    (tmp_path / "suite.yaml").write_text(
        "target: {type: callable, ref: 'hanging_agent:agent'}\nscenarios:\n"
        "  - {id: quick, prompt: hi, checks: [{contains: fine}]}\n"
        "  - {id: stuck, prompt: hang, checks: [{contains: fine}]}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparring.cli",
            "run",
            "suite.yaml",
            "--parallel",
            "1",
            "--no-live",
            "--output",
            "r.json",
        ],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_ignore_sigint if background else None,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until the hanging trial has started
        if "stuck: trial 1/1 started" in line:
            break
    for _ in range(times):  # impatient users press Ctrl-C again; reports must survive it
        proc.send_signal(signum)
        time.sleep(0.02)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    assert "Traceback" not in rest
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 130
    quick, stuck = report["scenarios"]
    assert quick["trials"][0]["status"] == "passed"
    assert (stuck["trials"][0]["status"], stuck["trials"][0]["end_reason"]) == (
        "error",
        "interrupted",
    )


# Starts and stops listening for the stop signals 300 times, as `sparring run` does once.
LISTENING_ON_AND_OFF = """\
import signal
import anyio
from sparring.cli.run import _STOP_SIGNALS, _stop_on_signal

for signum in _STOP_SIGNALS:  # as `sparring run` has them before and after its run
    signal.signal(signum, signal.SIG_IGN)
print("ready", flush=True)


async def run_once():
    async with anyio.create_task_group() as tg:
        tg.start_soon(_stop_on_signal, tg.cancel_scope)
        await anyio.sleep(0.01)
        tg.cancel_scope.cancel()


for _ in range(300):
    anyio.run(run_once)
print("survived", flush=True)
"""


def test_a_stop_signal_arriving_as_the_run_stops_listening_is_ignored() -> None:
    """Ctrl-C or SIGTERM pressed again while the run stops listening for them never meets
    a default handler, which would end sparring before it wrote its reports."""
    proc = subprocess.Popen(
        [sys.executable, "-c", LISTENING_ON_AND_OFF],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    while proc.poll() is None:  # SIGTERM without pause: its default ends the process
        try:
            proc.send_signal(signal.SIGTERM)
        except ProcessLookupError:
            break
        time.sleep(0.0005)
    out, err = proc.communicate(timeout=60)
    assert (proc.returncode, out) == (0, "survived\n"), err


def test_a_sync_agent_that_never_returns_does_not_keep_sparring_alive(tmp_path: Path) -> None:
    (tmp_path / "hanging_agent.py").write_text(HANGING_AGENT)
    (tmp_path / "suite.yaml").write_text(
        "target: {type: callable, ref: 'hanging_agent:agent'}\nscenarios:\n"
        "  - {id: stuck, prompt: hang, checks: [{contains: fine}]}\n"
    )
    done = sparring(
        "run", "suite.yaml", "--reply-timeout", "0.5", "--output", "r.json", cwd=tmp_path
    )
    assert done.returncode == 3, done.stdout + done.stderr
    trial = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["trials"][0]
    assert "did not reply within 0.5 s" in trial["error"]


def test_fail_on_skip_turns_a_run_without_model_into_exit_3(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo:
        demo.start()
        suite = examples_against(tmp_path, demo.url)
        done = sparring(
            "run",
            str(suite / "refunds.yaml"),
            "--fail-on-skip",
            "--output",
            str(tmp_path / "r.json"),
        )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "exit code 3" in done.stdout and "--fail-on-skip" in done.stdout
    assert json.loads((tmp_path / "r.json").read_text())["exit_code"] == 3


def test_demo_agent_passes_sigterm_on_to_its_command(tmp_path: Path) -> None:
    (tmp_path / "hanging_agent.py").write_text(HANGING_AGENT)
    (tmp_path / "suite.yaml").write_text(
        "target: {type: callable, ref: 'hanging_agent:agent'}\nscenarios:\n"
        "  - {id: stuck, prompt: hang, checks: [{contains: fine}]}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("SPARRING_")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparring.cli",
            "demo-agent",
            "--port",
            "0",
            "--",
            sys.executable,
            "-m",
            "sparring.cli",
            "run",
            "suite.yaml",
            "--no-live",
            "--output",
            "r.json",
        ],
        cwd=tmp_path,
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if "stuck: trial 1/1 started" in line:
            break
    proc.send_signal(signal.SIGTERM)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    report = json.loads((tmp_path / "r.json").read_text())  # the run itself wrote it
    assert report["scenarios"][0]["trials"][0]["end_reason"] == "interrupted"


def test_a_misconfigured_target_is_a_usage_error_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "t.yaml").write_text(
        "target: {url: 'http://127.0.0.1:9/chat', body_template: {m: '{{input}}', "
        "x: '{{Input}}'}}\nscenarios:\n  - {id: a, prompt: hi, checks: [{contains: hi}]}\n"
    )
    done = sparring("run", str(tmp_path / "t.yaml"))
    assert done.returncode == 2, done.stderr
    assert "did you mean {{input}}" in done.stderr
    assert "Traceback" not in done.stderr
