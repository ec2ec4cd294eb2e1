"""The pages of agents, simulated users and agent evaluations: lists (Active and Archived
tabs; Clone and Archive actions; the evaluations' "Simulated users using" column) and the
editor with its revision menu (Save Draft, Preview, Publish, Revert, Clone).

Every change goes through `sparring.store.assets`; a refused change shows the form again
with the store's message (what is wrong and how to fix it).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.convertors import Convertor, register_url_convertor
from starlette.datastructures import FormData

from sparring.dashboard.access import allowed
from sparring.dashboard.auth import Principal
from sparring.dashboard.forms import (
    agent_content,
    evaluation_content,
    pass_when_text,
    target_yaml,
    user_content,
)
from sparring.dashboard.guards import check_agent
from sparring.dashboard.pages import render
from sparring.dashboard.state import Dashboard
from sparring.errors import UserError
from sparring.store.assets import (
    KIND_LABELS,
    Asset,
    AssetKind,
    Revision,
    archive_asset,
    clone_asset,
    create_asset,
    evaluation_users,
    list_assets,
    preview_revision,
    publish_revision,
    revert_to,
    save_draft,
)
from sparring.store.database import Store


class _KindConvertor(Convertor[str]):
    """The path part naming a kind of asset (`{slug:asset_kind}`): other paths are not
    found, rather than a bad request."""

    regex = "agents|simulated-users|evaluations"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("asset_kind", _KindConvertor())
router = APIRouter(include_in_schema=False)
Slug = Literal["agents", "simulated-users", "evaluations"]
KINDS: dict[str, AssetKind] = {
    "agents": "agent",
    "simulated-users": "simulated_user",
    "evaluations": "evaluation",
}
TITLES = {
    "agents": "Agents",
    "simulated-users": "Simulated Users",
    "evaluations": "Agent Evaluations",
}
Viewer = Annotated[Principal, Depends(allowed("view"))]
Editor = Annotated[Principal, Depends(allowed("edit_assets"))]
Operation = Literal["preview", "publish", "revert"]


def _store(request: Request) -> Store:
    return request.app.state.dashboard.store


def _of_kind(request: Request, slug: str, asset_id: int) -> Asset:
    dashboard: Dashboard = request.app.state.dashboard
    return dashboard.asset(KINDS[slug], asset_id)


@router.get("/{slug:asset_kind}")
async def asset_list(request: Request, who: Viewer, slug: Slug, tab: str = "active") -> Response:
    """The list of one kind of asset, Active or Archived."""
    store = _store(request)
    archived = tab == "archived"
    context = {
        "slug": slug,
        "title": TITLES[slug],
        "kind": KIND_LABELS[KINDS[slug]],
        "assets": list_assets(store, KINDS[slug], archived=archived),
        "archived": archived,
        "using": evaluation_users(store) if slug == "evaluations" else {},
    }
    return render(request, "assets.html.j2", context)


@router.get("/{slug:asset_kind}/new")
async def new_asset(request: Request, who: Editor, slug: Slug) -> HTMLResponse:
    """The editor of a new asset."""
    return _editor(request, slug, None, None, _values(KINDS[slug], "", {}))


@router.post("/{slug:asset_kind}/new")
async def create(request: Request, who: Editor, slug: Slug) -> Response:
    """Save a new asset as a Draft revision, back to the list; with `add_insight`, the form
    again with one more insight row."""
    form = await request.form()
    kind = KINDS[slug]
    try:
        name, content = _content(kind, form)
        if "add_insight" not in form:
            create_asset(_store(request), kind, name, content, author=who.name)
            return RedirectResponse(f"/{slug}", status_code=303)
        error = None
    except UserError as e:
        error = str(e)
    return _editor(request, slug, None, None, _posted(kind, form), error=error)


@router.get("/{slug:asset_kind}/{asset_id}")
async def asset_page(
    request: Request, who: Viewer, slug: Slug, asset_id: int, revision: int | None = None
) -> HTMLResponse:
    """The editor of an asset, showing revision `revision` (default: the newest)."""
    asset = _of_kind(request, slug, asset_id)
    shown = asset.latest if revision is None else asset.revision(revision)
    return _editor(request, slug, asset, shown, _values(asset.kind, asset.name, shown.content))


@router.post("/{slug:asset_kind}/{asset_id}")
async def save(request: Request, who: Editor, slug: Slug, asset_id: int) -> Response:
    """Save Draft: the form as a new Draft revision (renaming the asset when the name
    changed); with `add_insight`, the form again with one more insight row."""
    store = _store(request)
    asset = _of_kind(request, slug, asset_id)
    form = await request.form()
    try:
        name, content = _content(asset.kind, form)
        if "add_insight" not in form:
            saved = save_draft(store, asset_id, content, author=who.name, name=name)
            return RedirectResponse(f"/{slug}/{asset_id}?revision={saved.number}", 303)
        error = None
    except UserError as e:
        error = str(e)
    return _editor(request, slug, asset, asset.latest, _posted(asset.kind, form), error=error)


@router.post("/{slug:asset_kind}/{asset_id}/revisions/{number}/{operation}")
async def change_revision(
    request: Request, who: Editor, slug: Slug, asset_id: int, number: int, operation: Operation
) -> Response:
    """The revision menu: move revision `number` to Preview, Publish it, or Revert to it
    (a new Draft with its content)."""
    store = _store(request)
    _of_kind(request, slug, asset_id)
    if operation == "preview":
        changed = preview_revision(store, asset_id, number)
    elif operation == "publish":
        changed = publish_revision(store, asset_id, number)
    else:
        changed = revert_to(store, asset_id, number, author=who.name)
    return RedirectResponse(f"/{slug}/{asset_id}?revision={changed.number}", status_code=303)


@router.post("/{slug:asset_kind}/{asset_id}/clone")
async def clone(
    request: Request, who: Editor, slug: Slug, asset_id: int, revision: int | None = None
) -> Response:
    """Clone: a new asset "<name> - clone" whose Draft has the same content (of revision
    `revision`, default the newest); opens it."""
    store = _store(request)
    _of_kind(request, slug, asset_id)
    copy = clone_asset(store, asset_id, number=revision, author=who.name)
    return RedirectResponse(f"/{slug}/{copy.id}", status_code=303)


@router.get("/{slug:asset_kind}/{asset_id}/archive")
async def confirm_archive(request: Request, who: Editor, slug: Slug, asset_id: int) -> Response:
    """Ask before archiving (it cannot be undone)."""
    asset = _of_kind(request, slug, asset_id)
    context = {
        "title": f"Archive {asset.name}?",
        "message": f"Archive the {KIND_LABELS[asset.kind]} {asset.name!r} and all its "
        "revisions? This can't be undone: it moves to the Archived tab and can no longer be "
        "selected in test suites.",
        "action": f"/{slug}/{asset_id}/archive",
        "button": "Archive",
        "back": f"/{slug}",
    }
    return render(request, "confirm.html.j2", context)


@router.post("/{slug:asset_kind}/{asset_id}/archive")
async def archive(request: Request, who: Editor, slug: Slug, asset_id: int) -> Response:
    """Archive the asset and all its revisions; back to the list's Archived tab."""
    store = _store(request)
    _of_kind(request, slug, asset_id)
    archive_asset(store, asset_id)
    return RedirectResponse(f"/{slug}?tab=archived", status_code=303)


