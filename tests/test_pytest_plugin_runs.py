"""The pytest plugin runs what needs no model, on one event loop per session."""

from __future__ import annotations

import pytest

from sparring.demo.server import DemoServer
from tests.test_pytest_plugin import make_project

pytest_plugins = ["pytester"]

CHECKS_AND_SHOULDS = """
target: {ref: "shop_agent:reply"}
scenarios:
  - id: checked_and_judged
    turns:
      - user: "Book me a slot"
        checks: [{contains: "BK-"}]
        should: confirm the booking with a reference number
  - id: wrong_check_and_judged
    turns:
      - user: "Book me a slot"
        checks: [{contains: "cancelled"}]
        should: confirm the booking
"""


def test_a_scripted_scenario_runs_its_checks_without_live_and_skips_only_its_shoulds(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"evals/mixed.yaml": CHECKS_AND_SHOULDS})
    result = pytester.runpytest("-rA", "--sparring-report=report.md")
    # the failing check fails its test: the checks ran although the session is not live
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(['*t1.check1 (contains "cancelled") not met*'])
    report = (pytester.path / "report.md").read_text(encoding="utf-8")
    assert "not judged" in report, report
    # a pass that left judged parts out says so after the tests, with why
    result.stdout.fnmatch_lines(
        [
            "*sparring: passed without their judged parts*",
            "evals/mixed.yaml::checked_and_judged: not judged: *--sparring-live*",
        ]
    )
    assert "calls a model (simulated user or judge), so it runs only when asked" in report


SUITE_TESTS = """
from shop_agent import reply
from sparring import Suite

suite = Suite(target=reply)


@suite.scenario
async def test_asserts_without_a_model():
    async with suite.session() as session:
        response = await session.send("Hello")
    assert "Booked" in response.message, "no booking without asking"


@suite.scenario
async def test_only_judged():
    async with suite.session() as session:
        response = await session.send("Book please")
        await response.should("confirm the booking")
"""


def test_suite_tests_run_without_live_and_skip_with_the_true_reason(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, settings='model = "scripted:met"\n', files={"test_s.py": SUITE_TESTS})
    result = pytester.runpytest("-rA")
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "*no booking without asking*",
            "*SKIPPED*test_s.py*: sparring: *calls a model*--sparring-live*",
        ]
    )
    live = pytester.runpytest("--sparring-live", "-rA")
    assert "skipped" not in live.parseoutcomes(), live.stdout.str()  # with live, judged


CLIENT_AT_IMPORT = """
import os

import httpx

CLIENT = httpx.AsyncClient()  # made at import, as SDK quick starts do


async def reply(history):
    answer = await CLIENT.post(os.environ["DEMO_URL"] + "/chat",
                               json={"message": history[-1]["content"]})
    return answer.json()["reply"]
"""

TWO_SCENARIOS = """
target: {ref: "client_agent:reply"}
scenarios:
  - id: first
    turns: [{user: "Hello", checks: [{contains: "Northwind"}]}]
  - id: second
    turns: [{user: "Hello again", checks: [{contains: "Northwind"}]}]
  - id: third
    turns: [{user: "Hi", checks: [{contains: "Northwind"}]}]
"""


def test_a_target_module_with_an_async_client_made_at_import_works_for_every_test(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(pytester, files={"evals/two.yaml": TWO_SCENARIOS})
    pytester.makepyfile(client_agent=CLIENT_AT_IMPORT)
    with DemoServer(port=0) as demo:
        demo.start()
        monkeypatch.setenv("DEMO_URL", demo.url)
        result = pytester.runpytest_subprocess("-p", "no:xdist")
    result.assert_outcomes(passed=3)
    assert "Event loop is closed" not in result.stdout.str()


SYNC_SESSION = """
import pytest

from shop_agent import reply


@pytest.mark.sparring(live=False)
def test_sync_session(sparring):
    with sparring.session(reply) as session:
        session.send("Book me a slot")
"""


def test_a_session_in_a_sync_test_works_with_a_plain_with(pytester: pytest.Pytester) -> None:
    make_project(pytester, files={"test_sync.py": SYNC_SESSION})
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(passed=1)
