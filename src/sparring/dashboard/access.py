"""Who a request is and whether it may do what it asks: FastAPI dependencies.

`principal` is the signed-in account (the local owner when the dashboard runs without
accounts); `allowed(action)` also refuses a role that may not do `action`, and a write
(POST, PUT, PATCH, DELETE) without its CSRF token (see `sparring.dashboard.auth`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request

from sparring.dashboard.auth import (
    CSRF_FIELD,
    CSRF_HEADER,
    LOCAL_OWNER,
    Principal,
    Session,
    csrf_matches,
)
from sparring.store.accounts import Action

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
ACTION_TEXT: dict[Action, str] = {
    "view": "view results",
    "export": "export results",
    "edit_assets": "create or change agents, simulated users or agent evaluations",
    "edit_suites": "create, change or delete test suites",
    "run_suites": "run test suites",
    "override": "override verdicts",
    "manage_users": "manage accounts",
}


class SignInNeeded(Exception):
    """The request needs a signed-in account (pages redirect to /login, the API says 401)."""


class Refused(Exception):
    """The signed-in role may not do this, or a write lacks its CSRF token (HTTP 403);
    the message says which and what to do."""


def session_of(request: Request) -> Session:
    """The request's session (set by the app's middleware)."""
    return request.state.session


def principal(request: Request) -> Principal:
    """Who is making `request`: the local owner on a dashboard without accounts, else the
    session's account.

    Raises:
        SignInNeeded: nobody is signed in.
    """
    if request.app.state.dashboard.local_owner:
        return Principal(LOCAL_OWNER, "owner")
    who = session_of(request).principal
    if who is None:
        raise SignInNeeded()
    return who


def allowed(action: Action) -> Callable[[Request], Awaitable[Principal]]:
    """A dependency giving the request's `Principal` once it may do `action` (and, for a
    write, carries its CSRF token).

    Raises (from the dependency):
        SignInNeeded: nobody is signed in.
        Refused: the role may not do `action`, or the CSRF token is missing or wrong.
    """

    async def check(request: Request) -> Principal:
        who = principal(request)
        if request.method not in SAFE_METHODS:
            await check_csrf(request)
        if not who.may(action):
            raise Refused(
                f"{who.name} is a {who.role} and may not {ACTION_TEXT[action]}; "
                "ask an owner for the editor role"
            )
        return who

    return check


async def check_csrf(request: Request) -> None:
    """Refuse a write that is not JSON and carries no matching CSRF token (header
    `X-CSRF-Token` or form field `csrf_token`).

    Raises:
        Refused: the token is missing or does not match the session's.
    """
    if request.headers.get("content-type", "").startswith("application/json"):
        return
    given = request.headers.get(CSRF_HEADER)
    if given is None and "form" in request.headers.get("content-type", ""):
        value = (await request.form()).get(CSRF_FIELD)
        given = value if isinstance(value, str) else None
    if not csrf_matches(session_of(request), given):
        raise Refused(
            "the form's CSRF token is missing or stale: reload the page and try again "
            "(scripts: send JSON, or the X-CSRF-Token header)"
        )
