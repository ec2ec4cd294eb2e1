"""The pages that change test suites: the suite editor (test cases, revisions, advanced
settings; Save, Save and run), Rerun, Resume (an interrupted run), Delete (after asking).

A test case's Revision lists offer the Preview and Published revisions of the agent and
simulated user it has chosen only: choosing another one swaps the list for the server's
(`/suites/revisions`, an htmx partial; without JavaScript, "Show the revisions" posts the
form back).

Saving goes through `sparring.store.suites.save_suite` (a suite whose agent or simulated
user has no Published revision is refused with the platform's message); runs start in the
server process (`sparring.dashboard.runs`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from sparring.dashboard.access import allowed
from sparring.dashboard.auth import Principal
from sparring.dashboard.forms import case_rows, suite_cases
from sparring.dashboard.pages import render
from sparring.dashboard.state import Dashboard
from sparring.errors import UserError
from sparring.store.assets import Asset, AssetNotFound, Revision, get_asset, list_assets
from sparring.store.suites import (
    DEFAULT_SESSIONS,
    DEFAULT_TIMEOUT_S,
    Suite,
    delete_suite,
    save_suite,
)

router = APIRouter(include_in_schema=False)
SuiteEditor = Annotated[Principal, Depends(allowed("edit_suites"))]
SuiteRunner = Annotated[Principal, Depends(allowed("run_suites"))]
_CASE_FIELDS = ("agent", "agent_revision", "user", "user_revision", "timeout_s", "max_turns")
_ASSET_FIELD = re.compile(r"case-\d+-(agent|user)")
"""A test case's agent or simulated user field, e.g. `case-0-user`."""
_KINDS = {"agent": "agent", "user": "simulated_user"}


def _dashboard(request: Request) -> Dashboard:
    return request.app.state.dashboard


@router.get("/suites/new")
async def new_suite(request: Request, who: SuiteEditor) -> HTMLResponse:
    """The editor of a new suite (one empty test case)."""
    return _editor(request, None, {"name": "", "cases": [_empty_case()]})


@router.get("/suites/{suite_id}/edit")
async def edit_suite(request: Request, who: SuiteEditor, suite_id: str) -> HTMLResponse:
    """Edit and rerun: the suite's editor; nothing runs until Save and run."""
    suite = _dashboard(request).saved(suite_id)
    cases = [
        {
            "agent": c.agent_id,
            "agent_revision": c.agent_revision or "",
            "user": c.user_id,
            "user_revision": c.user_revision or "",
            "timeout_s": f"{c.timeout_s:g}",
            "max_turns": c.max_turns or "",
            "sessions": c.sessions,
        }
        for c in suite.cases
    ]
    return _editor(request, suite, {"name": suite.name, "cases": cases})


@router.post("/suites/new")
async def create_suite(request: Request, who: SuiteEditor) -> Response:
    """Save (status Not run) or Save and run a new suite."""
    return await _save(request, who, None)


@router.post("/suites/{suite_id}/edit")
async def update_suite(request: Request, who: SuiteEditor, suite_id: str) -> Response:
    """Save (or Save and run) the suite's new name and test cases; its runs stay."""
    return await _save(request, who, _dashboard(request).saved(suite_id))


@router.get("/suites/revisions")
async def revision_list(request: Request, who: SuiteEditor, field: str) -> HTMLResponse:
    """The Revision list of test case field `field` (`case-N-agent` or `case-N-user`) for
    the asset whose id is that field's value: Latest published and the asset's Preview and
    Published revisions (only Latest published when none is chosen or it is not one of
    that kind). The editor swaps it in when the agent or simulated user changes.

    Raises:
        HTTPException: 404 when `field` is not such a field.
    """
    found = _ASSET_FIELD.fullmatch(field)
    if found is None:
        raise HTTPException(status_code=404, detail=f"no test case field {field!r}")
    chosen = request.query_params.get(field, "")
    try:  # an id as the store keeps them (a 64-bit integer)
        asset = get_asset(_dashboard(request).store, int(chosen)) if _is_id(chosen) else None
    except AssetNotFound:
        asset = None
    fits = [a for a in (asset,) if a and a.kind == _KINDS[found[1]] and not a.archived]
    context = {"field": field, "options": _runnable(fits, chosen), "selected": ""}
    return render(request, "revision_select.html.j2", context)


