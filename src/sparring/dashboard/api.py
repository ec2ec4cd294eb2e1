"""The dashboard's JSON API under `/api`: everything the pages do, for scripts (its
OpenAPI document is `/api/openapi.json`).

Reads need the `view` right (export: `export`); writes the right the store's roles give
(`sparring.store.accounts.can`). A script signs in with `POST /api/session` (when the
dashboard has accounts) and sends JSON, which needs no CSRF token.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request, Response
from pydantic import BaseModel

from sparring.dashboard.access import SignInNeeded, allowed, principal, session_of
from sparring.dashboard.auth import Principal
from sparring.dashboard.catalog import Filters, SuiteRow
from sparring.dashboard.compare import suite_diff
from sparring.dashboard.state import Dashboard
from sparring.dashboard.views import label, metrics_table
from sparring.store.reading import RunSummary
from sparring.store.suites import SuiteCase

router = APIRouter(prefix="/api", tags=["dashboard"])
Viewer = Annotated[Principal, Depends(allowed("view"))]
Exporter = Annotated[Principal, Depends(allowed("export"))]


class RunOut(BaseModel):
    """One run of a suite: when, its store status, trials per status, pass rate (0-1),
    duration (ms), and whether it is the baseline."""

    id: str
    started_at: str
    status: str
    trial_counts: dict[str, int]
    pass_rate: float | None
    duration_ms: float | None
    baseline: bool


class CaseOut(BaseModel):
    """A saved suite's test case, as `PUT /api/suites/{id}` takes it back: agent and
    simulated user (asset ids), their revisions (`null`: Latest published), the simulated
    user's goal and criteria, and the advanced settings (timeout in seconds, max turns
    (`null`: no limit of its own), session count)."""

    agent_id: int
    user_id: int
    agent_revision: int | None
    user_revision: int | None
    goal: str | None
    criteria: list[str]
    timeout_s: float
    max_turns: int | None
    sessions: int


class SuiteOut(BaseModel):
    """One suite as the list shows it: `saved` when made in the dashboard (else made of
    test files), status with its reason, `resumable` when its interrupted latest run can be
    resumed, `runs` newest first, and a saved suite's test `cases` (`null` for test files)."""

    id: str
    name: str
    saved: bool
    status: str
    status_label: str
    last_run: str | None
    duration_ms: float | None
    agents: list[str]
    users: list[str]
    reason: str | None
    overridden: bool
    resumable: bool
    runs: list[RunOut]
    cases: list[CaseOut] | None


class ConversationOut(BaseModel):
    """One conversation of a suite; `score` 0-1; `insights` by id (`evaluation.insight`)
    with value, reasoning and evidence; `evaluations_passed` `yes`, `no`, `pending` (still
    scoring) or `none` (no verdict); a saved suite's conversation names its agent and
    simulated user with the revisions it ran (`Published:3`); `overridden` when a person
    corrected one of its verdicts or insights."""

    run_id: str
    scenario_id: str
    name: str
    trial: int
    status: str
    reason: str | None
    agent: str | None
    agent_revision: str | None
    user: str | None
    user_revision: str | None
    overridden: bool
    duration_ms: float | None
    score: float | None
    evaluations_passed: str
    insights: dict[str, dict[str, Any]]


class SessionIn(BaseModel):
    """Sign-in: account name and password."""

    name: str
    password: str


class SessionOut(BaseModel):
    """Who is signed in (`None` when no one), with the session's CSRF token for forms."""

    name: str | None
    role: str | None
    csrf_token: str


def _dashboard(request: Request) -> Dashboard:
    return request.app.state.dashboard


def run_out(run: RunSummary) -> RunOut:
    """`run` as the API gives it."""
    return RunOut(
        id=run.id,
        started_at=run.started_at,
        status=run.status,
        trial_counts=run.trial_counts,
        pass_rate=run.pass_rate,
        duration_ms=run.duration_ms,
        baseline=run.baseline,
    )


def suite_out(suite: SuiteRow) -> SuiteOut:
    """`suite` as the API gives it."""
    return SuiteOut(
        id=suite.id,
        name=suite.name,
        saved=suite.saved is not None,
        status=suite.status,
        status_label=label(suite.status),
        reason=suite.reason,
        overridden=suite.overridden,
        resumable=suite.resumable,
        last_run=suite.last_run,
        duration_ms=suite.duration_ms,
        agents=suite.agents,
        users=suite.users,
        runs=[run_out(r) for r in suite.runs],
        cases=None if suite.saved is None else [case_out(c) for c in suite.saved.cases],
    )


def case_out(case: SuiteCase) -> CaseOut:
    """Test case `case` as the API gives it."""
    return CaseOut(
        agent_id=case.agent_id,
        user_id=case.user_id,
        agent_revision=case.agent_revision,
        user_revision=case.user_revision,
        goal=case.goal,
        criteria=list(case.criteria),
        timeout_s=case.timeout_s,
        max_turns=case.max_turns,
        sessions=case.sessions,
    )


@router.get("/suites")
async def list_suites(
    request: Request,
    who: Viewer,
    since: str = "",
    until: str = "",
    agent: str = "",
    user: str = "",
) -> list[SuiteOut]:
    """Every suite, newest latest run first; filters as the list's (dates `YYYY-MM-DD`)."""
    filters = Filters(since=since, until=until, agent=agent, user=user)
    return [suite_out(s) for s in _dashboard(request).suites(filters)]


@router.get("/suites/{suite_id}")
async def get_suite(request: Request, who: Viewer, suite_id: str) -> SuiteOut:
    """One suite with its runs and, when its latest run did not pass, why."""
    return suite_out(_dashboard(request).suite(suite_id))


