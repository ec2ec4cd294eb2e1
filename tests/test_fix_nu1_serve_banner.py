"""`sparring serve` announces the dashboard's address once it accepts connections (before,
the line came while uvicorn was still starting, seconds before anything answered), once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.dashboard_platform import free_port
from tests.test_dashboard_safety import port_open

BANNER = "sparring dashboard on http://127.0.0.1:"


def _serve_until_announced(tmp_path: Path) -> tuple[bool, str]:
    """Start `sparring serve` on a free port until it announces itself; whether the port
    accepted a connection right when the line came, and all it wrote to stderr. A port
    taken before the server binds it (it then exits saying so) is tried again."""
    for _ in range(3):
        port = free_port()
        command = [sys.executable, "-m", "sparring.cli", "serve", "--port", str(port)]
        command += ["--store", str(tmp_path / "s.db")]
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
        assert process.stderr is not None
        said: list[str] = []
        open_when_announced = False
        try:
            for line in process.stderr:
                said.append(line)
                if BANNER in line:
                    open_when_announced = port_open(port)
                    break
        finally:
            process.terminate()
            said.append(process.communicate(timeout=60)[1])
        if any(BANNER in line for line in said):
            return open_when_announced, "".join(said)
        assert "cannot listen on" in "".join(said), "".join(said)
    raise AssertionError("no free port in three tries")


def test_serve_announces_its_address_once_it_listens_and_only_once(tmp_path: Path) -> None:
    open_when_announced, said = _serve_until_announced(tmp_path)
    assert open_when_announced, said
    assert said.count("sparring dashboard on") == 1, said


def test_serve_on_a_port_in_use_says_so_once_with_why(tmp_path: Path) -> None:
    import socket

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "sparring.cli", "serve", "--port", str(port)]
        done = subprocess.run(
            [*command, "--store", str(tmp_path / "s.db")],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"error: cannot listen on 127.0.0.1:{port} (Address already in use); "
        "pick another port with --port"
    ]
