"""`sparring serve`'s dashboard through FastAPI's test client: stored runs of test files as
suites (results, metrics, history, diff, exports), the platform's assets and suites run in
the server process, overrides, and who may do what (roles, sign-in, CSRF)."""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sparring.dashboard.state import Dashboard
from sparring.demo.server import DemoServer
from sparring.store.accounts import add_account
from sparring.store.database import Store, open_store
from sparring.store.writer import RunRecord, RunWriter
from tests.support.dashboard_platform import (
    EVALUATION,
    LOCAL,
    USER,
    dashboard_client,
    platform_dashboard,
)
from tests.support.dashboard_store import CARD_REQUEST, keep_run, sample_run

PATHS = ["tests/conversations/"]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/dashboard.db")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with dashboard_client(platform_dashboard(store)) as opened:
        yield opened


@pytest.fixture(scope="module")
def demo() -> Iterator[str]:
    with DemoServer(port=0) as server:
        yield server.url


def demo_agent(demo: str) -> dict[str, Any]:
    """The demo agent over HTTP, as an agent's content."""
    body = {"message": "{{input}}", "history": "{{history}}"}
    return {"type": "http", "url": f"{demo}/chat", "body_template": body, "response_path": "reply"}


def two_runs(store: Store) -> None:
    """Run `base` (everything passed) then `newer` (one refund trial failed)."""
    keep_run(
        store,
        sample_run(passes=(True, True)),
        paths=PATHS,
        run_id="base",
        started_at="2026-11-30T10:00:00+00:00",
    )
    keep_run(
        store, sample_run(), paths=PATHS, run_id="newer", started_at="2026-12-01T10:00:00+00:00"
    )


def file_suite(client: TestClient) -> dict[str, Any]:
    (suite,) = client.get("/api/suites").json()
    return suite


def csrf(client: TestClient) -> str:
    return client.get("/api/session").json()["csrf_token"]


def published(client: TestClient, kind: str, name: str, content: dict[str, Any]) -> int:
    made = client.post(f"/api/assets/{kind}", json={"name": name, "content": content})
    assert made.status_code == 201, made.text
    asset_id = made.json()["id"]
    assert client.post(f"/api/assets/{kind}/{asset_id}/revisions/1/publish", json={}).is_success
    return asset_id


def the_three(client: TestClient, demo: str) -> tuple[int, int]:
    """A published agent evaluation, simulated user attaching it, and the demo agent (over
    HTTP at `demo`): the agent's and the simulated user's ids."""
    published(client, "evaluation", "Delivery info", EVALUATION)
    user = published(
        client, "simulated_user", "Late parcel", {**USER, "evaluations": ["Delivery info"]}
    )
    agent = published(client, "agent", "Demo agent", demo_agent(demo))
    return agent, user


