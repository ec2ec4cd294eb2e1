"""The pytest plugin keeps one run per session (xdist workers included, each trial once;
`--sparring-no-store` keeps nothing) and `Suite.run()` keeps its runs (`store=False`: not)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from sparring import Suite
from tests.test_pytest_plugin import make_project

pytest_plugins = ["pytester"]

CHECKED = """
target: {ref: "shop_agent:reply"}
scenarios:
""" + "".join(
    f"""  - id: s{i}
    trials: 3
    turns:
      - user: "Book me a slot"
        checks: [{{contains: "{"BK-" if i % 2 else "cancelled"}"}}]
"""
    for i in range(4)
)


def _store() -> Path:
    return Path(os.environ["SPARRING_STORE"])


def _runs_and_trials() -> list[tuple[str, str, int, int]]:
    """Per stored run: status, exit code, its trials, and its distinct (scenario, trial)."""
    if not _store().exists():
        return []
    with sqlite3.connect(_store()) as conn:
        return conn.execute(
            "SELECT r.status, r.exit_code, count(t.id), "
            "count(DISTINCT t.scenario_id || '/' || t.trial) "
            "FROM runs r LEFT JOIN trials t ON t.run_id = r.id GROUP BY r.id ORDER BY r.started_at"
        ).fetchall()


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["single", "xdist"])
def test_a_pytest_session_is_one_stored_run_with_every_trial_once(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    make_project(pytester, files={"evals/checked.yaml": CHECKED})
    result = pytester.runpytest_subprocess(*workers)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*sparring: stored as run * (`sparring show *`)*"])
    assert _runs_and_trials() == [("finished", 1, 12, 12)]
    with sqlite3.connect(_store()) as conn:
        ids = [r[0] for r in conn.execute("SELECT scenario_id FROM scenarios ORDER BY 1")]
    assert ids == [f"evals/checked.yaml::s{i}" for i in range(4)]  # node ids: unique


def test_sparring_no_store_keeps_nothing_and_sessions_without_sparring_tests_open_no_store(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"evals/checked.yaml": CHECKED, "test_plain.py": ""})
    pytester.runpytest("--sparring-no-store").assert_outcomes(passed=2, failed=2)
    pytester.makepyfile(test_plain="def test_nothing_of_sparring():\n    pass\n")
    pytester.runpytest("test_plain.py").assert_outcomes(passed=1)
    assert not _store().exists()


def test_suite_run_keeps_its_run_unless_store_is_false(tmp_path: Path) -> None:
    def agent(history: object) -> str:
        return "fine"

    suite = Suite(target=agent)

    @suite.scenario
    async def test_says_fine() -> None:  # pyright: ignore[reportUnusedFunction]
        async with suite.session() as session:
            response = await session.send("hi")
        assert response.message == "fine"

    suite.run(store=False)
    assert not _store().exists()
    result = suite.run()
    with sqlite3.connect(_store()) as conn:
        stored = conn.execute("SELECT id, status, exit_code FROM runs").fetchall()
        trials = conn.execute("SELECT scenario_id, trial, status FROM trials").fetchall()
    assert stored == [(result.run_id, "finished", 0)]
    assert trials == [(result.scenarios[0].scenario_id, 1, "passed")]