@router.get("/suites/{suite_id}/conversations")
async def suite_conversations(
    request: Request, who: Viewer, suite_id: str
) -> list[ConversationOut]:
    """Every conversation of the suite's latest 20 runs, newest run first (the Transcripts
    and Metrics tabs); the full transcripts are in `GET /api/runs/{run_id}`."""
    dashboard = _dashboard(request)
    suite = dashboard.suite(suite_id)
    rows = dashboard.conversations(suite)
    table = metrics_table(rows)
    return [
        ConversationOut(
            run_id=row.run_id,
            scenario_id=row.scenario_id,
            name=row.name,
            trial=row.trial,
            status=row.status,
            reason=row.reason,
            agent=row.case and row.case.agent.name,
            agent_revision=row.case and row.case.agent.label,
            user=row.case and row.case.user.name,
            user_revision=row.case and row.case.user.label,
            overridden=row.overridden,
            duration_ms=row.duration_ms,
            score=row.result.score if row.result else None,
            evaluations_passed=row.evaluations_passed,
            insights={k: i.model_dump(mode="json") for k, i in cells.items()},
        )
        for row, cells in table.rows
    ]


@router.get("/suites/{suite_id}/diff")
async def diff_suite_runs(
    request: Request, who: Viewer, suite_id: str, base: str = "", run: str = ""
) -> dict[str, Any]:
    """Run `run` (default: the latest finished) against `base` (default: the run marked
    baseline, else the one before), as `sparring diff` compares them."""
    dashboard = _dashboard(request)
    compared = suite_diff(
        dashboard, dashboard.suite(suite_id), base_id=base or None, run_id=run or None
    )
    diff = compared.diff
    return {
        "base": compared.base.id,
        "run": compared.run.id,
        "scenarios": [
            {**vars(s), "change": s.change, "significant": s.significant, "regressed": s.regressed}
            for s in diff.scenarios
        ],
        "regressions": [s.scenario_id for s in diff.regressions],
        "base_cost_usd": diff.base_cost_usd,
        "run_cost_usd": diff.run_cost_usd,
        "base_latency_ms": diff.base_latency_ms,
        "run_latency_ms": diff.run_latency_ms,
    }


@router.get("/runs/{run_id}")
async def get_run(request: Request, who: Viewer, run_id: str) -> dict[str, Any]:
    """The run's JSON report (as `sparring run --output` writes it, overrides applied)."""
    return _dashboard(request).run(run_id).report_dict()


@router.get("/runs/{run_id}/export", response_class=Response)
async def export_run(
    request: Request, who: Exporter, run_id: str, format: Literal["xlsx", "csv", "json"]
) -> Response:
    """The run as a download: Excel (`xlsx`), a ZIP of one CSV per sheet (`csv`), or the
    JSON report (`json`); sheets Runs, Insights and Transcript."""
    from sparring.dashboard.exporting import export

    body, media_type, filename = export(_dashboard(request).run(run_id), format)
    disposition = f'attachment; filename="{filename}"'
    return Response(body, media_type=media_type, headers={"Content-Disposition": disposition})


@router.get("/suites/{suite_id}/export", response_class=Response)
async def export_suite(
    request: Request, who: Exporter, suite_id: str, format: Literal["xlsx", "csv", "json"]
) -> Response:
    """Every conversation of the suite (its latest 20 runs, as the results page lists
    them) as a download: Excel (`xlsx`), a ZIP of one CSV per sheet (`csv`), or JSON
    (`json`: `{"suite", "runs": [each run's JSON report]}`); sheets Runs, Insights,
    Transcript and Rates, each row naming its run. 404 before the suite's first run."""
    from sparring.dashboard.exporting import export_suite as exported
    from sparring.dashboard.state import NotFound

    dashboard = _dashboard(request)
    suite = dashboard.suite(suite_id)
    if not suite.runs:
        raise NotFound(f"suite {suite.name!r} has not run yet: nothing to export")
    body, media_type, filename = exported(suite.name, dashboard.results(suite), format)
    disposition = f'attachment; filename="{filename}"'
    return Response(body, media_type=media_type, headers={"Content-Disposition": disposition})


@router.get("/session")
async def whoami(request: Request) -> SessionOut:
    """Who is signed in, and the session's CSRF token (for form posts)."""
    try:
        who: Principal | None = principal(request)
    except SignInNeeded:
        who = None
    return SessionOut(
        name=who and who.name, role=who and who.role, csrf_token=session_of(request).csrf
    )


@router.post("/session")
async def sign_in(request: Request, body: SessionIn, response: Response) -> SessionOut:
    """Sign in (the session cookie is set on the response).

    401 when the name and password do not match an account.
    """
    from fastapi import HTTPException

    from sparring.dashboard.app import set_session_cookie

    dashboard = _dashboard(request)
    who = dashboard.authenticate(body.name, body.password)
    if who is None:
        raise HTTPException(status_code=401, detail="wrong name or password")
    token, session = dashboard.sessions.open(who)
    set_session_cookie(response, token)
    return SessionOut(name=who.name, role=who.role, csrf_token=session.csrf)


@router.delete("/session")
async def sign_out(request: Request) -> dict[str, bool]:
    """Sign out: the session ends (its cookie no longer signs anyone in)."""
    from sparring.dashboard.auth import SESSION_COOKIE

    _dashboard(request).sessions.close(request.cookies.get(SESSION_COOKIE))
    return {"signed_out": True}