async def _save(request: Request, who: Principal, suite: Suite | None) -> Response:
    form = await request.form()
    if "add_case" in form or "refresh" in form:
        values = _posted(form)
        if "add_case" in form:
            values["cases"].append(_empty_case())
        return _editor(request, suite, values)
    dashboard = _dashboard(request)
    try:
        name, cases = suite_cases(form)
        kept = save_suite(
            dashboard.store,
            name,
            cases,
            suite_id=None if suite is None else suite.id,
            author=who.name,
        )
    except UserError as e:
        return _editor(request, suite, _posted(form), error=str(e))
    if form.get("then") == "run":
        await dashboard.start(kept.id, who)
    return RedirectResponse(f"/suites/{kept.id}", status_code=303)


@router.post("/suites/{suite_id}/rerun")
async def rerun(request: Request, who: SuiteRunner, suite_id: str) -> Response:
    """Rerun: run the suite again with its current settings."""
    dashboard = _dashboard(request)
    await dashboard.start(dashboard.saved(suite_id).id, who)
    return RedirectResponse(f"/suites/{suite_id}", status_code=303)


@router.post("/suites/{suite_id}/resume")
async def resume(request: Request, who: SuiteRunner, suite_id: str) -> Response:
    """Resume the suite's interrupted run: only its conversations that did not end run."""
    dashboard = _dashboard(request)
    await dashboard.resume(dashboard.saved(suite_id).id, who)
    return RedirectResponse(f"/suites/{suite_id}", status_code=303)


@router.get("/suites/{suite_id}/delete")
async def confirm_delete(request: Request, who: SuiteEditor, suite_id: str) -> Response:
    """Ask before deleting (it cannot be undone)."""
    suite = _dashboard(request).saved(suite_id)
    context = {
        "title": f"Delete {suite.name}?",
        "message": f"Delete the test suite {suite.name!r} with all its runs and results? "
        "This can't be undone.",
        "action": f"/suites/{suite_id}/delete",
        "button": "Delete",
        "back": "/suites",
    }
    return render(request, "confirm.html.j2", context)


@router.post("/suites/{suite_id}/delete")
async def delete(request: Request, who: SuiteEditor, suite_id: str) -> Response:
    """Delete the suite with all its runs; back to the list."""
    dashboard = _dashboard(request)
    delete_suite(dashboard.store, dashboard.saved(suite_id).id)
    return RedirectResponse("/suites", status_code=303)


def _empty_case() -> dict[str, Any]:
    return {
        **dict.fromkeys(_CASE_FIELDS, ""),
        "timeout_s": f"{DEFAULT_TIMEOUT_S:g}",
        "sessions": DEFAULT_SESSIONS,
    }


def _posted(form: FormData) -> dict[str, Any]:
    """The editor's fields as posted."""
    cases = [
        {f: form.get(f"case-{i}-{f}", "") for f in (*_CASE_FIELDS, "sessions")}
        for i in range(case_rows(form))
    ]
    return {"name": form.get("name", ""), "cases": cases or [_empty_case()]}


def _editor(
    request: Request, suite: Suite | None, values: dict[str, Any], *, error: str | None = None
) -> HTMLResponse:
    store = _dashboard(request).store
    agents, users = list_assets(store, "agent"), list_assets(store, "simulated_user")
    revisions = [
        {"agent": _runnable(agents, c["agent"]), "user": _runnable(users, c["user"])}
        for c in values["cases"]
    ]
    context = {
        "suite": suite,
        "values": values,
        "error": error,
        "agents": agents,
        "users": users,
        "revisions": revisions,
    }
    response = render(request, "suite_editor.html.j2", context)
    if error:
        response.status_code = 422
    return response


def _runnable(assets: Sequence[Asset], chosen: object) -> list[Revision]:
    """The revisions a test case may select of the one of `assets` whose id is `chosen`
    (as posted: text or a number): its Preview and Published ones, newest first; none when
    no such asset is chosen."""
    asset = next((a for a in assets if str(a.id) == str(chosen)), None)
    if asset is None:
        return []
    return [r for r in asset.active_revisions if r.state in ("preview", "published")]


def _is_id(text: str) -> bool:
    """Whether `text` is an asset id: digits, within the store's 64-bit integers."""
    return text.isdigit() and int(text) < 2**63
