"""Agents, simulated users and agent evaluations as named assets with numbered revisions.

An asset's `kind` is `agent` (a revision holds a `target:` mapping as in test files, e.g.
`{type: openai_chat, base_url, model, system_prompt}`), `simulated_user` (`job_title`,
`description`, `system_prompt`, `mode`, `evaluations`: the attached agent evaluations, as
`sparring.scenario.evaluations.SimulatedUser` minus its name) or `evaluation`
(`description`, `prompt`, `insights`, as `Evaluation` minus its name). Contents are
validated with those specs when saved and kept normalised (every field, as JSON).

Revision lifecycle (numbers count from 1 per asset): **Save draft** adds a Draft revision;
**Preview** moves a Draft to Preview (runnable without publishing); **Publish** makes a
Draft or Preview revision the Published one (the one before it is Archived); **Revert**
adds a Draft with an earlier revision's content; **Clone** makes a new asset
"<name> - clone" whose first Draft has the same content; **Archive** archives the asset
and all its revisions (irreversible: it can no longer be changed or selected).

A simulated user attaches agent evaluations by name when saved, and keeps them by asset id
(`Revision.attached`), so renaming an evaluation keeps it attached; its revisions' content
names them as they are called now.

Names are free text (1-255 characters, unique per kind); specs and verdict ids use the
asset's `spec_name` (letters, digits, `_`, `-`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Connection, Row, insert, select, update
from sqlalchemy.exc import IntegrityError

from sparring.store.asset_specs import (
    ASSET_KINDS,
    KIND_LABELS,
    AssetError,
    AssetKind,
    spec_name,
    validate_content,
)
from sparring.store.database import Store
from sparring.store.schema import asset_revisions, assets
from sparring.store.writer import now_iso

RevisionState = Literal["draft", "preview", "published", "archived"]
RUNNABLE_STATES: tuple[RevisionState, ...] = ("preview", "published")
"""States a test case may select a revision in."""
NAME_MAX = 255


class AssetNotFound(AssetError):
    """No asset (or revision) with that id, name or number."""


@dataclass(frozen=True, kw_only=True)
class Revision:
    """One revision of an asset: `number` (1-based), `state`, `content` (the normalised
    spec as a JSON-ready dict; a simulated user's `evaluations` by their current names),
    when and by whom it was made, `origin` (e.g. "revert of 2", "clone of Frustrated
    customer:3"; `None` for a plain save), and a simulated user's `attached` agent
    evaluations by asset id (a name instead: one kept before ids were, that no evaluation
    had then)."""

    asset_id: int
    number: int
    state: RevisionState
    content: dict[str, Any]
    created_at: str
    author: str | None
    origin: str | None
    attached: tuple[int | str, ...] = ()

    @property
    def label(self) -> str:
        """`State:number`, as the revision menu shows it, e.g. `Preview:4`."""
        return f"{self.state.capitalize()}:{self.number}"


@dataclass(frozen=True, kw_only=True)
class Asset:
    """An agent, simulated user or agent evaluation with all its `revisions` (oldest first).

    `archived` assets can no longer be changed or selected in test suites.
    """

    id: int
    kind: AssetKind
    name: str
    created_at: str
    author: str | None
    archived: bool
    revisions: tuple[Revision, ...]

    @property
    def spec_name(self) -> str:
        """The name in test files and verdict ids (see `spec_name`)."""
        return spec_name(self.name)

    @property
    def latest(self) -> Revision:
        """The newest revision (an asset always has one)."""
        return self.revisions[-1]

    @property
    def published(self) -> Revision | None:
        """The Published revision, if any."""
        return next((r for r in reversed(self.revisions) if r.state == "published"), None)

    @property
    def active_revisions(self) -> list[Revision]:
        """Revisions not archived, newest first (the revision menu's Active revisions)."""
        return [r for r in reversed(self.revisions) if r.state != "archived"]

    def revision(self, number: int) -> Revision:
        """Revision `number`.

        Raises:
            AssetNotFound: the asset has no such revision.
        """
        found = next((r for r in self.revisions if r.number == number), None)
        if found is None:
            raise AssetNotFound(
                f"{KIND_LABELS[self.kind]} {self.name!r} has no revision {number} "
                f"(it has 1 to {self.latest.number})"
            )
        return found


def create_asset(
    store: Store,
    kind: AssetKind,
    name: str,
    content: Mapping[str, Any],
    *,
    author: str | None = None,
) -> Asset:
    """A new `kind` asset `name` whose revision 1 is a Draft holding `content`.

    Raises:
        AssetError: an unknown kind, a blank or too long name, a name (or its `spec_name`)
            another asset of this kind has (archived ones included), invalid content, or
            a simulated user attaching an agent evaluation that does not exist.
    """
    name = _check_name(kind, name)
    try:
        with store.engine.begin() as conn:
            checked = _checked(conn, kind, name, content)
            _name_free(conn, kind, name)
            asset_id = _insert_asset(conn, kind, name, author)
            _insert_revision(conn, asset_id, 1, "draft", checked, author, None)
    except IntegrityError:  # created at the same moment by another process
        raise AssetError(
            f"a {KIND_LABELS[kind]} has that name; pick another name for {name!r}"
        ) from None
    return get_asset(store, asset_id)


def save_draft(
    store: Store,
    asset_id: int,
    content: Mapping[str, Any],
    *,
    author: str | None = None,
    name: str | None = None,
) -> Revision:
    """Save `content` as a new Draft revision of asset `asset_id` (renaming the asset to
    `name` when given and different). Revisions in use are never changed: a test case on
    "Latest published" keeps testing the Published revision until this one is published.

    Raises:
        AssetNotFound: no asset `asset_id`.
        AssetError: the asset is archived, the content is invalid, or `name` is taken.
    """
    with store.engine.begin() as conn:
        asset = _locked(conn, asset_id, "save a draft of")
        if name is not None and name != asset.name:
            name = _check_name(asset.kind, name)
            _name_free(conn, asset.kind, name)
            conn.execute(update(assets).where(assets.c.id == asset_id).values(name=name))
        checked = _checked(conn, asset.kind, name or asset.name, content)
        number = asset.latest.number + 1
        return _insert_revision(conn, asset_id, number, "draft", checked, author, None)


def preview_revision(store: Store, asset_id: int, number: int) -> Revision:
    """Move Draft revision `number` to Preview, so a test case can select it.

    Raises:
        AssetNotFound: no such asset or revision.
        AssetError: the asset is archived, or the revision is not a Draft (a Preview one
            stays; a Published one is already runnable).
    """
    with store.engine.begin() as conn:
        revision = _locked(conn, asset_id, "preview a revision of").revision(number)
        if revision.state == "preview":
            return revision
        if revision.state != "draft":
            raise AssetError(
                f"revision {revision.label} cannot move to Preview: only a Draft can "
                "(Revert it to get a Draft with its content)"
            )
        _set_state(conn, asset_id, number, "preview")
    return get_asset(store, asset_id).revision(number)


def publish_revision(store: Store, asset_id: int, number: int) -> Revision:
    """Make Draft or Preview revision `number` the Published one; the revision Published
    before is Archived (test cases on "Latest published" now run this one).

    Raises:
        AssetNotFound: no such asset or revision.
        AssetError: the asset is archived, or the revision is Archived.
    """
    with store.engine.begin() as conn:
        asset = _locked(conn, asset_id, "publish a revision of")
        revision = asset.revision(number)
        if revision.state == "archived":
            raise AssetError(
                f"revision {revision.label} of {asset.name!r} is archived; Revert to it "
                "(a new Draft with its content) and publish that"
            )
        before = asset.published
        if before is not None and before.number != number:
            _set_state(conn, asset_id, before.number, "archived")
        _set_state(conn, asset_id, number, "published")
    return get_asset(store, asset_id).revision(number)


def revert_to(store: Store, asset_id: int, number: int, *, author: str | None = None) -> Revision:
    """Add a Draft revision with the content of earlier revision `number`.

    Raises:
        AssetNotFound: no such asset or revision.
        AssetError: the asset is archived, or the old content no longer validates (e.g. it
            attaches an agent evaluation since archived).
    """
    with store.engine.begin() as conn:
        asset = _locked(conn, asset_id, "revert")
        old = asset.revision(number)
        checked = _checked(conn, asset.kind, asset.name, old.content)
        new = asset.latest.number + 1
        return _insert_revision(
            conn, asset_id, new, "draft", checked, author, f"revert of {old.number}"
        )


def clone_asset(
    store: Store, asset_id: int, *, number: int | None = None, author: str | None = None
) -> Asset:
    """A new asset "<name> - clone" (then "- clone 2", ...) of the same kind whose revision
    1 is a Draft with the content of revision `number` (default: the newest).

    Raises:
        AssetNotFound: no such asset or revision.
        AssetError: the content no longer validates.
    """
    source = get_asset(store, asset_id)
    revision = source.latest if number is None else source.revision(number)
    with store.engine.begin() as conn:
        name = _clone_name(conn, source)
        checked = _checked(conn, source.kind, name, revision.content)
        new_id = _insert_asset(conn, source.kind, name, author)
        origin = f"clone of {source.name}:{revision.number}"
        _insert_revision(conn, new_id, 1, "draft", checked, author, origin)
    return get_asset(store, new_id)


def archive_asset(store: Store, asset_id: int) -> Asset:
    """Archive asset `asset_id` and all its revisions. Irreversible: it can no longer be
    changed or selected in test suites (suites using it fail to save or run, saying so).

    Raises:
        AssetNotFound: no asset `asset_id`.
        AssetError: it is archived already.
    """
    with store.engine.begin() as conn:
        _locked(conn, asset_id, "archive")
        conn.execute(update(assets).where(assets.c.id == asset_id).values(archived_at=now_iso()))
        conn.execute(
            update(asset_revisions)
            .where(asset_revisions.c.asset_id == asset_id)
            .values(state="archived")
        )
    return get_asset(store, asset_id)


def get_asset(store: Store, asset_id: int) -> Asset:
    """Asset `asset_id` with its revisions.

    Raises:
        AssetNotFound: no asset `asset_id`.
    """
    with store.engine.connect() as conn:
        return _load(conn, asset_id)


def find_asset(store: Store, kind: AssetKind, name: str) -> Asset:
    """The `kind` asset named `name` (or whose `spec_name` is `name`).

    Raises:
        AssetNotFound: none has that name.
    """
    with store.engine.connect() as conn:
        asset_id = _id_by_name(conn, kind, name)
        if asset_id is None:
            raise AssetNotFound(f"no {KIND_LABELS[kind]} named {name!r}")
        return _load(conn, asset_id)


def list_assets(store: Store, kind: AssetKind, *, archived: bool = False) -> list[Asset]:
    """The `kind` assets by name: the active ones, or with `archived` the archived ones
    (the Archived tab)."""
    query = select(assets.c.id).where(assets.c.kind == kind).order_by(assets.c.name)
    query = query.where(
        assets.c.archived_at.is_not(None) if archived else assets.c.archived_at.is_(None)
    )
    with store.engine.connect() as conn:
        return [_load(conn, i) for i in conn.execute(query).scalars().all()]


def evaluation_users(store: Store) -> dict[str, list[str]]:
    """The "Simulated users using" column: per agent evaluation name, the names of the
    active simulated users whose newest revision attaches it (by name)."""
    using: dict[str, list[str]] = {}
    for user in list_assets(store, "simulated_user"):
        for evaluation in user.latest.content.get("evaluations", []):
            using.setdefault(evaluation, []).append(user.name)
    return using


def parse_revision_ref(text: str | int | None) -> int | None:
    """A test case's revision choice: `None`, `""`, `latest` or `Latest published` -> `None`
    (the Published revision); `4`, `Preview:4`, `published:4` -> 4.

    Raises:
        AssetError: anything else.
    """
    if text is None or isinstance(text, int):
        return text
    choice = text.strip().lower()
    if choice in ("", "latest", "latest published", "latest_published"):
        return None
    match = re.fullmatch(r"(?:(draft|preview|published|archived):)?\s*(\d+)", choice)
    if match is None or int(match.group(2)) < 1:
        raise AssetError(
            f"revision {text!r} is not a revision choice; use `Latest published` or a "
            "revision such as `Preview:4` (or just its number, 4)"
        )
    return int(match.group(2))


def runnable_revision(asset: Asset, number: int | None, *, where: str = "") -> Revision:
    """The revision a test case runs: `number` (which must be Preview or Published), or
    with `None` the Published one. `where` (e.g. " in test case 2") ends the subject of
    error messages.

    Raises:
        AssetError: the asset is archived, has no Published revision (with how to fix it),
            or revision `number` is missing or a Draft or Archived.
    """
    what = f"the {KIND_LABELS[asset.kind]} {asset.name!r}{where}"
    if asset.archived:
        raise AssetError(f"{what} is archived; choose another {KIND_LABELS[asset.kind]}")
    if number is None:
        if asset.published is None:
            fix = (
                "Publish it: a test case runs the Published revision of each agent "
                "evaluation attached"
                if asset.kind == "evaluation"
                else "Publish it, or select a Preview revision in the test case"
            )
            raise AssetError(f"{what} has no Published revision. {fix}")
        return asset.published
    revision = asset.revision(number)
    if revision.state not in RUNNABLE_STATES:
        raise AssetError(
            f"{what}: revision {revision.label} cannot run; move it to Preview (or publish "
            "it), or select Latest published"
        )
    return revision


# --- rows --------------------------------------------------------------------------------


def _check_name(kind: str, name: str) -> str:
    if kind not in ASSET_KINDS:
        raise AssetError(f"no asset kind {kind!r}; use one of {', '.join(ASSET_KINDS)}")
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise AssetError(f"a {KIND_LABELS[kind]} needs a name of 1 to {NAME_MAX} characters")
    return name


def _name_free(conn: Connection, kind: AssetKind, name: str) -> None:
    """Refuse `name` when another `kind` asset has it or the same `spec_name`."""
    query = select(assets.c.name, assets.c.archived_at).where(assets.c.kind == kind)
    for other, archived_at in conn.execute(query):
        if other == name or spec_name(other) == spec_name(name):
            archived = " (archived)" if archived_at else ""
            same = "that name" if other == name else f"a name that reads the same ({other!r})"
            raise AssetError(
                f"a {KIND_LABELS[kind]}{archived} has {same}; pick another name for {name!r}"
            )


def _checked(
    conn: Connection, kind: AssetKind, name: str, content: Mapping[str, Any]
) -> dict[str, Any]:
    """`validate_content`, plus: a simulated user's agent evaluations must exist; they are
    kept by asset id."""
    checked = validate_content(kind, name, content)
    if kind == "simulated_user":
        checked["evaluations"] = [
            _evaluation_id(conn, name, e) for e in checked.get("evaluations", [])
        ]
    return checked


def _evaluation_id(conn: Connection, user: str, evaluation: str) -> int:
    """The id of the active agent evaluation simulated user `user` attaches as
    `evaluation` (its name or `spec_name`)."""
    found = _id_by_name(conn, "evaluation", evaluation, active=True)
    if found is None:
        raise AssetError(
            f"simulated user {user!r} attaches the agent evaluation {evaluation!r}, which "
            "does not exist (or is archived); create it or remove it"
        )
    return found


def _id_by_name(
    conn: Connection, kind: AssetKind, name: str, *, active: bool = False
) -> int | None:
    query = select(assets.c.id, assets.c.name).where(assets.c.kind == kind)
    if active:
        query = query.where(assets.c.archived_at.is_(None))
    rows = conn.execute(query).all()
    exact = next((i for i, n in rows if n == name), None)
    return exact if exact is not None else next((i for i, n in rows if spec_name(n) == name), None)


def _insert_asset(conn: Connection, kind: AssetKind, name: str, author: str | None) -> int:
    row = {"kind": kind, "name": name, "created_at": now_iso(), "author": author}
    key = conn.execute(insert(assets).values(row)).inserted_primary_key
    assert key is not None
    return int(key[0])


def _insert_revision(
    conn: Connection,
    asset_id: int,
    number: int,
    state: RevisionState,
    content: dict[str, Any],
    author: str | None,
    origin: str | None,
) -> Revision:
    row = {
        "asset_id": asset_id,
        "number": number,
        "state": state,
        "content": json.dumps(content),
        "created_at": now_iso(),
        "author": author,
        "origin": origin,
    }
    conn.execute(insert(asset_revisions), row)
    return _load(conn, asset_id).revision(number)


def _set_state(conn: Connection, asset_id: int, number: int, state: RevisionState) -> None:
    conn.execute(
        update(asset_revisions)
        .where(asset_revisions.c.asset_id == asset_id, asset_revisions.c.number == number)
        .values(state=state)
    )


def _locked(conn: Connection, asset_id: int, what: str) -> Asset:
    """Asset `asset_id`, its row locked for this transaction (PostgreSQL; SQLite
    transactions hold the write lock already), refused when archived."""
    conn.execute(select(assets.c.id).where(assets.c.id == asset_id).with_for_update())
    asset = _load(conn, asset_id)
    if asset.archived:
        raise AssetError(
            f"cannot {what} {KIND_LABELS[asset.kind]} {asset.name!r}: it is archived "
            "(archiving cannot be undone; clone it to keep working on a copy)"
        )
    return asset


def _load(conn: Connection, asset_id: int) -> Asset:
    row = conn.execute(select(assets).where(assets.c.id == asset_id)).first()
    if row is None:
        raise AssetNotFound(f"no asset with id {asset_id}")
    revisions = conn.execute(
        select(asset_revisions)
        .where(asset_revisions.c.asset_id == asset_id)
        .order_by(asset_revisions.c.number)
    ).all()
    names: dict[int | str, str] = {}
    if row.kind == "simulated_user":
        query = select(assets.c.id, assets.c.name).where(assets.c.kind == "evaluation")
        names = {i: n for i, n in conn.execute(query)}
    return Asset(
        id=row.id,
        kind=row.kind,
        name=row.name,
        created_at=row.created_at,
        author=row.author,
        archived=row.archived_at is not None,
        revisions=tuple(_revision(r, names) for r in revisions),
    )


def _revision(row: Row[Any], names: Mapping[int | str, str]) -> Revision:
    """Revision `row`; a simulated user's attached evaluations named by `names` (by id)."""
    content = json.loads(row.content)
    attached: tuple[int | str, ...] = tuple(content.get("evaluations", ()))
    if attached:
        content["evaluations"] = [names.get(e, str(e)) for e in attached]
    return Revision(
        asset_id=row.asset_id,
        number=row.number,
        state=row.state,
        content=content,
        created_at=row.created_at,
        author=row.author,
        origin=row.origin,
        attached=attached,
    )


def _clone_name(conn: Connection, source: Asset) -> str:
    taken = set(conn.execute(select(assets.c.name).where(assets.c.kind == source.kind)).scalars())
    slugs = {spec_name(n) for n in taken}
    base = f"{source.name} - clone"[:NAME_MAX]
    name, n = base, 1
    while name in taken or spec_name(name) in slugs:
        n += 1
        name = f"{base} {n}"
    return name
