"""The API and the export as the pages have them: a suite's export holds every
conversation of the suite (every run listed), a saved suite reads back with its test cases,
and its conversations name the revisions they ran and whether a person overrode them."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from sparring.store.database import Store, open_store
from tests.support.dashboard_platform import dashboard_client, platform_dashboard
from tests.test_dashboard import demo, file_suite, finished, the_three, two_runs

__all__ = ["demo"]  # the demo agent's server, a fixture


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/api.db")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with dashboard_client(platform_dashboard(store)) as opened:
        yield opened


def test_a_suites_export_holds_every_conversation_of_every_run(
    store: Store, client: TestClient
) -> None:
    two_runs(store)
    suite = file_suite(client)
    url = f"/api/suites/{suite['id']}/export"
    archive = zipfile.ZipFile(io.BytesIO(client.get(url, params={"format": "csv"}).content))
    rows = list(csv.DictReader(io.StringIO(archive.read("runs.csv").decode("utf-8-sig"))))
    assert {r["run"] for r in rows} == {"base", "newer"}
    assert len(rows) == sum(sum(r["trial_counts"].values()) for r in suite["runs"])
    report = client.get(url, params={"format": "json"})
    assert "sparring-suite-" in report.headers["content-disposition"]
    assert [r["run_id"] for r in json.loads(report.content)["runs"]] == ["newer", "base"]
    workbook = client.get(url, params={"format": "xlsx"})
    assert workbook.content[:2] == b"PK" and "spreadsheetml" in workbook.headers["content-type"]
    assert client.get("/api/runs/base/export?format=json").status_code == 200  # one run still


def test_a_suite_not_run_has_nothing_to_export(client: TestClient, demo: str) -> None:
    agent, user = the_three(client, demo)
    saved = client.post(
        "/api/suites", json={"name": "S", "cases": [{"agent_id": agent, "user_id": user}]}
    ).json()
    answer = client.get(f"/api/suites/{saved['id']}/export?format=csv")
    assert answer.status_code == 404 and "not run yet" in answer.json()["detail"]


def test_a_saved_suite_reads_back_with_its_cases_and_revisions(
    client: TestClient, demo: str
) -> None:
    agent, user = the_three(client, demo)
    case = {"agent_id": agent, "user_id": user, "agent_revision": "Published:1"}
    case |= {"max_turns": 3, "timeout_s": 120, "sessions": 1, "criteria": ["It is polite"]}
    saved = client.post("/api/suites", json={"name": "S", "cases": [case], "run": True}).json()
    suite = finished(client, saved["id"])
    (kept,) = suite["cases"]
    assert kept == {
        "agent_id": agent,
        "user_id": user,
        "agent_revision": 1,
        "user_revision": None,
        "goal": None,
        "criteria": ["It is polite"],
        "timeout_s": 120.0,
        "max_turns": 3,
        "sessions": 1,
    }
    again = client.put(f"/api/suites/{saved['id']}", json={"name": "S", "cases": [kept]})
    assert again.status_code == 200 and again.json()["cases"] == [kept]  # PUT takes it back
    (conversation,) = client.get(f"/api/suites/{saved['id']}/conversations").json()
    assert conversation["agent"] == "Demo agent" and conversation["agent_revision"] == "Published:1"
    assert conversation["user"] == "Late parcel" and conversation["user_revision"] == "Published:1"
    assert conversation["overridden"] is False
    assert client.get("/api/suites").json()[0]["cases"] == [kept]
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "CaseOut" in schema and "agent_revision" in schema["ConversationOut"]["properties"]
