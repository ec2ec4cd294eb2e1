"""The JSON API's platform part: agents, simulated users and agent evaluations with their
revisions; saving, running and deleting test suites; verdict overrides.

Each endpoint does what a page does, through the same store functions, under the same
roles; errors are `{"detail": message}` with 404 (not found) or 422 (refused, with why).
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field

from sparring.dashboard.access import allowed
from sparring.dashboard.api import SuiteOut, suite_out
from sparring.dashboard.auth import Principal
from sparring.dashboard.catalog import file_suite_id
from sparring.dashboard.guards import check_agent
from sparring.dashboard.state import Dashboard
from sparring.store.assets import (
    Asset,
    AssetKind,
    archive_asset,
    clone_asset,
    create_asset,
    get_asset,
    list_assets,
    parse_revision_ref,
    preview_revision,
    publish_revision,
    revert_to,
    save_draft,
)
from sparring.store.overrides import record_override
from sparring.store.suites import DEFAULT_SESSIONS, DEFAULT_TIMEOUT_S, SuiteCase, delete_suite
from sparring.store.suites import save_suite as store_suite

router = APIRouter(prefix="/api", tags=["platform"])
Viewer = Annotated[Principal, Depends(allowed("view"))]
AssetEditor = Annotated[Principal, Depends(allowed("edit_assets"))]
SuiteEditor = Annotated[Principal, Depends(allowed("edit_suites"))]
SuiteRunner = Annotated[Principal, Depends(allowed("run_suites"))]
Overrider = Annotated[Principal, Depends(allowed("override"))]


class RevisionOut(BaseModel):
    """One revision: number, state (`draft`, `preview`, `published`, `archived`), label
    (`Preview:4`), content (the spec), when, by whom, origin (revert or clone of what)."""

    number: int
    state: str
    label: str
    content: dict[str, Any]
    created_at: str
    author: str | None
    origin: str | None


class AssetOut(BaseModel):
    """An agent, simulated user or agent evaluation with its revisions, oldest first."""

    id: int
    kind: AssetKind
    name: str
    archived: bool
    revisions: list[RevisionOut]


class AssetIn(BaseModel):
    """A new asset or a new Draft of one: its name and content (a `target:` mapping for an
    agent; the `SimulatedUser` or `Evaluation` fields but `name` for the others)."""

    name: str
    content: dict[str, Any]


class CaseIn(BaseModel):
    """A test case: agent and simulated user (asset ids), their revisions (`null` or
    `"Latest published"`, or a number / `"Preview:4"`), and the advanced settings."""

    agent_id: int
    user_id: int
    agent_revision: int | str | None = None
    user_revision: int | str | None = None
    goal: str | None = None
    criteria: list[str] = Field(default_factory=list[str])
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_turns: int | None = None
    sessions: int = DEFAULT_SESSIONS


class SuiteIn(BaseModel):
    """A test suite to save: its name and test cases; `run` starts it once saved."""

    name: str
    cases: list[CaseIn]
    run: bool = False


class StartedOut(BaseModel):
    """A run started: its suite and the run's id (`null` when it could not start: the
    suite's status says why)."""

    suite_id: str
    run_id: str | None


class OverrideIn(BaseModel):
    """A correction ("Verdict wrong?") of trial `trial` of scenario `scenario_id`: the
    verdict id or insight id (`evaluation.insight`) `target`, its corrected `value`, why; `passed`
    whether a gating score or category insight's new value passes."""

    scenario_id: str
    trial: int
    target: str
    value: bool | float | str
    reason: str
    passed: bool | None = None


class TestsIn(BaseModel):
    """A test file to run now: `name` (its runs are listed as the suite `api:<name>`) and
    the file, as YAML or JSON text or as the JSON object itself: sparring's format, or a
    Plainwright conversation test or pytest-agent-eval file."""

    name: str = Field(min_length=1, max_length=200)
    file: str | dict[str, Any]


def _dashboard(request: Request) -> Dashboard:
    return request.app.state.dashboard


