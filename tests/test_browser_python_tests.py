"""A Python test's browser session keeps its screenshots and page URL with the trial, as a
YAML scenario's does. Real headless Chromium against the demo shop's chat widget."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.api import Suite
from sparring.demo.server import DemoServer
from sparring.target_specs import BrowserTargetSpec
from sparring.targets.browser import BrowserTarget

pytestmark = pytest.mark.skipif(
    not Path("/usr/bin/chromium").exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium)",
)


def test_a_python_tests_browser_session_keeps_screenshots_and_the_page(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo:
        spec = BrowserTargetSpec.model_validate(
            {"chat_url": "/shop", "settle_s": 0.3, "timeout_s": 15, "screenshots": "every_turn"}
        )
        target = BrowserTarget(spec, site_url=demo.url, artifacts_dir=tmp_path / "shots")
        suite = Suite(target=target)

        @suite.scenario
        async def test_order_status() -> None:
            async with suite.session() as session:
                response = await session.send("Where is my order?")
                response.check({"contains": "order number"})

        result = suite.run(store=False)
    (trial,) = result.scenarios[0].trials
    assert trial.status == "passed", trial.error
    assert trial.page_url is not None and trial.page_url.endswith("/shop")
    assert [a.kind for a in trial.artifacts] == ["screenshot"]
    assert Path(trial.artifacts[0].path).is_file()
