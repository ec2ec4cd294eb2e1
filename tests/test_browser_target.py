"""Website chat targets (`type: browser`) in real headless Chromium against the demo shop's
chat widget: every variant (in the page, in an iframe, in a shadow root, custom markup),
an assistant that never answers, the step budget, the screenshots policy, device
emulation, explicit selectors, file uploads and `sparring doctor`.

Skipped where Debian's /usr/bin/chromium is absent (`.ci/run` installs it).
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.demo.server import DemoServer
from sparring.errors import StepBudgetSpent, TargetError
from sparring.models.scripted import ScriptedModel
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario, SimulatedScenario
from sparring.target_specs import BrowserTargetSpec
from sparring.targets.browser import BrowserSession, BrowserTarget
from sparring.targets.browser_page import step_budget
from sparring.transcript import Attachment, Message, Transcript

CHROMIUM = Path("/usr/bin/chromium")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="needs Debian's chromium at /usr/bin/chromium (apt-get install chromium; "
        ".ci/run installs it)",
    ),
]


@pytest.fixture(scope="module")
def demo() -> Iterator[DemoServer]:
    with DemoServer(port=0) as server:
        yield server


@asynccontextmanager
async def browser(
    demo: DemoServer, tmp_path: Path, chat_url: str = "/shop", **keys: Any
) -> AsyncIterator[BrowserTarget]:
    spec = BrowserTargetSpec.model_validate(
        {"chat_url": chat_url, "settle_s": 0.3, "timeout_s": 15, **keys}
    )
    target = BrowserTarget(spec, site_url=demo.url, artifacts_dir=tmp_path / "artifacts")
    try:
        yield target
    finally:
        await target.aclose()


async def say(session: BrowserSession, transcript: Transcript, text: str, **kw: Any) -> Transcript:
    transcript = transcript.with_message(Message(role="user", content=text, **kw))
    return transcript.with_message(await session.send(transcript))


def scripted(*users: str, checks: list[Any] | None = None) -> ScriptedScenario:
    turns: list[dict[str, Any]] = [{"user": u} for u in users]
    turns[-1]["checks"] = checks or []
    return ScriptedScenario.model_validate({"id": "web", "turns": turns})


async def run(scenario: Any, target: Any, model: ScriptedModel | None = None) -> Any:
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=model,
        judge_model=model,
        settings=RunSettings(),
    )
    return result.scenarios[0].trials[0]


@pytest.mark.parametrize("variant", ["", "/iframe", "/shadow"])
async def test_every_widget_variant_is_found_and_its_streamed_replies_read(
    demo: DemoServer, tmp_path: Path, variant: str
) -> None:
    # a bubble still streaming says so (aria-busy): read whole however short the window
    async with browser(demo, tmp_path, f"/shop{variant}", settle_s=0.05) as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "Where is my order?")
        transcript = await say(session, transcript, "It's #10234")
        await session.close()
    first, second = transcript.messages[1], transcript.messages[3]
    assert "order number" in first.content  # the greeting shown before is not part of it
    assert "Nora" not in first.content and "Where is my order" not in first.content
    assert "March 17" in second.content and "#10234" not in second.content.split("Order")[0]
    assert second.content.endswith("Is there anything else I can help with?")  # all pieces
    assert first.latency_ms is not None and first.latency_ms > 0
    found = session.widget.found
    assert found.opened_with is not None and "Open chat" in found.opened_with
    assert "textarea" in found.input and 'role="log"' in found.messages
    assert found.frame_url.endswith(
        "/web/frame.html" if variant == "/iframe" else variant or "/shop"
    )
    assert ("(in a shadow root)" in found.input) == (variant == "/shadow")
    assert session.budget.used == 2 + 2 * 3  # open the page, click the bubble, 3 per turn


async def test_custom_markup_is_opened_from_the_hint_or_the_selectors(
    demo: DemoServer, tmp_path: Path
) -> None:
    async with browser(demo, tmp_path, "/shop/custom") as target:
        with pytest.raises(TargetError, match="found no chat widget on .*/shop/custom.*chat_hint"):
            await say(await target.open_session(), Transcript(), "Hi")
    async with browser(demo, tmp_path, "/shop/custom", chat_hint="Click 'Ask Nora'") as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "What is your return policy?")
    assert "30 days" in transcript.messages[1].content
    assert session.widget.found.opened_with == 'found <div class="k3v"> "Ask Nora"'
    selectors = {"open": "text=Ask Nora", "input": ".w5", "send": ".s8", "messages": ".z2"}
    async with browser(demo, tmp_path, "/shop/custom", **selectors) as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "What is your return policy?")
    assert "30 days" in transcript.messages[1].content
    found = session.widget.found
    assert found.opened_with == 'your `open` selector: <div class="k3v"> "Ask Nora"'
    assert found.input == 'your `input` selector: <div class="w5">'
    assert found.send is not None and found.send.startswith("your `send` selector: <span")
    assert found.messages.startswith('your `messages` selector: <div class="z2">')


async def test_a_page_that_is_not_there_says_so(demo: DemoServer, tmp_path: Path) -> None:
    async with browser(demo, tmp_path, "/no-such-page") as target:
        trial = await run(scripted("Hi"), target)
    assert trial.status == "error"
    assert trial.error.startswith(f"{demo.url}/no-such-page answered HTTP 404; check chat_url")


async def test_a_selector_matching_nothing_says_which_one(demo: DemoServer, tmp_path: Path) -> None:
    async with browser(demo, tmp_path, messages="#no-such-log") as target:
        with pytest.raises(TargetError, match=r"your `messages` selector '#no-such-log' matches"):
            await say(await target.open_session(), Transcript(), "Hi")


async def test_a_chat_that_never_answers_ends_the_trial_with_a_screenshot(
    demo: DemoServer, tmp_path: Path
) -> None:
    async with browser(demo, tmp_path, "/shop/silent", timeout_s=1.5) as target:
        trial = await run(scripted("Hello?"), target)
    assert trial.status == "error" and trial.end_reason == "target_error"
    assert trial.error.startswith("The chat assistant never replied within 1.5 s")
    assert trial.page_url == f"{demo.url}/shop/silent"
    [shot] = trial.artifacts  # `failures` (the default) keeps the page as it was
    assert shot.kind == "screenshot" and shot.turn == 1 and shot.url == trial.page_url
    assert Path(shot.path).read_bytes().startswith(b"\x89PNG")
    assert Path(shot.path).is_relative_to(tmp_path / "artifacts" / "screenshots")


async def test_screenshots_every_turn_failures_or_none(demo: DemoServer, tmp_path: Path) -> None:
    users = ("Where is my order?", "It's #10234")
    twice = scripted(*users, checks=[{"contains": "March 17"}]).model_copy(update={"trials": 2})
    async with browser(demo, tmp_path, screenshots="every_turn") as target:
        result = await run_scenarios(
            [twice],
            targets=lambda s: target,
            user_model=None,
            judge_model=None,
            settings=RunSettings(parallel=2),
        )
    for every in result.scenarios[0].trials:  # two conversations at once, one browser
        assert every.status == "passed"
        assert [(a.turn, Path(a.path).is_file()) for a in every.artifacts] == [(1, True), (2, True)]
    first, second = (Path(t.artifacts[0].path).parent for t in result.scenarios[0].trials)
    assert first != second  # each conversation's screenshots in a folder of its own
    async with browser(demo, tmp_path) as target:
        passed = await run(scripted(*users, checks=[{"contains": "March 17"}]), target)
    assert passed.status == "passed" and passed.artifacts == []
    assert passed.page_url == f"{demo.url}/shop"
    async with browser(demo, tmp_path) as target:
        failed = await run(scripted(*users, checks=[{"contains": "never said"}]), target)
    assert failed.status == "failed"
    assert [a.turn for a in failed.artifacts] == [2]  # the page when the conversation ended
    async with browser(demo, tmp_path, "/shop/silent", screenshots="none", timeout_s=1) as target:
        silent = await run(scripted("Hello?"), target)
    assert silent.status == "error" and silent.artifacts == []
    assert silent.page_url == f"{demo.url}/shop/silent"  # kept without screenshots too


async def test_the_step_budget_is_12_plus_5_per_turn_at_most_60(
    demo: DemoServer, tmp_path: Path
) -> None:
    assert [step_budget(n) for n in (1, 6, 9, 12)] == [17, 42, 57, 60]
    async with browser(demo, tmp_path, settle_s=0.1) as target:
        session = await target.open_session()
        session.plan(max_turns=1)  # 17 steps: page, bubble, then 3 per turn
        transcript = Transcript()
        for turn in range(5):
            transcript = await say(session, transcript, f"Hello {turn}")
        assert session.budget.used == 17
        with pytest.raises(StepBudgetSpent, match="used 17 of its 17 steps .* before turn 6"):
            await say(session, transcript, "One more")
        await session.close()


async def test_a_simulated_user_talks_to_the_widget_and_the_judge_grades_it(
    demo: DemoServer, tmp_path: Path
) -> None:
    scenario = SimulatedScenario(
        id="sim", goal="Learn when order 10234 arrives", max_turns=2, criteria=["Gives a date"]
    )
    model = ScriptedModel(
        [
            {"message": "When does order 10234 arrive?", "done": False, "done_reason": None},
            {"message": "", "done": True, "done_reason": "goal_achieved"},
            {
                "verdicts": {
                    "c1": {
                        "verdict": "met",
                        "reason": "says March 17",
                        "evidence": ["March 17"],
                        "turns": [1],
                    }
                },
                "replies": {},
            },
        ]
    )
    async with browser(demo, tmp_path, "/shop/iframe") as target:
        trial = await run(scenario, target, model)
    assert trial.status == "passed", trial.error
    assert trial.end_reason == "goal_achieved"
    assert "March 17" in trial.transcript.messages[1].content


async def test_a_phone_is_emulated_and_an_unknown_device_named(
    demo: DemoServer, tmp_path: Path
) -> None:
    async with browser(demo, tmp_path, device="iPhone 13") as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "What is your return policy?")
        agent = await session.page.evaluate("navigator.userAgent")
        assert session.page.viewport_size == {"width": 390, "height": 664}
        await session.close()
    assert "iPhone" in agent and "30 days" in transcript.messages[1].content
    async with browser(demo, tmp_path, device="iPhone13") as target:
        with pytest.raises(
            TargetError, match="device 'iPhone13' is not .* did you mean 'iPhone 13'"
        ):
            await target.open_session()


async def test_a_widget_closed_between_turns_is_opened_again(
    demo: DemoServer, tmp_path: Path
) -> None:
    async with browser(demo, tmp_path, "/shop/iframe") as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "Where is my order?")
        await session.widget.frame.get_by_label("Close chat").click()
        transcript = await say(session, transcript, "It's #10234")
        await session.close()
    assert "March 17" in transcript.messages[3].content
    assert session.budget.used == 2 + 3 + 1 + 3  # the bubble clicked once more


async def test_files_go_through_the_widgets_upload_button(demo: DemoServer, tmp_path: Path) -> None:
    data = b"Northwind Outfitters receipt\nOrder #10235\nTotal: $94.50"
    receipt = Attachment(
        name="receipt.txt",
        mime_type="text/plain",
        size=len(data),
        data=base64.b64encode(data).decode(),
        text=data.decode(),
    )
    async with browser(demo, tmp_path) as target:
        session = await target.open_session()
        refund = "I'd like a refund, my receipt is attached."
        transcript = await say(session, Transcript(), refund, files=(receipt,))
        bubble = await session.page.locator(".nw-user").last.inner_text()
        await session.close()
    assert bubble == f"\N{PAPERCLIP} receipt.txt\n{refund}"
    assert "refund of $94.50 for order #10235" in transcript.messages[1].content  # it was read
    assert session.budget.used == 2 + 4  # the upload is a step
    async with browser(demo, tmp_path) as target:
        session = await target.open_session()
        transcript = await say(session, Transcript(), "Hi")
        await session.page.evaluate("document.querySelector('input[type=file]').remove()")
        with pytest.raises(TargetError, match=r"sends files \(receipt.txt\) but the chat widget"):
            await say(session, transcript, "Here is my receipt", files=(receipt,))
        await session.close()


def test_doctor_shows_the_elements_the_screenshot_and_the_reply(
    demo: DemoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPARRING_SITE_URL", demo.url)
    monkeypatch.setenv("SPARRING_ARTIFACTS_DIR", str(tmp_path / "art"))
    monkeypatch.chdir(tmp_path)
    good = tmp_path / "chat.yaml"
    good.write_text("target: {chat_url: /shop/shadow, settle_s: 0.3}\n", encoding="utf-8")
    done = CliRunner().invoke(
        cli, ["doctor", str(good), "--message", "What is your return policy?"]
    )
    assert done.exit_code == 0, done.output
    assert "browser target, chat page /shop/shadow" in done.output
    assert 'Input: found <textarea aria-label="Message"' in done.output
    assert "(in a shadow root)" in done.output and "Steps: 5" in done.output
    shot = next(line for line in done.output.splitlines() if line.startswith("Screenshot: "))
    assert Path(shot.removeprefix("Screenshot: ")).is_file()
    assert "Reply: " in done.output and "30 days" in done.output
    silent = tmp_path / "silent.yaml"
    silent.write_text("target: {chat_url: /shop/silent, timeout_s: 1}\n", encoding="utf-8")
    done = CliRunner().invoke(cli, ["doctor", str(silent)])
    assert done.exit_code == 3
    assert "Error: The chat assistant never replied within 1 s" in done.output