def asset_out(asset: Asset) -> AssetOut:
    """`asset` as the API gives it."""
    revisions = [
        RevisionOut(
            number=r.number,
            state=r.state,
            label=r.label,
            content=r.content,
            created_at=r.created_at,
            author=r.author,
            origin=r.origin,
        )
        for r in asset.revisions
    ]
    return AssetOut(
        id=asset.id, kind=asset.kind, name=asset.name, archived=asset.archived, revisions=revisions
    )


@router.get("/assets/{kind}")
async def list_kind(
    request: Request, who: Viewer, kind: AssetKind, archived: bool = False
) -> list[AssetOut]:
    """The assets of `kind` by name: active ones, or with `archived` the archived ones."""
    return [asset_out(a) for a in list_assets(_dashboard(request).store, kind, archived=archived)]


@router.get("/assets/{kind}/{asset_id}")
async def get_one(request: Request, who: Viewer, kind: AssetKind, asset_id: int) -> AssetOut:
    """One asset with all its revisions."""
    return asset_out(_dashboard(request).asset(kind, asset_id))


@router.post("/assets/{kind}", status_code=201)
async def create(request: Request, who: AssetEditor, kind: AssetKind, body: AssetIn) -> AssetOut:
    """Create an asset: revision 1 is a Draft with `content` (an agent's target must be
    one the dashboard runs: http, openai_chat, a2a, parlant or browser)."""
    store = _dashboard(request).store
    if kind == "agent":
        check_agent(body.name, body.content)
    return asset_out(create_asset(store, kind, body.name, body.content, author=who.name))


@router.post("/assets/{kind}/{asset_id}/drafts", status_code=201)
async def draft(
    request: Request, who: AssetEditor, kind: AssetKind, asset_id: int, body: AssetIn
) -> AssetOut:
    """Save Draft: `content` as a new Draft revision (renaming the asset to `name`)."""
    dashboard = _dashboard(request)
    dashboard.asset(kind, asset_id)
    if kind == "agent":
        check_agent(body.name, body.content)
    save_draft(dashboard.store, asset_id, body.content, author=who.name, name=body.name)
    return asset_out(get_asset(dashboard.store, asset_id))


@router.post("/assets/{kind}/{asset_id}/revisions/{number}/{operation}")
async def revise(
    request: Request,
    who: AssetEditor,
    kind: AssetKind,
    asset_id: int,
    number: int,
    operation: Literal["preview", "publish", "revert"],
) -> AssetOut:
    """Move revision `number` to Preview, Publish it, or Revert to it (a new Draft)."""
    dashboard = _dashboard(request)
    dashboard.asset(kind, asset_id)
    store = dashboard.store
    if operation == "preview":
        preview_revision(store, asset_id, number)
    elif operation == "publish":
        publish_revision(store, asset_id, number)
    else:
        revert_to(store, asset_id, number, author=who.name)
    return asset_out(get_asset(store, asset_id))


@router.post("/assets/{kind}/{asset_id}/clone", status_code=201)
async def clone(
    request: Request, who: AssetEditor, kind: AssetKind, asset_id: int, revision: int | None = None
) -> AssetOut:
    """Clone: a new asset "<name> - clone" whose Draft has revision `revision`'s content."""
    dashboard = _dashboard(request)
    dashboard.asset(kind, asset_id)
    return asset_out(clone_asset(dashboard.store, asset_id, number=revision, author=who.name))


@router.post("/assets/{kind}/{asset_id}/archive")
async def archive(request: Request, who: AssetEditor, kind: AssetKind, asset_id: int) -> AssetOut:
    """Archive the asset and all its revisions (irreversible)."""
    dashboard = _dashboard(request)
    dashboard.asset(kind, asset_id)
    return asset_out(archive_asset(dashboard.store, asset_id))


@router.post("/suites", status_code=201)
async def create_suite(request: Request, who: SuiteEditor, body: SuiteIn) -> SuiteOut:
    """Save a new suite (status Not run), and with `run` start it."""
    return await _save(request, who, body, None)


