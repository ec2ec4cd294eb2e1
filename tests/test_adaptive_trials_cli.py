"""`sparring run --adaptive` end to end with the demo agent (no model needed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SUITE = """target: {type: callable, ref: 'sparring.demo.agent:chat'}
scenarios:
  - id: asks-number
    threshold: 0.5
    turns:
      - user: Hi, where is my order?
        checks: [{contains: order number}]
  - id: banana
    turns:
      - user: Hi, where is my order?
        checks: [{contains: banana}]
"""


def sparring(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def test_adaptive_runs_each_scenario_until_it_is_decided(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    done = sparring(
        "run", "suite.yaml", "--adaptive", "-p", "1", "--no-store", "-o", "r.json", cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    shown = {s["scenario_id"]: (len(s["trials"]), s["status"]) for s in report["scenarios"]}
    # 4 of 4 clears 50%; 0 of 3 is below 100% (the default threshold) at once
    assert shown == {"asks-number": (4, "passed"), "banana": (3, "failed")}
    assert [s["max_trials"] for s in report["scenarios"]] == [30, 30]


def test_adaptive_and_trials_together_are_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    done = sparring("run", "suite.yaml", "--adaptive", "--trials", "5", "--no-store", cwd=tmp_path)
    assert done.returncode == 2
    assert "--trials and --adaptive cannot go together" in done.stderr
