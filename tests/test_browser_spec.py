"""Website chat targets without a browser: the `target:` keys, the page address from the
`site_url` setting, the step budget ending a conversation as `browser_done`, and the errors
that name what to install."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from pydantic import TypeAdapter, ValidationError

from sparring.cli.main import cli
from sparring.config import load_settings
from sparring.errors import ConfigError, MissingPart, StepBudgetSpent, UserError
from sparring.loaders import load_paths
from sparring.reports.html import write_html
from sparring.results import Artifact
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import ScriptedScenario
from sparring.target_specs import BrowserTargetSpec, TargetSpec
from sparring.targets import browser_launch
from sparring.targets.base import StatelessSession
from sparring.targets.browser import BrowserTarget, chat_page_url
from sparring.targets.browser_page import StepBudget, reply_parts
from sparring.targets.browser_page import _Item as Item  # pyright: ignore[reportPrivateUsage]
from sparring.targets.scripted import ScriptedTarget
from sparring.transcript import Message, Transcript
from tests.test_dialects import conversation_test

SPEC: TypeAdapter[Any] = TypeAdapter(TargetSpec)


def test_a_target_without_type_or_url_is_the_website_chat() -> None:
    spec = SPEC.validate_python({"chat_hint": "Click the chat bubble, bottom right"})
    assert isinstance(spec, BrowserTargetSpec)
    assert (spec.chat_url, spec.screenshots, spec.device) == ("", "failures", None)
    assert isinstance(SPEC.validate_python({}), BrowserTargetSpec)
    full = SPEC.validate_python(
        {
            "type": "browser",
            "chat_url": "/support",
            "device": "iPhone 13",
            "open": "#bubble",
            "input": "textarea",
            "send": "text=Send",
            "messages": "[role=log]",
            "screenshots": "every_turn",
        }
    )
    assert (full.open, full.messages, full.screenshots) == ("#bubble", "[role=log]", "every_turn")


@pytest.mark.parametrize(
    ("keys", "said"),
    [
        ({"chat_url": "ftp://shop"}, "chat_url 'ftp://shop' is not an HTTP address"),
        ({"chat_url": "support"}, "start the url with http:// or https://"),
        ({"chat_url": "{{secrets.URL}}"}, "cannot use placeholders"),
        ({"screenshots": "always"}, "'every_turn', 'failures' or 'none'"),
        ({"input": ""}, "at least 1 character"),
        ({"chat_hint": "x", "agent_url": "http://a"}, "target needs `type`"),
    ],
)
def test_bad_keys_are_load_errors(keys: dict[str, Any], said: str) -> None:
    with pytest.raises(ValidationError, match=said):
        SPEC.validate_python(keys)


def test_chat_url_joins_site_url_or_is_used_as_is() -> None:
    assert (
        chat_page_url("/support", "https://shop.example.com") == "https://shop.example.com/support"
    )
    assert chat_page_url("/help/chat", "http://h:8/base/") == "http://h:8/base/help/chat"
    assert chat_page_url("", "https://shop.example.com") == "https://shop.example.com"
    assert chat_page_url("http://other/x", None) == "http://other/x"
    with pytest.raises(UserError, match="chat_url '/support' is a path and no site_url is set"):
        chat_page_url("/support", None)


def test_site_url_and_artifacts_dir_settings(tmp_path: Path) -> None:
    (tmp_path / "sparring.toml").write_text(
        'site_url = "http://127.0.0.1:8787"\nartifacts_dir = "out/art"\n', encoding="utf-8"
    )
    settings = load_settings({}, cwd=tmp_path, env={})
    assert settings.site_url == "http://127.0.0.1:8787"
    assert settings.artifacts_dir == str(tmp_path / "out" / "art")
    from_env = load_settings({}, cwd=tmp_path, env={"SPARRING_SITE_URL": "https://shop.example"})
    assert from_env.site_url == "https://shop.example"
    with pytest.raises(ConfigError, match="site_url .*'shop.example' is not a website address"):
        load_settings({}, cwd=tmp_path, env={"SPARRING_SITE_URL": "shop.example"})


def test_the_target_reads_site_url_from_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SPARRING_SITE_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("SPARRING_ARTIFACTS_DIR", str(tmp_path / "a"))
    target = BrowserTarget.from_settings(BrowserTargetSpec(chat_url="/shop"))
    assert (target.url, target.name) == (
        "http://127.0.0.1:9/shop",
        "browser http://127.0.0.1:9/shop",
    )
    assert target.artifacts_dir == tmp_path / "a"
    assert target.device is None
    monkeypatch.setenv("SPARRING_BROWSER_DEVICE", "Pixel 7")  # the device picked for the run
    assert BrowserTarget.from_settings(BrowserTargetSpec(chat_url="/")).device == "Pixel 7"
    own = BrowserTargetSpec(chat_url="/", device="iPhone 13")  # a target's own device wins
    assert BrowserTarget.from_settings(own).device == "iPhone 13"
    monkeypatch.delenv("SPARRING_ARTIFACTS_DIR")
    (tmp_path / ".git").mkdir()
    (tmp_path / "tests").mkdir()
    monkeypatch.chdir(tmp_path / "tests")
    default = BrowserTarget.from_settings(BrowserTargetSpec(chat_url="http://h/chat"))
    assert default.artifacts_dir == tmp_path.resolve() / ".sparring" / "artifacts"


def test_reply_is_the_new_agent_text_without_echo_or_typing_indicator() -> None:
    items = [Item("Hi there", False, "user"), Item("•••", True, ""), Item("Hello!", False, "agent")]
    assert reply_parts(items, "Hi there") == ["Hello!"]
    plain = [Item("📎 a.txt\nHi  there", False, ""), Item("One", False, ""), Item("Two", False, "")]
    assert reply_parts(plain, "Hi there") == ["One", "Two"]  # no sides: the echo by its text
    assert reply_parts([Item("Nora is typing", True, "")], "Hi") == []


def test_step_budget_counts_each_action_and_refuses_a_turn_that_does_not_fit() -> None:
    budget = StepBudget(limit=5)
    for _ in range(3):
        budget.spend("clicking")
    budget.reserve(2, turn=2)
    with pytest.raises(StepBudgetSpent, match="used 3 of its 5 steps .* before turn 2"):
        budget.reserve(3, turn=2)
    budget.spend("typing")
    budget.spend("sending")
    with pytest.raises(StepBudgetSpent, match="all 5 steps .* before reading the reply"):
        budget.spend("reading the reply")


@pytest.mark.anyio
async def test_a_spent_step_budget_ends_the_conversation_as_browser_done_and_it_is_judged() -> None:
    scenario = ScriptedScenario.model_validate(
        {
            "id": "web",
            "turns": [
                {"user": "Hi", "checks": [{"contains": "Hello"}]},
                {"user": "Where is my order?"},
                {"user": "Thanks"},
            ],
        }
    )
    target = ScriptedTarget(["Hello!", StepBudgetSpent("the browser used all 17 steps")])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: target,
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
    )
    trial = result.scenarios[0].trials[0]
    assert trial.end_reason == "browser_done"
    assert trial.status == "passed"  # the check on what was said is met
    assert [m.content for m in trial.transcript.messages] == ["Hi", "Hello!"]  # unsent dropped
    assert trial.error == "the browser used all 17 steps"


@pytest.mark.anyio
async def test_no_browser_names_the_install_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    if any(Path.home().joinpath(".cache", "ms-playwright").glob("chromium*")):
        pytest.skip("Playwright's own Chromium is installed here")
    monkeypatch.setattr(browser_launch, "chromium_path", lambda: None)
    target = BrowserTarget(BrowserTargetSpec(), site_url="http://127.0.0.1:9", artifacts_dir=Path())
    try:
        with pytest.raises(MissingPart) as raised:  # the trial is skipped, saying so
            await target.open_session()
    finally:
        await target.aclose()
    assert "apt-get install chromium" in str(raised.value)
    assert "pip install 'sparring[browser]'" in str(raised.value)


def test_no_playwright_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "playwright.async_api", None)
    with pytest.raises(
        MissingPart, match=r"browser targets need Playwright: pip install 'sparring\[browser\]'"
    ):
        BrowserTarget(BrowserTargetSpec(), site_url="http://127.0.0.1:9", artifacts_dir=Path())


def test_plainwright_website_chat_tests_load_as_browser_targets(tmp_path: Path) -> None:
    seed = {
        "type": "browser",
        "chat_url": "/support",
        "chat_hint": "Click the chat bubble, bottom right",
    }
    (with_target,) = load_paths([_plainwright(tmp_path / "a.json", {"target": seed})])
    assert with_target.target == BrowserTargetSpec(
        chat_url="/support", chat_hint="Click the chat bubble, bottom right"
    )
    (inferred,) = load_paths([_plainwright(tmp_path / "b.json", {"target": {"chat_url": "/x"}})])
    assert inferred.target == BrowserTargetSpec(chat_url="/x")
    (default,) = load_paths([_plainwright(tmp_path / "c.json", {})])
    assert default.target == BrowserTargetSpec()  # the website chat on site_url


def _plainwright(path: Path, config: dict[str, Any]) -> Path:
    test = conversation_test("http://unused")
    test["config"].pop("target")
    test["config"].update(config)
    path.write_text(json.dumps(test), encoding="utf-8")
    return path


class _EvidenceSession(StatelessSession):
    """A session with evidence, as a browser's: records the turn limit it is told and hands
    out one screenshot when the trial failed."""

    def __init__(self, replies: list[str]) -> None:
        self.replies, self.planned, self.asked = replies, 0, False

    def plan(self, *, max_turns: int) -> None:
        self.planned = max_turns

    async def send(self, transcript: Transcript, /) -> Message:
        return Message(role="agent", content=self.replies.pop(0))

    async def close(self) -> None:
        pass

    def evidence(self, *, failed: bool) -> tuple[list[Artifact], str | None]:
        self.asked = failed
        shots = [Artifact(kind="screenshot", path="/s/02-turn-2.png", turn=2)] if failed else []
        return shots, "https://shop.example/support"


class _EvidenceTarget:
    name = "evidence"

    def __init__(self, session: _EvidenceSession) -> None:
        self.session = session

    async def open_session(self) -> _EvidenceSession:
        return self.session

    async def aclose(self) -> None:
        pass


@pytest.mark.anyio
async def test_the_runner_plans_the_budget_and_keeps_the_evidence_in_the_report(
    tmp_path: Path,
) -> None:
    scenario = ScriptedScenario.model_validate(
        {"id": "web", "turns": [{"user": "Hi"}, {"user": "Bye", "checks": [{"contains": "x"}]}]}
    )
    session = _EvidenceSession(["Hello", "Goodbye"])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: _EvidenceTarget(session),
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
    )
    trial = result.scenarios[0].trials[0]
    assert (session.planned, session.asked, trial.status) == (2, True, "failed")
    assert trial.page_url == "https://shop.example/support"
    assert [a.path for a in trial.artifacts] == ["/s/02-turn-2.png"]
    write_html(result, tmp_path / "r.html")
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "page https://shop.example/support" in html
    assert 'title="/s/02-turn-2.png"><span>screenshot after turn 2</span>' in html


@pytest.mark.anyio
async def test_the_kept_page_url_is_masked_like_everything_else() -> None:
    scenario = ScriptedScenario.model_validate({"id": "web", "turns": [{"user": "Hi"}]})
    session = _EvidenceSession(["Hello"])
    result = await run_scenarios(
        [scenario],
        targets=lambda s: _EvidenceTarget(session),
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
        scrub=lambda text: text.replace("support", "***"),
    )
    assert result.scenarios[0].trials[0].page_url == "https://shop.example/***"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        (
            '{chat_url: /x, devise: "iPhone 13"}',
            "unknown key 'devise' in target (browser target); did you mean 'device'?",
        ),
        (
            "{chat_hnt: Click it}",
            "unknown key 'chat_hnt' in target (target); did you mean 'chat_hint'?",
        ),
        ('{ulr: "http://x"}', "unknown key 'ulr' in target (target); did you mean 'url'?"),
    ],
)
def test_a_misspelt_key_is_named_with_the_key_meant(tmp_path: Path, target: str, said: str) -> None:
    test = tmp_path / "t.yaml"
    test.write_text(f"target: {target}\nscenarios:\n  - id: a\n    prompt: hi\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_paths([test])


def test_doctor_without_site_url_says_how_to_set_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARRING_SITE_URL", raising=False)
    (tmp_path / "chat.yaml").write_text("target: {chat_url: /support}\n", encoding="utf-8")
    done = CliRunner().invoke(cli, ["doctor", "chat.yaml"])  # `main` makes it exit 2
    assert isinstance(done.exception, UserError)
    assert "chat_url '/support' is a path and no site_url is set" in str(done.exception)
