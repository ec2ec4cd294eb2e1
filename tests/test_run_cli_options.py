"""`sparring run` as a user meets it (issue 9, items 13, 15, 17): `--tag`, `--list` with
tags, group gates, `-o -`, `--quiet`, the exit code's causes, relative Python sources."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

AGENT = "target: {type: callable, ref: 'sparring.demo.agent:chat'}\n"
SUITE = (
    AGENT
    + """scenarios:
  - id: asks-number
    tags: [status, smoke]
    turns:
      - user: Hi, where is my order?
        checks: [{contains: order number}]
  - id: banana
    tags: [status]
    turns:
      - user: Hi, where is my order?
        checks: [{contains: banana}]
  - id: untagged
    turns:
      - user: Hi, where is my order?
        checks: [{contains: order}]
"""
)


def sparring(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    env["COLUMNS"] = "200"
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env,
    )


def _project(tmp_path: Path, settings: str = "") -> Path:
    (tmp_path / ".git").mkdir()  # the project root: settings are not looked for above it
    (tmp_path / "suite.yaml").write_text(SUITE, encoding="utf-8")
    if settings:
        (tmp_path / "sparring.toml").write_text(settings, encoding="utf-8")
    return tmp_path


def test_tag_runs_the_scenarios_with_any_of_the_tags_and_list_shows_tags(tmp_path: Path) -> None:
    _project(tmp_path)
    listed = sparring("run", "suite.yaml", "--list", "--tag", "smoke", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "asks-number  [scripted, 1 trial, #status, #smoke]  suite.yaml:3",
        "1 scenario",
    ]
    both = sparring(
        "run", "suite.yaml", "--list", "--tag", "smoke", "--tag", "status", cwd=tmp_path
    )
    assert [line.split()[0] for line in both.stdout.splitlines()[:-1]] == ["asks-number", "banana"]
    ran = sparring("run", "suite.yaml", "--tag", "smoke", "-o", "r.json", cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert [s["scenario_id"] for s in report["scenarios"]] == ["asks-number"]
    assert report["scenarios"][0]["tags"] == ["status", "smoke"]
    none = sparring("run", "suite.yaml", "--tag", "nope", cwd=tmp_path)
    assert none.returncode == 2
    assert "--tag nope matches no scenario; known tags: smoke, status" in none.stderr


def test_output_dash_writes_pure_json_to_stdout(tmp_path: Path) -> None:
    _project(tmp_path)
    done = sparring("run", "suite.yaml", "-o", "-", "--markdown", "r.md", cwd=tmp_path)
    assert done.returncode == 1
    report = json.loads(done.stdout)  # nothing else on stdout
    assert report["exit_code"] == 1 and len(report["scenarios"]) == 3
    assert "sparring results" in done.stderr and "exit code 1" in done.stderr
    assert "Markdown report: r.md" in done.stderr
    refused = sparring("run", "suite.yaml", "--junit", "-", cwd=tmp_path)
    assert refused.returncode == 2
    assert "the JUnit report cannot go to standard output" in refused.stderr


def test_quiet_prints_one_line_per_scenario_and_the_summary(tmp_path: Path) -> None:
    _project(tmp_path)
    done = sparring("run", "suite.yaml", "--quiet", "--no-live", cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("■")] == [
        "■ asks-number: passed, pass rate 100% [21%, 100%] "
        "(1 of 1 passed, needs 1; threshold 100%)",
        "■ banana: failed, pass rate 0% [0%, 79%] (0 of 1 passed, needs 1; threshold 100%)",
        "■ untagged: passed, pass rate 100% [21%, 100%] (1 of 1 passed, needs 1; threshold 100%)",
    ]
    assert "sparring results" not in done.stdout  # the lines above say it
    assert not any("trial 1/1" in line or "started" in line for line in lines)
    assert "Failures (1)" in done.stdout
    assert lines[-1].startswith("exit code 1:")


def test_group_gates_apply_to_sparring_run_as_in_the_plugin(tmp_path: Path) -> None:
    _project(tmp_path, '[groups.status]\nthreshold = 0.5\ntags = ["status"]\n')
    done = sparring("run", "suite.yaml", "--markdown", "r.md", "-o", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout[done.stdout.index("Group gates") :].splitlines()
    assert summary[1:4] == [
        "status: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): PASSED",
        "  failed: banana",
        "exit code overridden to 0: every gate is met and every failed test belongs to a group",
    ]
    assert summary[4].startswith("exit code 0: every gate is met and every failed scenario")
    markdown = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Group gates" in markdown and "✅ **exit code 0**" in markdown
    strict = sparring("run", "suite.yaml", "--tag", "smoke", cwd=tmp_path)
    assert strict.returncode == 0
    assert (
        "status: 1/1 passed, 100% [21%, 100%], 50% required (needs 1 of 1): PASSED" in strict.stdout
    )


def test_a_gate_over_nothing_fails_and_keeps_exit_code_1(tmp_path: Path) -> None:
    _project(tmp_path, '[groups.status]\nthreshold = 0.5\ntags = ["status"]\n')
    with open(tmp_path / "sparring.toml", "a", encoding="utf-8") as f:
        f.write('[groups.billing]\nthreshold = 0.5\ntags = ["billing"]\n')
    done = sparring("run", "suite.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert "billing: 0/0 passed, 50% required: FAILED" in done.stdout
    assert "  no test of this session has tag 'billing'" in done.stdout
    assert "exit code stays 1: gate billing FAILED" in done.stdout


def test_exit_code_3_names_its_causes(tmp_path: Path) -> None:
    (tmp_path / "down.yaml").write_text(
        "target: {url: 'http://127.0.0.1:9/chat', response_path: reply}\n"
        "scenarios:\n"
        "  - id: gone\n    turns: [{user: hi, checks: [{contains: x}]}]\n"
        "  - id: gone-too\n    turns: [{user: hi, checks: [{contains: x}]}]\n",
        encoding="utf-8",
    )
    done = sparring("run", "down.yaml", "--markdown", "r.md", cwd=tmp_path)
    assert done.returncode == 3
    cause = "2 scenarios errored: target unreachable (gone, gone-too)"
    assert f"exit code 3: {cause}" in done.stdout
    assert f"⚠️ **exit code 3**: {cause}" in (tmp_path / "r.md").read_text(encoding="utf-8")


def test_python_test_sources_are_relative_like_yaml_ones(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_py.py").write_text(
        "from sparring.api import Suite\n\n"
        "suite = Suite(target=lambda history: 'Hello!')\n\n"
        "@suite.scenario\n"
        "async def test_hello():\n"
        "    async with suite.session() as session:\n"
        "        await session.send('Hi')\n",
        encoding="utf-8",
    )
    done = sparring("run", "tests/test_py.py", "-o", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["scenarios"][0]["source"] == "tests/test_py.py:5"
