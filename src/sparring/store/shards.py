"""Runs made of slices: `sparring run --shard K/N --run-id ID` in N processes (CI jobs), each
running the K-th slice of the trials into run ID of one shared store.

The rule: each slice records its own start and end in `shards`. The first slice to start
creates the run (its row and planned scenarios); later ones add any scenario it lacks and
take the run's process columns, so the run reads as `running` while its newest slice runs.
The slice that ends last, when all N have ended, ends the run: `finished` when every slice
finished, else `interrupted` (with every trial any slice stored); until then the run stays
`running` (`interrupted` once the process that last joined it is gone). Exit code: the
highest of the slices'.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from sparring.errors import UserError
from sparring.results import RunResult
from sparring.store.database import Store
from sparring.store.schema import runs, scenarios, shards
from sparring.store.writer import RunRecord, now_iso, run_rows


def check_shard(store: Store, run_id: str, shard: tuple[int, int]) -> None:
    """Refuse to run slice `shard` (`(K, N)`) into run `run_id` when it cannot join it.

    Raises:
        UserError: run `run_id` exists but was not run in slices, was sliced into another
            N, or already has slice K.
    """
    number, of = shard
    with store.engine.connect() as conn:
        exists = conn.execute(select(runs.c.id).where(runs.c.id == run_id)).first()
        rows = conn.execute(
            select(shards.c.shard, shards.c.shards, shards.c.status).where(
                shards.c.run_id == run_id
            )
        ).all()
    if exists is not None and not rows:
        raise UserError(
            f"run {run_id} is already stored and was not run in slices; give --run-id a new id"
        )
    if rows and rows[0].shards != of:
        raise UserError(
            f"run {run_id} is being run in {rows[0].shards} slices, not {of}: give --shard "
            f"K/{rows[0].shards}, or a new --run-id"
        )
    done = next((r for r in rows if r.shard == number), None)
    if done is not None:
        raise UserError(
            f"slice {number}/{of} of run {run_id} already ran ({done.status}); each slice "
            "runs once into a run (give a new --run-id to run them all again)"
        )


def join_shard(
    store: Store,
    planned: RunResult,
    *,
    record: RunRecord,
    shard: tuple[int, int],
    order: Sequence[str],
) -> None:
    """Record slice `shard` (`(K, N)`) of run `planned.run_id` as started by this process,
    creating the run (as `record` describes it) if no slice did yet, and adding the
    scenarios of `planned` it lacks at their place in `order` (every scenario id of the
    run, in load order, as each slice loads them); one transaction that
    holds the run row's write lock, retried once when another slice created the run at
    the same moment.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the store failed (slice K recorded twice included).
    """
    run_row, scenario_rows = run_rows(planned, record=record)
    place = {scenario_id: i for i, scenario_id in enumerate(order)}
    for row in scenario_rows:
        row["position"] = place.get(str(row["scenario_id"]), len(place))
    for attempt in (1, 2):
        try:
            with store.engine.begin() as conn:
                _join(conn, run_row, scenario_rows, shard)
            return
        except IntegrityError:
            if attempt == 2:
                raise


def _join(
    conn: Connection,
    run_row: dict[str, object],
    scenario_rows: list[dict[str, object]],
    shard: tuple[int, int],
) -> None:
    run_id = run_row["id"]
    query = select(runs.c.id).where(runs.c.id == run_id).with_for_update()
    if conn.execute(query).first() is None:
        conn.execute(insert(runs), run_row)
    else:
        process = {k: run_row[k] for k in ("host", "pid")}
        conn.execute(update(runs).where(runs.c.id == run_id).values(status="running", **process))
    known = set(
        conn.execute(select(scenarios.c.scenario_id).where(scenarios.c.run_id == run_id)).scalars()
    )
    new = [r for r in scenario_rows if r["scenario_id"] not in known]
    if new:
        conn.execute(insert(scenarios), new)
    started = {"run_id": run_id, "shard": shard[0], "shards": shard[1], "status": "running"}
    conn.execute(
        insert(shards),
        started | {"started_at": now_iso(), "host": run_row["host"], "pid": run_row["pid"]},
    )


def end_shard(store: Store, run_id: str, shard: int, *, status: str, exit_code: int | None) -> None:
    """Record slice `shard` of run `run_id` as ended (`status` `finished` or
    `interrupted`); when it is the last of the run's slices to end, end the run too (see
    the module docstring). One transaction holding the run row's write lock.

    Raises:
        sqlalchemy.exc.SQLAlchemyError: the store failed.
    """
    with store.engine.begin() as conn:
        head = conn.execute(
            select(runs.c.started_at, runs.c.head).where(runs.c.id == run_id).with_for_update()
        ).one()
        ended = {"status": status, "finished_at": now_iso(), "exit_code": exit_code}
        conn.execute(
            update(shards).where(shards.c.run_id == run_id, shards.c.shard == shard).values(ended)
        )
        rows = conn.execute(select(shards).where(shards.c.run_id == run_id)).all()
        if len(rows) < rows[0].shards or any(r.status == "running" for r in rows):
            return
        whole = json.loads(head.head) | {"duration_ms": _elapsed_ms(head.started_at)}
        merged = {
            "status": "finished" if all(r.status == "finished" for r in rows) else "interrupted",
            "finished_at": now_iso(),
            "exit_code": max((r.exit_code for r in rows if r.exit_code is not None), default=None),
            "head": json.dumps(whole),
        }
        conn.execute(update(runs).where(runs.c.id == run_id).values(merged))


def _elapsed_ms(started_at: str) -> float:
    """Milliseconds from `started_at` (ISO 8601) to now."""
    return (
        datetime.fromisoformat(now_iso()) - datetime.fromisoformat(started_at)
    ).total_seconds() * 1000
