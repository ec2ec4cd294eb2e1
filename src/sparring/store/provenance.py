"""Who ran a run, where, and on which commit: kept with the run row."""

from __future__ import annotations

import getpass
import os
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

_GIT_TIMEOUT_S = 5


@dataclass(frozen=True, kw_only=True)
class Provenance:
    """Where a run ran: git commit and branch (`None` outside a git checkout, or when git is
    missing), user name, host name and process id (which tell a crashed run from a live
    one, see `sparring.store.reading.effective_status`)."""

    git_commit: str | None
    git_branch: str | None
    user_name: str | None
    host: str
    pid: int


def current_provenance(cwd: Path) -> Provenance:
    """The provenance of a run started now in `cwd` (runs git twice, at most 5 s each)."""
    return Provenance(
        git_commit=_git(cwd, "rev-parse", "HEAD"),
        git_branch=_git(cwd, "rev-parse", "--abbrev-ref", "HEAD"),
        user_name=current_user(),
        host=socket.gethostname(),
        pid=os.getpid(),
    )


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    out = done.stdout.strip()
    return out if done.returncode == 0 and out else None


def current_user() -> str | None:
    """The user name of this process (`None` when the system has none for its uid)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (e.g. in a container)
        return None


def process_alive(host: str | None, pid: int | None) -> bool | None:
    """Whether process `pid` on `host` still runs; `None` when that cannot be told here
    (another host, or no pid)."""
    if pid is None or host != socket.gethostname():
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # it exists, owned by someone else
        return True
    return True
