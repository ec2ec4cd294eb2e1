"""What a new user found in `sparring serve`: file runs passed by their checks shown Done, a
run without a model shown Done with no reason, `POST /api/tests` resolving `files:` on the
server's disk before refusing them, the suite editor's Revision lists not following the chosen
agent / simulated user, and labels at odds with the README (the evaluation prompt hint, the
new evaluation's button, Revert on the newest revision)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sparring.dashboard.runs import SuiteRunner
from sparring.dashboard.state import Dashboard
from sparring.results import (
    RunResult,
    ScenarioResult,
    TrialResult,
    TrialStatus,
    Verdict,
    VerdictStatus,
)
from sparring.runner import RunSettings
from sparring.store.database import Store, open_store
from tests.support.dashboard_platform import EVALUATION, USER, dashboard_client, platform_dashboard
from tests.support.dashboard_store import keep_run


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/dashboard.db")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with dashboard_client(platform_dashboard(store)) as opened:
        yield opened


def csrf(client: TestClient) -> str:
    return client.get("/api/session").json()["csrf_token"]


def made(client: TestClient, kind: str, name: str, content: dict[str, Any]) -> int:
    """A new asset (its revision 1 a Draft); its id."""
    answer = client.post(f"/api/assets/{kind}", json={"name": name, "content": content})
    assert answer.status_code == 201, answer.text
    return answer.json()["id"]


def publish(client: TestClient, kind: str, asset_id: int, number: int = 1) -> None:
    answer = client.post(f"/api/assets/{kind}/{asset_id}/revisions/{number}/publish", json={})
    assert answer.is_success, answer.text


AGENT = {"type": "http", "url": "http://127.0.0.1:9/chat", "response_path": "reply"}
"""An agent no test here reaches (its conversations are skipped or never start)."""


# --- 1. a file run passed by its checks is Passed ------------------------------------------


def _check(status: VerdictStatus) -> Verdict:
    return Verdict(id="check1", kind="check", description="mentions the order", status=status)


def _file_run(*trials: tuple[TrialStatus, list[Verdict]]) -> RunResult:
    """A run of one scripted scenario `f`, one trial per `(status, verdicts)`."""
    scenario = ScenarioResult(
        scenario_id="f",
        name="f",
        kind="scripted",
        threshold=1.0,
        planned_trials=len(trials),
        trials=[
            TrialResult(
                scenario_id="f", trial=n, status=status, end_reason="script_done", verdicts=v
            )
            for n, (status, v) in enumerate(trials, start=1)
        ],
    )
    return RunResult(sparring_version="0", run_id="x", started_at="x", scenarios=[scenario])


def test_a_file_run_whose_checks_passed_is_passed_and_done_only_with_nothing_to_pass(
    store: Store, client: TestClient
) -> None:
    when = "2026-12-01T10:00:00+00:00"
    passed = _file_run(("passed", [_check("met")]))
    keep_run(store, passed, paths=["mytests/files/f.yaml"], run_id="checks", started_at=when)
    nothing = _file_run(("done", []))
    keep_run(store, nothing, paths=["mytests/plain.yaml"], run_id="plain", started_at=when)
    mixed = _file_run(("passed", [_check("met")]), ("done", []))
    keep_run(store, mixed, paths=["mytests/both.yaml"], run_id="both", started_at=when)
    suites = {s["name"]: s for s in client.get("/api/suites").json()}
    assert {name: s["status"] for name, s in suites.items()} == {
        "mytests/files/f.yaml": "passed",
        "mytests/plain.yaml": "done",
        "mytests/both.yaml": "passed",
    }
    checked = suites["mytests/files/f.yaml"]["id"]
    (conversation,) = client.get(f"/api/suites/{checked}/conversations").json()
    assert conversation["status"] == "passed"
    rows = re.findall(r'<tr data-suite="([^"]+)" data-status="(\w+)">', client.get("/suites").text)
    assert (checked, "passed") in rows


# --- 2. a run without a model says it was skipped and how to configure one -----------------


def _no_models() -> tuple[None, None]:
    return None, None


@pytest.fixture
def modelless(store: Store) -> Iterator[TestClient]:
    """A dashboard whose runs have no model (nothing configured where it was started)."""
    runner = SuiteRunner(store=store, models=_no_models, settings=RunSettings(parallel=2))
    with dashboard_client(Dashboard(store=store, local_owner=True, runner=runner)) as opened:
        yield opened


def finished(client: TestClient, suite_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 120  # a guard for a busy machine, not a measurement
    while time.monotonic() < deadline:
        suite = client.get(f"/api/suites/{suite_id}").json()
        if suite["status"] != "in_progress":
            return suite
        time.sleep(0.05)
    raise AssertionError(f"suite {suite_id} still in progress")


def test_a_run_without_a_model_is_skipped_saying_how_to_configure_one(
    modelless: TestClient,
) -> None:
    client = modelless
    publish(client, "evaluation", made(client, "evaluation", "Delivery info", EVALUATION))
    user = made(client, "simulated_user", "Late parcel", {**USER, "evaluations": ["Delivery info"]})
    agent = made(client, "agent", "Shop bot", AGENT)
    publish(client, "simulated_user", user)
    publish(client, "agent", agent)
    body = {"name": "Smoke", "cases": [{"agent_id": agent, "user_id": user}], "run": True}
    suite_id = client.post("/api/suites", json=body).json()["id"]
    suite = finished(client, suite_id)
    assert suite["status"] == "skipped" and suite["status_label"] == "Skipped"
    assert suite["reason"].startswith("no model configured for the dashboard's runs")
    assert 'set `model = "provider:name"`' in suite["reason"] and "sparring.toml" in suite["reason"]
    (conversation,) = client.get(f"/api/suites/{suite_id}/conversations").json()
    assert conversation["status"] == "skipped" and conversation["reason"] == suite["reason"]
    listed = client.get("/suites").text
    assert "Skipped" in listed and "no model configured for the dashboard" in listed
    key = f"{conversation['run_id']}/1/{conversation['scenario_id']}"
    page = client.get(f"/suites/{suite_id}", params={"c": key}).text
    shown = page.split('<section id="conversation">', 1)[1]
    assert '<span class="status skipped">Skipped</span>' in shown
    assert "ended by skipped" not in shown
    reason = re.search(r'<p class="reason" id="reason">(.*?)</p>', shown, re.S)
    assert reason is not None and "no model configured for the dashboard" in reason.group(1)


# --- 3. a test sent to the API is refused its files before any path is resolved ------------


@pytest.mark.parametrize(
    ("where", "text"),
    [
        (
            "single-turn files",
            "  - {id: a, prompt: hi, expected_output: x, files: [files/receipt.txt]}\n",
        ),
        (
            "a scripted turn's files",
            "  - id: a\n    turns:\n      - user: hi\n        files: [files/receipt.txt]\n"
            "        checks: [{contains: x}]\n",
        ),
        (
            "a scripted turn's audio",
            "  - id: a\n    turns:\n      - user: hi\n        audio: files/receipt.wav\n"
            "        checks: [{contains: x}]\n",
        ),
    ],
)
def test_a_test_sent_to_the_api_is_refused_its_files_without_resolving_them(
    client: TestClient, where: str, text: str
) -> None:
    file = "target: {type: http, url: 'http://127.0.0.1:9/chat'}\nscenarios:\n" + text
    refused = client.post("/api/tests", json={"name": "receipt", "file": file})
    assert refused.status_code == 422, where
    detail = refused.json()["detail"]
    assert detail.startswith("api:receipt:") and "cannot attach files" in detail, detail
    assert str(Path.cwd()) not in detail and "does not exist" not in detail, detail
    assert client.get("/api/suites").json() == []  # nothing ran


def test_a_key_named_files_in_a_target_or_case_row_is_no_attachment(client: TestClient) -> None:
    file = (
        "target: {type: http, url: 'http://127.0.0.1:9/chat', body_template: {message: "
        "'{{input}}', files: []}}\nscenarios:\n  - id: a\n    prompt: 'hi {{vars.files}}'\n"
        "    expected_output: x\n    cases: [{files: none}]\n"
    )
    started = client.post("/api/tests", json={"name": "body", "file": file})
    assert started.status_code == 202, started.text


# --- 4. the suite editor's Revision lists follow the chosen asset ---------------------------


def _options(html: str, field: str) -> list[str]:
    select = re.search(rf'<select name="{field}"[^>]*>(.*?)</select>', html, re.S)
    assert select is not None, field
    return re.findall(r"<option[^>]*>([^<]*)</option>", select.group(1))


def test_the_revision_lists_offer_only_the_chosen_assets_revisions(client: TestClient) -> None:
    publish(client, "evaluation", made(client, "evaluation", "Delivery info", EVALUATION))
    published_user = made(client, "simulated_user", "Published one", USER)
    publish(client, "simulated_user", published_user)
    drafted_user = made(client, "simulated_user", "Draft only", USER)
    agent = made(client, "agent", "Shop bot", AGENT)
    publish(client, "agent", agent)
    blank = client.get("/suites/new").text
    assert _options(blank, "case-0-user_revision") == ["Latest published"]
    assert _options(blank, "case-0-agent_revision") == ["Latest published"]
    chosen = client.get(
        "/suites/revisions", params={"field": "case-0-user", "case-0-user": published_user}
    ).text
    assert _options(chosen, "case-0-user_revision") == ["Latest published", "Published:1"]
    drafted = client.get(
        "/suites/revisions", params={"field": "case-0-user", "case-0-user": drafted_user}
    ).text
    assert _options(drafted, "case-0-user_revision") == ["Latest published"]
    assert "Published:1" not in drafted
    agents = client.get(
        "/suites/revisions", params={"field": "case-0-agent", "case-0-agent": agent}
    )
    assert _options(agents.text, "case-0-agent_revision") == ["Latest published", "Published:1"]
    # the editor re-shown (e.g. after + Add test case) lists each case's own asset's
    form = {"csrf_token": csrf(client), "name": "S", "case-0-agent": str(agent)}
    form |= {"case-0-user": str(drafted_user), "add_case": "1"}
    shown = client.post("/suites/new", data=form).text
    assert _options(shown, "case-0-user_revision") == ["Latest published"]
    assert _options(shown, "case-0-agent_revision") == ["Latest published", "Published:1"]
    assert 'hx-get="/suites/revisions"' in shown  # the list follows a change of asset
    form = {k: v for k, v in form.items() if k != "add_case"} | {"refresh": "1"}
    refreshed = client.post("/suites/new", data=form).text  # "Show the revisions", no JS
    assert refreshed.count('<fieldset class="case"') == 1
    assert _options(refreshed, "case-0-agent_revision") == ["Latest published", "Published:1"]


def test_the_revision_list_of_an_unknown_or_missing_asset_is_latest_published_only(
    client: TestClient,
) -> None:
    for params in (
        {"field": "case-2-user"},
        {"field": "case-2-user", "case-2-user": "99"},
        {"field": "case-2-user", "case-2-user": "x"},
    ):
        answer = client.get("/suites/revisions", params=params)
        assert answer.status_code == 200, params
        assert _options(answer.text, "case-2-user_revision") == ["Latest published"]
    assert client.get("/suites/revisions", params={"field": "name"}).status_code == 404


# --- 5. labels as the README says -----------------------------------------------------------


def test_the_evaluation_editor_says_the_assistant_and_save_draft(client: TestClient) -> None:
    page = client.get("/evaluations/new").text
    assert 'refer to your agent as "the user"' not in page
    assert 'refer to your agent as "the assistant"' in page
    button = re.search(r'<button type="submit" class="primary" id="save">([^<]*)</button>', page)
    assert button is not None and button.group(1) == "Save Draft"


def test_revert_is_offered_only_on_a_revision_older_than_the_newest(client: TestClient) -> None:
    evaluation = made(client, "evaluation", "Delivery info", EVALUATION)
    only = client.get(f"/evaluations/{evaluation}").text
    assert 'id="revert"' not in only and 'id="publish"' in only
    changed = {**EVALUATION, "description": "Changed"}
    draft = {"name": "Delivery info", "content": changed}
    assert client.post(f"/api/assets/evaluation/{evaluation}/drafts", json=draft).is_success
    newest = client.get(f"/evaluations/{evaluation}").text
    assert 'id="revert"' not in newest
    older = client.get(f"/evaluations/{evaluation}", params={"revision": 1}).text
    assert re.search(r'<button type="submit" id="revert">Revert Draft:1</button>', older)
