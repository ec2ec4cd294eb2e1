"""The pytest plugin, run in inner pytest sessions (`pytester`).

Each inner project has a function agent (`shop_agent.reply`) and registers a `scripted`
model provider in its conftest: `scripted:met` judges every item met, `scripted:not_met`
not met, `scripted:alternate` met on odd calls of the process and not met on even ones.
No network: the agent is a Python function and the models are scripted.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

AGENT = """
def reply(history):
    text = history[-1]["content"].lower()
    if "book" in text:
        return ("Booked! Your reference is BK-12.",
                [{"name": "create_booking", "arguments": {"time": "10am"}}])
    return "Sorry, I can only book slots."
"""

CONFTEST = """
import itertools

from sparring.models.registry import PROVIDERS, register_provider
from sparring.models.scripted import ScriptedModel

_calls = itertools.count(1)


def _verdict(name):
    if name == "alternate":
        return "met" if next(_calls) % 2 else "not_met"
    return name


def _quote(messages):  # a `met` must quote the conversation: the agent's last reply
    text = " ".join(m["content"] for m in messages)
    return text.rsplit("<<<BEGIN agent message>>>", 1)[-1].split("<<<END", 1)[0].strip()


def _handler(name):
    def answer(messages, schema):
        props = (schema or {}).get("properties", {})
        if "verdicts" in props:
            verdict = _verdict(name)
            return {"verdicts": {i: {"verdict": verdict, "reason": f"the judge says {verdict}",
                                     "evidence": [_quote(messages)], "turns": []}
                                 for i in props["verdicts"]["required"]},
                    "replies": {t: {"note": "fine", "score": 1}
                                for t in props["replies"]["required"]}}
        if "verdict" in props:
            verdict = _verdict(name)
            return {"verdict": verdict, "reason": f"the judge says {verdict}",
                    "evidence": [_quote(messages)], "turns": []}
        return {"message": "Thanks", "done": True, "done_reason": "goal_achieved"}
    return answer


def pytest_configure(config):
    register_provider("scripted", lambda spec, name, options: ScriptedModel(
        handler=_handler(name), name=spec))


def pytest_unconfigure(config):
    PROVIDERS.pop("scripted", None)
"""

BOOKING = """
target: {ref: "shop_agent:reply"}
scenarios:
  - id: book_slot
    tags: [booking]
    turns:
      - user: "Book me a slot at 10am"
        checks:
          - contains: ["booked", "confirmed"]
          - tool_called: [create_booking]
  - id: cancel_slot
    tags: [booking]
    turns:
      - user: "Cancel my slot"
        checks:
          - contains: "cancelled"
"""

JUDGED = """
target: {ref: "shop_agent:reply"}
scenarios:
  - id: judged_booking
    tags: [judged]
    trials: 3
    threshold: 0.66
    turns:
      - user: "Book me a slot"
        should: confirm the booking with a reference number
  - id: simulated_booking
    opening_message: "Book me a slot"
    goal: Book a slot
    max_turns: 1
    criteria: ["The agent books a slot"]