def finished(client: TestClient, suite_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120  # a guard for a busy machine, not a measurement
    while time.monotonic() < deadline:
        suite = client.get(f"/api/suites/{suite_id}").json()
        if suite["status"] != "in_progress":
            return suite
        time.sleep(0.05)
    raise AssertionError(f"suite {suite_id} still in progress")


# --- stored runs of test files ---------------------------------------------------------------


def test_file_runs_are_one_suite_named_after_their_paths_with_status_reason_and_filters(
    store: Store, client: TestClient
) -> None:
    two_runs(store)
    suite = file_suite(client)
    assert suite["name"] == "tests/conversations/" and suite["saved"] is False
    assert [r["id"] for r in suite["runs"]] == ["newer", "base"]
    assert suite["status"] == "mixed" and "asked for the card" in suite["reason"]
    page = client.get("/suites").text
    assert "tests/conversations/" in page and "Mixed" in page and "asked for the card" in page
    assert 'title="Defined in files: run it with sparring run"' in page  # no Rerun
    assert client.get("/api/suites", params={"since": "2026-12-02"}).json() == []
    assert len(client.get("/api/suites", params={"until": "2026-12-01"}).json()) == 1
    assert client.get("/api/suites", params={"agent": "nobody"}).json() == []


def test_transcripts_show_labels_reason_latency_notes_and_verdicts_beside_their_turns(
    store: Store, client: TestClient
) -> None:
    two_runs(store)
    suite_id = file_suite(client)["id"]
    page = client.get(f"/suites/{suite_id}", params={"c": "newer/2/refund-delay"}).text
    conversation = page.split('<section id="conversation">', 1)[1]
    assert conversation.index('id="reason"') < conversation.index('class="turns"')
    assert "It never apologised." in conversation and CARD_REQUEST in conversation
    assert ">Agent<" in conversation and ">Simulated User<" in conversation
    assert "420 ms" in conversation and "Judge: asks for card" in conversation
    turn_one = conversation.split('id="turn-1"', 1)[1].split('id="turn-2"', 1)[0]
    assert 'data-verdict="criterion1"' in turn_one  # beside the turn it cites
    listing = page.split('class="conversations"', 1)[1].split("</ul>", 1)[0]
    runs = re.findall(r"run (newer|base),", listing)
    assert runs == ["newer"] * 3 + ["base"] * 3  # newest first, earlier runs stay listed


def test_metrics_show_score_evaluations_passed_and_insights_with_reasoning_on_hover(
    store: Store, client: TestClient
) -> None:
    two_runs(store)
    suite_id = file_suite(client)["id"]
    page = client.get(f"/suites/{suite_id}", params={"tab": "metrics"}).text
    table = page.split('<table class="list metrics">', 1)[1]
    shown = '<th data-insight="support.resolved" >support · resolved</th>'  # named as written
    assert "<th>Score</th><th>Evaluations passed</th>" + shown in table
    assert 'title="Reasoning: The user asked for the card.&#10;Evidence: Your refund' in table
    assert re.search(r'class="passed">No<', table) and re.search(r'class="passed">-<', table)
    chosen = client.get(
        f"/suites/{suite_id}", params={"tab": "metrics", "metrics": "nothing.else"}
    ).text
    assert 'th data-insight="support.resolved"' not in chosen  # Select metrics
    assert 'value="support.resolved" >' in chosen or 'value="support.resolved"  >' in chosen


def test_exports_are_xlsx_csv_zip_and_json_of_the_run(store: Store, client: TestClient) -> None:
    two_runs(store)
    suite_id = file_suite(client)["id"]
    page = client.get(f"/suites/{suite_id}").text
    for fmt in ("xlsx", "csv", "json"):  # the page exports every conversation of the suite
        assert f"/api/suites/{suite_id}/export?format={fmt}" in page
    report = client.get("/api/runs/newer/export", params={"format": "json"})
    assert report.headers["content-disposition"] == 'attachment; filename="sparring-newer.json"'
    assert json.loads(report.content)["run_id"] == "newer"
    archive = zipfile.ZipFile(io.BytesIO(client.get("/api/runs/newer/export?format=csv").content))
    assert archive.namelist() == ["runs.csv", "insights.csv", "transcript.csv", "rates.csv"]
    rows = list(csv.DictReader(io.StringIO(archive.read("runs.csv").decode("utf-8-sig"))))
    assert [r["status"] for r in rows] == ["passed", "failed", "timed_out"]
    workbook = client.get("/api/runs/newer/export?format=xlsx")
    assert workbook.content[:2] == b"PK" and "spreadsheetml" in workbook.headers["content-type"]


def test_history_chart_and_a_diff_against_the_baseline_side_by_side(
    store: Store, client: TestClient
) -> None:
    two_runs(store)
    suite_id = file_suite(client)["id"]
    page = client.get(f"/suites/{suite_id}").text
    points = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', page)
    assert len(points) == 2 and float(points[0][1]) < float(points[1][1])  # 2/3 then 1/3
    diff = client.get(f"/api/suites/{suite_id}/diff").json()
    assert (diff["base"], diff["run"]) == ("base", "newer")
    assert diff["regressions"] == ["refund-delay"]  # passed in base, failed now
    assert diff["scenarios"][0]["newly_failing_criteria"] == ["criterion1"]
    assert "1 regressed" in client.get(f"/suites/{suite_id}/diff").text
    keep_run(
        store, sample_run(), paths=PATHS, run_id="third", started_at="2026-12-02T10:00:00+00:00"
    )
    assert client.get(f"/api/suites/{suite_id}/diff").json()["base"] == "newer"  # the one before
    form = {"csrf_token": csrf(client), "suite_id": suite_id}
    assert 'action="/runs/base/baseline"' in client.get(f"/suites/{suite_id}").text
    client.post("/runs/base/baseline", data=form)
    assert client.get(f"/api/suites/{suite_id}/diff").json()["base"] == "base"  # marked
    side = client.get(
        f"/suites/{suite_id}/diff", params={"run": "newer", "scenario": "refund-delay"}
    ).text
    base_column, run_column = side.split('class="column"')[1:3]
    assert "I&#39;m sorry your parcel is late." in base_column and "Base" in base_column
    assert "Refund for a late order" in run_column and "Run</h3>" in run_column


def test_conversations_of_the_latest_20_runs_are_listed_older_runs_in_the_history(
    store: Store, client: TestClient
) -> None:
    for day in range(1, 22):
        keep_run(
            store,
            sample_run(),
            paths=PATHS,
            run_id=f"day{day:02}",
            started_at=f"2026-11-{day:02}T10:00:00+00:00",
        )
    page = client.get(f"/suites/{file_suite(client)['id']}").text
    assert "run day21," in page and "run day02," in page and "run day01," not in page
    assert 'id="older"' in page and 'data-run="day01"' in page  # still in the history


def test_what_agents_write_is_shown_as_text(store: Store, client: TestClient) -> None:
    run = sample_run()
    trial = run.scenarios[0].trials[1]
    message = trial.transcript.messages[1].model_copy(update={"content": "<script>x()</script>"})
    trial.transcript = trial.transcript.model_copy(
        update={"messages": (trial.transcript.messages[0], message, *trial.transcript.messages[2:])}
    )
    keep_run(store, run, paths=PATHS, run_id="xss", started_at="2026-12-01T10:00:00+00:00")
    page = client.get(f"/suites/{file_suite(client)['id']}", params={"c": "xss/2/refund-delay"})
    assert "<script>x()" not in page.text and "&lt;script&gt;x()" in page.text


def test_a_suite_in_progress_refreshes_itself_until_it_ends(
    store: Store, client: TestClient
) -> None:
    from sparring.store.provenance import current_provenance

    planned = sample_run().model_copy(update={"run_id": "live", "started_at": "2026-12-01"})
    for scenario in planned.scenarios:
        scenario.trials = []
    writer = RunWriter(store)
    record = RunRecord(
        paths=PATHS, invocation={}, settings={}, provenance=current_provenance(Path.cwd())
    )
    writer.start(planned, record=record)
    suite = file_suite(client)
    assert suite["status"] == "in_progress"
    page = client.get(f"/suites/{suite['id']}").text
    assert 'hx-trigger="every 2s"' in page and "In progress" in page
    assert 'hx-trigger="every 2s"' in client.get("/suites").text  # the list too
    writer.finish(sample_run().model_copy(update={"run_id": "live"}), exit_code=1)
    assert 'hx-trigger="every 2s"' not in client.get(f"/suites/{suite['id']}").text
    assert 'hx-trigger="every 2s"' not in client.get("/suites").text


# --- the platform: assets, suites, runs in the server --------------------------------------


def test_assets_have_revisions_clones_and_an_irreversible_archive(
    client: TestClient, demo: str
) -> None:
    agent, user = the_three(client, demo)
    clone = client.post(f"/api/assets/simulated_user/{user}/clone", json={}).json()
    assert clone["name"] == "Late parcel - clone" and clone["revisions"][0]["state"] == "draft"
    assert clone["revisions"][0]["content"]["evaluations"] == ["Delivery info"]
    using = client.get("/evaluations").text
    assert re.search(r'class="using">Late parcel, Late parcel - clone<', using)
    draft = client.post(
        f"/api/assets/agent/{agent}/drafts",
        json={"name": "Demo agent", "content": demo_agent(demo) | {"timeout_s": 5}},
    ).json()
    assert [r["label"] for r in draft["revisions"]] == ["Published:1", "Draft:2"]
    page = client.get(f"/agents/{agent}").text
    assert "Draft:2" in page and 'id="preview"' in page and "Save Draft" in page
    archived = client.post(f"/api/assets/simulated_user/{clone['id']}/archive", json={}).json()
    assert archived["archived"] is True
    assert "Late parcel - clone" in client.get("/simulated-users?tab=archived").text
    assert "Late parcel - clone" not in client.get("/suites/new").text  # not selectable


def test_the_asset_pages_save_drafts_move_revisions_clone_and_archive(
    client: TestClient,
) -> None:
    token = csrf(client)
    form = {
        "csrf_token": token,
        "name": "Polite",
        "prompt": "Was the user polite?",
        "insight-0-name": "polite",
        "insight-0-type": "boolean",
    }
    more = client.post("/evaluations/new", data=form | {"add_insight": "1"})
    assert 'name="insight-1-name"' in more.text  # Add insight: one more row
    created = client.post("/evaluations/new", data=form, follow_redirects=False)
    assert created.headers["location"] == "/evaluations"
    (evaluation,) = client.get("/api/assets/evaluation").json()
    page = f"/evaluations/{evaluation['id']}"
    saved = client.post(page, data=form | {"prompt": "Was it kind?"}, follow_redirects=False)
    assert saved.headers["location"] == f"{page}?revision=2"
    for step in ("revisions/2/preview", "revisions/2/publish", "revisions/1/revert"):
        assert client.post(f"{page}/{step}", data={"csrf_token": token}).status_code == 200
    labels = [
        r["label"]
        for r in client.get(f"/api/assets/evaluation/{evaluation['id']}").json()["revisions"]
    ]
    assert labels == ["Draft:1", "Published:2", "Draft:3"]
    clone = client.post(f"{page}/clone", data={"csrf_token": token}, follow_redirects=False)
    assert clone.headers["location"].startswith("/evaluations/")
    asked = client.get(f"{page}/archive").text
    assert "can&#39;t be undone" in asked and f'action="{page}/archive"' in asked
    gone = client.post(f"{page}/archive", data={"csrf_token": token}, follow_redirects=False)
    assert gone.headers["location"] == "/evaluations?tab=archived"
    invalid = client.post("/evaluations/new", data=form | {"name": "Empty", "prompt": ""})
    assert invalid.status_code == 422 and "prompt" in invalid.text


def test_a_suite_without_a_published_revision_fails_to_save_with_the_fix(
    client: TestClient, demo: str
) -> None:
    agent, _ = the_three(client, demo)
    draft_user = client.post(
        "/api/assets/simulated_user", json={"name": "New persona", "content": USER}
    ).json()["id"]
    body = {"name": "Booking", "cases": [{"agent_id": agent, "user_id": draft_user}]}
    refused = client.post("/api/suites", json=body)
    assert refused.status_code == 422
    assert refused.json()["detail"].startswith("Failed to create test suite")
    assert "Publish it, or select a Preview revision" in refused.json()["detail"]
    form = {
        "csrf_token": csrf(client),
        "name": "Booking",
        "case-0-agent": str(agent),
        "case-0-user": str(draft_user),
        "then": "save",
    }
    page = client.post("/suites/new", data=form)
    assert page.status_code == 422 and "no Published revision" in page.text


def test_save_and_run_runs_in_the_server_kept_and_linked_one_at_a_time(
    client: TestClient, demo: str
) -> None:
    agent, user = the_three(client, demo)
    body = {"name": "Smoke", "cases": [{"agent_id": agent, "user_id": user, "max_turns": 3}]}
    saved = client.post("/api/suites", json=body).json()
    assert saved["status"] == "not_run" and saved["status_label"] == "Not run"
    started = client.post(f"/api/suites/{saved['id']}/runs", json={}).json()
    suite = finished(client, saved["id"])
    assert suite["status"] == "passed" and suite["runs"][0]["id"] == started["run_id"]
    (conversation,) = client.get(f"/api/suites/{saved['id']}/conversations").json()
    assert conversation["evaluations_passed"] == "yes" and conversation["score"] == 0.95
    page = client.get(f"/suites/{saved['id']}").text
    assert "Agent Demo agent (Published:1) · Simulated user Late parcel (Published:1)" in page
    assert "Estimated delivery" in page
    client.post(f"/suites/{saved['id']}/rerun", data={"csrf_token": csrf(client)})
    assert len(finished(client, saved["id"])["runs"]) == 2  # Rerun


def test_the_suite_editor_adds_cases_saves_edits_and_deletes_after_asking(
    client: TestClient, demo: str
) -> None:
    agent, user = the_three(client, demo)
    token = csrf(client)
    form = {
        "csrf_token": token,
        "name": "Booking",
        "case-0-agent": str(agent),
        "case-0-user": str(user),
        "case-0-timeout_s": "600",
        "case-0-sessions": "1",
    }
    more = client.post("/suites/new", data=form | {"add_case": "1"})
    assert 'id="case-2"' in more.text and 'name="case-1-agent"' in more.text
    saved = client.post("/suites/new", data=form | {"then": "save"}, follow_redirects=False)
    suite_url = saved.headers["location"]
    suite_id = suite_url.rsplit("/", 1)[1]
    assert client.get(f"/api/suites/{suite_id}").json()["status"] == "not_run"
    editor = client.get(f"{suite_url}/edit").text
    assert 'value="Booking"' in editor and f'<option value="{agent}" selected>' in editor
    edited = form | {
        "name": "Booking flow",
        "case-0-agent_revision": "1",
        "case-0-max_turns": "4",
        "then": "save",
    }
    client.post(f"{suite_url}/edit", data=edited)
    assert client.get(f"/api/suites/{suite_id}").json()["runs"] == []  # saving runs nothing
    assert "Booking flow" in client.get("/suites").text
    assert "can&#39;t be undone" in client.get(f"{suite_url}/delete").text
    client.post(f"{suite_url}/delete", data={"csrf_token": token})
    assert client.get(f"/api/suites/{suite_id}").status_code == 404


def test_one_run_at_a_time_and_one_going_when_the_server_stops_is_kept_interrupted(
    store: Store, demo: str
) -> None:
    # every model answer waits a minute: the run is still going when the server stops, however
    # slowly a loaded machine serves the requests below (the stop cancels the wait)
    dashboard = platform_dashboard(store, latency_seconds=60)
    with dashboard_client(dashboard) as client:
        agent, user = the_three(client, demo)
        case = {"agent_id": agent, "user_id": user, "max_turns": 3, "sessions": 3}
        suite = client.post("/api/suites", json={"name": "Slow", "cases": [case], "run": True})
        suite_id = suite.json()["id"]
        again = client.post(f"/api/suites/{suite_id}/runs", json={})
        assert again.status_code == 422 and "In progress" in again.json()["detail"]
        page = client.get("/suites").text
        assert re.search(r'class="rerun" disabled title="Still running"', page)
    with dashboard_client(Dashboard(store=store)) as client:
        (run,) = client.get(f"/api/suites/{suite_id}").json()["runs"]
        assert run["status"] == "interrupted"


def test_an_override_changes_the_status_and_is_marked(store: Store, client: TestClient) -> None:
    keep_run(
        store,
        sample_run(passes=(True, False)),
        paths=PATHS,
        run_id="r1",
        started_at="2026-12-01T10:00:00+00:00",
    )
    suite_id = file_suite(client)["id"]
    form = {
        "csrf_token": csrf(client),
        "suite_id": suite_id,
        "scenario_id": "refund-delay",
        "trial": "2",
        "target": "support.resolved",
        "value": "true",
        "reason": "It did offer the refund.",
    }
    client.post("/runs/r1/overrides", data=form, follow_redirects=False)
    form |= {"target": "criterion1", "value": "met", "reason": "It apologised in French."}
    answer = client.post("/runs/r1/overrides", data=form)
    assert answer.status_code == 200 and "overridden (was not_met)" in answer.text
    trial = client.get("/api/runs/r1").json()["scenarios"][0]["trials"][1]
    assert trial["status"] == "passed" and trial["verdicts"][0]["override"]["author"]
    assert client.get("/api/runs/r1").json()["scenarios"][0]["status"] == "passed"
    suite = file_suite(client)
    assert suite["overridden"] and 'id="suite-overridden"' in client.get(f"/suites/{suite_id}").text


def test_a_suite_failed_by_an_override_gives_the_persons_reason(
    store: Store, client: TestClient
) -> None:
    keep_run(store, sample_run(passes=(True,)), paths=PATHS, run_id="r1", started_at="2026-12-01")
    body = {
        "scenario_id": "refund-delay",
        "trial": 1,
        "target": "criterion1",
        "value": "not_met",
        "reason": "It apologised for another order.",
    }
    assert client.post("/api/runs/r1/overrides", json=body).status_code == 201
    suite = file_suite(client)
    assert suite["reason"] == "criterion1: It apologised for another order."


def test_a_test_file_sent_to_the_api_runs_and_is_listed_as_its_suite(
    client: TestClient, demo: str
) -> None:
    plainwright = {
        "name": "Late order",
        "kind": "conversation",
        "trials": 2,
        "config": {
            "target": {
                "type": "http",
                "url": f"{demo}/chat",
                "response_path": "reply",
                "body_template": {"message": "{{input}}"},
            },
            "persona": "A customer whose order is late.",
            "goal": "Learn when the order arrives.",
            "opening_message": "My order 10234 is late.",
            "success_criteria": ["The assistant says when the order arrives"],
            "max_turns": 2,
        },
    }
    started = client.post("/api/tests", json={"name": "late-order", "file": plainwright})
    assert started.status_code == 202, started.text
    suite = finished(client, started.json()["suite_id"])
    assert suite["name"] == "api:late-order" and suite["status"] == "passed"
    assert suite["runs"][0]["id"] == started.json()["run_id"]
    assert suite["runs"][0]["trial_counts"] == {"passed": 2}


def test_a_test_file_sent_to_the_api_may_not_use_the_servers_code_or_files(
    client: TestClient, tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("do not send", encoding="utf-8")
    callable_target = {
        "target": {"type": "callable", "ref": "sparring.demo.agent:chat"},
        "scenarios": [{"id": "a", "turns": [{"user": "hi"}], "criteria": ["It greets"]}],
    }
    attached = (
        "target: {type: http, url: 'http://127.0.0.1:9/chat'}\nscenarios:\n"
        f"  - {{id: a, prompt: hi, expected_output: x, files: ['{secret}']}}\n"
    )
    for file, said in ((callable_target, "`callable` target"), (attached, "attach files")):
        refused = client.post("/api/tests", json={"name": "x", "file": file})
        assert refused.status_code == 422 and said in refused.json()["detail"]
    broken = client.post("/api/tests", json={"name": "z", "file": "scenarios: ["})
    assert broken.status_code == 422 and broken.json()["detail"].startswith("api:z:1:")
    assert client.get("/api/suites").json() == []  # nothing ran


# --- who may do what -------------------------------------------------------------------------


def signed_in(store: Store, role: str) -> TestClient:
    add_account(store, role, "correct horse battery", role=role)
    client = dashboard_client(platform_dashboard(store, local_owner=False))
    answer = client.post("/api/session", json={"name": role, "password": "correct horse battery"})
    assert answer.status_code == 200 and answer.json()["role"] == role
    return client


def test_a_viewer_reads_and_exports_but_every_write_is_refused(store: Store) -> None:
    two_runs(store)
    with signed_in(store, "viewer") as viewer:
        suite_id = file_suite(viewer)["id"]
        assert viewer.get(f"/suites/{suite_id}").status_code == 200
        assert viewer.get("/api/runs/newer/export?format=csv").status_code == 200
        token = csrf(viewer)
        writes: list[tuple[str, str, dict[str, Any] | None]] = [
            ("post", "/api/assets/agent", {"name": "a", "content": {"type": "callable"}}),
            ("post", "/api/suites", {"name": "s", "cases": []}),
            ("post", "/api/suites/1/runs", {}),
            ("post", "/api/suites/1/resume", {}),
            ("post", "/api/tests", {"name": "t", "file": "scenarios: []"}),
            ("delete", "/api/suites/1", None),
            (
                "post",
                "/api/runs/newer/overrides",
                {
                    "scenario_id": "refund-delay",
                    "trial": 2,
                    "target": "criterion1",
                    "value": "met",
                    "reason": "r",
                },
            ),
        ]
        for method, url, body in writes:
            answer = viewer.request(method, url, json=body, headers={"X-CSRF-Token": token})
            assert answer.status_code == 403, (url, answer.text)
            assert "viewer" in answer.json()["detail"]
        for url in ("/suites/new", "/agents/new", "/evaluations/new", "/simulated-users/new"):
            assert viewer.post(url, data={"csrf_token": token}).status_code == 403
        page = viewer.get("/suites").text
        assert "+ Run New Test Suite" not in page and "Delete" not in page
        assert "Verdict wrong?" not in viewer.get(f"/suites/{suite_id}").text


def test_accounts_sign_in_with_a_session_cookie_and_out(store: Store) -> None:
    add_account(store, "ann", "correct horse battery", role="editor")
    with dashboard_client(Dashboard(store=store, local_owner=False)) as client:
        assert client.get("/api/suites").status_code == 401
        login = client.get("/suites", follow_redirects=False)
        assert login.status_code == 303 and login.headers["location"] == "/login?next=/suites"
        form = {"csrf_token": csrf(client), "name": "ann", "password": "wrong password"}
        assert client.post("/login", data=form).status_code == 401
        signed = client.post("/login", data=form | {"password": "correct horse battery"})
        assert signed.status_code == 200 and "ann (editor)" in signed.text
        client.post("/logout", data={"csrf_token": csrf(client)})
        assert client.get("/api/suites").status_code == 401


def test_forms_without_their_csrf_token_are_refused(client: TestClient) -> None:
    refused = client.post("/suites/new", data={"name": "x", "then": "save"})
    assert refused.status_code == 403 and "CSRF" in refused.text
    stale = client.post("/evaluations/new", data={"csrf_token": "guess", "name": "x"})
    assert stale.status_code == 403
    other = TestClient(client.app, LOCAL)  # another browser: its own session and token
    assert other.post("/suites/new", data={"csrf_token": csrf(client)}).status_code == 403


def test_sessions_are_bounded_the_oldest_forgotten_first() -> None:
    from sparring.dashboard.auth import Principal, Sessions

    sessions = Sessions(limit=2)
    first, _ = sessions.open(None)
    second, _ = sessions.open(Principal("ann", "editor"))
    third, _ = sessions.open(None)
    assert sessions.get(first) is None and sessions.get(third) is not None
    assert sessions.get(second).principal == Principal("ann", "editor")  # type: ignore[union-attr]


def test_serving_beyond_the_loopback_needs_accounts(store: Store, tmp_path: Path) -> None:
    from sparring.config import load_settings
    from sparring.dashboard.server import prepare
    from sparring.errors import UserError

    settings = load_settings({}, cwd=tmp_path, env={})
    url = str(store.url)
    with pytest.raises(UserError, match="without accounts: anyone reaching it"):
        prepare(settings, host="0.0.0.0", port=8790, store=url, cwd=tmp_path)
    local = prepare(settings, host="127.0.0.1", port=8790, store=url, cwd=tmp_path)
    assert local.dashboard.local_owner and "as the local owner" in local.banner
    assert "no model configured for the dashboard's runs, so they skip" in local.banner
    add_account(store, "ann", "correct horse battery", role="owner")
    shared = prepare(settings, host="0.0.0.0", port=8790, store=url, cwd=tmp_path)
    assert not shared.dashboard.local_owner and "sign in" in shared.banner


def test_the_api_is_described_by_its_openapi_document(client: TestClient) -> None:
    paths = client.get("/api/openapi.json").json()["paths"]
    for path in (
        "/api/suites",
        "/api/suites/{suite_id}/runs",
        "/api/suites/{suite_id}/conversations",
        "/api/runs/{run_id}/export",
        "/api/runs/{run_id}/overrides",
        "/api/assets/{kind}/{asset_id}/revisions/{number}/{operation}",
    ):
        assert path in paths
    assert not any(p.startswith("/suites") for p in paths)  # pages are not the API
    assert client.get("/api/docs").status_code == 404  # its viewer would come from a CDN


def test_pages_load_only_their_own_files_and_unknown_paths_are_not_found(
    client: TestClient,
) -> None:
    page = client.get("/suites")
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert '<script src="/static/htmx.min.js">' in page.text and "https://" not in page.text
    assert client.get("/static/htmx.min.js").text.startswith("var htmx=")
    assert client.get("/favicon.ico").status_code == 404
    assert client.get("/nothing/here").status_code == 404


# --- the command -----------------------------------------------------------------------------

HIDE_FASTAPI = """
import sys
from importlib.abc import MetaPathFinder

class Hide(MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "fastapi":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, Hide())
sys.argv = ["sparring", *sys.argv[1:]]
from sparring.cli.main import main
main()
"""


def sparring_serve(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "sparring.cli"]
    return subprocess.run([*command, "serve", *args], capture_output=True, text=True, timeout=120)


def test_serve_without_the_extra_says_the_pip_line(tmp_path: Path) -> None:
    done = sparring_serve("--store", str(tmp_path / "s.db"), code=HIDE_FASTAPI)
    assert done.returncode == 2
    assert 'fastapi missing): pip install "sparring[dashboard]"' in done.stderr


def test_serve_on_a_public_address_without_accounts_exits_2(tmp_path: Path) -> None:
    done = sparring_serve("--host", "0.0.0.0", "--store", str(tmp_path / "s.db"))
    assert done.returncode == 2 and "refusing to serve on 0.0.0.0 without accounts" in done.stderr


def test_the_cli_loads_no_web_stack_for_help() -> None:
    code = (
        "import sys; from sparring.cli.main import cli; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('fastapi', 'uvicorn', 'starlette', 'sparring') and 'dashboard' in m or "
        "m.split('.')[0] in ('fastapi', 'uvicorn', 'starlette')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "[]", done.stderr
