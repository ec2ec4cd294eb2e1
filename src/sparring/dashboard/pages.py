"""The dashboard's pages over stored runs: suites list, suite results (Transcripts and
Metrics tabs, history chart, export), one conversation, diff against the baseline, sign in.

Pages are rendered on the server (Jinja2, autoescaped: text from agents, users, judges and
test files never becomes markup); htmx swaps parts of them (tabs, the conversation read,
the refresh while a run is in progress). Every page works without JavaScript too.
"""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Form, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, PackageLoader, StrictUndefined

from sparring.dashboard.access import SignInNeeded, allowed, principal, session_of
from sparring.dashboard.auth import CSRF_FIELD, Principal
from sparring.dashboard.catalog import Filters, SuiteRow
from sparring.dashboard.charts import history_chart
from sparring.dashboard.compare import side_by_side, suite_diff
from sparring.dashboard.state import RUNS_SHOWN, Dashboard, NotFound
from sparring.dashboard.views import (
    ConversationDetail,
    conversation_detail,
    label,
    metrics_table,
)
from sparring.reports import percent

router = APIRouter(include_in_schema=False)
Viewer = Annotated[Principal, Depends(allowed("view"))]


@cache
def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("sparring.dashboard", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["label"] = label
    env.filters["seconds"] = _seconds
    env.filters["percent"] = percent
    return env


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f} s"


def render(request: Request, template: str, context: dict[str, Any]) -> HTMLResponse:
    """`template` rendered with `context`, plus who is signed in (`who`, `None` when no
    one), the session's CSRF token and its form field name."""
    try:
        who: Principal | None = principal(request)
    except SignInNeeded:  # the sign-in and error pages still render
        who = None
    page = (
        _environment()
        .get_template(template)
        .render(
            request=request,
            who=who,
            csrf=session_of(request).csrf,
            csrf_field=CSRF_FIELD,
            **context,
        )
    )
    return HTMLResponse(page)


def _dashboard(request: Request) -> Dashboard:
    return request.app.state.dashboard


@router.get("/")
async def home() -> Response:
    """The suites list is the home page."""
    return RedirectResponse("/suites", status_code=303)


@router.get("/suites")
async def suites_page(
    request: Request,
    who: Viewer,
    since: str = "",
    until: str = "",
    agent: str = "",
    user: str = "",
) -> HTMLResponse:
    """The suites list: name, last run, status with its reason, duration; filters."""
    filters = Filters(since=since, until=until, agent=agent, user=user)
    every = _dashboard(request).suites()
    context = {
        "suites": [s for s in every if filters.keep(s)],
        "filters": filters,
        "agents": sorted({a for s in every for a in s.agents}),
        "users": sorted({u for s in every for u in s.users}),
    }
    return render(request, "suites.html.j2", context)


@router.get("/suites/{suite_id}")
async def suite_page(
    request: Request,
    who: Viewer,
    suite_id: str,
    tab: str = "transcripts",
    c: str = "",
    metrics: Annotated[list[str], Query()] = [],  # noqa: B006 (FastAPI copies it)
) -> HTMLResponse:
    """A suite's results: status, last run, the Transcripts or Metrics tab, the run
    history chart, export and diff links; refreshes itself while a run is in progress."""
    dashboard = _dashboard(request)
    suite = dashboard.suite(suite_id)
    rows = dashboard.conversations(suite)
    chosen = c or next((r.key for r in rows if r.result is not None), "")
    context = {
        "suite": suite,
        "suite_id": suite.id,
        "tab": "metrics" if tab == "metrics" else "transcripts",
        "rows": rows,
        "chosen": chosen,
        "detail": _detail(dashboard, suite, chosen),
        "metrics": metrics_table(rows, selected=metrics),
        "chart": history_chart(suite.runs),
        "runs_shown": RUNS_SHOWN,
    }
    return render(request, "suite.html.j2", context)


def _detail(dashboard: Dashboard, suite: SuiteRow, key: str) -> ConversationDetail | None:
    """The conversation `run/trial/scenario` of `suite` names, laid out; `None` when there
    is none."""
    run_id, _, rest = key.partition("/")
    trial, _, scenario_id = rest.partition("/")
    if run_id not in {r.id for r in suite.runs} or not trial.isdigit():
        return None
    return conversation_detail(dashboard.run(run_id), scenario_id, int(trial), cases=suite.cases)


