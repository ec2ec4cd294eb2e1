"""`Suite` through the runner, and `sparring run` on Python test files."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from rich.console import Console

from sparring.api import AgentMessage, ConditionsNotMet, CustomerMessage, HookError, Suite
from sparring.demo.server import DemoServer
from sparring.errors import UserError
from sparring.judging.should import NO_MODEL_HINT
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.reports.console import ConsoleView
from sparring.reports.json import write_json
from sparring.runner import RunSettings
from sparring.targets.scripted import ScriptedTarget
from tests.support.judging import agent_quote
from tests.support.openai_server import Reply, ScriptedOpenAIServer

EXAMPLE = Path(__file__).parent.parent / "examples" / "suites" / "test_northwind.py"


def judge(*, unmet: Sequence[str] = ()) -> ScriptedModel:
    """`not_met` for conditions containing any of `unmet`, else `met`."""

    def handler(messages: Sequence[ChatMessage], schema: Any) -> Any:
        condition = messages[-1]["content"].split("The message should ", 1)[1].split("\n")[0]
        bad = any(u in condition for u in unmet)
        return {
            "reason": f"judged {condition}",
            "evidence": [agent_quote(messages)],
            "turns": [],
            "verdict": "not_met" if bad else "met",
        }

    return ScriptedModel(handler=handler)


def greeter(history: list[dict[str, str]]) -> str:
    return "Hello! Welcome to Northwind. " + history[-1]["content"]


def test_the_seed_failing_example_fails_and_names_the_unmet_condition() -> None:
    suite = Suite(target=greeter, model=judge(unmet=["million"]))

    @suite.scenario
    async def test_successful_scenario() -> None:
        async with suite.session() as session:
            response = await session.send("Hello!")
            await response.should("greet the customer")

    @suite.scenario
    async def test_failing_scenario() -> None:
        async with suite.session() as session:
            response = await session.send("Hello!")
            await response.should("offer a million dollars")

    result = suite.run()
    ok, bad = result.scenarios
    assert (ok.status, bad.status, result.exit_code) == ("passed", "failed", 1)
    assert ok.scenario_id == "tests/test_api.py::test_successful_scenario" and ok.kind == "python"
    [verdict] = bad.trials[0].verdicts
    assert (verdict.id, verdict.status) == ("t1.should1", "not_met")
    assert verdict.description == "should offer a million dollars"
    assert [m.content for m in bad.trials[0].transcript.messages] == [
        "Hello!",
        "Hello! Welcome to Northwind. Hello!",
    ]


def test_repetitions_are_trials_and_the_threshold_decides() -> None:
    replies = iter(["great", "bad", "great", "great", "bad"])
    suite = Suite(target=lambda history: next(replies), model=judge(unmet=[]))

    @suite.scenario(repetitions=5, threshold="60%")
    async def test_mostly_great() -> None:
        async with suite.session() as session:
            response = await session.send("How was it?")
            assert response.message == "great", f"reply was {response.message!r}"

    result = suite.run(settings=RunSettings(parallel=1))
    [scenario] = result.scenarios
    assert [t.status for t in scenario.trials] == ["passed", "failed", "passed", "passed", "failed"]
    assert (scenario.threshold, scenario.status) == (0.6, "passed")
    failed = scenario.trials[1].verdicts[0]
    assert (failed.id, failed.status) == ("assert", "not_met")
    assert failed.reason.startswith("reply was 'bad'")
    with pytest.raises(UserError, match="did you mean 0.8"):
        suite.scenario(threshold=8)


def test_body_outcomes_map_to_trial_statuses() -> None:
    suite = Suite(target=greeter, model=judge())

    @suite.scenario
    async def test_no_assertions() -> None:
        async with suite.session() as session:
            await session.send("hi")

    @suite.scenario
    async def test_bare_assert() -> None:
        assert 1 + 1 == 3

    @suite.scenario
    async def test_raises() -> None:
        raise ValueError("boom")

    @suite.scenario
    async def test_judge_garbage() -> None:
        async with suite.session() as session:
            response = await session.send("hi")
            await response.should("greet the customer")
        raise AssertionError("never reached: an undecided should stops the test")

    suite.model = ScriptedModel(handler=lambda m, s: "not json")
    result = suite.run()
    statuses = {s.name: (s.trials[0].status, s.trials[0].end_reason) for s in result.scenarios}
    assert statuses == {
        "test_no_assertions": ("passed", "script_done"),
        "test_bare_assert": ("failed", "script_done"),
        "test_raises": ("error", "test_error"),
        "test_judge_garbage": ("error", "script_done"),
    }
    trials = {s.name: s.trials[0] for s in result.scenarios}
    assert "== 3" in trials["test_bare_assert"].verdicts[0].reason
    assert trials["test_raises"].error == "the test raised ValueError: boom"
    assert "t1.should1 could not be decided" in (trials["test_judge_garbage"].error or "")


def test_without_any_model_should_is_skipped(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("SPARRING_MODEL", "SPARRING_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    suite = Suite(target=greeter)

    @suite.scenario
    async def test_greets() -> None:
        async with suite.session() as session:
            await (await session.send("hi")).should("greet the customer")

    result = suite.run()
    assert result.scenarios[0].status == "skipped" and result.exit_code == 0
    [trial] = result.scenarios[0].trials
    assert trial.end_reason == "skipped"  # as for YAML scenarios without a model
    assert trial.error == NO_MODEL_HINT


def test_unfold_only_trial_reports_its_sub_tests_and_each_undecided_verdict_once(
    tmp_path: Path,
) -> None:
    suite = Suite(target=greeter, model=ScriptedModel(handler=lambda m, s: "not json"))

    @suite.scenario
    async def test_unfold() -> None:
        async with suite.session() as session:
            await session.unfold(
                [
                    CustomerMessage("hi"),
                    AgentMessage("hello", should="greet"),
                    CustomerMessage("bye"),
                    AgentMessage("bye", should="say bye"),
                ]
            )

    out = io.StringIO()
    with ConsoleView(console=Console(file=out, width=300), live=False) as view:
        result = suite.run(observer=view)
    text = out.getvalue()
    assert "error (script_done, 2 sub-tests, " in text
    summary = text[text.index("sparring results") :]
    assert "Errors (2)" in summary
    assert summary.count("unfold1.step2.should1") == summary.count("unfold1.step4.should1") == 1
    write_json(result, tmp_path / "r.json")
    [trial] = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["trials"]
    assert [v["id"] for v in trial["verdicts"]] == [
        "unfold1.step2.should1",
        "unfold1.step4.should1",
    ]


def test_hooks_run_in_order_with_their_arguments() -> None:
    calls: list[tuple[Any, ...]] = []
    suite = Suite(target=ScriptedTarget(["hello"]), model=judge(unmet=["rude"]))

    @suite.before_all
    async def setup() -> None:
        calls.append(("before_all", type(suite.client).__name__))
        suite.context["customer"] = "c-1"

    @suite.after_all
    def teardown() -> None:
        calls.append(("after_all",))

    @suite.before_each
    async def before(test_name: str) -> None:
        calls.append(("before_each", test_name, suite.context["customer"]))

    @suite.after_each
    def after(test_name: str, passed: bool, error: str | None) -> None:
        calls.append(("after_each", test_name, passed, error))

    @suite.scenario
    async def test_polite() -> None:
        async with suite.session() as session:
            await (await session.send("hi")).should("be polite")

    @suite.scenario
    async def test_rude() -> None:
        async with suite.session() as session:
            await (await session.send("hi")).should("be rude")

    suite.run(settings=RunSettings(parallel=1))
    assert calls == [
        ("before_all", "AsyncClient"),
        ("before_each", "test_polite", "c-1"),
        ("after_each", "test_polite", True, None),
        ("before_each", "test_rude", "c-1"),
        ("after_each", "test_rude", False, "t1.should1 should be rude: judged be rude"),
        ("after_all",),
    ]
    with pytest.raises(UserError, match="only while the suite runs"):
        _ = suite.client


def test_failing_hooks_are_errors_never_passes() -> None:
    suite = Suite(target=greeter, model=judge())

    @suite.before_all
    def setup() -> None:
        raise RuntimeError("database down")

    @suite.scenario(repetitions=2)
    async def test_anything() -> None:
        pass

    result = suite.run()
    assert [t.status for t in result.scenarios[0].trials] == ["error", "error"]
    assert result.scenarios[0].trials[0].error == (
        "before_all hook setup() raised RuntimeError: database down"
    )

    other = Suite(target=greeter)

    @other.after_all
    def teardown() -> None:
        raise RuntimeError("cleanup failed")

    @other.scenario
    async def test_fine() -> None:
        pass

    with pytest.raises(HookError, match="after_all hook teardown") as caught:
        other.run()
    assert caught.value.result.scenarios[0].status == "passed"  # type: ignore[attr-defined]


def test_a_suite_runs_twice_and_from_inside_a_running_event_loop() -> None:
    suite = Suite(target=greeter, model=judge())
    runs: list[int] = []

    @suite.scenario
    async def test_greets() -> None:
        runs.append(1)
        async with suite.session() as session:
            await (await session.send("hi")).should("greet the customer")

    assert suite.run().exit_code == 0
    assert suite.run().exit_code == 0

    async def inside_anyio() -> int:
        return suite.run().exit_code  # a loop is running here: never re-entered

    assert anyio.run(inside_anyio) == 0
    assert asyncio.run(inside_anyio()) == 0
    assert len(runs) == 4


def test_targets_of_every_kind_and_session_overrides() -> None:
    with DemoServer(port=0) as demo:
        demo.start()
        suite = Suite(
            target={
                "url": f"{demo.url}/chat",
                "response_path": "reply",
                "body_template": {"message": "{{input}}"},
            },
            model=judge(),
        )
        seen: list[str] = []

        @suite.scenario
        async def test_overrides() -> None:
            async with suite.session(response_path="$") as session:
                response = await session.send("Hello!")
            seen.append(response.message)
            async with suite.session() as session:
                seen.append((await session.send("Hello!")).message)

        result = suite.run()
    assert result.exit_code == 0, result.scenarios[0].trials[0].error
    assert json.loads(seen[0])["reply"] == seen[1]
    assert "Northwind" in seen[1]
    with pytest.raises(UserError, match="not an HTTP address"):
        Suite(target={"url": "ftp://x"})
    with pytest.raises(UserError, match="a URL, a target spec mapping"):
        Suite(target=42)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: Suite(target=greeter, model=42),
            r"Suite\(model=...\) is the judge model: a 'provider:name' text .* got int 42",
        ),
        (
            lambda: Suite(target=greeter, model="gpt-4o"),
            r"Suite\(model='gpt-4o'\) names no provider; write 'provider:name', "
            r"e.g. 'openai:gpt-4o'",
        ),
        (
            lambda: Suite(target=greeter, response_timeout=0),
            r"Suite\(response_timeout=...\) must be a number of seconds above 0, .* got 0",
        ),
        (
            lambda: Suite(target=greeter, response_timeout="30"),
            r"Suite\(response_timeout=...\) must be a number of seconds above 0, .* got '30'",
        ),
        (
            lambda: Suite(target=42),
            r"Suite\(target=...\): a target is a URL, a target spec mapping, .* got int",
        ),
        (
            lambda: Suite(target={"url": "http://127.0.0.1:9/chat", "respons_path": "reply"}),
            r"Suite\(target=...\): invalid target .*: unknown key 'respons_path' in target \(http "
            r"target\); did you mean 'response_path'\?",
        ),
        (
            lambda: Suite(target=greeter).scenario(repetitions=0),
            r"suite.scenario\(repetitions=...\) must be a whole number from 1 to 100, got 0",
        ),
        (
            lambda: Suite(target=greeter).scenario(repetitions="3"),
            r"suite.scenario\(repetitions=...\) must be a whole number from 1 to 100, got '3'",
        ),
        (
            lambda: Suite(target=greeter).scenario(timeout_s=-1),
            r"suite.scenario\(timeout_s=...\) must be a number of seconds above 0",
        ),
    ],
)
def test_bad_suite_arguments_name_the_argument_and_what_is_accepted(
    make: Any, message: str
) -> None:
    with pytest.raises(UserError, match=message):
        make()


def test_the_failing_seed_example_raises_outside_a_run_too() -> None:
    suite = Suite(target=greeter, model=judge(unmet=["million"]))

    async def main() -> None:
        async with suite.session() as session:
            await (await session.send("Hello!")).should("offer a million dollars")

    with pytest.raises(ConditionsNotMet, match="should offer a million dollars"):
        anyio.run(main)


# --- sparring run on Python files ------------------------------------------------------


def sparring(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env |= {k: v for k, v in os.environ.items() if k == "SPARRING_STORE"}  # tests' own
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def example_against(tmp_path: Path, url: str) -> Path:
    path = tmp_path / "test_northwind.py"
    path.write_text(EXAMPLE.read_text().replace("http://127.0.0.1:8787", url))
    return path


def test_cli_lists_and_filters_python_tests(tmp_path: Path) -> None:
    path = example_against(tmp_path, "http://127.0.0.1:9")
    listed = sparring("run", str(path), "--list")
    assert listed.returncode == 0, listed.stderr
    assert "test_northwind.py::test_explains_the_return_policy  [python, 3 trials]" in (
        listed.stdout
    )
    assert "5 scenarios" in listed.stdout
    only = sparring("run", str(tmp_path), "--list", "--pattern", "refund")
    assert only.stdout.splitlines()[-1] == "1 scenario" and "refund_outside" in only.stdout


def test_cli_runs_the_example_skipped_without_a_model_and_passing_with_one(tmp_path: Path) -> None:
    def verdict(request: dict[str, Any]) -> Reply:
        quote = agent_quote(request["messages"])
        return Reply(
            json.dumps({"reason": "fine", "evidence": [quote], "turns": [1], "verdict": "met"})
        )

    with DemoServer(port=0) as demo, ScriptedOpenAIServer([verdict] * 20) as llm:
        demo.start()
        path = example_against(tmp_path, demo.url)
        plain = sparring(
            "run",
            str(path),
            "--no-live",
            "--output",
            str(tmp_path / "a.json"),
            "--markdown",
            str(tmp_path / "a.md"),
        )
        judged = sparring(
            "run",
            str(path),
            "--no-live",
            "--model",
            "openai-compatible:judge",
            "--base-url",
            llm.base_url,
            "--output",
            str(tmp_path / "b.json"),
        )
    assert plain.returncode == 0, plain.stdout + plain.stderr
    without = json.loads((tmp_path / "a.json").read_text())
    assert {s["status"] for s in without["scenarios"]} == {"skipped", "passed"}
    unfold = next(s for s in without["scenarios"] if s["name"] == "test_refund_outside_the_window")
    assert [s["id"] for s in unfold["trials"][0]["subtests"]] == [
        "unfold1.step2",
        "unfold1.step4",
        "unfold1.step6",
    ]
    assert "Sub-test unfold1.step4" not in (tmp_path / "a.md").read_text()  # passed: one line
    assert "unfold1.step6 passed" in plain.stdout
    assert judged.returncode == 0, judged.stdout + judged.stderr
    report = json.loads((tmp_path / "b.json").read_text())
    assert report["counts"] == {"passed": 5}
    assert len(llm.requests) == 1 + 3 * 3 + 3 + 1 + 1  # one judge call per condition


def test_cli_import_errors_name_the_file(tmp_path: Path) -> None:
    (tmp_path / "test_broken.py").write_text("import sparring\n\nraise ValueError('oops')\n")
    done = sparring("run", str(tmp_path / "test_broken.py"))
    assert done.returncode == 2
    assert "test_broken.py: importing it raised ValueError: oops (line 3)" in done.stderr


def test_cli_connects_a_suite_s_own_model_with_the_run_s_base_url(tmp_path: Path) -> None:
    path = tmp_path / "t.py"
    path.write_text(
        "from sparring.api import Suite\n\n"
        "suite = Suite(target=lambda history: 'Hello!', model='openai-compatible:judge')\n\n"
        "@suite.scenario\n"
        "async def test_greets() -> None:\n"
        "    async with suite.session() as session:\n"
        "        await (await session.send('Hi')).should('greet the customer')\n"
    )
    met = Reply(
        json.dumps({"reason": "fine", "evidence": ["Hello!"], "turns": [1], "verdict": "met"})
    )
    with ScriptedOpenAIServer([met]) as llm:
        done = sparring(
            "run",
            str(path),
            "--no-live",
            "--base-url",
            llm.base_url,
            "--output",
            str(tmp_path / "r.json"),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(llm.requests) == 1 and llm.requests[0]["model"] == "judge"
    assert json.loads((tmp_path / "r.json").read_text())["counts"] == {"passed": 1}


# --- tests that misbehave never pass, hang or lose results ----------------------------


def test_a_blocking_sync_test_times_out_and_sees_its_trial() -> None:
    from sparring.runner.context import current_trial

    gate, entered = threading.Event(), threading.Event()
    suite = Suite(target=greeter)
    seen: list[str] = []

    @suite.scenario(timeout_s=0.2)
    def test_blocks() -> None:
        trial = current_trial()
        seen.append(trial.scenario_id if trial else "no trial")
        entered.set()
        gate.wait(30)  # a sync body runs in a thread: the loop still enforces timeout_s

    @suite.scenario
    def test_sync_assert() -> None:
        # the blocked body's thread may start after its timeout on a loaded machine
        assert entered.wait(30) and seen, "runs after the blocked one"

    try:
        result = suite.run(settings=RunSettings(parallel=1))
    finally:
        gate.set()
    blocked, other = result.scenarios
    assert (blocked.trials[0].status, blocked.trials[0].end_reason) == ("timed_out", "timeout")
    assert seen == ["tests/test_api.py::test_blocks"]
    assert other.status == "passed" and result.exit_code == 3


@pytest.mark.parametrize(
    "make",
    [
        lambda: SystemExit(0),
        lambda: KeyboardInterrupt(),
        lambda: GeneratorExit(),
        lambda: BaseException("odd"),
    ],
)
@pytest.mark.parametrize("sync", [True, False])
def test_a_body_raising_a_base_exception_is_its_trial_error(make: Any, sync: bool) -> None:
    suite = Suite(target=greeter)
    error: BaseException = make()

    def raise_it() -> None:
        raise error

    async def raise_async() -> None:
        raise error

    suite.scenario(timeout_s=30)(raise_it if sync else raise_async)

    @suite.scenario
    async def test_after() -> None:
        pass

    result = suite.run(settings=RunSettings(parallel=1))
    bad, good = result.scenarios
    [trial] = bad.trials
    assert (trial.status, trial.end_reason) == ("error", "test_error")
    assert trial.error is not None and trial.error.startswith(
        f"the test raised {type(error).__name__}"
    )
    assert good.status == "passed" and result.exit_code == 3


def test_an_unawaited_should_or_unfold_is_an_error_never_a_pass() -> None:
    suite = Suite(target=greeter, model=judge())

    @suite.scenario
    async def test_forgot_await() -> None:
        async with suite.session() as session:
            response = await session.send("hi")
            response.should("greet the customer")  # pyright: ignore[reportUnusedCoroutine]

    @suite.scenario
    async def test_forgot_unfold() -> None:
        async with suite.session() as session:
            session.unfold(
                [
                    CustomerMessage("hi"),  # pyright: ignore[reportUnusedCoroutine]
                    AgentMessage("hello", should="greet"),
                ]
            )

    @suite.scenario
    async def test_awaited_later() -> None:
        async with suite.session() as session:
            pending = (await session.send("hi")).should("greet the customer")
            await pending

    result = suite.run()
    errors = {s.name: (s.trials[0].status, s.trials[0].error) for s in result.scenarios}
    assert errors == {
        "test_forgot_await": (
            "error",
            "response.should(...) was not awaited, so it checked "
            "nothing; write `await response.should(...)`",
        ),
        "test_forgot_unfold": (
            "error",
            "session.unfold(...) was not awaited, so it checked "
            "nothing; write `await session.unfold(...)`",
        ),
        "test_awaited_later": ("passed", None),
    }

    async def outside_a_run() -> None:
        async with suite.session() as session:
            (await session.send("hi")).should("x")  # pyright: ignore[reportUnusedCoroutine]

    with pytest.raises(UserError, match=r"write `await response.should\(...\)`"):
        anyio.run(outside_a_run)


def test_hooks_that_hang_or_exit_are_errors_named_with_their_limit() -> None:
    gate = threading.Event()
    suite = Suite(target=greeter)

    @suite.after_each
    def stuck(test_name: str, passed: bool, error: str | None) -> None:
        gate.wait(30)

    @suite.after_all
    async def never_returns() -> None:
        await anyio.sleep_forever()

    @suite.scenario(timeout_s=0.2)
    async def test_fine() -> None:
        pass

    try:
        with pytest.raises(HookError) as caught:
            suite.run()
    finally:
        gate.set()
    result = caught.value.result  # type: ignore[attr-defined]
    [trial] = result.scenarios[0].trials
    assert (trial.status, trial.end_reason) == ("error", "test_error")
    assert trial.error.startswith(
        "after_each hook stuck() did not return within 0.2 s (the timeout_s of test_fine)"
    )
    assert result.hook_errors == [
        "after_all hook never_returns() did not return within 0.2 s (the longest timeout_s "
        "of the suite's tests); make it return, or raise that timeout if it is just slow"
    ]
    assert result.exit_code == 3

    exits = Suite(target=greeter)

    @exits.after_all
    def bye() -> None:
        raise SystemExit(0)

    exits.scenario(test_fine)
    with pytest.raises(HookError, match=r"after_all hook bye\(\) raised SystemExit\(0\)"):
        exits.run()


def test_an_after_all_failure_is_in_every_report(tmp_path: Path) -> None:
    from sparring.reports.junit import render_junit
    from sparring.reports.markdown import render_markdown

    suite = Suite(target=greeter)

    @suite.after_all
    def teardown() -> None:
        raise RuntimeError("cleanup failed")

    @suite.scenario
    async def test_fine() -> None:
        pass

    with pytest.raises(HookError) as caught:
        suite.run()
    result = caught.value.result  # type: ignore[attr-defined]
    write_json(result, tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    message = "after_all hook teardown() raised RuntimeError: cleanup failed"
    assert (report["exit_code"], report["hook_errors"]) == (3, [message])
    assert f"⚠️ **hook error**: {message}" in render_markdown(result)
    assert "**exit code 3**" in render_markdown(result)
    junit = render_junit(result)
    assert '<testsuites name="sparring run' in junit and 'errors="1"' in junit
    assert message in junit


def test_cli_base_exceptions_and_hook_failures_keep_reports_and_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "test_misbehaving.py").write_text(
        "import sys\nfrom sparring.api import Suite\n\nsuite = Suite(target=lambda h: 'hi')\n\n"
        "@suite.after_all\ndef done():\n    sys.exit(0)\n\n"
        "@suite.scenario\ndef test_exits():\n    sys.exit(0)\n\n"
        "@suite.scenario\nasync def test_interrupts():\n    raise KeyboardInterrupt\n\n"
        "@suite.scenario\nasync def test_fine():\n    pass\n"
    )
    done = sparring("run", "test_misbehaving.py", "--no-live", "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["exit_code"] == 3
    assert {s["name"]: s["status"] for s in report["scenarios"]} == {
        "test_exits": "error",
        "test_interrupts": "error",
        "test_fine": "passed",
    }
    assert report["hook_errors"] == ["after_all hook done() raised SystemExit(0)"]
    assert "after_all hook done() raised SystemExit(0)" in done.stdout


def test_cli_ctrl_c_stops_a_blocked_sync_test(tmp_path: Path) -> None:
    started = tmp_path / "started"
    (tmp_path / "test_blocked.py").write_text(
        "import time\nfrom pathlib import Path\nfrom sparring.api import Suite\n\n"
        "suite = Suite(target=lambda h: 'hi')\n\n@suite.scenario\ndef test_blocks():\n"
        f"    Path({str(started)!r}).touch()\n    time.sleep(600)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sparring.cli",
            "run",
            "test_blocked.py",
            "--no-live",
            "--output",
            "r.json",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for _ in range(600):
            if started.exists():
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 130, stderr
    [trial] = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["trials"]
    assert trial["end_reason"] == "interrupted"


def test_cli_test_ids_are_unique_by_path_and_imported_suites_run_once(tmp_path: Path) -> None:
    test = (
        "from sparring.api import Suite\n\nsuite = Suite(target=lambda h: 'hi')\n\n"
        "@suite.scenario\nasync def test_hello():\n    pass\n"
    )
    for folder in ("d1", "d2"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "test_greet.py").write_text(test)
    (tmp_path / "d1" / "test_more.py").write_text(
        "from sparring.api import Suite\nfrom test_greet import suite\n\n"
        "more = Suite(target=lambda h: 'hi')\n\n@more.scenario\nasync def test_more():\n"
        "    pass\n"
    )
    listed = sparring("run", "d1", "d2", "--list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    ids = [line.split()[0] for line in listed.stdout.splitlines()[:-1]]
    assert sorted(ids) == [
        "d1/test_greet.py::test_hello",
        "d1/test_more.py::test_more",
        "d2/test_greet.py::test_hello",
    ]
    (tmp_path / "other").mkdir()  # the files are not under the current directory
    elsewhere = sparring(
        "run",
        str(tmp_path / "d1" / "test_greet.py"),
        str(tmp_path / "d2" / "test_greet.py"),
        "--list",
        cwd=tmp_path / "other",
    )
    assert elsewhere.returncode == 2 and "Traceback" not in elsewhere.stderr
    assert "two tests have the id 'test_greet.py::test_hello'" in elsewhere.stderr
    assert "d1/test_greet.py:5 and " in elsewhere.stderr


def test_cli_a_suite_target_with_an_unset_secret_is_a_clean_user_error(tmp_path: Path) -> None:
    (tmp_path / "test_secret.py").write_text(
        "from sparring.api import Suite\n\nsuite = Suite(target={'url': 'http://127.0.0.1:9/',"
        " 'headers': {'X-Key': '{{secrets.SPARRING_TEST_NOT_SET}}'}})\n\n"
        "@suite.scenario\nasync def test_hello():\n    pass\n"
    )
    done = sparring("run", "test_secret.py", "--no-live", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "SPARRING_TEST_NOT_SET" in done.stderr


def test_a_parlant_quick_start_runs_after_changing_only_its_import_line() -> None:
    from sparring import Suite as TopLevelSuite  # the seed's `from parlant.testing import`

    with DemoServer(port=0) as demo:
        demo.start()
        suite = TopLevelSuite(server_url=demo.url, agent_id="northwind", model=judge())
        replies: list[str] = []

        @suite.scenario
        async def test_successful_scenario() -> None:
            async with suite.session() as session:
                response = await session.send("Hello!")
                replies.append(response.message)
                await response.should("greet the customer")

        result = suite.run()
    assert result.exit_code == 0, result.scenarios[0].trials[0].error
    assert suite.target is not None and getattr(suite.target, "type", None) == "parlant"
    assert "Northwind" in replies[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"server_url": "http://127.0.0.1:8800"}, r"Suite\(server_url=...\) needs agent_id="),
        ({"agent_id": "my-agent"}, r"Suite\(agent_id=...\) needs server_url="),
        (
            {"target": greeter, "server_url": "http://127.0.0.1:8800", "agent_id": "a"},
            "name two targets",
        ),
    ],
)
def test_the_parlant_shorthand_says_what_is_missing(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        Suite(**kwargs)