"""


def make_project(
    pytester: pytest.Pytester, *, settings: str = "", files: dict[str, str] | None = None
) -> None:
    """An inner project: settings in pyproject, the agent, the scripted models, test files."""
    pytester.makepyprojecttoml(
        '[tool.sparring]\nyaml_dirs = ["evals"]\n' + textwrap.dedent(settings)
    )
    pytester.makepyfile(shop_agent=AGENT)
    pytester.makeconftest(CONFTEST)
    for name, text in (files or {}).items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_yaml_files_under_yaml_dirs_become_one_test_per_scenario(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        files={
            "evals/booking.yaml": BOOKING,
            "evals/sub/judged.yml": JUDGED,
            "other/booking.yaml": BOOKING,
        },
    )
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == 0
    assert [line for line in result.outlines if "::" in line] == [
        "evals/booking.yaml::book_slot",
        "evals/booking.yaml::cancel_slot",
        "evals/sub/judged.yml::judged_booking",
        "evals/sub/judged.yml::simulated_booking",
    ]
    assert (
        pytester.runpytest("--collect-only", "-q", "-k", "judged").outlines[0]
        == "evals/sub/judged.yml::judged_booking"
    )  # tags are keywords


def test_deterministic_scenarios_run_and_model_ones_skip_with_how_to_enable(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        settings='model = "scripted:met"\n',
        files={"evals/booking.yaml": BOOKING, "evals/judged.yaml": JUDGED},
    )
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*SKIPPED ?1? evals/judged.yaml: sparring: scenario '*' calls a model*pass "
            "--sparring-live, set SPARRING_LIVE=1, or put `live = true` in ?tool.sparring? or "
            "sparring.toml"
        ]
    )
    assert result.ret == 1


def test_a_failed_scenario_names_its_failed_verdicts_reasons_and_turns(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"evals/booking.yaml": BOOKING})
    result = pytester.runpytest("-k", "cancel_slot")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*sparring scenario 'cancel_slot' failed: 0/1 trials passed, 0% [[]0%, 79%], "
            "threshold 100%",
            "trial 1: failed (end reason script_done)",
            "  turn 1: t1.check1 (contains*cancelled*) not met: expected turn 1 to contain*"
            "Sorry, I can only book slots.*",
        ]
    )
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    ("args", "env", "setting"),
    [(["--sparring-live"], {}, ""), ([], {"SPARRING_LIVE": "1"}, ""), ([], {}, "live = true\n")],
)
def test_live_runs_model_scenarios_with_trials_and_threshold(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    env: dict[str, str],
    setting: str,
) -> None:
    make_project(
        pytester,
        settings='model = "scripted:alternate"\n' + setting,
        files={"evals/judged.yaml": JUDGED},
    )
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = pytester.runpytest("-v", *args)
    # 3 trials of judged_booking get met, not met, met: 2/3 >= 0.66; the 4th call is not met
    result.stdout.fnmatch_lines(
        ["*judged.yaml::judged_booking PASSED*", "*judged.yaml::simulated_booking FAILED*"]
    )
    assert result.ret == 1


def test_live_failures_give_the_judges_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester, settings='model = "scripted:not_met"\n', files={"evals/judged.yaml": JUDGED}
    )
    monkeypatch.setenv("SPARRING_LIVE", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*sparring scenario 'judged_booking' failed: 0/3 trials passed, 0% [[]0%, 56%], "
            "threshold 66%",
            "trial 1: failed*",
            "  turn 1: t1.should1 (should confirm the booking*) not met: the judge says not_met",
            "*sparring scenario 'simulated_booking' failed*",
            "  c1 (The agent books a slot) not met: the judge says not_met",
        ]
    )


def test_live_without_a_model_skips_with_how_to_configure_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SPARRING_MODEL", raising=False)
    make_project(pytester, files={"evals/judged.yaml": JUDGED})
    result = pytester.runpytest("--sparring-live", "-rs")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(
        [
            "*SKIPPED ?1? evals/judged.yaml:4: sparring: no model configured "
            "for sparring: set `model = *in ?tool.sparring?*SPARRING_MODEL",
            "*SKIPPED ?1? evals/judged.yaml: sparring: no model configured "
            "for sparring: set `model = *in ?tool.sparring?*SPARRING_MODEL",
        ]
    )


def test_an_invalid_test_file_is_a_collection_error_at_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        files={
            "evals/bad.yaml": """
        target: {ref: "shop_agent:reply"}
        scenarios:
          - id: typo
            turns:
              - usr: "hi"
    """
        },
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*ERROR collecting evals/bad.yaml*",
            "evals/bad.yaml:6:*unknown key 'usr'*did you mean 'user'?*",
        ]
    )


def test_invalid_settings_stop_the_session_with_a_usage_error(pytester: pytest.Pytester) -> None:
    make_project(pytester, settings="[tool.sparring.groups.booking]\ntresholds = 0.9\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*sparring settings:*unknown setting 'tresholds' in group "
            "'booking'; did you mean 'threshold'?"
        ]
    )


# --- Python tests -------------------------------------------------------------------------

PYTHON_TESTS = """
import pytest

