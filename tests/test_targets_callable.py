"""CallableTarget (sync/async functions, reply kinds, errors), load_callable, ScriptedTarget,
and build_target."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from pydantic import BaseModel

from sparring.errors import TargetError, TargetTimeout, UserError
from sparring.secrets import Secrets
from sparring.target_specs import CallableTargetSpec, HttpTargetSpec, OpenAIChatTargetSpec
from sparring.targets.base import Target
from sparring.targets.callable import CallableTarget, load_callable, reply_message
from sparring.targets.http import HttpTarget
from sparring.targets.registry import build_target
from sparring.targets.scripted import ScriptedTarget
from sparring.targets.templates import History
from sparring.transcript import Message, ToolCall, Transcript

pytestmark = pytest.mark.anyio


def conversation(*texts: str) -> Transcript:
    roles = ("user", "agent")
    return Transcript(
        messages=tuple(Message(role=roles[i % 2], content=t) for i, t in enumerate(texts))
    )


async def ask(target: Target, *texts: str) -> Message:
    session = await target.open_session()
    try:
        return await session.send(conversation(*texts))
    finally:
        await session.close()


async def test_sync_function_runs_in_a_worker_thread_with_full_history() -> None:
    seen: list[tuple[History, int]] = []

    def agent(history: History) -> str:
        seen.append((history, threading.get_ident()))
        return f"you said {history[-1]['content']}"

    target = CallableTarget(agent)
    assert isinstance(target, Target) and target.name.endswith("agent")
    reply = await ask(target, "hi", "hello!", "refund please")
    assert reply.role == "agent" and reply.content == "you said refund please"
    assert reply.latency_ms is not None and reply.latency_ms >= 0
    history, ident = seen[0]
    assert history == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello!"},
        {"role": "user", "content": "refund please"},
    ]
    assert ident != threading.get_ident()


async def test_async_function_and_async_callable_object() -> None:
    async def agent(history: History) -> str:
        await anyio.sleep(0)
        return history[-1]["content"].upper()

    class Agent:
        async def __call__(self, history: History) -> str:
            return "object"

    assert (await ask(CallableTarget(agent, name="shout"), "hey")).content == "HEY"
    assert (await ask(CallableTarget(Agent()), "x")).content == "object"


async def test_sync_function_returning_an_awaitable_is_awaited() -> None:
    async def inner() -> str:
        return "awaited"

    assert (await ask(CallableTarget(lambda h: inner()), "x")).content == "awaited"


class Order(BaseModel):
    id: int
    status: str


@pytest.mark.parametrize(
    ("reply", "content", "raw"),
    [
        ("plain", "plain", None),
        ("", "", None),
        ({"b": 1, "a": "é"}, '{"a": "é", "b": 1}', {"b": 1, "a": "é"}),
        ([1, "x"], '[1, "x"]', [1, "x"]),
        (0, "0", 0),
        (False, "false", False),
        (Order(id=3, status="sent"), '{"id": 3, "status": "sent"}', {"id": 3, "status": "sent"}),
    ],
)
async def test_reply_kinds(reply: Any, content: str, raw: Any) -> None:
    message = await ask(CallableTarget(lambda h: reply), "x")
    assert message.content == content and message.raw == raw and message.tool_calls == ()


async def test_tuple_reply_with_tool_calls() -> None:
    def agent(history: History) -> tuple[str, list[Any]]:
        return "Refunded.", [
            {"name": "lookup", "arguments": {"order": 7}},
            {"name": "refund", "arguments": '{"amount": 5}'},
            {"id": "c1", "function": {"name": "notify", "arguments": "{}"}},
            ToolCall.from_arguments("log", None),
        ]

    message = await ask(CallableTarget(agent), "refund")
    assert message.content == "Refunded."
    assert [(c.name, c.arguments) for c in message.tool_calls] == [
        ("lookup", {"order": 7}),
        ("refund", {"amount": 5}),
        ("notify", {}),
        ("log", {}),
    ]
    assert message.tool_calls[2].id == "c1"


async def test_message_reply_keeps_its_fields() -> None:
    given = Message(
        role="user",
        content="x",
        latency_ms=12.5,
        input_tokens=3,
        tool_calls=(ToolCall.from_arguments("t", {}),),
    )
    message = await ask(CallableTarget(lambda h: given), "x")
    assert message.role == "agent" and message.latency_ms == 12.5 and message.input_tokens == 3
    assert [c.name for c in message.tool_calls] == ["t"]
    fresh = await ask(CallableTarget(lambda h: Message(role="agent", content="y")), "x")
    assert fresh.latency_ms is not None


@pytest.mark.parametrize(
    ("reply", "fragment"),
    [
        (None, "returned None"),
        (object(), "returned object"),
        (("text", [{"arguments": {}}]), "tool call 1 is not an object with a `name`"),
        ({"x": object()}, "neither text nor JSON"),
    ],
)
async def test_bad_replies_are_target_errors(reply: Any, fragment: str) -> None:
    with pytest.raises(TargetError, match=fragment):
        await ask(CallableTarget(lambda h: reply, name="bot"), "x")


async def test_exceptions_become_target_errors() -> None:
    def broken(history: History) -> str:
        raise KeyError("order_id")

    async def broken_async(history: History) -> str:
        raise TimeoutError("db timed out")  # the agent's own timeout, not ours

    with pytest.raises(TargetError, match=r"target 'bot' raised KeyError: 'order_id'") as info:
        await ask(CallableTarget(broken, name="bot"), "x")
    assert isinstance(info.value.__cause__, KeyError)
    with pytest.raises(TargetError, match="raised TimeoutError: db timed out") as info2:
        await ask(CallableTarget(broken_async, name="bot"), "x")
    assert not isinstance(info2.value, TargetTimeout)


class _Fatal(BaseException):
    """A BaseException that is neither cancellation nor KeyboardInterrupt."""


async def test_system_exit_and_other_base_exceptions_become_target_errors() -> None:
    def exits(history: History) -> str:
        sys.exit(3)

    async def exits_async(history: History) -> str:
        raise SystemExit("config missing")

    def fatal(history: History) -> str:
        raise _Fatal("boom")

    for fn, shown in (
        (exits, "SystemExit(3)"),
        (exits_async, "SystemExit('config missing')"),
        (fatal, "_Fatal('boom')"),
    ):
        with pytest.raises(TargetError) as info:
            await ask(CallableTarget(fn, name="bot"), "x")
        assert str(info.value).startswith(f"target 'bot' raised {shown}, which ends programs")
        assert "must return its reply" in str(info.value)


async def test_system_exit_in_one_conversation_does_not_stop_the_others() -> None:
    def agent(history: History) -> str:
        if history[-1]["content"] == "quit":
            sys.exit(0)
        return "ok"

    target = CallableTarget(agent, name="bot")
    outcomes: dict[int, str] = {}

    async def one(i: int, text: str) -> None:
        try:
            outcomes[i] = (await ask(target, text)).content
        except TargetError as e:
            outcomes[i] = type(e).__name__

    async with anyio.create_task_group() as tg:
        for i, text in enumerate(["hi", "quit", "hello"]):
            tg.start_soon(one, i, text)
    assert outcomes == {0: "ok", 1: "TargetError", 2: "ok"}


async def test_target_errors_pass_through() -> None:
    def down(history: History) -> str:
        raise TargetError("backend is down", status=503)

    with pytest.raises(TargetError, match="^backend is down$") as info:
        await ask(CallableTarget(down), "x")
    assert info.value.status == 503


async def test_timeouts_sync_and_async() -> None:
    release = threading.Event()

    def stuck(history: History) -> str:
        release.wait(10)
        return "late"

    async def slow(history: History) -> str:
        await anyio.sleep(10)
        return "late"

    try:
        with pytest.raises(TargetTimeout) as info:
            await ask(CallableTarget(stuck, name="stuck", timeout_s=0.1), "x")
        assert info.value.timeout_seconds == 0.1 and "'stuck'" in str(info.value)
    finally:
        release.set()
    with pytest.raises(TargetTimeout):
        await ask(CallableTarget(slow, timeout_s=0.1), "x")


async def test_session_requires_a_user_message_last() -> None:
    session = await CallableTarget(lambda h: "x").open_session()
    with pytest.raises(ValueError, match="ending with a user message"):
        await session.send(conversation("hi", "agent reply"))


def test_not_callable_is_a_user_error() -> None:
    with pytest.raises(UserError, match="needs a function"):
        CallableTarget("nope")  # type: ignore[arg-type]


def test_reply_message_directly() -> None:
    assert reply_message("x", latency_ms=None, target="t") == Message(role="agent", content="x")


# --- load_callable ---------------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    for name in ("sp_agent", "sp_broken", "sp_exits", "sp_needs_dep", "sp_pkg", "sp_pkg.mod"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    (tmp_path / "sp_agent.py").write_text(
        "class Bot:\n    def reply(self, history):\n        return 'bot'\n\n"
        "bot = Bot()\nNOT_CALLABLE = 3\n\n"
        "def agent(history):\n    return 'hello from ' + history[-1]['content']\n",
        encoding="utf-8",
    )
    (tmp_path / "sp_broken.py").write_text("raise ValueError('bad config')\n", encoding="utf-8")
    (tmp_path / "sp_exits.py").write_text("import sys\nsys.exit(3)\n", encoding="utf-8")
    (tmp_path / "sp_needs_dep.py").write_text("import sp_not_installed_dep\n", encoding="utf-8")
    (tmp_path / "sp_pkg").mkdir()
    (tmp_path / "sp_pkg" / "__init__.py").write_text("", encoding="utf-8")
    importlib.invalidate_caches()
    return tmp_path


async def test_load_callable_from_current_directory(workdir: Path) -> None:
    agent = load_callable("sp_agent:agent")
    assert (await ask(CallableTarget(agent), "cwd")).content == "hello from cwd"
    assert load_callable("sp_agent:bot.reply")([]) == "bot"


@pytest.mark.parametrize(
    ("ref", "fragments"),
    [
        ("no_colon", ["must look like 'module:function'"]),
        (":agent", ["must look like"]),
        (
            "sp_missing_module:agent",
            ["cannot import module 'sp_missing_module'", "sp_missing_module.py"],
        ),
        ("sp_pkg.mod:agent", ["cannot import module 'sp_pkg.mod'"]),
        ("sp_needs_dep:agent", ["'sp_not_installed_dep' is not installed", "install it"]),
        ("sp_broken:agent", ["raised ValueError: bad config", "fix the error in that module"]),
        ("sp_exits:agent", ["importing 'sp_exits' called sys.exit(3)", '__name__ == "__main__"']),
        ("sp_agent:agnet", ["has no attribute 'agnet'", "Did you mean 'agent'?"]),
        ("sp_agent:bot.nope", ["has no attribute 'nope'"]),
        ("sp_agent:NOT_CALLABLE", ["names a int, not a function"]),
    ],
)
def test_load_callable_errors(workdir: Path, ref: str, fragments: list[str]) -> None:
    with pytest.raises(UserError) as info:
        load_callable(ref)
    for fragment in fragments:
        assert fragment in str(info.value)
    if ":" in ref and not ref.startswith(":"):
        assert repr(ref) in str(info.value)


# --- ScriptedTarget --------------------------------------------------------------------


async def test_scripted_replies_per_session() -> None:
    target = ScriptedTarget(
        [
            "first",
            Message(role="agent", content="second", latency_ms=7.0),
            lambda t: f"saw {len(t.messages)} messages",
            TargetError("down"),
        ],
        latency_seconds=0.001,
    )
    s1, s2 = await target.open_session(), await target.open_session()
    assert (await s1.send(conversation("a"))).content == "first"
    assert (await s2.send(conversation("b"))).content == "first"
    second = await s1.send(conversation("a", "first", "c"))
    assert second.content == "second" and second.latency_ms == 7.0
    third = await s1.send(conversation("a", "first", "c", "second", "d"))
    assert third.content == "saw 5 messages" and third.latency_ms == 1.0
    with pytest.raises(TargetError, match="down"):
        await s1.send(conversation("e"))
    with pytest.raises(TargetError, match="no scripted reply left for call 5; it was given 4"):
        await s1.send(conversation("f"))
    await s1.close()
    await s1.close()
    assert target.sessions_opened == 2 and target.sessions_closed == 1
    assert [t.messages[-1].content for t in target.seen] == ["a", "b", "c", "d", "e", "f"]


async def test_scripted_replies_overall_and_async_function() -> None:
    async def later(transcript: Transcript) -> str:
        return "async"

    target = ScriptedTarget(["one", later], order="overall", name="fake")
    assert target.name == "fake"
    assert (await ask(target, "a")).content == "one"
    assert (await ask(target, "b")).content == "async"
    with pytest.raises(TargetError, match="fake: no scripted reply left for call 3"):
        await ask(target, "c")


# --- build_target ----------------------------------------------------------------------


async def test_build_target_for_each_spec(workdir: Path) -> None:
    secrets = Secrets({"OPENAI_API_KEY": "sk-test"})
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as client:
        http = build_target(
            HttpTargetSpec(url="http://127.0.0.1:9/chat"), client=client, secrets=secrets
        )
        assert isinstance(http, HttpTarget) and http.name == "http://127.0.0.1:9/chat"
        fn = build_target(
            CallableTargetSpec(ref="sp_agent:agent", timeout_s=5), client=client, secrets=secrets
        )
        assert isinstance(fn, CallableTarget) and fn.name == "sp_agent:agent"
        assert fn.timeout_s == 5
        assert (await ask(fn, "registry")).content == "hello from registry"
        chat = build_target(
            OpenAIChatTargetSpec(base_url="http://127.0.0.1:9/v1", model="m"),
            client=client,
            secrets=secrets,
        )
        assert type(chat).__name__ == "OpenAIChatTarget" and isinstance(chat, Target)
        await chat.aclose()
        with pytest.raises(UserError, match="cannot import module"):
            build_target(CallableTargetSpec(ref="sp_nope:agent"), client=client, secrets=secrets)
        with pytest.raises(ValueError, match="response path 'a\\[x\\]' is not valid"):
            HttpTargetSpec(url="http://x", response_path="a[x]")  # rejected with the spec