@router.get("/suites/{suite_id}/conversations/{run_id}/{trial}/{scenario_id:path}")
async def conversation_page(
    request: Request, who: Viewer, suite_id: str, run_id: str, trial: int, scenario_id: str
) -> HTMLResponse:
    """One conversation of a suite to read (the Transcripts tab swaps it in beside the
    list)."""
    dashboard = _dashboard(request)
    suite = dashboard.suite(suite_id)
    detail = _detail(dashboard, suite, f"{run_id}/{trial}/{scenario_id}")
    if detail is None:
        raise NotFound(f"run {run_id} has no finished trial {trial} of {scenario_id!r}")
    return render(request, "conversation.html.j2", {"d": detail, "suite_id": suite.id})


@router.get("/suites/{suite_id}/diff")
async def diff_page(
    request: Request,
    who: Viewer,
    suite_id: str,
    base: str = "",
    run: str = "",
    scenario: str = "",
) -> HTMLResponse:
    """A run of the suite (default: its latest finished) against the baseline (the run
    marked baseline, else the run before it), scenario by scenario; with `scenario`, that
    scenario's two transcripts side by side."""
    dashboard = _dashboard(request)
    suite = dashboard.suite(suite_id)
    compared = suite_diff(dashboard, suite, base_id=base or None, run_id=run or None)
    pair = side_by_side(dashboard, compared, scenario) if scenario else None
    context = {"suite": suite, "compared": compared, "scenario": scenario, "pair": pair}
    return render(request, "diff.html.j2", context)


@router.post("/runs/{run_id}/overrides")
async def override(
    request: Request,
    who: Annotated[Principal, Depends(allowed("override"))],
    run_id: str,
    suite_id: Annotated[str, Form()],
    scenario_id: Annotated[str, Form()],
    trial: Annotated[int, Form()],
    target: Annotated[str, Form()],
    value: Annotated[str, Form()],
    reason: Annotated[str, Form()],
    passes: Annotated[str, Form()] = "",
) -> Response:
    """Verdict wrong?: keep the corrected value with who, when and why; back to the
    conversation, its status recomputed."""
    from sparring.store.overrides import parse_value, record_override

    record_override(
        _dashboard(request).store,
        run_id=run_id,
        scenario_id=scenario_id,
        trial=trial,
        target=target,
        value=parse_value(value),
        reason=reason,
        author=who.name,
        passed={"yes": True, "no": False}.get(passes),
    )
    conversation = quote(f"{run_id}/{trial}/{scenario_id}")
    return RedirectResponse(f"/suites/{suite_id}?c={conversation}", status_code=303)


@router.post("/runs/{run_id}/baseline")
async def make_baseline(
    request: Request,
    who: Annotated[Principal, Depends(allowed("edit_suites"))],
    run_id: str,
    suite_id: Annotated[str, Form()],
) -> Response:
    """Mark the run as the baseline diffs compare against (as `sparring baseline RUN`)."""
    from sparring.store.writer import mark_baseline

    mark_baseline(_dashboard(request).store, run_id)
    return RedirectResponse(f"/suites/{quote(suite_id)}", status_code=303)


@router.get("/login")
async def login_page(request: Request, next: str = "/suites") -> HTMLResponse:
    """The sign-in form."""
    return render(request, "login.html.j2", {"next": _local(next), "error": None})


@router.post("/login")
async def login(
    request: Request,
    name: Annotated[str, Form()],
    password: Annotated[str, Form()],
    next: Annotated[str, Form()] = "/suites",
) -> Response:
    """Sign in: a new session (new cookie) for the account, or the form again."""
    from sparring.dashboard.access import check_csrf
    from sparring.dashboard.app import set_session_cookie

    await check_csrf(request)
    who = _dashboard(request).authenticate(name, password)
    if who is None:
        context = {"next": _local(next), "error": "Wrong name or password."}
        response = render(request, "login.html.j2", context)
        response.status_code = 401
        return response
    token, _ = _dashboard(request).sessions.open(who)
    response = RedirectResponse(_local(next), status_code=303)
    set_session_cookie(response, token)
    return response


@router.post("/logout")
async def logout(request: Request) -> Response:
    """Sign out: the session ends."""
    from sparring.dashboard.access import check_csrf
    from sparring.dashboard.auth import SESSION_COOKIE

    await check_csrf(request)
    _dashboard(request).sessions.close(request.cookies.get(SESSION_COOKIE))
    return RedirectResponse("/login", status_code=303)


def _local(path: str) -> str:
    """`path` when it is a path of this site, else `/suites` (no open redirect)."""
    return path if path.startswith("/") and not path.startswith("//") else "/suites"