from shop_agent import reply
from sparring.api import Suite


@pytest.mark.sparring(trials=3, threshold=0.6)
async def test_async_trials_pass_at_the_threshold(sparring):
    async with sparring.session(reply) as session:
        response = await session.send("Book me a slot")
        await response.should("confirm the booking")
    assert sparring.trial.trial != 2, "trial 2 fails on purpose"


@pytest.mark.sparring(trials=4, threshold="75%")
async def test_below_the_threshold_fails(sparring):
    async with sparring.session(reply) as session:
        await session.send("Book me a slot")
    assert sparring.trial.trial > 2, f"trial {sparring.trial.trial} fails on purpose"


@pytest.mark.sparring(trials=2, live=False)
def test_sync_without_a_model_runs_always(tmp_path):
    assert tmp_path.exists()
    assert reply([{"role": "user", "content": "book"}])[0].startswith("Booked")


@pytest.mark.sparring(trails=2)
def test_a_misspelt_option_is_an_error():
    pass


async def test_the_fixture_alone_makes_a_sparring_test(sparring):
    async with sparring.session(reply) as session:
        response = await session.send("Cancel it")
        await response.should("confirm the cancellation")


suite = Suite(target=reply)


@suite.scenario(repetitions=2)
async def test_suite_books():
    async with suite.session() as session:
        response = await session.send("Book please")
        await response.should("confirm the booking")
"""


def test_python_tests_run_as_trials_against_their_threshold(pytester: pytest.Pytester) -> None:
    make_project(
        pytester, settings='model = "scripted:met"\n', files={"test_agent.py": PYTHON_TESTS}
    )
    result = pytester.runpytest("--sparring-live", "-v")
    result.stdout.fnmatch_lines_random(
        [
            "*::test_async_trials_pass_at_the_threshold PASSED*",
            "*::test_below_the_threshold_fails FAILED*",
            "*::test_sync_without_a_model_runs_always PASSED*",
            "*::test_a_misspelt_option_is_an_error FAILED*",
            "*::test_the_fixture_alone_makes_a_sparring_test PASSED*",
            "*::test_suite_books PASSED*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*sparring test 'test_agent.py::test_below_the_threshold_fails' failed: 2/4 trials "
            "passed, 50% [[]15%, 85%], threshold 75%",
            "trial 1: failed*",
            "*trial 1 fails on purpose*",
            "trial 2: failed*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.sparring on test_agent.py::"
            "test_a_misspelt_option_is_an_error: unknown option 'trails'; "
            "did you mean 'trials'?"
        ]
    )
    assert "async def functions are not natively supported" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


def test_python_tests_skip_without_live_unless_marked_live_false(pytester: pytest.Pytester) -> None:
    make_project(
        pytester, settings='model = "scripted:met"\n', files={"test_agent.py": PYTHON_TESTS}
    )
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=1, failed=1, skipped=4)  # the misspelt option fails
    result.stdout.fnmatch_lines(["*SKIPPED ?1? test_agent.py:8: sparring: it calls a model*"])


def test_an_unmet_should_fails_the_test_with_the_judges_reason(pytester: pytest.Pytester) -> None:
    make_project(
        pytester, settings='model = "scripted:not_met"\n', files={"test_agent.py": PYTHON_TESTS}
    )
    result = pytester.runpytest("--sparring-live", "-k", "fixture_alone or suite_books")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*sparring test 'test_agent.py::test_suite_books' failed: 0/2 trials passed*",
            "*the judge says not_met*",
        ]
    )


BAD_MARKERS = """
import pytest


@pytest.mark.sparring(5, 0.2, live=False)
def test_positional():
    pass


@pytest.mark.sparring(trials=2, live="false")
def test_live_as_text():
    pass


@pytest.mark.sparring(trials="5", live=False)
def test_trials_as_text():
    pass
