"""A scenario whose optional part is not installed (Playwright or Chromium for a website
chat, espeak-ng to speak a voice test's messages) is `skipped` with the install line, as
steps that need a model are without one: the rest of the run goes on, exit 0."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sparring.errors import MissingPart
from sparring.runner import RunSettings, TargetPool, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.secrets import Secrets
from sparring.target_specs import BrowserTargetSpec, CallableTargetSpec

pytestmark = pytest.mark.anyio


def no_playwright() -> object:
    raise MissingPart("browser targets need Playwright: pip install 'sparring[browser]'")


async def test_a_website_chat_without_playwright_is_skipped_and_the_rest_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sparring.targets.browser.import_playwright", no_playwright)
    chat = ScriptedScenario(
        id="chat",
        target=BrowserTargetSpec(chat_url="http://127.0.0.1:9/shop"),
        turns=[{"user": "hi", "checks": [{"contains": "x"}]}],
    )
    plain = ScriptedScenario(
        id="plain",
        target=CallableTargetSpec(ref="sparring.demo.agent:chat"),
        turns=[{"user": "hi", "checks": [{"contains": "Northwind"}]}],
    )
    async with TargetPool(secrets=Secrets.load()) as pool:
        result = await run_scenarios(
            [chat, plain],
            targets=pool.for_scenario,
            user_model=None,
            judge_model=None,
            settings=RunSettings(),
        )
    skipped, ran = result.scenarios
    assert skipped.trials[0].status == "skipped"
    assert "pip install 'sparring[browser]'" in (skipped.trials[0].error or "")
    assert ran.trials[0].status == "passed"  # ran, unaffected
    assert result.exit_code == 0


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="the example's recording path")
def test_the_voice_example_without_espeak_is_skipped_with_the_install_line(
    tmp_path: Path,
) -> None:
    example = Path(__file__).parent.parent / "examples" / "voice"
    shutil.copytree(example, tmp_path / "voice", ignore=shutil.ignore_patterns("audio"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SPARRING_"))}
    env["SPARRING_STORE"] = os.environ["SPARRING_STORE"]  # the test's own, not the repository's
    env["PATH"] = str(tmp_path)  # no espeak-ng on it
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", str(tmp_path / "voice"), "-o", str(report)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path(env["SPARRING_STORE"]).is_file()  # the run is kept in tmp_path
    trials = [t for s in json.loads(report.read_text())["scenarios"] for t in s["trials"]]
    assert {t["status"] for t in trials} == {"skipped"}
    assert all("apt-get install espeak-ng" in t["error"] for t in trials)
