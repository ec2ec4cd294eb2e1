"""A throwaway PostgreSQL server for tests: `initdb` + `pg_ctl start` in a temporary
directory on a free 127.0.0.1 port (as `nobody` when run as root, which initdb refuses)."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def initdb_path() -> Path | None:
    """Debian's newest `initdb` (/usr/lib/postgresql/N/bin), else one on PATH; `None`."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=_major)
    if found:
        return Path(found[-1])
    on_path = shutil.which("initdb")
    return Path(on_path) if on_path else None


def _major(path: str) -> int:
    part = Path(path).parent.parent.name
    return int(part) if part.isdigit() else 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(args: list[str]) -> list[str]:
    return ["runuser", "-u", "nobody", "--", *args] if os.geteuid() == 0 else args


@contextmanager
def postgres_server(initdb: Path) -> Iterator[str]:
    """Start a server; yield its SQLAlchemy URL (database `postgres`, trust auth); stop
    it and remove its files at the end."""
    bindir = initdb.parent
    root = Path(tempfile.mkdtemp(prefix="sparring-pg-"))
    root.chmod(0o777)  # the server user writes here
    data = root / "data"

    def run(*args: str) -> None:
        subprocess.run(_as_server_user([*args]), check=True, capture_output=True)

    def start(tries: int = 3) -> int:
        """Start the server on a free port; its port. A port found free can be taken (as
        the local port of a connection another process opens) before the server binds it:
        then another one is tried, `tries` times in all."""
        port = _free_port()
        options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = root / f"log-{port}"
        try:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log), "-w",
                "-t", "120", "start")  # fmt: skip
        except subprocess.CalledProcessError:
            taken = "could not bind" in log.read_text(errors="replace") if log.exists() else False
            if not taken or tries == 1:
                raise
            return start(tries - 1)
        return port

    try:
        run(str(initdb), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        port = start()
        try:
            yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
        finally:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
    finally:
        shutil.rmtree(root, ignore_errors=True)
