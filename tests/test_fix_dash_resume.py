"""Resume of a dashboard run the server's stop interrupted: only the conversations that
did not end run again, into the same run; not for viewers, not while running; the CLI
says to resume such a run from the dashboard."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import delete, update

from sparring.store.database import Store, open_store
from sparring.store.reading import load_run
from sparring.store.schema import runs, trials
from sparring.store.writer import INTERRUPTED_END
from tests.support.dashboard_platform import dashboard_client, platform_dashboard
from tests.test_cli import sparring
from tests.test_dashboard import csrf, demo, finished, signed_in, the_three

__all__ = ["demo"]  # the demo agent's server, a fixture


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/resume.db")
    yield opened
    opened.close()


def interrupted_suite(store: Store, demo: str) -> tuple[str, str]:
    """A suite of 3 conversations whose run was cut off as a server's stop cuts one off:
    conversation 1 ended, 2 never started, 3 was interrupted. Its id and the run's."""
    with dashboard_client(platform_dashboard(store)) as client:
        agent, user = the_three(client, demo)
        case = {"agent_id": agent, "user_id": user, "max_turns": 3, "sessions": 3}
        suite = client.post("/api/suites", json={"name": "Slow", "cases": [case], "run": True})
        suite_id = suite.json()["id"]
        run_id = finished(client, suite_id)["runs"][0]["id"]
    cut = next(t for t in load_run(store, run_id).scenarios[0].trials if t.trial == 3)
    cut = cut.model_copy(update={"status": "error", "end_reason": INTERRUPTED_END})
    with store.engine.begin() as conn:
        conn.execute(delete(trials).where(trials.c.run_id == run_id, trials.c.trial == 2))
        conn.execute(
            update(trials)
            .where(trials.c.run_id == run_id, trials.c.trial == 3)
            .values(end_reason=INTERRUPTED_END, status="error", result=cut.model_dump_json())
        )
        conn.execute(update(runs).where(runs.c.id == run_id).values(status="interrupted"))
    return suite_id, run_id


def test_resume_runs_only_what_did_not_end_into_the_same_run(store: Store, demo: str) -> None:
    suite_id, run_id = interrupted_suite(store, demo)
    (first,) = [t for t in load_run(store, run_id).scenarios[0].trials if t.trial == 1]
    with dashboard_client(platform_dashboard(store)) as client:
        suite = client.get(f"/api/suites/{suite_id}").json()
        reason = "the run was interrupted (1 of 3 conversations ended); Resume runs the others"
        assert suite["reason"] == reason
        assert suite["resumable"] is True
        page = client.get(f"/suites/{suite_id}").text
        assert f'action="/suites/{suite_id}/resume"' in page
        client.post(f"/suites/{suite_id}/resume", data={"csrf_token": csrf(client)})
        suite = finished(client, suite_id)
        assert suite["status"] == "passed" and [r["id"] for r in suite["runs"]] == [run_id]
        again = client.post(f"/api/suites/{suite_id}/resume", json={})
        assert again.status_code == 422 and "only an interrupted run" in again.json()["detail"]
        assert "/resume" not in client.get(f"/suites/{suite_id}").text
    trials_now = load_run(store, run_id).scenarios[0].trials
    assert [t.trial for t in trials_now] == [1, 2, 3]
    assert all(t.end_reason != INTERRUPTED_END for t in trials_now)
    assert trials_now[0] == first  # not run again


def test_resume_is_refused_to_viewers_and_after_an_edit(store: Store, demo: str) -> None:
    suite_id, _ = interrupted_suite(store, demo)
    with signed_in(store, "viewer") as viewer:
        answer = viewer.post(
            f"/api/suites/{suite_id}/resume", json={}, headers={"X-CSRF-Token": csrf(viewer)}
        )
        assert answer.status_code == 403 and "viewer" in answer.json()["detail"]
        assert (
            'class="resume" title="Viewers cannot run suites" disabled'
            in viewer.get(f"/suites/{suite_id}").text
        )
    with dashboard_client(platform_dashboard(store)) as client:
        body = client.get(f"/api/suites/{suite_id}").json()
        saved = client.put(
            f"/api/suites/{suite_id}", json={"name": body["name"] + " 2", "cases": body["cases"]}
        )
        assert saved.status_code == 200, saved.text
        answer = client.post(f"/api/suites/{suite_id}/resume", json={})
        assert answer.status_code == 422 and "Rerun it instead" in answer.json()["detail"]


def test_the_cli_says_to_resume_a_dashboard_run_from_the_dashboard(
    store: Store, demo: str, tmp_path: Path
) -> None:
    suite_id, run_id = interrupted_suite(store, demo)
    answer = sparring("run", "--resume", run_id, "--store", store.url, cwd=tmp_path)
    assert answer.returncode == 2
    assert "resume it from the dashboard" in answer.stderr
    assert f"/api/suites/{suite_id}/resume" in answer.stderr
