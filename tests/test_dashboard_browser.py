"""The dashboard in a real headless Chromium (Playwright driving Debian's chromium), served
by uvicorn: the platform seed's "How to test your agent before publishing", steps 1-7,
against the demo agent over HTTP with the scripted model as simulated user and judge; a
viewer refused every write; an override that changes a status.

Screenshots of the main pages are saved as test artifacts in `artifacts/dashboard/` (ignored
by git), one folder per test.
`.ci/run` installs `chromium`; elsewhere these tests are skipped when it is absent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from sparring.demo.server import DemoServer
from sparring.store.accounts import add_account
from sparring.store.database import Store, open_store
from tests.support.dashboard_platform import EVALUATION, USER, platform_dashboard, served

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).parent.parent / "artifacts" / "dashboard"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; .ci/run "
    "installs it)",
)

if CHROMIUM.exists():
    from playwright.sync_api import Browser, Page, expect, sync_playwright

    expect.set_options(timeout=10_000)  # a busy CI machine renders slower than 5 s at times

SLOW = 30_000  # ms a suite run may take to show its end on the page


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path}/dashboard.db")
    yield opened
    opened.close()


@pytest.fixture
def demo() -> Iterator[str]:
    with DemoServer(port=0) as server:
        yield server.url


@pytest.fixture
def shots(request: pytest.FixtureRequest) -> Path:
    folder = ARTIFACTS / request.node.name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextmanager
def opened(browser: Browser, base: str) -> Iterator[Page]:
    """A page on the dashboard at `base`; on leaving, no script error happened, the
    Content-Security-Policy refused nothing, and nothing was fetched from anywhere else
    (htmx and the styles are served by the dashboard)."""
    page = browser.new_page(viewport={"width": 1360, "height": 900}, base_url=base)
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: problems.append(m.text) if "Security Policy" in m.text else None)
    page.on("request", lambda r: None if r.url.startswith(base) else problems.append(r.url))
    page.set_default_timeout(10_000)
    yield page
    page.close()
    assert problems == []


def agent_target(demo: str, response_path: str) -> str:
    return (
        f"type: http\nurl: {demo}/chat\nbody_template:\n  message: '{{{{input}}}}'\n"
        f"  history: '{{{{history}}}}'\nresponse_path: {response_path}\n"
    )


def publish_shown(page: Page) -> None:
    page.click("#revision-menu summary")
    page.click("#publish")


def test_the_seven_steps_before_publishing_in_a_browser(
    browser: Browser, store: Store, demo: str, shots: Path
) -> None:
    with served(platform_dashboard(store)) as base, opened(browser, base) as page:
        _create_user_and_evaluation(page, shots)
        _attach_and_publish(page, demo, shots)
        _create_suite_and_run(page, shots)
        _read_results(page, shots)
        _fix_and_run_again(page, demo, shots)
    assert {p.name for p in shots.iterdir()} >= {"suites.png", "transcripts.png", "metrics.png"}


def _create_user_and_evaluation(page: Page, shots: Path) -> None:
    # 1. a simulated user with a concrete problem in its system prompt
    page.goto("/simulated-users")
    page.click("#create")
    page.fill("input[name=name]", "Late parcel customer")
    page.fill("input[name=job_title]", USER["job_title"])
    page.fill("input[name=description]", USER["description"])
    page.fill("textarea[name=system_prompt]", USER["system_prompt"])
    page.click("#save")
    expect(page).to_have_url(re.compile(r"/simulated-users$"))
    expect(page.locator('tr[data-asset="Late parcel customer"]')).to_contain_text("Draft:1")
    # 2. an agent evaluation: prompt and two insights
    page.goto("/evaluations/new")
    page.fill("input[name=name]", "Delivery info")
    page.fill("textarea[name=prompt]", "Assess the assistant: did it say when the order arrives?")
    page.fill("input[name='insight-0-name']", "located")
    page.fill("input[name='insight-0-pass_when']", "true")
    page.click("#add-insight")
    page.fill("input[name='insight-1-name']", "tone")
    page.select_option("select[name='insight-1-type']", "score")
    page.screenshot(path=str(shots / "evaluation.png"), full_page=True)
    page.click("#save")
    expect(page.locator('tr[data-asset="Delivery info"]')).to_be_visible()


def _attach_and_publish(page: Page, demo: str, shots: Path) -> None:
    # 3. attach the evaluation to the simulated user (a new Draft)
    page.goto("/simulated-users")
    page.click("text=Late parcel customer")
    page.check("input[name=evaluations][value='Delivery info']")
    page.click("#save")
    expect(page.locator("#revision-menu summary")).to_contain_text("Draft:2")
    page.screenshot(path=str(shots / "simulated-user.png"), full_page=True)
    # 4. make the revisions runnable: publish them; the agent's first config is wrong
    publish_shown(page)
    expect(page.locator("#revision-menu summary")).to_contain_text("Published:2")
    page.goto("/evaluations")
    expect(page.locator("td.using")).to_have_text("Late parcel customer")
    page.click("text=Delivery info")
    publish_shown(page)
    page.goto("/agents/new")
    page.fill("input[name=name]", "Demo agent")
    page.fill("textarea[name=target]", agent_target(demo, "answer"))
    page.click("#save")
    page.click("text=Demo agent")
    publish_shown(page)
    expect(page.locator("#revision-menu summary")).to_contain_text("Published:1")


def _create_suite_and_run(page: Page, shots: Path) -> None:
    # 5. a test suite with one test case, Save and run
    page.goto("/suites")
    page.click("#new-suite")
    page.fill("input[name=name]", "Late parcel regression")
    page.select_option("select[name='case-0-agent']", label="Demo agent")
    page.select_option("select[name='case-0-user']", label="Late parcel customer")
    page.click("#case-1 details.advanced summary")
    page.fill("input[name='case-0-max_turns']", "3")
    page.screenshot(path=str(shots / "suite-editor.png"), full_page=True)
    page.click("#save-and-run")
    expect(page.locator("#suite-name")).to_have_text("Late parcel regression")
    # the page refreshes itself while In progress
    expect(page.locator("#suite-status")).to_have_text("Failed", timeout=SLOW)


def _read_results(page: Page, shots: Path) -> None:
    # 6. status, Transcripts, Metrics, export
    expect(page.locator("#suite-reason")).to_contain_text("answer")  # the missing path
    page.click("ul.conversations li a")
    expect(page.locator("#reason")).to_contain_text("answer")
    page.screenshot(path=str(shots / "transcripts-failed.png"), full_page=True)
    with page.expect_download() as download:
        page.click("#export a:has-text('Excel')")
    assert download.value.suggested_filename.endswith(".xlsx")
    page.goto("/suites")
    page.screenshot(path=str(shots / "suites.png"), full_page=True)
    expect(page.locator("#suites tbody tr").first).to_contain_text("Failed")


def _fix_and_run_again(page: Page, demo: str, shots: Path) -> None:
    # 7. fix the agent (a Preview revision), Edit and rerun with it, then publish and Rerun
    page.goto("/agents")
    page.click("text=Demo agent")
    page.fill("textarea[name=target]", agent_target(demo, "reply"))
    page.click("#save")
    page.click("#revision-menu summary")
    page.click("#preview")
    expect(page.locator("#revision-menu summary")).to_contain_text("Preview:2")
    page.goto("/suites")
    page.click("text=Edit and rerun")
    page.select_option("select[name='case-0-agent_revision']", label="Preview:2")
    page.click("#save-and-run")
    expect(page.locator("#suite-status")).to_have_text("Passed", timeout=SLOW)
    expect(page.locator("ul.conversations li")).to_have_count(2)  # the first run stays
    expect(page.locator("#conversation")).to_contain_text("Estimated delivery")
    expect(page.locator("#conversation")).to_contain_text("Preview:2")
    page.screenshot(path=str(shots / "transcripts.png"), full_page=True)
    page.click("#tab-metrics")
    expect(page.locator("table.metrics td.passed").first).to_have_text("Yes")
    page.screenshot(path=str(shots / "metrics.png"), full_page=True)
    page.click("#diff-link")
    expect(page.locator("#diff")).to_contain_text("case-1")
    page.screenshot(path=str(shots / "diff.png"), full_page=True)


def test_a_viewer_is_refused_every_write_and_an_override_changes_the_status(
    browser: Browser, store: Store, demo: str, shots: Path
) -> None:
    add_account(store, "olive", "owner password", role="owner")
    add_account(store, "vic", "viewer password", role="viewer")
    with (
        served(platform_dashboard(store, local_owner=False)) as base,
        opened(browser, base) as owner,
        opened(browser, base) as viewer,
    ):
        _sign_in(owner, "olive", "owner password")
        suite = _passing_suite(owner, demo)
        _sign_in(viewer, "vic", "viewer password")
        _viewer_refused(viewer, suite)
        viewer.screenshot(path=str(shots / "viewer.png"), full_page=True)
        # "Verdict wrong?" on the insight: the conversation and the suite now fail
        owner.goto(suite)
        owner.click("tr[data-insight='Delivery-info.located'] details.override summary")
        form = owner.locator("tr[data-insight='Delivery-info.located'] form")
        form.locator("input[name=value]").fill("false")
        form.locator("input[name=reason]").fill("It never gave a date.")
        form.locator("button").click()
        expect(owner.locator("#suite-status")).to_have_text("Failed")
        expect(owner.locator("tr[data-insight='Delivery-info.located']")).to_contain_text(
            "overridden (was True)"
        )
        owner.screenshot(path=str(shots / "override.png"), full_page=True)


def _sign_in(page: Page, name: str, password: str) -> None:
    page.goto("/suites")
    expect(page).to_have_url(re.compile(r"/login\?next=/suites$"))
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    expect(page.locator("#who")).to_contain_text(name)


def _passing_suite(page: Page, demo: str) -> str:
    """Assets, a suite and one passed run through the API, as a script would; its URL."""
    request = page.request
    ids: dict[str, int] = {}
    for kind, name, content in (
        ("evaluation", "Delivery info", EVALUATION),
        ("simulated_user", "Late parcel", {**USER, "evaluations": ["Delivery info"]}),
        (
            "agent",
            "Demo agent",
            {
                "type": "http",
                "url": f"{demo}/chat",
                "response_path": "reply",
                "body_template": {"message": "{{input}}"},
            },
        ),
    ):
        made = request.post(f"/api/assets/{kind}", data={"name": name, "content": content})
        assert made.status == 201, made.text()
        ids[kind] = made.json()["id"]
        request.post(f"/api/assets/{kind}/{ids[kind]}/revisions/1/publish", data={})
    case = {"agent_id": ids["agent"], "user_id": ids["simulated_user"], "max_turns": 3}
    suite = request.post("/api/suites", data={"name": "Smoke", "cases": [case], "run": True})
    url = f"/suites/{suite.json()['id']}"
    page.goto(url)
    expect(page.locator("#suite-status")).to_have_text("Passed", timeout=SLOW)
    return url


def _viewer_refused(page: Page, suite: str) -> None:
    page.goto("/suites")
    expect(page.locator("button.rerun")).to_be_disabled()
    expect(page.locator("#new-suite")).to_have_count(0)
    page.goto(suite)
    expect(page.locator("text=Verdict wrong?")).to_have_count(0)
    token = page.request.get("/api/session").json()["csrf_token"]
    suite_id = suite.rsplit("/", 1)[1]
    for url in (
        f"/suites/{suite_id}/rerun",
        f"/suites/{suite_id}/delete",
        "/suites/new",
        "/simulated-users/new",
        "/evaluations/new",
        "/agents/new",
        "/agents/3/archive",
        "/agents/3/clone",
        "/agents/3/revisions/1/revert",
    ):
        answer = page.request.post(url, form={"csrf_token": token})
        assert answer.status == 403, url
    page.goto("/suites/new")
    expect(page.locator("#problem")).to_contain_text("viewer")


def test_the_revision_lists_follow_the_chosen_agent_and_simulated_user(
    browser: Browser, store: Store, shots: Path
) -> None:
    with served(platform_dashboard(store)) as base, opened(browser, base) as page:
        ids: dict[str, int] = {}
        for kind, name, content in (
            ("simulated_user", "Published one", USER),
            ("simulated_user", "Draft only", USER),
            ("agent", "Shop bot", {"type": "http", "url": "http://127.0.0.1:9/chat"}),
        ):
            made = page.request.post(f"/api/assets/{kind}", data={"name": name, "content": content})
            assert made.status == 201, made.text()
            ids[name] = made.json()["id"]
        for kind, name in (("simulated_user", "Published one"), ("agent", "Shop bot")):
            page.request.post(f"/api/assets/{kind}/{ids[name]}/revisions/1/publish", data={})
        page.goto("/suites/new")
        users = page.locator("select[name='case-0-user_revision'] option")
        expect(users).to_have_text(["Latest published"])
        page.select_option("select[name='case-0-user']", label="Published one")
        expect(users).to_have_text(["Latest published", "Published:1"])
        page.select_option("select[name='case-0-user_revision']", label="Published:1")
        page.select_option("select[name='case-0-user']", label="Draft only")
        expect(users).to_have_text(["Latest published"])  # no other user's Published:1
        page.select_option("select[name='case-0-agent']", label="Shop bot")
        agents = page.locator("select[name='case-0-agent_revision'] option")
        expect(agents).to_have_text(["Latest published", "Published:1"])
        page.screenshot(path=str(shots / "suite-editor-revisions.png"), full_page=True)
        page.fill("input[name=name]", "Drafted")
        page.click("#save")
        expect(page.locator("#problem")).to_contain_text("'Draft only' in test case 1")