@router.put("/suites/{suite_id}")
async def update_suite(
    request: Request, who: SuiteEditor, suite_id: str, body: SuiteIn
) -> SuiteOut:
    """Replace a saved suite's name and test cases (its runs stay); with `run` start it."""
    return await _save(request, who, body, _dashboard(request).saved(suite_id).id)


async def _save(request: Request, who: Principal, body: SuiteIn, suite_id: int | None) -> SuiteOut:
    dashboard = _dashboard(request)
    cases = [
        SuiteCase(
            **c.model_dump(exclude={"agent_revision", "user_revision", "criteria"}),
            agent_revision=parse_revision_ref(c.agent_revision),
            user_revision=parse_revision_ref(c.user_revision),
            criteria=tuple(c.criteria),
        )
        for c in body.cases
    ]
    kept = store_suite(dashboard.store, body.name, cases, suite_id=suite_id, author=who.name)
    if body.run:
        await dashboard.start(kept.id, who)
    return suite_out(dashboard.suite(str(kept.id)))


@router.post("/suites/{suite_id}/runs", status_code=202)
async def run_suite(request: Request, who: SuiteRunner, suite_id: str) -> StartedOut:
    """Rerun: start a run of the suite with its current settings (one at a time)."""
    dashboard = _dashboard(request)
    run_id = await dashboard.start(dashboard.saved(suite_id).id, who)
    return StartedOut(suite_id=suite_id, run_id=run_id)


@router.post("/suites/{suite_id}/resume", status_code=202)
async def resume_suite(request: Request, who: SuiteRunner, suite_id: str) -> StartedOut:
    """Resume the suite's interrupted latest run (its server stopped mid-run): only the
    conversations that did not end run, into the same run, with the revisions it used.
    422 when there is nothing to resume (with why) or it is In progress."""
    dashboard = _dashboard(request)
    run_id = await dashboard.resume(dashboard.saved(suite_id).id, who)
    return StartedOut(suite_id=suite_id, run_id=run_id)


@router.post("/tests", status_code=202)
async def run_tests(request: Request, who: SuiteRunner, body: TestsIn) -> StartedOut:
    """Run a test file sent in the request (work from the API): loaded as `sparring run`
    loads files, run in the server, kept as suite `api:<name>` with its results pages.
    Refused: a target other than http, openai_chat, a2a, parlant or browser, `cases_from:`
    and attached files (they would use the server's code or disk); `{{secrets.NAME}}`
    come from the server's secrets file only."""
    text = body.file if isinstance(body.file, str) else json.dumps(body.file)
    name = body.name.strip()
    run_id = await _dashboard(request).run_tests(text, name=name, who=who)
    return StartedOut(suite_id=file_suite_id(f"api:{name}"), run_id=run_id)


@router.delete("/suites/{suite_id}")
async def remove_suite(request: Request, who: SuiteEditor, suite_id: str) -> dict[str, list[str]]:
    """Delete a saved suite with all its runs; returns the ids of the runs deleted."""
    dashboard = _dashboard(request)
    return {"deleted_runs": delete_suite(dashboard.store, dashboard.saved(suite_id).id)}


@router.post("/runs/{run_id}/overrides", status_code=201)
async def override(
    request: Request, who: Overrider, run_id: str, body: OverrideIn
) -> dict[str, Any]:
    """Verdict wrong?: correct one verdict or insight of a stored trial (kept with who,
    when and why); returns the trial as now read, status recomputed."""
    dashboard = _dashboard(request)
    record_override(
        dashboard.store,
        run_id=run_id,
        author=who.name,
        **body.model_dump(),
    )
    run = dashboard.run(run_id)
    scenario = next(s for s in run.scenarios if s.scenario_id == body.scenario_id)
    trial = next(t for t in scenario.trials if t.trial == body.trial)
    return {"scenario_status": scenario.status, "trial": trial.model_dump(mode="json")}


@router.post("/runs/{run_id}/baseline")
async def make_baseline(request: Request, who: SuiteEditor, run_id: str) -> dict[str, str]:
    """Mark the run as the baseline diffs compare against (unmarking any other)."""
    from sparring.store.writer import mark_baseline

    mark_baseline(_dashboard(request).store, run_id)
    return {"baseline": run_id}
