"""The dashboard's FastAPI app: server-rendered pages (Jinja2 + htmx) and the JSON API
under `/api` (its OpenAPI document at `/api/openapi.json`; no docs page, whose viewer would
come from a CDN).

`create_app(dashboard, hosts=...)` builds it; `sparring serve` runs it with uvicorn. A
request naming another host, or a write from another site, is refused first (see
`sparring.dashboard.origins`); every other request gets a session (see
`sparring.dashboard.auth`): a cookie set on the first response.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from importlib.resources import files
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from sparring.dashboard.access import Refused, SignInNeeded
from sparring.dashboard.auth import SESSION_COOKIE
from sparring.dashboard.origins import refusal
from sparring.dashboard.state import Dashboard, NotFound
from sparring.errors import UserError
from sparring.store.assets import AssetNotFound
from sparring.store.suites import SuiteNotFound

SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
}
"""Sent with every response: the pages load nothing but the dashboard's own files (no
inline script runs, whatever a transcript holds), and no other site may frame them."""


def create_app(dashboard: Dashboard, *, hosts: Collection[str] | None) -> FastAPI:
    """The dashboard app over `dashboard` (its store, sessions and suite runner), answering
    requests whose `Host` is one of `hosts` (`origins.allowed_hosts` of the address it is
    bound to; `None`: any) and writes from no other site.

    Suite runs started from it run inside the app's lifespan; when the server stops, a
    run still going is cancelled and stored `interrupted`.
    """
    from sparring.dashboard import api, api_writes, asset_pages, pages, suite_pages

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncGenerator[None]:
        async with dashboard.serving():
            yield

    app = FastAPI(
        title="sparring dashboard",
        summary="Suites, runs, transcripts, metrics, overrides and the platform's assets.",
        openapi_url="/api/openapi.json",
        docs_url=None,
        redoc_url=None,
        lifespan=lifespan,
    )
    app.state.dashboard = dashboard
    static = files("sparring.dashboard").joinpath("static")
    app.mount("/static", StaticFiles(directory=str(static)), name="static")
    for module in (api, api_writes, suite_pages, pages, asset_pages):  # first match wins
        app.include_router(module.router)
    app.middleware("http")(_with_session)
    app.middleware("http")(_same_origin(hosts))  # added last: runs first
    _handle_errors(app)
    return app


def _same_origin(
    hosts: Collection[str] | None,
) -> Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]:
    """A middleware refusing a request for another host, or a write from another site
    (`origins.refusal`), before anything else (no session is opened for it)."""

    async def check(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        refused = refusal(request.method, request.headers, hosts)
        if refused is None:
            return await call_next(request)
        status, message = refused
        if request.url.path.startswith("/api"):
            return JSONResponse({"detail": message}, status_code=status, headers=SECURITY_HEADERS)
        return PlainTextResponse(message, status_code=status, headers=SECURITY_HEADERS)

    return check


async def _with_session(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    """Give every request its session (`request.state.session`), opening one (and setting
    its cookie) when the request has none."""
    dashboard: Dashboard = request.app.state.dashboard
    token = request.cookies.get(SESSION_COOKIE)
    session = dashboard.sessions.get(token)
    opened: str | None = None
    if session is None:
        opened, session = dashboard.sessions.open(None)
    request.state.session = session
    response = await call_next(request)
    response.headers.update(SECURITY_HEADERS)
    if opened is not None and SESSION_COOKIE not in response.headers.get("set-cookie", ""):
        set_session_cookie(response, opened)
    return response


def set_session_cookie(response: Response, token: str) -> None:
    """Make `response` set the session cookie to `token` (HTTP-only, same-site strict)."""
    response.set_cookie(SESSION_COOKIE, token, httponly=True, samesite="strict", path="/")


def _handle_errors(app: FastAPI) -> None:
    """Map the dashboard's errors to responses: pages get HTML or a redirect, `/api` JSON
    `{"detail": message}`."""

    def is_api(request: Request) -> bool:
        return request.url.path.startswith("/api")

    async def sign_in(request: Request, _error: Exception) -> Response:
        if is_api(request):
            return JSONResponse({"detail": "sign in first: POST /api/session"}, status_code=401)
        return RedirectResponse(f"/login?next={request.url.path}", status_code=303)

    async def refused(request: Request, error: Exception) -> Response:
        return await _problem(request, 403, str(error), is_api(request))

    async def not_found(request: Request, error: Exception) -> Response:
        return await _problem(request, 404, str(error), is_api(request))

    async def bad_input(request: Request, error: Exception) -> Response:
        return await _problem(request, 422, str(error), is_api(request))

    app.add_exception_handler(SignInNeeded, sign_in)
    app.add_exception_handler(Refused, refused)
    for missing in (NotFound, AssetNotFound, SuiteNotFound):
        app.add_exception_handler(missing, not_found)
    app.add_exception_handler(UserError, bad_input)


async def _problem(request: Request, status: int, message: str, api: bool) -> Response:
    if api:
        return JSONResponse({"detail": message}, status_code=status)
    from sparring.dashboard.pages import render

    context: dict[str, Any] = {"status": status, "message": message}
    response = render(request, "problem.html.j2", context)
    response.status_code = status
    return response