"""


def test_positional_and_mistyped_marker_options_fail_with_the_accepted_form(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"test_bad.py": BAD_MARKERS})
    result = pytester.runpytest()
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "@pytest.mark.sparring on test_bad.py::test_positional: options must be named, got "
            "positional arguments 5, 0.2; write @pytest.mark.sparring(trials=5, threshold=0.2, "
            "live=False)",
            "@pytest.mark.sparring on test_bad.py::test_live_as_text: live must be True or False, "
            "got 'false', as in @pytest.mark.sparring(trials=5, threshold=0.8, live=False)",
            "@pytest.mark.sparring on test_bad.py::test_trials_as_text: trials must be a whole "
            "number from 1 to 100, got '5', as in @pytest.mark.sparring(*)",
        ]
    )


def test_a_failed_assert_shows_the_reply_not_the_whole_response(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        files={
            "test_short.py": """
        import pytest
        from shop_agent import reply

        @pytest.mark.sparring(live=False)
        async def test_cancels(sparring):
            async with sparring.session(reply) as session:
                response = await session.send("Book me a slot")
                assert sparring.trial.trial == 1
                assert "cancelled" in response.message
    """
        },
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  assert (in the test body) not met: assert 'cancelled' in 'Booked! Your "
            "reference is BK-12.' + where 'Booked! Your reference is BK-12.' = Response(turn=1, "
            "message='Booked! Your reference is BK-12.', tool_calls=['create_booking']).message"
        ]
    )
    assert "recorder" not in result.stdout.str()


# --- group gates --------------------------------------------------------------------------

PLAIN_TESTS = """
import pytest

@pytest.mark.booking
def test_marked_booking_passes():
    pass

def test_plain_passes():
    pass
"""


def test_a_met_gate_turns_a_failure_inside_its_group_into_exit_0(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.6
        tags = ["booking"]
        markers = ["booking"]
    """,
        files={"evals/booking.yaml": BOOKING, "test_plain.py": PLAIN_TESTS},
    )
    result = pytester.runpytest("--sparring-report", "r.md")
    result.assert_outcomes(passed=3, failed=1)
    assert result.ret == 0
    summary = [
        "booking: 2/3 passed, 66.7% [21%, 94%], 60% required (needs 2 of 3): PASSED",
        "  failed: evals/booking.yaml::cancel_slot",
        "exit code overridden to 0: every gate is met and every failed test belongs to a group",
    ]
    result.stdout.fnmatch_lines(["*= sparring group summary =*", *summary])
    report = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert (
        "✅ **exit code 0**: every gate is met and every failed test belongs to a group "
        "(overridden from 1)" in report
    )
    assert "\n".join(["## Group gates", "", "```text", *summary, "```"]) in report


def test_a_failed_must_pass_keeps_exit_1(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.5
        tags = ["booking"]
        must_pass = ["cancel_slot", "test_nowhere"]
    """,
        files={"evals/booking.yaml": BOOKING},
    )
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): FAILED",
            "  failed: evals/booking.yaml::cancel_slot",
            "  must_pass: cancel_slot failed",
            "  must_pass: test_nowhere matched no test of this session; check its spelling*",
            "exit code stays 1: gate booking FAILED",
        ]
    )


def test_a_misspelt_must_pass_fails_a_gate_that_would_be_met(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.5
        tags = ["booking"]
        must_pass = ["book_slott"]
    """,
        files={"evals/booking.yaml": BOOKING},
    )
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): FAILED",
            "  failed: evals/booking.yaml::cancel_slot",
            "  must_pass: book_slott matched no test of this session; did you mean 'book_slot'?",
            "exit code stays 1: gate booking FAILED",
        ]
    )


