"""`sparring serve`: the local dashboard (extra `dashboard`). Imports only click at start-up."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

import click

DASHBOARD_INSTALL = 'pip install "sparring[dashboard]"'
_NEEDS = ("fastapi", "uvicorn", "multipart", "argon2")


def serve_command(
    *, host: str, port: int, store: str | None, secrets_file: str | None = None
) -> int:
    """Serve the dashboard on `host:port` over the store (`--store`, else the settings'),
    its runs' `{{secrets.NAME}}` from `secrets_file` (`--secrets-file`, else the
    `secrets_file` setting) only; 0 when stopped with Ctrl-C, 2 when it cannot start (a
    missing extra, no accounts on a non-loopback address, a store or port that cannot be
    used)."""
    missing = [m for m in _NEEDS if not _importable(m)]
    if missing:
        click.secho(
            f"error: sparring serve needs the dashboard extra ({', '.join(missing)} missing): "
            f"{DASHBOARD_INSTALL}",
            fg="red",
            err=True,
        )
        return 2
    from sparring.config import load_settings
    from sparring.dashboard.server import prepare, serve

    settings = load_settings({"secrets_file": secrets_file})
    served = prepare(settings, host=host, port=port, store=store, cwd=Path.cwd())
    try:  # announced once it accepts connections, not while uvicorn still starts
        serve(served, host=host, port=port, listening=lambda: click.echo(served.banner, err=True))
    except OSError as e:
        click.secho(f"error: {e}", fg="red", err=True)
        return 2
    return 0


def _importable(module: str) -> bool:
    try:
        import_module(module)
    except ImportError:
        return False
    return True
