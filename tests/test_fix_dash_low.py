"""The smaller platform fixes: older revisions reachable from the revision menu (Revert,
never Publish an archived one), an unpublished agent evaluation's advice, an empty filter's
message, insights named as written with the featured one shown first and groups above
their columns, and the insight name pattern valid in Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sparring.store.database import Store, open_store
from tests.support.dashboard_platform import (
    EVALUATION,
    USER,
    dashboard_client,
    platform_dashboard,
    served,
)
from tests.test_dashboard import demo, demo_agent, finished, published
from tests.test_dashboard_browser import CHROMIUM

__all__ = ["demo"]  # the demo agent's server, a fixture


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/low.db")
    yield opened
    opened.close()


@pytest.fixture
def client(store: Store) -> Iterator[TestClient]:
    with dashboard_client(platform_dashboard(store)) as opened:
        yield opened


def test_older_revisions_can_be_opened_and_reverted_but_not_published(client: TestClient) -> None:
    asset_id = published(client, "evaluation", "Delivery info", EVALUATION)
    body = {"name": "Delivery info", "content": EVALUATION | {"description": "v2"}}
    client.post(f"/api/assets/evaluation/{asset_id}/drafts", json=body)
    client.post(f"/api/assets/evaluation/{asset_id}/revisions/2/publish", json={})
    menu = client.get(f"/evaluations/{asset_id}").text
    older = menu.split('id="older-revisions"', 1)[1].split("</ul>", 1)[0]
    assert f'href="/evaluations/{asset_id}?revision=1" data-revision="Archived:1"' in older
    archived = client.get(f"/evaluations/{asset_id}?revision=1").text
    assert 'id="revert">Revert Archived:1' in archived
    assert 'id="publish"' not in archived  # it would be refused: Revert, then publish


def test_an_unpublished_evaluation_says_to_publish_it(client: TestClient, demo: str) -> None:
    client.post("/api/assets/evaluation", json={"name": "Draft eval", "content": EVALUATION})
    user = published(client, "simulated_user", "U", USER | {"evaluations": ["Draft eval"]})
    agent = published(client, "agent", "A", demo_agent(demo))
    saved = client.post(
        "/api/suites", json={"name": "S", "cases": [{"agent_id": agent, "user_id": user}]}
    ).json()
    answer = client.post(f"/api/suites/{saved['id']}/runs", json={})
    assert answer.status_code == 422
    detail = answer.json()["detail"]
    assert "'Draft eval' attached to 'U' has no Published revision. Publish it" in detail
    assert "select a Preview revision" not in detail  # a test case cannot select one


def test_a_filter_matching_nothing_says_so_with_a_way_back(client: TestClient, demo: str) -> None:
    user = published(client, "simulated_user", "U", USER)
    agent = published(client, "agent", "A", demo_agent(demo))
    case = {"agent_id": agent, "user_id": user}
    client.post("/api/suites", json={"name": "S", "cases": [case]})
    page = client.get("/suites", params={"since": "2999-01-01"}).text
    assert (
        "No test suite matches the filters" in page and 'href="/suites" id="clear-filters"' in page
    )
    assert "No test suite yet" not in page


def test_insights_are_named_as_written_featured_first_and_grouped(
    client: TestClient, demo: str
) -> None:
    insights: list[dict[str, Any]] = [
        {"name": "tone", "type": "score", "group": "Manner"},
        {"name": "located", "type": "boolean", "pass_when": True, "featured": True},
    ]
    published(client, "evaluation", "Delivery info", EVALUATION | {"insights": insights})
    user = published(client, "simulated_user", "U", USER | {"evaluations": ["Delivery info"]})
    agent = published(client, "agent", "A", demo_agent(demo))
    case = {"agent_id": agent, "user_id": user, "max_turns": 3}
    saved = client.post("/api/suites", json={"name": "S", "cases": [case], "run": True}).json()
    assert finished(client, saved["id"])["status"] == "passed"
    metrics = client.get(f"/suites/{saved['id']}", params={"tab": "metrics"}).text
    head = metrics.split("<thead>", 1)[1].split("</thead>", 1)[0]
    assert '<th colspan="1" class="group">Featured</th>' in head
    assert '<th colspan="1" class="group">Delivery info · Manner</th>' in head
    assert head.index("★ Delivery info · located") < head.index("Delivery info · tone")
    transcript = client.get(f"/suites/{saved['id']}").text
    assert 'data-featured="Delivery-info.located">★ <strong>Delivery info · located</strong>' in (
        transcript
    )
    assert 'Delivery info · tone <span class="muted">(Manner)</span>' in transcript


@pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium")
def test_the_insight_name_pattern_is_enforced_by_chromium(store: Store) -> None:
    from playwright.sync_api import sync_playwright

    with served(platform_dashboard(store)) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        page = browser.new_page(base_url=base)
        page.goto("/evaluations/new")
        name = page.locator('input[name="insight-0-name"]')
        mismatch = "el => el.validity.patternMismatch"
        name.fill("has space")
        assert name.evaluate(mismatch) is True
        name.fill("ok-name_1")
        assert name.evaluate(mismatch) is False
        browser.close()
