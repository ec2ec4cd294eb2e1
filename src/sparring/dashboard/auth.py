"""Who is using the dashboard, and what they may do: roles, sessions, CSRF tokens.

Roles and what each may do are the store's (`sparring.store.accounts`: an owner or editor
changes anything, a viewer reads and exports only). Bound to 127.0.0.1 with no accounts,
the dashboard runs as one local owner; otherwise everyone signs in (`sparring users add
NAME --role ROLE` makes accounts).

Sessions live in the server process: a random token in an HTTP-only cookie names a
`Session`, which holds who signed in and the CSRF token every write must carry (the form
field `csrf_token` or the header `X-CSRF-Token`). A JSON request (`Content-Type:
application/json`) needs no token: a page on another site cannot send one without the
server's CORS consent, which it never gives. A server restart signs everyone out.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass, field

from sparring.store.accounts import Action, Role, can

SESSION_COOKIE = "sparring_session"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
LOCAL_OWNER = "local owner"
LOOPBACK = ("127.0.0.1", "localhost", "::1")


@dataclass(frozen=True)
class Principal:
    """Who is signed in: an account `name` and its `role`."""

    name: str
    role: Role

    def may(self, action: Action) -> bool:
        """Whether this role may do `action` (`sparring.store.accounts.can`)."""
        return can(self.role, action)


@dataclass(frozen=True)
class Session:
    """One signed-in browser or script: who (`None` before signing in) and its CSRF token."""

    principal: Principal | None
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))


class Sessions:
    """The sessions of the server process, by cookie token; at most `limit` (the oldest
    opened is forgotten first, so clients that never keep their cookie cannot fill the
    memory)."""

    def __init__(self, *, limit: int = 10_000) -> None:
        self._by_token: OrderedDict[str, Session] = OrderedDict()
        self._limit = limit

    def get(self, token: str | None) -> Session | None:
        """The session of cookie value `token`, if any."""
        return self._by_token.get(token) if token else None

    def open(self, principal: Principal | None) -> tuple[str, Session]:
        """A new session for `principal`: `(cookie token, session)`."""
        token = secrets.token_urlsafe(32)
        session = Session(principal)
        self._by_token[token] = session
        while len(self._by_token) > self._limit:
            self._by_token.popitem(last=False)
        return token, session

    def close(self, token: str | None) -> None:
        """End the session of `token` (signing out); nothing when there is none."""
        if token:
            self._by_token.pop(token, None)


def csrf_matches(session: Session | None, given: str | None) -> bool:
    """Whether `given` is `session`'s CSRF token (compared in constant time)."""
    if session is None or not given:
        return False
    return hmac.compare_digest(session.csrf.encode(), given.encode())


def refusal_to_start(host: str, *, has_accounts: bool) -> str | None:
    """Why the dashboard must not start on `host`: any address other than the loopback
    needs accounts (it would otherwise let anyone who reaches it act as owner); `None`
    when it may start."""
    if has_accounts or host in LOOPBACK:
        return None
    return (
        f"refusing to serve on {host} without accounts: anyone reaching it would act as "
        "owner. Add one first (sparring users add NAME --role owner), or serve on "
        "127.0.0.1 (the default)"
    )
