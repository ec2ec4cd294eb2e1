"""Which requests the dashboard answers: its own `Host` only, and writes from its own pages
or from scripts, never from another site.

DNS rebinding lets any web page point a name it owns (`rebind.attacker.example`) at
127.0.0.1 and talk to a local server as if same-origin; a server that answers only its own
`Host` names defeats it. Bound to the loopback, the dashboard answers `host:port` as bound
and the loopback names `localhost:PORT`, `127.0.0.1:PORT`, `[::1]:PORT` (without `:PORT`
on port 80); bound to another address (which needs accounts) it answers that address too,
and bound to every address (`0.0.0.0`, `::`) any name (its users reach it by names it
cannot know; accounts guard it, and a rebound name gets no session cookie).

A write (POST, PUT, PATCH, DELETE) whose `Origin` (or, without one, `Referer`) is not the
dashboard itself (another site, or `null`) is refused; one with neither (curl, scripts)
goes on to the usual checks (role, CSRF token).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from urllib.parse import urlsplit

WILDCARD_HOSTS = ("0.0.0.0", "::", "")
"""Addresses meaning "every interface": any `Host` is answered."""
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
_WRITES = ("POST", "PUT", "PATCH", "DELETE")


def allowed_hosts(host: str, port: int) -> frozenset[str] | None:
    """The `Host` header values a dashboard bound to `host:port` answers (lower case), or
    `None` for any (bound to every address); see the module docstring."""
    if host in WILDCARD_HOSTS:
        return None
    bound = f"[{host}]" if ":" in host else host
    names = {bound.lower(), *_LOOPBACK_NAMES}
    hosts = {f"{name}:{port}" for name in names}
    return frozenset(hosts | names if port == 80 else hosts)


def refusal(
    method: str, headers: Mapping[str, str], hosts: Collection[str] | None
) -> tuple[int, str] | None:
    """Why a request must not be answered, as `(HTTP status, message)`: 400 when its `Host`
    is not one of `hosts` (`None`: any), 403 when it is a write from another origin;
    `None` when it may go on.

    Args:
        method: The HTTP method, upper case.
        headers: The request's headers (case-insensitive keys, as Starlette's).
        hosts: `allowed_hosts` of the server.
    """
    host = headers.get("host", "").lower()
    if hosts is not None and host not in hosts:
        return 400, (
            f"this dashboard does not answer for the host {host!r}: open it at "
            f"http://{min(hosts)} (requests naming another host are refused, against DNS "
            "rebinding)"
        )
    if method not in _WRITES:
        return None
    origin = headers.get("origin") or headers.get("referer")
    if origin is None or urlsplit(origin).netloc.lower() == host:
        return None
    return 403, (
        f"refused a change sent from another site ({origin!r}): change things from the "
        "dashboard's own pages, or from a script (which sends no Origin)"
    )
