"""One pytest session is one stored run, `@suite.scenario` tests included (before, each also
made a run of its own, named with an absolute path), named after the tests it was given,
relative to pytest's rootdir (never after option flags), or the rootdir's name."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from tests.test_pytest_plugin import make_project

pytest_plugins = ["pytester"]

SUITE = """
import asyncio

from sparring.api import Suite
from shop_agent import reply

suite = Suite(target=reply)

async def book():
    async with suite.session() as session:
        assert "BK-" in (await session.send("Book me a slot")).message

@suite.scenario(repetitions=2)
async def test_books() -> None:
    await book()

@suite.scenario
def test_books_from_a_sync_test() -> None:
    asyncio.run(book())
"""


def _runs() -> list[tuple[str, list[str], int]]:
    """Per stored run: status, paths, trials."""
    with sqlite3.connect(os.environ["SPARRING_STORE"]) as conn:
        rows = conn.execute(
            "SELECT r.status, r.invocation, count(t.id) FROM runs r "
            "LEFT JOIN trials t ON t.run_id = r.id GROUP BY r.id"
        ).fetchall()
    return [(status, json.loads(invocation)["paths"], n) for status, invocation, n in rows]


def test_suite_tests_are_kept_in_the_sessions_one_run_named_after_the_test_paths(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, files={"tests/py/test_shop.py": SUITE})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rA", "tests/py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_books_from_a_sync_test*async def*"])
    assert _runs() == [("finished", ["tests/py"], 3)]


def test_a_session_given_no_paths_is_named_after_the_rootdir(pytester: pytest.Pytester) -> None:
    make_project(pytester, files={"tests/py/test_shop.py": SUITE})
    pytester.runpytest_subprocess("-q", "-k", "test_books").assert_outcomes(passed=1, failed=1)
    [(_, paths, _)] = _runs()
    assert paths == [pytester.path.name]