def test_a_failing_test_outside_every_group_keeps_exit_1(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.5
        tags = ["booking"]
    """,
        files={
            "evals/booking.yaml": BOOKING,
            "test_plain.py": "def test_plain_fails():\n    assert 1 == 2\n",
        },
    )
    result = pytester.runpytest()
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): PASSED",
            "exit code stays 1: 1 failed test in no group: test_plain.py::test_plain_fails",
        ]
    )


@pytest.mark.parametrize("stop", [["-x"], ["--maxfail", "1"]])
def test_a_run_stopped_early_keeps_exit_1_whatever_the_gates(
    pytester: pytest.Pytester, stop: list[str]
) -> None:
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.5
        tags = ["booking"]
    """,
        files={"evals/a.yaml": BOOKING, "evals/b.yaml": BOOKING.replace("_slot", "_slot2")},
    )
    result = pytester.runpytest(*stop, "--sparring-report", "r.md")
    result.assert_outcomes(passed=1, failed=1)  # b.yaml never ran: 1/2 was 2/4
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): PASSED",
            "  failed: evals/a.yaml::cancel_slot",
            "exit code stays 1: the run stopped early (-x / --maxfail)",
        ]
    )
    assert "❌ **exit code 1**" in (pytester.path / "r.md").read_text(encoding="utf-8")


def test_gates_and_the_report_cover_every_xdist_worker(pytester: pytest.Pytester) -> None:
    files = {f"evals/booking{i}.yaml": BOOKING.replace("_slot", f"_slot{i}") for i in range(3)}
    files["test_plain.py"] = PLAIN_TESTS
    make_project(
        pytester,
        settings="""
        [tool.sparring.groups.booking]
        threshold = 0.5
        tags = ["booking"]
        markers = ["booking"]
        must_pass = ["book_slot0", "test_marked_booking_passes"]
    """,
        files=files,
    )
    result = pytester.runpytest_subprocess("-n", "2", "--sparring-report", "out/report.md")
    result.assert_outcomes(passed=5, failed=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "booking: 4/7 passed, 57.1% [25%, 84%], 50% required (needs 4 of 7): PASSED",
            "  must_pass: book_slot0 ok",
            "  must_pass: test_marked_booking_passes ok",
            "exit code overridden to 0*",
        ]
    )
    assert result.stdout.str().count("sparring group summary") == 1
    report = (pytester.path / "out/report.md").read_text(encoding="utf-8")
    rows = [line for line in report.splitlines() if line.startswith("| evals/")]
    assert len(rows) == 6
    assert re.search(
        r"\| evals/booking1\.yaml::cancel_slot1 \(cancel_slot1\) \| scripted \| 1 "
        r"\| 0 \| 0% \[0%, 79%\] \| 100% \| ❌ failed \|",
        report,
    )
    assert "✅ **exit code 0**: every gate is met" in report
    assert "  must_pass: test_marked_booking_passes ok\nexit code overridden to 0" in report


def test_the_markdown_report_has_a_summary_and_every_verdicts_reason(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester,
        settings='model = "scripted:alternate"\n',
        files={
            "evals/booking.yaml": BOOKING,
            "evals/judged.yaml": JUDGED,
            "test_plain.py": "def test_plain_passes():\n    pass\n",
        },
    )
    result = pytester.runpytest(
        "--sparring-live",
        "--sparring-report",
        "report.md",
        "-k",
        "judged_booking or cancel or plain",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["sparring report: report.md"])
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert "| Scenario | Kind | Trials | Passed | Pass rate | Threshold | Status |" in report
    assert re.search(
        r"\| evals/judged\.yaml::judged_booking \(judged_booking\) \| scripted \| "
        r"3 \| 2 \| 66\.7% \[21%, 94%\] \| 66% \| ✅ passed \|",
        report,
    )
    assert re.search(
        r"\*\*t1\.should1\*\* \(turn 1\) should .*confirm the booking with a "
        r"reference number: the judge says not_met",
        report,
    )
    assert "expected turn 1 to contain" in report
    assert "test_plain" not in report


