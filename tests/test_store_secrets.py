"""No secret reaches the results store: the canary run of tests/test_secret_canary.py, with
its store's database files searched for every form of the canary."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests import test_secret_canary as canary
from tests.support.openai_server import ScriptedOpenAIServer

agent, model_server, project = canary.agent, canary.model_server, canary.project  # fixtures


def test_the_store_holds_no_canary(project: Path, model_server: ScriptedOpenAIServer) -> None:
    (project / "pyproject.toml").write_text("")  # the project root: the store goes here
    done = subprocess.run(
        canary._run_args(model_server),  # pyright: ignore[reportPrivateUsage]
        cwd=project,
        env=canary._env(),  # pyright: ignore[reportPrivateUsage]
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Stored as run" in done.stderr, done.stderr
    files = list((project / ".sparring").iterdir())
    assert any(f.name == "sparring.db" for f in files)
    text = b"".join(f.read_bytes() for f in files).decode("latin-1")
    assert "echo_raw" in text  # the trials are there
    canary.assert_no_canary("the store", text)
