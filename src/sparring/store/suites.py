"""Test suites: named sets of test cases, each pairing an agent (revision) with a simulated
user (revision), and their runs.

A suite runs through the normal runner: `resolve_suite` picks the revisions and builds one
`SimulatedScenario` per test case (scenario id `case-N`, the agent's `target:` spec on it,
the simulated user and its agent evaluations resolved); `start_suite_run` claims the suite
(one run of a suite at a time), `link_suite_run` ties the run the runner started to it,
`fail_suite_run` records why a run could not start. The statuses (suite and conversation)
follow the platform's rules; see `sparring.store.suite_status`.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Row, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from sparring.errors import UserError
from sparring.store.asset_specs import (
    KIND_LABELS,
    AssetError,
    AssetKind,
    evaluation_spec,
    simulated_user_spec,
    target_spec,
)
from sparring.store.assets import Asset, Revision, find_asset, get_asset, runnable_revision
from sparring.store.database import Store
from sparring.store.provenance import process_alive
from sparring.store.reading import effective_status
from sparring.store.schema import overrides, runs, scenarios, shards, suite_runs, suites, trials
from sparring.store.writer import now_iso

if TYPE_CHECKING:
    from sparring.scenario.kinds import SimulatedScenario

DEFAULT_TIMEOUT_S = 600.0
"""Advanced settings: how long one conversation may run, in seconds."""
DEFAULT_SESSIONS = 1
"""Advanced settings: conversations per test case."""
UNLIMITED_TURNS = 50
"""Turns a conversation may take when a test case leaves Max turns empty (the most a
simulated scenario allows)."""
DEFAULT_GOAL = (
    "Get what you came for, as your persona describes; stay in the conversation until the "
    "other side has helped you or says goodbye."
)
"""The simulated user's goal when a test case gives none (its system prompt, or else its
description, says what it wants)."""


class SuiteError(UserError):
    """A suite cannot be saved, run or deleted; the message says why and how to fix it."""


class SuiteNotFound(SuiteError):
    """No test suite with that id or name."""


class SuiteBusy(SuiteError):
    """The suite is In progress: it cannot run again (or be deleted) until it ends."""


@dataclass(frozen=True, kw_only=True)
class SuiteCase:
    """A test case: the agent under test and the simulated user (asset ids), the revision
    of each (`None`: Latest published; a number: that revision, which must be Preview or
    Published), an optional `goal` for the simulated user and `criteria` the judge decides
    besides the attached agent evaluations, and the advanced settings: `timeout_s` per
    conversation (seconds), `max_turns` (`None`: up to `UNLIMITED_TURNS`), `sessions`
    (conversations to run)."""

    agent_id: int
    user_id: int
    agent_revision: int | None = None
    user_revision: int | None = None
    goal: str | None = None
    criteria: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_turns: int | None = None
    sessions: int = DEFAULT_SESSIONS

    def problem(self) -> str | None:
        """What is wrong with the settings, or `None`."""
        if not 0 < self.timeout_s <= 86_400:
            return f"timeout {self.timeout_s:g} s is out of range: use 1 to 86400 seconds"
        if self.max_turns is not None and not 1 <= self.max_turns <= UNLIMITED_TURNS:
            return f"max turns {self.max_turns} is out of range: use 1 to {UNLIMITED_TURNS}"
        if not 1 <= self.sessions <= 100:
            return f"session count {self.sessions} is out of range: use 1 to 100"
        if any(not c.strip() or len(c) > 500 for c in self.criteria):
            return "a criterion is blank or longer than 500 characters"
        return None


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A saved test suite: `id`, unique `name`, its test `cases` in order, when it was
    created and last saved (ISO 8601 UTC), and by whom."""

    id: int
    name: str
    cases: tuple[SuiteCase, ...]
    created_at: str
    updated_at: str
    author: str | None


@dataclass(frozen=True, kw_only=True)
class RevisionChoice:
    """The revision of an asset a run used: asset id and name, revision number and the
    state it had then."""

    asset_id: int
    name: str
    number: int
    state: str

    @property
    def label(self) -> str:
        """`State:number`, e.g. `Published:3`."""
        return f"{self.state.capitalize()}:{self.number}"


