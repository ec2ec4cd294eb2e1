"""`sparring serve`: the dashboard over a store, served by uvicorn until Ctrl-C.

Suite runs use the project's settings (models, secrets file, parallel, limits) as
`sparring run` does; each test case keeps its own timeout, max turns and session count.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from sparring.config import Settings
from sparring.dashboard.app import create_app
from sparring.dashboard.auth import refusal_to_start
from sparring.dashboard.origins import allowed_hosts
from sparring.dashboard.runs import NO_MODEL_REASON, SuiteRunner, server_secrets
from sparring.dashboard.state import Dashboard
from sparring.errors import UserError
from sparring.runner import RunSettings
from sparring.store.accounts import has_accounts
from sparring.store.database import open_store
from sparring.store.location import shown_url, store_url


@dataclass(frozen=True)
class Served:
    """What `sparring serve` serves: the dashboard, and how it is announced."""

    dashboard: Dashboard
    banner: str


def prepare(settings: Settings, *, host: str, port: int, store: str | None, cwd: Path) -> Served:
    """The dashboard for `sparring serve --host HOST --port PORT [--store URL]` in `cwd`.

    Raises:
        StoreError: the store cannot be opened.
        UserError: `host` is not the loopback and the store has no accounts (anyone
            reaching the server would act as owner).
    """
    from sparring.models.registry import models_from_settings

    opened = open_store(store_url(store or settings.store, cwd=cwd))
    accounts = has_accounts(opened)
    refusal = refusal_to_start(host, has_accounts=accounts)
    if refusal is not None:
        opened.close()
        raise UserError(refusal)
    run_settings = replace(
        RunSettings.from_settings(settings), trials=None, conversation_timeout_s=None
    )
    runner = SuiteRunner(
        store=opened,
        models=lambda: models_from_settings(settings),
        settings=run_settings,
        secrets=server_secrets(settings.secrets_file, api_key=settings.api_key),
        cwd=cwd,
    )
    dashboard = Dashboard(store=opened, local_owner=not accounts, runner=runner)
    shown_host = f"[{host}]" if ":" in host else host
    who = "as the local owner" if not accounts else "sign in with an account"
    banner = (
        f"sparring dashboard on http://{shown_host}:{port} ({who}); store "
        f"{shown_url(opened.url)}; API at /api (/api/openapi.json). Ctrl-C stops it."
    )
    if settings.resolved_user_model is None or settings.resolved_judge_model is None:
        banner += f"\nnote: {NO_MODEL_REASON}"
    return Served(dashboard, banner)


def serve(
    served: Served, *, host: str, port: int, listening: Callable[[], None] = lambda: None
) -> None:
    """Serve `served.dashboard` on `host:port` until Ctrl-C or SIGTERM; runs still going
    are then kept `interrupted`. `listening()` is called once it accepts connections.

    Raises:
        OSError: `host:port` cannot be bound (e.g. the port is in use).
    """
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                listening()

    config = uvicorn.Config(
        create_app(served.dashboard, hosts=allowed_hosts(host, port)),
        host=host,
        port=port,
        log_level="warning",
        lifespan="on",
    )
    server = Server(config)
    try:  # bound here, so a port in use is said once, with why (uvicorn would log it too)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        bound = socket.create_server((host, port), family=family)
    except OSError as e:
        served.dashboard.store.close()
        why = os.strerror(e.errno) if e.errno else str(e)
        raise OSError(
            f"cannot listen on {host}:{port} ({why}); pick another port with --port"
        ) from None
    try:
        server.run(sockets=[bound])
    except SystemExit:  # uvicorn's way of saying it could not start
        raise OSError(f"cannot listen on {host}:{port}; pick another port with --port") from None
    finally:
        served.dashboard.store.close()
