"""A simulated user keeps its agent evaluations attached by asset id: renaming an
evaluation keeps it attached (and runnable), and a store whose attachments were kept by
name (revision 0005) is migrated to ids."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparring.store import assets, suites
from sparring.store.database import Store, open_store
from sparring.store.suites import SuiteCase
from tests.test_platform_store import AGENT, EVALUATION, USER, published, the_three
from tests.test_store import _alembic_to  # pyright: ignore[reportPrivateUsage]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/attachments.db")
    yield opened
    opened.close()


def test_renaming_an_evaluation_keeps_it_attached_and_runnable(store: Store) -> None:
    evaluation_id, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    assets.save_draft(store, evaluation_id, EVALUATION, name="Offers refund")
    assets.publish_revision(store, evaluation_id, 2)
    user = assets.get_asset(store, user_id)
    assert user.latest.attached == (evaluation_id,)
    assert user.latest.content["evaluations"] == ["Offers refund"]  # as it is called now
    assert assets.evaluation_users(store) == {"Offers refund": [user.name]}
    (case,) = suites.resolve_suite(store, suite.id).cases
    assert [(e.asset_id, e.name, e.label) for e in case.evaluations] == [
        (evaluation_id, "Offers refund", "Published:2")
    ]
    clone = assets.clone_asset(store, user_id)
    assert clone.latest.attached == (evaluation_id,)


def test_a_store_attaching_by_name_is_migrated_to_ids(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/old.db"
    _alembic_to(url, "0005")
    rows = [
        (1, "evaluation", "Late delivery", {k: v for k, v in EVALUATION.items()}),
        (2, "simulated_user", "Customer", USER | {"evaluations": ["Late delivery", "Gone"]}),
    ]
    with sqlite3.connect(tmp_path / "old.db") as conn:
        for asset_id, kind, name, content in rows:
            conn.execute(
                "INSERT INTO assets (id, kind, name, created_at) VALUES (?, ?, ?, '2026')",
                (asset_id, kind, name),
            )
            conn.execute(
                "INSERT INTO asset_revisions (asset_id, number, state, content, created_at) "
                "VALUES (?, 1, 'published', ?, '2026')",
                (asset_id, json.dumps(content)),
            )
    store = open_store(url)
    try:
        user = assets.get_asset(store, 2)
        assert user.latest.attached == (1, "Gone")  # a name no evaluation has stays
        assert user.latest.content["evaluations"] == ["Late delivery", "Gone"]
        assets.save_draft(store, 1, EVALUATION, name="Renamed")
        assert assets.get_asset(store, 2).latest.content["evaluations"][0] == "Renamed"
        agent_id = published(store, "agent", "Bot", AGENT)
        suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=2)])
        with pytest.raises(suites.SuiteError, match="no agent evaluation named 'Gone'"):
            suites.resolve_suite(store, suite.id)
    finally:
        store.close()