@dataclass(frozen=True, kw_only=True)
class ResolvedCase:
    """Test case `number` (1-based) as run: its scenario id (`case-N`) and the revisions of
    the agent, the simulated user and each attached agent evaluation."""

    number: int
    scenario_id: str
    agent: RevisionChoice
    user: RevisionChoice
    evaluations: tuple[RevisionChoice, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ResolvedSuite:
    """A suite ready to run: its `cases` with their revisions and one `SimulatedScenario`
    per case (`scenarios[i]` for `cases[i]`), each with its agent's `target`."""

    suite: Suite
    cases: tuple[ResolvedCase, ...]
    scenarios: list[SimulatedScenario] = field(default_factory=list["SimulatedScenario"])


def save_suite(
    store: Store,
    name: str,
    cases: Sequence[SuiteCase],
    *,
    suite_id: int | None = None,
    author: str | None = None,
) -> Suite:
    """Save a new suite (`suite_id` `None`; its status is then Not run) or replace suite
    `suite_id`'s name and cases (its runs stay).

    Raises:
        SuiteError: "Failed to create test suite: ..." when the name is blank, too long or
            taken, there is no test case, a setting is out of range, an asset is missing,
            archived or of the wrong kind, or a chosen revision cannot run (e.g. the agent
            or simulated user has no Published revision: publish it, or select a Preview
            revision in the test case).
        SuiteNotFound: no suite `suite_id`.
    """
    name = name.strip()
    if not name or len(name) > 255:
        raise SuiteError(f"{_FAILED}: the name must have 1 to 255 characters")
    if not cases:
        raise SuiteError(f"{_FAILED}: add at least one test case")
    for number, case in enumerate(cases, start=1):
        problem = case.problem()
        if problem is not None:
            raise SuiteError(f"{_FAILED}: test case {number}: {problem}")
        _case_assets(store, case, number)
    data = json.dumps([asdict(c) for c in cases])
    now = now_iso()
    try:
        with store.engine.begin() as conn:
            if suite_id is None:
                row = {"name": name, "cases": data, "created_at": now, "updated_at": now}
                key = conn.execute(insert(suites).values(row | {"author": author}))
                key = key.inserted_primary_key
                assert key is not None
                suite_id = int(key[0])
            else:
                _suite_row(conn, suite_id)
                values = {"name": name, "cases": data, "updated_at": now, "author": author}
                conn.execute(update(suites).where(suites.c.id == suite_id).values(values))
    except IntegrityError:
        raise SuiteError(
            f"{_FAILED}: a test suite named {name!r} exists; pick another name"
        ) from None
    return get_suite(store, suite_id)


_FAILED = "Failed to create test suite"


def _case_assets(
    store: Store, case: SuiteCase, number: int, *, failed: str = _FAILED
) -> tuple[Asset, Asset]:
    """The agent and simulated user of test case `number`, their revisions runnable;
    `failed` starts the error message."""
    where = f" in test case {number}"
    try:
        agent = _asset_of(store, case.agent_id, "agent", where)
        user = _asset_of(store, case.user_id, "simulated_user", where)
        runnable_revision(agent, case.agent_revision, where=where)
        runnable_revision(user, case.user_revision, where=where)
    except AssetError as e:
        raise SuiteError(f"{failed}: {e}") from None
    return agent, user


def _asset_of(store: Store, asset_id: int, kind: AssetKind, where: str) -> Asset:
    asset = get_asset(store, asset_id)
    if asset.kind != kind:
        what = ("an " if kind == "agent" else "a ") + KIND_LABELS[kind]
        raise AssetError(f"{asset.name!r}{where} is not {what}; select {what}")
    return asset


def get_suite(store: Store, suite_id: int) -> Suite:
    """Suite `suite_id`.

    Raises:
        SuiteNotFound: no such suite.
    """
    with store.engine.connect() as conn:
        return _suite(_suite_row(conn, suite_id))


def all_suites(store: Store) -> list[Suite]:
    """Every suite, by name."""
    with store.engine.connect() as conn:
        return [_suite(r) for r in conn.execute(select(suites).order_by(suites.c.name))]


def delete_suite(store: Store, suite_id: int) -> list[str]:
    """Delete suite `suite_id` with all its runs and their results and overrides; returns
    the ids of the runs deleted.

    Raises:
        SuiteNotFound: no such suite.
        SuiteBusy: it is In progress (its run would go on writing).
    """
    with store.engine.begin() as conn:
        _suite_row(conn, suite_id, lock=True)
        busy = _busy_claim(conn, suite_id)
        if busy is not None:
            raise SuiteBusy(f"the test suite is In progress ({busy}); delete it once it ends")
        run_ids = [
            r
            for r in conn.execute(
                select(suite_runs.c.run_id).where(suite_runs.c.suite_id == suite_id)
            ).scalars()
            if r is not None
        ]
        for table in (overrides, trials, scenarios, shards):
            conn.execute(delete(table).where(table.c.run_id.in_(run_ids)))
        conn.execute(delete(suite_runs).where(suite_runs.c.suite_id == suite_id))
        conn.execute(delete(runs).where(runs.c.id.in_(run_ids)))
        conn.execute(delete(suites).where(suites.c.id == suite_id))
    return run_ids


def resolve_suite(store: Store, suite_id: int) -> ResolvedSuite:
    """Suite `suite_id` ready to run: the revisions each test case selects and one
    `SimulatedScenario` per case (see `case_scenario`).

    Raises:
        SuiteNotFound: no such suite.
        SuiteError: an asset is archived or a chosen revision cannot run (as `save_suite`
            says), or an attached agent evaluation has no Published revision.
    """
    suite = get_suite(store, suite_id)
    resolved: list[ResolvedCase] = []
    built: list[SimulatedScenario] = []
    for number, case in enumerate(suite.cases, start=1):
        one, scenario = _resolve_case(store, case, number)
        resolved.append(one)
        built.append(scenario)
    return ResolvedSuite(suite=suite, cases=tuple(resolved), scenarios=built)


def _resolve_case(
    store: Store, case: SuiteCase, number: int
) -> tuple[ResolvedCase, SimulatedScenario]:
    agent, user = _case_assets(store, case, number, failed="the test suite cannot run")
    where = f" in test case {number}"
    agent_revision = runnable_revision(agent, case.agent_revision, where=where)
    user_revision = runnable_revision(user, case.user_revision, where=where)
    evaluations: list[tuple[Asset, Revision]] = []
    for ref in user_revision.attached:
        try:
            asset = (
                get_asset(store, ref)
                if isinstance(ref, int)
                else find_asset(store, "evaluation", ref)
            )
            revision = runnable_revision(asset, None, where=f" attached to {user.name!r}")
        except AssetError as e:
            raise SuiteError(f"test case {number} cannot run: {e}") from None
        evaluations.append((asset, revision))
    resolved = ResolvedCase(
        number=number,
        scenario_id=f"case-{number}",
        agent=_choice(agent, agent_revision),
        user=_choice(user, user_revision),
        evaluations=tuple(_choice(a, r) for a, r in evaluations),
    )
    scenario = case_scenario(
        case,
        resolved,
        agent=(agent, agent_revision),
        user=(user, user_revision),
        evaluations=evaluations,
    )
    return resolved, scenario


def _choice(asset: Asset, revision: Revision) -> RevisionChoice:
    return RevisionChoice(
        asset_id=asset.id, name=asset.name, number=revision.number, state=revision.state
    )


def case_scenario(
    case: SuiteCase,
    resolved: ResolvedCase,
    *,
    agent: tuple[Asset, Revision],
    user: tuple[Asset, Revision],
    evaluations: Sequence[tuple[Asset, Revision]],
) -> SimulatedScenario:
    """The `SimulatedScenario` of a test case: id `case-N`, named "<agent> / <simulated
    user>", the agent revision's `target`, the simulated user (`user`, `simulated_user`)
    and its agent evaluations, the case's goal (default `DEFAULT_GOAL`) and criteria,
    `trials` = sessions, `timeout_s`, `max_turns`.

    With no criteria the judge decides nothing else: without agent evaluations the one
    check is that the conversation ended naturally (the simulated user reached its goal or
    gave up; reaching Max turns fails it), with them that it ran to its end (so only the
    evaluations decide, as the platform's statuses say).
    """
    from sparring.scenario.checks import EndReasonCheck
    from sparring.scenario.kinds import SimulatedScenario

    user_spec = simulated_user_spec(*user)
    specs = [evaluation_spec(a, r) for a, r in evaluations]
    ends = ["goal_achieved", "user_gave_up"] + (["max_turns"] if specs else [])
    return SimulatedScenario(
        id=resolved.scenario_id,
        name=f"{agent[0].name} / {user[0].name}",
        description=user_spec.description or None,
        target=target_spec(agent[1]),
        goal=case.goal or DEFAULT_GOAL,
        user=user_spec.name,
        simulated_user=user_spec,
        evaluations=list(specs),
        criteria=list(case.criteria),  # type: ignore[arg-type]  # texts, read as criteria
        checks=[] if case.criteria else [EndReasonCheck(value=ends)],  # type: ignore[arg-type]
        trials=case.sessions,
        timeout_s=case.timeout_s,
        max_turns=case.max_turns or UNLIMITED_TURNS,
    )


# --- runs of a suite ----------------------------------------------------------------------


def start_suite_run(store: Store, resolved: ResolvedSuite, *, author: str | None = None) -> int:
    """Claim suite `resolved.suite` for a run by this process, keeping the revisions it
    resolved; returns the claim's id for `link_suite_run` / `fail_suite_run`. One
    transaction: of two starts at once, one gets SuiteBusy.

    Raises:
        SuiteNotFound: the suite was deleted.
        SuiteBusy: the suite is In progress (a run linked to it is running, or a claim by a
            live process has no run yet); wait until it is no longer In progress.
    """
    suite_id = resolved.suite.id
    with store.engine.begin() as conn:
        _suite_row(conn, suite_id, lock=True)
        busy = _busy_claim(conn, suite_id)
        if busy is not None:
            raise SuiteBusy(
                f"the test suite {resolved.suite.name!r} is In progress ({busy}); a suite "
                "runs once at a time: wait until it is no longer In progress"
            )
        row = {
            "suite_id": suite_id,
            "started_at": now_iso(),
            "cases": json.dumps([asdict(c) for c in resolved.cases]),
            "author": author,
            "host": socket.gethostname(),
            "pid": os.getpid(),
        }
        key = conn.execute(insert(suite_runs).values(row)).inserted_primary_key
    assert key is not None
    return int(key[0])


def link_suite_run(store: Store, claim_id: int, run_id: str) -> None:
    """Tie run `run_id` (the runner's, from its `RunStarted` event) to claim `claim_id`:
    the suite's status now follows that run.

    Raises:
        SuiteError: no claim `claim_id`, or it already has a run or failed.
    """
    with store.engine.begin() as conn:
        done = conn.execute(
            update(suite_runs)
            .where(
                suite_runs.c.id == claim_id,
                suite_runs.c.run_id.is_(None),
                suite_runs.c.error.is_(None),
            )
            .values(run_id=run_id)
        )
    if not done.rowcount:
        raise SuiteError(f"suite run claim {claim_id} is unknown, already linked or failed")


def fail_suite_run(store: Store, claim_id: int, reason: str) -> None:
    """Record that claim `claim_id`'s run could not start, and why (`reason`, shown with
    the suite's Failed status); the suite may run again."""
    with store.engine.begin() as conn:
        conn.execute(update(suite_runs).where(suite_runs.c.id == claim_id).values(error=reason))


# --- rows ---------------------------------------------------------------------------------


def _busy_claim(conn: Connection, suite_id: int) -> str | None:
    """What keeps suite `suite_id` In progress (`run ID started at ...`), or `None`."""
    query = (
        select(
            suite_runs, runs.c.status, runs.c.host.label("run_host"), runs.c.pid.label("run_pid")
        )
        .outerjoin(runs, runs.c.id == suite_runs.c.run_id)
        .where(suite_runs.c.suite_id == suite_id)
        .order_by(suite_runs.c.id.desc())
        .limit(1)
    )
    row = conn.execute(query).first()
    if row is None or not claim_running(row):
        return None
    return f"run {row.run_id or '(starting)'} started at {row.started_at}"


def claim_running(row: Row[Any]) -> bool:
    """Whether a `suite_runs` row joined with its run's `status`, `run_host`, `run_pid`
    is In progress: a started run still running, or no run yet by a live process."""
    if row.error is not None:
        return False
    if row.run_id is None:
        return process_alive(row.host, row.pid) is not False
    if row.status is None:  # the run row is not written yet
        return process_alive(row.host, row.pid) is not False
    return effective_status(row.status, row.run_host, row.run_pid) == "running"


def _suite_row(conn: Connection, suite_id: int, *, lock: bool = False) -> Row[Any]:
    query = select(suites).where(suites.c.id == suite_id)
    row = conn.execute(query.with_for_update() if lock else query).first()
    if row is None:
        raise SuiteNotFound(f"no test suite with id {suite_id}")
    return row


def _suite(row: Row[Any]) -> Suite:
    cases = tuple(_case(c) for c in json.loads(row.cases))
    return Suite(
        id=row.id,
        name=row.name,
        cases=cases,
        created_at=row.created_at,
        updated_at=row.updated_at,
        author=row.author,
    )


def _case(data: dict[str, Any]) -> SuiteCase:
    return SuiteCase(
        agent_id=data["agent_id"],
        user_id=data["user_id"],
        agent_revision=data.get("agent_revision"),
        user_revision=data.get("user_revision"),
        goal=data.get("goal"),
        criteria=tuple(data.get("criteria", ())),
        timeout_s=data.get("timeout_s", DEFAULT_TIMEOUT_S),
        max_turns=data.get("max_turns"),
        sessions=data.get("sessions", DEFAULT_SESSIONS),
    )


def resolved_cases(data: str) -> tuple[ResolvedCase, ...]:
    """`suite_runs.cases` (JSON) read back."""
    return tuple(
        ResolvedCase(
            number=c["number"],
            scenario_id=c["scenario_id"],
            agent=RevisionChoice(**c["agent"]),
            user=RevisionChoice(**c["user"]),
            evaluations=tuple(RevisionChoice(**e) for e in c["evaluations"]),
        )
        for c in json.loads(data)
    )