def _content(kind: AssetKind, form: FormData) -> tuple[str, dict[str, Any]]:
    if kind == "agent":
        name, content = agent_content(form)
        check_agent(name, content)
        return name, content
    if kind == "simulated_user":
        return user_content(form)
    return evaluation_content(form)


def _values(kind: AssetKind, name: str, content: dict[str, Any]) -> dict[str, Any]:
    """What the editor's fields show for `name` and `content` (as the store keeps it)."""
    if kind == "agent":
        return {"name": name, "target": target_yaml(content) if content else ""}
    values = {"name": name, **content}
    if kind == "evaluation":
        values["insights"] = [
            {
                **i,
                "options": ", ".join(i.get("options", [])),
                "pass_when": pass_when_text(i.get("pass_when")),
            }
            for i in content.get("insights", [])
        ] or [{}]
    return values


def _posted(kind: AssetKind, form: FormData) -> dict[str, Any]:
    """What the editor's fields show after a post: as typed (one more insight row for
    `add_insight`)."""
    if kind == "agent":
        return {"name": form.get("name", ""), "target": form.get("target", "")}
    values: dict[str, Any] = {k: v for k, v in form.items() if not k.startswith("insight-")}
    values["evaluations"] = form.getlist("evaluations")
    if kind == "evaluation":
        rows = sorted({int(k.split("-")[1]) for k in form if k.startswith("insight-")})
        values["insights"] = [
            {f: form.get(f"insight-{i}-{f}", "") for f in _INSIGHT_FIELDS} for i in rows
        ]
        if "add_insight" in form or not rows:
            values["insights"].append({})
    return values


_INSIGHT_FIELDS = (
    *("name", "type", "description", "options", "pass_when", "weight", "group", "featured"),
)


def _editor(
    request: Request,
    slug: str,
    asset: Asset | None,
    shown: Revision | None,
    values: dict[str, Any],
    *,
    error: str | None = None,
) -> HTMLResponse:
    store = _store(request)
    context = {
        "slug": slug,
        "title": TITLES[slug],
        "kind": KINDS[slug],
        "kind_label": KIND_LABELS[KINDS[slug]],
        "asset": asset,
        "shown": shown,
        "values": values,
        "error": error,
        "evaluations": [a.name for a in list_assets(store, "evaluation")]
        if slug == "simulated-users"
        else [],
    }
    response = render(request, "asset.html.j2", context)
    if error:
        response.status_code = 422
    return response
