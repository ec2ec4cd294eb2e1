"""The platform in the store: assets with revisions, test suites (saved, resolved into
scenarios, run through the normal runner, their statuses), verdict overrides applied when a
run is read, and local accounts with roles; on SQLite."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from sparring.events import Event, RunStarted, TrialFinished
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.results import RunResult, TrialResult
from sparring.runner import RunSettings, run_scenarios
from sparring.store import accounts, assets, overrides, suite_status, suites
from sparring.store.assets import AssetError, AssetNotFound
from sparring.store.database import Store, open_store
from sparring.store.reading import list_runs, load_run
from sparring.store.suites import SuiteBusy, SuiteCase, SuiteError
from sparring.store.writer import RunWriter
from sparring.targets.scripted import ScriptedTarget
from tests.test_store import _record

REPLY = "Your parcel arrives tomorrow and here is a refund of $10."
EVALUATION = {
    "description": "Did the agent resolve the late delivery?",
    "prompt": "Assess the user: did it offer a concrete resolution?",
    "insights": [
        {"name": "resolved", "type": "boolean", "pass_when": True, "featured": True},
        {"name": "tone", "type": "score", "weight": 1},
    ],
}
USER = {
    "job_title": "Customer",
    "description": "A customer whose parcel is a week late",
    "system_prompt": "You want a refund, not a voucher. Keep answers short.",
    "evaluations": ["Late delivery"],
}
AGENT = {"type": "http", "url": "http://127.0.0.1:8787/chat"}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/platform.db")
    yield opened
    opened.close()


def published(store: Store, kind: assets.AssetKind, name: str, content: dict[str, Any]) -> int:
    asset = assets.create_asset(store, kind, name, content, author="ann")
    assets.publish_revision(store, asset.id, 1)
    return asset.id


def the_three(store: Store) -> tuple[int, int, int]:
    """A published evaluation, simulated user (attaching it) and agent: their ids."""
    evaluation = published(store, "evaluation", "Late delivery", EVALUATION)
    user = published(store, "simulated_user", "Frustrated customer, late delivery", USER)
    agent = published(store, "agent", "Support bot", AGENT)
    return evaluation, user, agent


# --- assets --------------------------------------------------------------------------------


def test_a_revision_moves_draft_preview_published_and_the_old_published_is_archived(
    store: Store,
) -> None:
    user = assets.create_asset(store, "simulated_user", "Hesitant buyer", {"description": "d"})
    assert [r.label for r in user.revisions] == ["Draft:1"]
    assets.publish_revision(store, user.id, 1)
    second = assets.save_draft(store, user.id, {"description": "d2"}, author="bob")
    assert (second.number, second.state, second.author) == (2, "draft", "bob")
    assert assets.preview_revision(store, user.id, 2).label == "Preview:2"
    assets.publish_revision(store, user.id, 2)
    found = assets.get_asset(store, user.id)
    assert [r.label for r in found.revisions] == ["Archived:1", "Published:2"]
    assert found.published is not None and found.published.content["description"] == "d2"
    assert [r.number for r in found.active_revisions] == [2]


def test_a_draft_may_rename_and_an_asset_is_found_by_either_name(store: Store) -> None:
    user = assets.create_asset(store, "simulated_user", "Late parcel", {"description": "d"})
    assets.create_asset(store, "simulated_user", "Other", {"description": "d"})
    with pytest.raises(AssetError, match="has that name"):
        assets.save_draft(store, user.id, {"description": "d"}, name="Other")
    assets.save_draft(store, user.id, {"description": "d2"}, name="Late parcel, angry")
    found = assets.find_asset(store, "simulated_user", "Late-parcel-angry")
    assert (found.id, found.name, found.latest.number) == (user.id, "Late parcel, angry", 2)
    with pytest.raises(AssetNotFound, match="no simulated user named 'Late parcel'"):
        assets.find_asset(store, "simulated_user", "Late parcel")


def test_revert_adds_a_draft_with_the_earlier_content(store: Store) -> None:
    user = assets.create_asset(store, "simulated_user", "U", {"description": "first"})
    assets.save_draft(store, user.id, {"description": "second"})
    reverted = assets.revert_to(store, user.id, 1, author="ann")
    assert (reverted.number, reverted.state, reverted.origin) == (3, "draft", "revert of 1")
    assert reverted.content["description"] == "first"


def test_clone_is_a_draft_named_name_clone_with_the_same_prompt_and_evaluations(
    store: Store,
) -> None:
    _, user_id, _ = the_three(store)
    clone = assets.clone_asset(store, user_id)
    assert clone.name == "Frustrated customer, late delivery - clone"
    assert [r.label for r in clone.revisions] == ["Draft:1"]
    assert clone.latest.content == assets.get_asset(store, user_id).latest.content
    assert assets.clone_asset(store, user_id).name.endswith(" - clone 2")
    using = assets.evaluation_users(store)
    assert using["Late delivery"][0] == "Frustrated customer, late delivery"
    assert len(using["Late delivery"]) == 3


def test_archive_is_irreversible_and_hides_the_asset(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    archived = assets.archive_asset(store, user_id)
    assert archived.archived and {r.state for r in archived.revisions} == {"archived"}
    assert [a.name for a in assets.list_assets(store, "simulated_user", archived=True)] == [
        archived.name
    ]
    assert assets.list_assets(store, "simulated_user") == []
    with pytest.raises(AssetError, match="archived .*cannot be undone"):
        assets.save_draft(store, user_id, USER)
    with pytest.raises(AssetError, match="archived"):
        assets.archive_asset(store, user_id)
    with pytest.raises(SuiteError, match="is archived; choose another simulated user"):
        suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])


def test_contents_are_validated_with_the_specs_naming_each_problem(store: Store) -> None:
    with pytest.raises(AssetError, match=r"insights\.0\.type"):
        assets.create_asset(
            store, "evaluation", "E", {"prompt": "p", "insights": [{"name": "x", "type": "?"}]}
        )
    with pytest.raises(AssetError, match="needs a `description` or a `system_prompt`"):
        assets.create_asset(store, "simulated_user", "U", {"job_title": "t"})
    with pytest.raises(AssetError, match="not an HTTP address"):
        assets.create_asset(store, "agent", "A", {"url": "localhost:8787"})
    with pytest.raises(AssetError, match="'Nope', which does not exist"):
        assets.create_asset(
            store, "simulated_user", "U", {"description": "d", "evaluations": ["Nope"]}
        )
    saved = assets.create_asset(
        store, "agent", "A", {"base_url": "http://127.0.0.1:1/v1", "model": "m"}
    )
    assert saved.latest.content["type"] == "openai_chat" and "api_key" in saved.latest.content


def test_an_agent_with_a_credential_written_out_is_refused(store: Store) -> None:
    openai = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "api_key": "sk-live-123"}
    with pytest.raises(AssetError, match=r"\(api_key\); .*\{\{secrets.NAME\}\}"):
        assets.create_asset(store, "agent", "A", openai)
    bearer = AGENT | {"headers": {"Authorization": "Bearer abc", "Accept": "text/plain"}}
    with pytest.raises(AssetError, match=r"header 'Authorization'\)"):
        assets.create_asset(store, "agent", "A", bearer)
    with pytest.raises(AssetError, match="the password in its URL, URL query 'api_key'"):
        assets.create_asset(store, "agent", "A", {"url": "http://u:pw@127.0.0.1/c?api_key=k"})
    placeholders = AGENT | {"headers": {"Authorization": "Bearer {{secrets.AGENT_TOKEN}}"}}
    assert assets.create_asset(store, "agent", "A", placeholders).latest.content["headers"]


def test_names_are_unique_per_kind_including_how_they_read_in_specs(store: Store) -> None:
    assets.create_asset(store, "simulated_user", "Late parcel", {"description": "d"})
    with pytest.raises(AssetError, match="has that name"):
        assets.create_asset(store, "simulated_user", "Late parcel", {"description": "d"})
    with pytest.raises(AssetError, match="reads the same"):
        assets.create_asset(store, "simulated_user", "Late, parcel", {"description": "d"})
    assets.create_asset(store, "agent", "Late parcel", AGENT)  # another kind may
    assert assets.spec_name("Frustrated customer, late delivery") == (
        "Frustrated-customer-late-delivery"
    )


def test_revision_choices_read_as_the_pages_write_them() -> None:
    assert assets.parse_revision_ref("Latest published") is None
    assert assets.parse_revision_ref(None) is None
    assert assets.parse_revision_ref("Preview:4") == 4
    assert assets.parse_revision_ref("7") == 7
    with pytest.raises(AssetError, match="Preview:4"):
        assets.parse_revision_ref("newest")


def test_a_draft_cannot_be_selected_and_a_missing_revision_is_named(store: Store) -> None:
    user = assets.create_asset(store, "simulated_user", "U", {"description": "d"})
    with pytest.raises(AssetError, match="Draft:1 cannot run; move it to Preview"):
        assets.runnable_revision(user, 1)
    with pytest.raises(AssetNotFound, match="has no revision 9"):
        assets.runnable_revision(user, 9)


# --- suites --------------------------------------------------------------------------------


def test_saving_a_suite_without_published_revisions_fails_with_the_fix(store: Store) -> None:
    published(store, "evaluation", "Late delivery", EVALUATION)
    user = assets.create_asset(store, "simulated_user", "Frustrated customer", USER)
    agent_id = published(store, "agent", "Support bot", AGENT)
    case = SuiteCase(agent_id=agent_id, user_id=user.id)
    with pytest.raises(SuiteError) as caught:
        suites.save_suite(store, "Booking flow regression", [case])
    assert str(caught.value) == (
        "Failed to create test suite: the simulated user 'Frustrated customer' in test case 1 "
        "has no Published revision. Publish it, or select a Preview revision in the test case"
    )
    assets.preview_revision(store, user.id, 1)
    saved = suites.save_suite(
        store,
        "Booking flow regression",
        [SuiteCase(agent_id=agent_id, user_id=user.id, user_revision=1)],
    )
    assert suite_status.suite_summary(store, saved.id).status == "not_run"


def test_suite_settings_are_checked(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    with pytest.raises(SuiteError, match="add at least one test case"):
        suites.save_suite(store, "S", [])
    with pytest.raises(SuiteError, match="test case 1: max turns 0 is out of range"):
        suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id, max_turns=0)])
    with pytest.raises(SuiteError, match="in test case 1 is not an agent; select an agent"):
        suites.save_suite(store, "S", [SuiteCase(agent_id=user_id, user_id=user_id)])
    suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    with pytest.raises(SuiteError, match="named 'S' exists"):
        suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])


def test_a_suite_becomes_scenarios_for_the_normal_runner(store: Store) -> None:
    evaluation_id, user_id, agent_id = the_three(store)
    case = SuiteCase(agent_id=agent_id, user_id=user_id, max_turns=20, sessions=3, timeout_s=90)
    suite = suites.save_suite(store, "Booking", [case])
    resolved = suites.resolve_suite(store, suite.id)
    (scenario,) = resolved.scenarios
    assert (scenario.id, scenario.name) == (
        "case-1",
        "Support bot / Frustrated customer, late delivery",
    )
    assert scenario.target is not None and scenario.target.model_dump()["url"] == AGENT["url"]
    assert scenario.simulated_user is not None
    assert scenario.simulated_user.system_prompt == USER["system_prompt"]
    assert scenario.user == "Frustrated-customer-late-delivery"
    assert [e.name for e in scenario.defined_evaluations] == ["Late-delivery"]
    assert (scenario.trials, scenario.max_turns, scenario.timeout_s) == (3, 20, 90)
    assert scenario.goal == suites.DEFAULT_GOAL and scenario.all_criteria == []
    assert scenario.description == USER["description"]
    (one,) = resolved.cases
    assert (one.agent.label, one.user.label) == ("Published:1", "Published:1")
    assert [(e.asset_id, e.label) for e in one.evaluations] == [(evaluation_id, "Published:1")]


def test_without_evaluations_only_a_natural_end_is_checked(store: Store) -> None:
    user_id = published(store, "simulated_user", "Plain", {"description": "wants help"})
    agent_id = published(store, "agent", "Bot", AGENT)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    (scenario,) = suites.resolve_suite(store, suite.id).scenarios
    (check,) = scenario.checks
    assert check.model_dump()["value"] == ["goal_achieved", "user_gave_up"]
    assert scenario.max_turns == suites.UNLIMITED_TURNS and scenario.all_criteria == []


def test_an_attached_evaluation_without_a_published_revision_stops_the_run(store: Store) -> None:
    assets.create_asset(store, "evaluation", "Late delivery", EVALUATION)
    user_id = published(store, "simulated_user", "U", USER)
    agent_id = published(store, "agent", "Bot", AGENT)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    with pytest.raises(SuiteError, match="'Late delivery' attached to 'U' has no Published"):
        suites.resolve_suite(store, suite.id)


class Models:
    """A simulated user that says one thing then reaches its goal, and a judge that gives
    every insight `values` (default true / 0.8), quoting the agent."""

    def __init__(self, values: dict[str, Any] | None = None) -> None:
        self.values = values or {}
        self.model = ScriptedModel(handler=self.answer)

    def answer(self, messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        properties = (schema or {}).get("properties", {})
        if "done_reason" in properties:
            said = any("arrives tomorrow" in m["content"] for m in messages)
            if said:
                return {"message": "", "done": True, "done_reason": "goal_achieved"}
            return {"message": "My parcel is late.", "done": False, "done_reason": None}
        insights = {
            i: {
                "reasoning": "r",
                "evidence": ["refund of $10"],
                "turns": [1],
                "value": self.values.get(
                    i, True if spec["properties"]["value"]["type"] == "boolean" else 0.8
                ),
            }
            for i, spec in properties.get("insights", {}).get("properties", {}).items()
        }
        return {"replies": {}, "insights": insights}


async def run_suite(store: Store, suite_id: int, models: Models) -> RunResult:
    """Run suite `suite_id` as the dashboard does: claim, run, keep and link the run."""
    resolved = suites.resolve_suite(store, suite_id)
    claim = suites.start_suite_run(store, resolved, author="ann")
    writer = RunWriter(store)

    def observe(event: Event) -> None:
        if isinstance(event, RunStarted) and event.run is not None:
            writer.start(event.run.model_copy(deep=True), record=_record())
            suites.link_suite_run(store, claim, event.run.run_id)
        elif isinstance(event, TrialFinished):
            writer.add(event.result)

    result = await run_scenarios(
        resolved.scenarios,
        targets=lambda _s: ScriptedTarget([REPLY] * 10),
        user_model=models.model,
        judge_model=models.model,
        settings=RunSettings(parallel=1),
        observer=observe,
    )
    writer.finish(result, exit_code=result.exit_code)
    assert not writer.errors
    return result


@pytest.mark.anyio
async def test_a_suite_run_is_linked_and_its_status_follows_the_evaluations(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(
        store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id, sessions=2)]
    )
    result = await run_suite(store, suite.id, Models())
    summary = suite_status.suite_summary(store, suite.id)
    assert summary.last_run is not None and summary.last_run.run_id == result.run_id
    assert (summary.status, summary.reason) == ("passed", None)
    found = suite_status.suite_of_run(store, result.run_id)
    assert found is not None and found[0].id == suite.id
    trial = load_run(store, result.run_id).scenarios[0].trials[0]
    assert suite_status.conversation_status(trial) == ("passed", None)
    assert trial.evaluations_passed == "yes"

    await run_suite(store, suite.id, Models({"Late-delivery.resolved": False}))
    summary = suite_status.suite_summary(store, suite.id)
    assert summary.status == "failed" and len(summary.runs) == 2
    assert summary.reason is not None and summary.reason.startswith("Late-delivery.resolved: ")
    assert summary.runs[1].status == "passed"  # earlier runs keep theirs
    assert suite_status.list_suites(store, agent_id=agent_id)[0].status == "failed"
    assert suite_status.list_suites(store, agent_id=user_id) == []
    assert suite_status.list_suites(store, since="2999-01-01") == []


@pytest.mark.anyio
async def test_an_override_changes_the_trial_and_suite_status_and_is_marked(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    result = await run_suite(store, suite.id, Models({"Late-delivery.resolved": False}))
    assert suite_status.suite_summary(store, suite.id).status == "failed"
    stored = overrides.record_override(
        store,
        run_id=result.run_id,
        scenario_id="case-1",
        trial=1,
        target="Late-delivery.resolved",
        value="met",
        reason="It offered a refund",
        author="ann",
    )
    assert (stored.override.value, stored.override.original, stored.passed) == (True, False, True)
    trial = load_run(store, result.run_id).scenarios[0].trials[0]
    insight = next(i for i in trial.insights if i.id == "Late-delivery.resolved")
    assert insight.override is not None and insight.override.author == "ann"
    assert (insight.value, insight.passed, insight.score) == (True, True, 1.0)
    assert (trial.status, trial.evaluations_passed) == ("passed", "yes")
    assert trial.score == pytest.approx(0.9)  # (1.0 + 0.8) / 2
    assert overrides.trial_overridden(trial)
    summary = suite_status.suite_summary(store, suite.id)
    assert (summary.status, summary.last_run and summary.last_run.overridden) == ("passed", True)


def _judged_trial(**verdicts: str) -> TrialResult:
    return TrialResult.model_validate(
        {
            "scenario_id": "s1",
            "trial": 1,
            "status": "failed" if "not_met" in verdicts.values() else "passed",
            "end_reason": "script_done",
            "verdicts": [
                {"id": i, "kind": "criterion", "description": f"text of {i}", "status": s}
                for i, s in verdicts.items()
            ],
        }
    )


def _stored_run(store: Store, trial: TrialResult) -> str:
    from tests.test_store import _planned

    planned = _planned("r1")
    planned.scenarios[0].planned_trials = 1
    writer = RunWriter(store)
    writer.start(planned, record=_record())
    planned.scenarios[0].trials.append(trial)
    writer.add(trial)
    writer.finish(planned, exit_code=0)
    return "r1"


def test_a_verdict_override_recomputes_the_trial_and_the_newest_wins(store: Store) -> None:
    run_id = _stored_run(store, _judged_trial(c1="met", c2="not_met"))
    common: dict[str, Any] = {"run_id": run_id, "scenario_id": "s1", "trial": 1, "target": "c2"}
    overrides.record_override(store, value="met", reason="quoted", author="a", **common)
    scenario = load_run(store, run_id).scenarios[0]
    (trial,) = scenario.trials
    assert trial.status == "passed" and scenario.status == "passed"
    assert (
        trial.verdicts[1].override is not None and trial.verdicts[1].override.original == "not_met"
    )
    assert trial.score == 1.0
    assert list_runs(store)[0].trial_counts == {"passed": 1}  # `sparring runs` follows
    overrides.record_override(store, value="not_met", reason="on reflection", author="b", **common)
    (trial,) = load_run(store, run_id).scenarios[0].trials
    assert trial.status == "failed" and trial.verdicts[1].override.author == "b"  # type: ignore[union-attr]
    labels = overrides.list_overrides(store)
    assert [(o.target, o.criterion, o.original, o.value, o.author) for o in labels] == [
        ("c2", "text of c2", "not_met", "met", "a"),
        ("c2", "text of c2", "not_met", "not_met", "b"),
    ]
    assert labels[0].transcript.messages == ()


@pytest.mark.parametrize(
    ("stored", "end", "error", "after", "error_after"),
    [
        ("error", "goal_achieved", "c1 could not be decided: no quote", "passed", None),
        (
            "failed",
            "simulator_failed",
            "the user repeated itself",
            "passed",
            "the user repeated itself",
        ),
        ("error", "target_error", "HTTP 500", "error", "HTTP 500"),
    ],
)
def test_an_override_recomputes_only_what_verdicts_decided(
    store: Store, stored: str, end: str, error: str, after: str, error_after: str | None
) -> None:
    verdict = "error" if error.startswith("c1") else "not_met" if stored == "failed" else "skipped"
    data = _judged_trial(c1=verdict).model_dump() | {"status": stored, "end_reason": end}
    data["verdicts"][0]["reason"] = "no quote"
    run_id = _stored_run(store, TrialResult.model_validate(data | {"error": error}))
    overrides.record_override(
        store,
        run_id=run_id,
        scenario_id="s1",
        trial=1,
        target="c1",
        value="met",
        reason="r",
        author="a",
    )
    (trial,) = load_run(store, run_id).scenarios[0].trials
    assert (trial.status, trial.error) == (after, error_after)
    assert trial.verdicts[0].status == "met"


def test_bad_overrides_say_what_would_do(store: Store) -> None:
    run_id = _stored_run(store, _judged_trial(c1="met"))
    common: dict[str, Any] = {"run_id": run_id, "scenario_id": "s1", "reason": "r", "author": "a"}
    with pytest.raises(
        overrides.OverrideError, match="no trial 2 of scenario 's1' .*its trials: 1"
    ):
        overrides.record_override(store, trial=2, target="c1", value="met", **common)
    with pytest.raises(overrides.OverrideError, match="no verdict or insight 'c9'; it has: c1"):
        overrides.record_override(store, trial=1, target="c9", value="met", **common)
    with pytest.raises(overrides.OverrideError, match="met or not_met, not 'maybe'"):
        overrides.record_override(store, trial=1, target="c1", value="maybe", **common)
    with pytest.raises(overrides.OverrideError, match="needs a reason"):
        overrides.record_override(
            store, **{**common, "reason": " "}, trial=1, target="c1", value="met"
        )
    assert overrides.parse_value("0.4") == 0.4 and overrides.parse_value("true") is True
    assert overrides.parse_value("not_met") == "not_met"


def test_a_gating_score_override_needs_to_know_whether_it_passes(store: Store) -> None:
    tone = {
        "evaluation": "e",
        "insight": "tone",
        "type": "score",
        "status": "ok",
        "value": 0.9,
        "passed": True,
        "score": 0.9,
        "gating": True,
    }
    trial = TrialResult.model_validate(_judged_trial(c1="met").model_dump() | {"insights": [tone]})
    run_id = _stored_run(store, trial)
    common: dict[str, Any] = {"run_id": run_id, "scenario_id": "s1", "trial": 1, "target": "e.tone"}
    with pytest.raises(overrides.OverrideError, match="say whether it passes"):
        overrides.record_override(store, value=0.3, reason="r", author="a", **common)
    with pytest.raises(overrides.OverrideError, match="number from 0 to 1"):
        overrides.record_override(store, value=3.0, reason="r", author="a", **common)
    overrides.record_override(store, value=0.3, passed=False, reason="r", author="a", **common)
    (trial,) = load_run(store, run_id).scenarios[0].trials
    assert (trial.status, trial.evaluations_passed, trial.score) == ("failed", "no", 0.3)


# --- statuses -------------------------------------------------------------------------------


def _trial(status: str, end: str = "goal_achieved", **extra: Any) -> TrialResult:
    data = {"scenario_id": "case-1", "trial": 1, "status": status, "end_reason": end}
    return TrialResult.model_validate(data | extra)


def test_conversation_statuses_follow_the_platform() -> None:
    status = suite_status.conversation_status
    passed_check = {"id": "check1", "kind": "check", "description": "ended", "status": "met"}
    assert status(_trial("passed", verdicts=[passed_check])) == ("passed", None)
    assert status(_trial("done")) == ("done", None)
    assert status(_trial("skipped", "skipped", error="no model")) == ("skipped", "no model")
    assert status(_trial("passed", evaluations_passed="yes")) == ("passed", None)
    assert status(_trial("timed_out", "timeout", error="over 600 s")) == ("timed_out", "over 600 s")
    no_judge = _trial("error", "internal_error", error="boom", evaluations_passed="pending")
    assert status(no_judge) == ("failed", "boom")
    failed_check = passed_check | {"status": "not_met", "reason": "it ended by max_turns"}
    assert status(_trial("failed", "max_turns", verdicts=[failed_check])) == (
        "failed",
        "check1: it ended by max_turns",
    )
    assert status(_trial("invalid", error="the simulated user said nothing")) == (
        "invalid",
        "the simulated user said nothing",
    )


@pytest.mark.parametrize(
    ("conversations", "expected"),
    [
        (["passed", "passed", "done"], "passed"),
        (["failed", "failed"], "failed"),
        (["passed", "failed"], "mixed"),
        (["passed", "timed_out"], "mixed"),
        (["timed_out", "timed_out"], "timed_out"),
        (["done", "done"], "done"),
        (["skipped", "done"], "skipped"),
        (["passed", "skipped"], "passed"),
        (["invalid"], "failed"),
    ],
)
def test_suite_status_from_its_conversations(conversations: list[Any], expected: str) -> None:
    statuses = [(c, None if c in ("passed", "done") else f"why {c}") for c in conversations]
    status, reason = suite_status._aggregate(statuses)  # pyright: ignore[reportPrivateUsage]
    assert status == expected
    assert (reason is None) == (expected in ("passed", "done"))
    assert reason != "why skipped" or expected == "skipped"


def test_one_run_at_a_time_and_a_run_that_could_not_start_fails_with_its_reason(
    store: Store,
) -> None:
    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    resolved = suites.resolve_suite(store, suite.id)
    claim = suites.start_suite_run(store, resolved)
    assert suite_status.suite_summary(store, suite.id).running
    with pytest.raises(SuiteBusy, match="In progress .*runs once at a time"):
        suites.start_suite_run(store, resolved)
    with pytest.raises(SuiteBusy, match="delete it once it ends"):
        suites.delete_suite(store, suite.id)
    suites.fail_suite_run(store, claim, "no model configured: set `model`")
    summary = suite_status.suite_summary(store, suite.id)
    assert (summary.status, summary.reason) == ("failed", "no model configured: set `model`")
    suites.start_suite_run(store, resolved)  # may run again


def test_a_claim_of_a_process_that_is_gone_is_not_in_progress(store: Store) -> None:
    from sqlalchemy import update

    from sparring.store.schema import suite_runs

    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    resolved = suites.resolve_suite(store, suite.id)
    claim = suites.start_suite_run(store, resolved)
    with store.engine.begin() as conn:  # a pid no process has
        conn.execute(update(suite_runs).where(suite_runs.c.id == claim).values(pid=2**22 + 7))
    summary = suite_status.suite_summary(store, suite.id)
    assert summary.status == "failed" and "stopped before it started" in (summary.reason or "")
    suites.start_suite_run(store, resolved)


@pytest.mark.anyio
async def test_deleting_a_suite_deletes_all_its_runs(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    result = await run_suite(store, suite.id, Models())
    overrides.record_override(
        store,
        run_id=result.run_id,
        scenario_id="case-1",
        trial=1,
        target="Late-delivery.tone",
        value=0.1,
        reason="r",
        author="a",
    )
    assert suites.delete_suite(store, suite.id) == [result.run_id]
    with pytest.raises(suites.SuiteNotFound):
        suites.get_suite(store, suite.id)
    assert list_runs(store) == [] and overrides.list_overrides(store) == []


def test_editing_a_suite_keeps_its_runs_and_checks_again(store: Store) -> None:
    _, user_id, agent_id = the_three(store)
    suite = suites.save_suite(store, "S", [SuiteCase(agent_id=agent_id, user_id=user_id)])
    edited = suites.save_suite(
        store,
        "S v2",
        [SuiteCase(agent_id=agent_id, user_id=user_id, criteria=("Says sorry",))],
        suite_id=suite.id,
    )
    assert (edited.id, edited.name, edited.cases[0].criteria) == (suite.id, "S v2", ("Says sorry",))
    (scenario,) = suites.resolve_suite(store, suite.id).scenarios
    assert [c.text for c in scenario.all_criteria] == ["Says sorry"] and scenario.checks == []
    assert json.loads(json.dumps(edited.cases[0].__dict__, default=list))["criteria"] == [
        "Says sorry"
    ]


# --- accounts -------------------------------------------------------------------------------


def test_roles_follow_the_seed_table() -> None:
    for role in ("owner", "editor"):
        assert all(
            accounts.can(role, a)
            for a in ("view", "export", "edit_assets", "edit_suites", "run_suites", "override")
        )
    assert accounts.can("viewer", "view") and accounts.can("viewer", "export")
    assert not any(
        accounts.can("viewer", a) for a in ("edit_assets", "edit_suites", "run_suites", "override")
    )
    assert accounts.can("owner", "manage_users") and not accounts.can("editor", "manage_users")
    assert not accounts.can(None, "view") and not accounts.can("admin", "view")


def test_accounts_hash_passwords_and_verify_them(store: Store) -> None:
    account = accounts.add_account(store, "ann", "correct horse", role="owner")
    assert account.role == "owner" and accounts.has_accounts(store)
    from sqlalchemy import select

    from sparring.store.schema import accounts as table

    with store.engine.connect() as conn:
        kept = conn.execute(select(table.c.password_hash)).scalar_one()
    assert kept.startswith("$argon2id$") and "correct horse" not in kept
    assert accounts.verify_password(store, "ann", "correct horse") == account
    assert accounts.verify_password(store, "ann", "wrong horse") is None
    assert accounts.verify_password(store, "nobody", "correct horse") is None


def test_account_rules(store: Store) -> None:
    with pytest.raises(accounts.AccountError, match="too short"):
        accounts.add_account(store, "ann", "short", role="owner")
    with pytest.raises(accounts.AccountError, match="no role 'admin'"):
        accounts.add_account(store, "ann", "long enough", role="admin")
    with pytest.raises(accounts.AccountError, match="not allowed"):
        accounts.add_account(store, "a b", "long enough", role="owner")
    accounts.add_account(store, "ann", "long enough", role="owner")
    with pytest.raises(accounts.AccountError, match="exists"):
        accounts.add_account(store, "ann", "long enough", role="viewer")
    accounts.add_account(store, "bob", "long enough", role="viewer")
    with pytest.raises(accounts.AccountError, match="last owner"):
        accounts.set_role(store, "ann", "editor")
    with pytest.raises(accounts.AccountError, match="last owner"):
        accounts.remove_account(store, "ann")
    assert accounts.set_role(store, "bob", "owner").role == "owner"
    accounts.remove_account(store, "ann")
    assert [(a.name, a.role) for a in accounts.list_accounts(store)] == [("bob", "owner")]
    with pytest.raises(accounts.AccountError, match="no account 'ann'"):
        accounts.remove_account(store, "ann")