def test_the_markdown_report_lists_skipped_tests_with_why(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        settings='model = "scripted:met"\n',
        files={
            "evals/booking.yaml": BOOKING,
            "evals/judged.yaml": JUDGED,
            "test_agent.py": PYTHON_TESTS,
        },
    )
    result = pytester.runpytest("--sparring-report", "report.md")
    result.assert_outcomes(passed=2, failed=2, skipped=6)
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    rows = [
        line
        for line in report.splitlines()
        if line.startswith("| evals/") or line.startswith("| test_agent.py")
    ]
    assert len(rows) == 10, "\n".join(rows)
    assert re.search(
        r"\| evals/judged\.yaml::judged_booking \(judged_booking\) \| scripted \| "
        r"3 \| 0 \| - \| 66% \| ⏭ skipped \|",
        report,
    )
    assert re.search(
        r"\| test_agent\.py::test_below_the_threshold_fails \| python \| 4 \| 0 \| "
        r"- \| 75% \| ⏭ skipped \|",
        report,
    )
    assert re.search(r"\| test_agent\.py::test_suite_books \| python .* ⏭ skipped \|", report)
    assert (
        ": ⏭ skipped: sparring: it calls a model (simulated user or judge), so it runs "
        "only when asked" in report
    )
    assert re.search(
        r"\| test_agent\.py::test_a_misspelt_option_is_an_error \| python .* "
        r"⚠️ error \|",
        report,
    )
    assert (
        "- trial 1: ⚠️ error: @&#8203;pytest.mark.sparring on test_agent.py::test_a_misspelt_option_"
        "is_an_error: unknown option 'trails'; did you mean 'trials'?" in report
    )
    assert "❌ **exit code 1**: at least one test failed" in report


def test_sessions_without_sparring_settings_or_tests_are_untouched(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_plain="""
        def test_passes():
            pass

        def test_fails():
            assert False
    """
    )
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals/booking.yaml").write_text(BOOKING, encoding="utf-8")
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    assert "sparring group summary" not in result.stdout.str()


def test_importing_the_plugin_imports_no_other_sparring_module(pytester: pytest.Pytester) -> None:
    result = pytester.run(
        sys.executable,
        "-c",
        "import sys, sparring.pytest_plugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('sparring', 'pydantic'))))",
    )
    assert result.outlines[-1] == (
        "['sparring', 'sparring.pytest_plugin', 'sparring.pytest_plugin.fixtures']"
    )


def test_the_plugin_is_registered_as_a_pytest11_entry_point() -> None:
    from importlib.metadata import entry_points

    found = [e.value for e in entry_points(group="pytest11") if e.name == "sparring"]
    assert found == ["sparring.pytest_plugin"]
    assert (
        Path(__file__)
        .parent.parent.joinpath("pyproject.toml")
        .read_text()
        .count('sparring = "sparring.pytest_plugin"')
        == 1
    )


def test_a_report_that_cannot_be_written_says_why_and_is_not_a_green_run(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"evals/booking.yaml": BOOKING})
    (pytester.path / "taken").mkdir()
    result = pytester.runpytest("-k", "book_slot", "--sparring-report", "taken")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        ["error: --sparring-report: could not write 'taken': *; give a writable file path"]
    )


GATED = """
    [tool.sparring.groups.booking]
    threshold = 0.5
    tags = ["booking"]
"""


def test_an_existing_report_outside_the_project_given_with_a_space_is_a_usage_error(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory
) -> None:
    make_project(pytester, settings=GATED, files={"evals/booking.yaml": BOOKING})
    report = tmp_path_factory.mktemp("reports") / "r.md"
    first = pytester.runpytest("--sparring-report", str(report))
    assert first.ret == 0 and report.is_file()
    # the file exists now: pytest takes it for a test path when it picks its rootdir
    second = pytester.runpytest("--sparring-report", str(report))
    assert second.ret == pytest.ExitCode.USAGE_ERROR
    second.stderr.fnmatch_lines(
        [
            f"*--sparring-report {report}: the file exists, so pytest also "
            f"took it as a test path when choosing its rootdir*; write "
            f"--sparring-report={report} (one argument)"
        ]
    )
    third = pytester.runpytest(f"--sparring-report={report}")
    third.assert_outcomes(passed=1, failed=1)
    assert third.ret == 0


def test_settings_are_found_from_the_invocation_directory_when_pytest_roots_elsewhere(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        settings=GATED,
        files={"evals/booking.yaml": BOOKING, "ci/pytest.ini": "[pytest]\n"},
    )
    result = pytester.runpytest("-c", "ci/pytest.ini", "--rootdir", "ci", "evals")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): PASSED"]
    )
