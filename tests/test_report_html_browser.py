"""The HTML report in a real headless Chromium (Playwright driving Debian's chromium).

`.ci/run` installs `chromium` with apt where it is missing, so these run in CI; elsewhere
they are skipped when /usr/bin/chromium is absent. The page is opened from `file://`, as a
reviewer opens a downloaded report.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest

from sparring.reports.html import write_html
from tests.support.report_run import APOLOGY, CARD_EVIDENCE, report_run

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run "
    "installs it)",
)

if CHROMIUM.exists():
    from playwright.sync_api import Browser, Page, expect, sync_playwright


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "report.html"
    write_html(report_run(), path)
    return path


@pytest.fixture(scope="module")
def browser(report: Path) -> Iterator[Browser]:
    # `report` first: Playwright's sync API runs an event loop, and the report's run its own
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser, report: Path) -> Iterator[Page]:
    opened = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    opened.on("request", lambda request: requests.append(request.url))
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.goto(report.as_uri())
    yield opened
    assert errors == []  # no script error, no blocked script or style
    assert all(url.startswith("file://") for url in requests), requests  # offline
    opened.close()


def _visible_scenarios(page: Page) -> list[str]:
    return page.locator(".scenario:visible").evaluate_all("els => els.map(e => e.dataset.status)")


def test_filters_by_status_tag_category_and_text(page: Page) -> None:
    assert _visible_scenarios(page) == ["failed", "error", "passed"]  # failures first
    page.select_option("#f-status", "passed")
    assert _visible_scenarios(page) == ["passed"]
    expect(page.locator("#f-shown")).to_have_text("1 of 3 scenarios")
    page.select_option("#f-status", "")
    page.select_option("#f-tag", "smoke")
    assert _visible_scenarios(page) == ["failed"]
    page.select_option("#f-tag", "")
    page.select_option("#f-category", "geography")
    assert _visible_scenarios(page) == ["error"]
    page.select_option("#f-category", "")
    page.fill("#f-text", "ARRIVES ON FRIDAY")  # text in a transcript, any case
    assert _visible_scenarios(page) == ["passed"]
    page.fill("#f-text", "no such words anywhere")
    assert _visible_scenarios(page) == []
    expect(page.locator("#no-match")).to_be_visible()
    page.fill("#f-text", "")
    assert len(_visible_scenarios(page)) == 3


def test_a_failing_trial_expands_and_a_verdict_marks_its_evidence(page: Page) -> None:
    failing = page.locator(".scenario.st-failed .trial.st-failed")
    evidence = failing.locator("mark.ev", has_text=CARD_EVIDENCE)
    expect(evidence).to_be_hidden()  # the trial starts collapsed
    failing.locator("summary").first.click()
    expect(evidence).to_be_visible()
    expect(failing.locator(".msg.role-user .who").first).to_have_text("simulated user")
    expect(failing.locator(".note").last).to_contain_text("score 0.20")
    expect(evidence).not_to_have_class("ev hl")

    failing.locator(".verdicts .verdict", has_text="r1").click()
    expect(evidence).to_have_class("ev hl")
    expect(evidence).to_be_in_viewport()
    background = evidence.evaluate("e => getComputedStyle(e).backgroundColor")
    assert background not in ("rgba(0, 0, 0, 0)", "transparent")
    expect(failing.locator(".turn.cited")).to_have_count(1)
    expect(failing.locator(".turn.cited")).to_have_attribute("data-turn", "2")
    expect(failing.locator(".verdict.active")).to_have_count(
        2
    )  # the card and its twin beside turn 2
    expect(failing.locator("mark.hl")).to_have_count(1)  # only this verdict's evidence

    failing.locator(".verdicts .verdict", has_text="c1").click()  # another: the mark moves
    expect(evidence).to_have_class("ev")
    expect(failing.locator("mark.hl")).to_have_text("Orders are often late.")
    failing.locator(".verdicts .verdict", has_text="c1").click()  # again: unmarked
    expect(failing.locator("mark.hl")).to_have_count(0)


def test_the_agents_markup_shows_as_text_and_never_runs(page: Page) -> None:
    page.click("#expand-all")
    assert page.evaluate("window.__xss") is None
    reply = page.locator(".msg.role-agent .text", has_text="Orders are often late.")
    expect(reply).to_contain_text("<script>window.__xss = 1</script>")
    expect(page.locator(".msg img")).to_have_count(0)


def test_passed_trials_are_collapsed_and_expand_all_opens_them(page: Page) -> None:
    passed = page.locator(".scenario.st-passed")
    expect(passed.locator(".msg").first).to_be_hidden()
    page.click("#expand-all")
    expect(passed.locator(".msg.role-agent")).to_contain_text("arrives on Friday")
    expect(page.locator(".verdict", has_text="t1.check2").first).to_be_visible()
    expect(page.locator("mark.ev", has_text=APOLOGY)).to_be_visible()
    page.click("#collapse-all")
    expect(passed.locator(".msg").first).to_be_hidden()


def test_the_page_does_not_render_blank(page: Page) -> None:
    from PIL import Image

    page.click("#expand-all")
    shot = Image.open(io.BytesIO(page.screenshot(full_page=True))).convert("RGB")
    colours = shot.getcolors(maxcolors=1_000_000) or []
    assert len(colours) > 50  # text, badges and borders, not one flat colour
    width, height = shot.size
    assert width == 1280 and height > 1500  # every transcript laid out, not an empty page
    top = shot.crop((0, 0, width, 200)).getcolors(maxcolors=1_000_000) or []
    assert len(top) > 10  # the header is drawn
