"""`local:` models and cancellation (issue 9 item 24), with a fake llama-cpp-python.

llama-cpp-python is not needed: a fake `llama_cpp` module is put in `sys.modules`. Its
`Llama` behaves like the real one where it matters here: loading silences the process's
stdout (fd 1 pointed at /dev/null, as `suppress_stdout_stderr` does), and a completion
blocks its thread until the test lets it finish.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sparring.errors import ModelError, UserError
from sparring.models import local
from sparring.models.local import LocalModel
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import SimulatedScenario
from sparring.targets.scripted import ScriptedTarget

pytestmark = pytest.mark.anyio

PROMPT: Any = [{"role": "user", "content": "Hi"}]


class FakeLlama:
    """Records each request; a completion whose content is "wait" blocks until `release`."""

    instances: list[FakeLlama] = []
    silence_s = 0.0
    block_all = False

    def __init__(self, *, model_path: str, **options: Any) -> None:
        self.model_path, self.options = model_path, options
        self.requests: list[dict[str, Any]] = []
        self.finished: list[str] = []
        self.release = threading.Event()
        if FakeLlama.silence_s:  # what llama-cpp-python does while it loads
            saved = os.dup(1)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 1)
            try:
                time.sleep(FakeLlama.silence_s)
            finally:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(null)
        FakeLlama.instances.append(self)

    def create_chat_completion(self, **request: Any) -> dict[str, Any]:
        self.requests.append(request)
        text = request["messages"][-1]["content"]
        if text == "fail":
            raise ValueError("Requested tokens (9000) exceed context window of 8192")
        if text == "wait" or self.block_all:
            assert self.release.wait(30), "the test never released the completion"
        self.finished.append(text)
        return {
            "choices": [{"message": {"role": "assistant", "content": f"re: {text}"}}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 2},
        }


@pytest.fixture
def gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    fake = types.ModuleType("llama_cpp")
    fake.Llama = FakeLlama  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    monkeypatch.setattr(local, "_LOADED", {})
    FakeLlama.instances, FakeLlama.silence_s, FakeLlama.block_all = [], 0.0, False
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(32))
    yield path
    for llama in FakeLlama.instances:
        llama.release.set()  # let blocked completions end


def _model(path: Path) -> LocalModel:
    return LocalModel(name=f"local:{path}", path=str(path))


def _say(text: str) -> Any:
    return [{"role": "user", "content": text}]


async def test_a_completion_runs_on_the_model_thread(gguf: Path) -> None:
    model = _model(gguf)
    completion = await model.complete(PROMPT, temperature=0.5)
    assert (completion.text, completion.input_tokens, completion.output_tokens) == ("re: Hi", 3, 2)
    (llama,) = FakeLlama.instances
    assert llama.requests[0]["temperature"] == 0.5


async def test_a_failed_completion_is_a_model_error_and_the_next_one_runs(gguf: Path) -> None:
    model = _model(gguf)
    with pytest.raises(ModelError, match="exceed context window.*larger context_tokens"):
        await model.complete(_say("fail"), temperature=0)
    assert (await model.complete(PROMPT, temperature=0)).text == "re: Hi"


async def test_a_cancelled_call_leaves_the_queue_at_once(gguf: Path) -> None:
    model = _model(gguf)
    (llama,) = FakeLlama.instances
    out: dict[str, str] = {}

    async def ask(text: str) -> None:
        out[text] = (await model.complete(_say(text), temperature=0)).text

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "wait")  # running, blocked
        await _until(lambda: len(llama.requests) == 1)
        with anyio.CancelScope() as queued:
            queued.cancel()  # cancelled while it waits behind the running call
            await ask("never")
        tg.start_soon(ask, "after")
        await anyio.sleep(0.05)
        assert out == {} and llama.finished == []  # still queued behind "wait"
        llama.release.set()
    assert out == {"wait": "re: wait", "after": "re: after"}
    assert [r["messages"][-1]["content"] for r in llama.requests] == ["wait", "after"]


async def test_a_running_call_is_not_waited_for_once_cancelled(gguf: Path) -> None:
    model = _model(gguf)
    (llama,) = FakeLlama.instances
    with anyio.move_on_after(0.2) as scope:
        await model.complete(_say("wait"), temperature=0)
    assert scope.cancelled_caught and llama.finished == []  # returned while it still ran
    llama.release.set()
    assert (await model.complete(PROMPT, temperature=0)).text == "re: Hi"
    assert llama.finished == ["wait", "Hi"]  # the dropped answer came, nobody took it


async def test_a_conversation_timeout_does_not_wait_for_queued_llama_calls(gguf: Path) -> None:
    """Many conversations queue on one llama; their timeout ends them all at once."""
    FakeLlama.block_all = True
    model = _model(gguf)
    (llama,) = FakeLlama.instances
    scenario = SimulatedScenario.model_validate(
        {"id": "slow", "goal": "g", "criteria": ["x"], "timeout_s": 0.3, "trials": 4}
    )
    result = await run_scenarios(
        [scenario],
        targets=lambda s: ScriptedTarget(["hello"] * 10),
        user_model=model,
        judge_model=model,
        settings=RunSettings(parallel=4),
    )
    assert [t.status for t in result.scenarios[0].trials] == ["timed_out"] * 4
    assert llama.finished == []  # the run ended while llama still held the first call


def test_a_running_completion_does_not_keep_the_process_alive(gguf: Path) -> None:
    script = textwrap.dedent(
        f"""
        import sys, threading, types, anyio
        fake = types.ModuleType("llama_cpp")
        class Llama:
            def __init__(self, **options): pass
            def create_chat_completion(self, **request):
                threading.Event().wait()  # a completion that never ends
        fake.Llama = Llama
        sys.modules["llama_cpp"] = fake
        from sparring.models.local import LocalModel
        async def main():
            model = LocalModel(name="local:m", path={str(gguf)!r})
            with anyio.move_on_after(0.1):
                await model.complete([{{"role": "user", "content": "Hi"}}], temperature=0)
            print("run over", flush=True)
        anyio.run(main)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "run over\n"


async def test_loading_does_not_swallow_lines_printed_meanwhile(
    gguf: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """llama points stdout at /dev/null while it loads; the model is loaded when it is made,
    which blocks the event loop, so a live view's lines are printed before or after."""
    FakeLlama.silence_s = 0.3
    printed = 0

    async def live_view() -> None:
        nonlocal printed
        while True:
            printed += 1
            os.write(1, f"line {printed}\n".encode())
            await anyio.sleep(0.005)

    async with anyio.create_task_group() as tg:
        tg.start_soon(live_view)
        await anyio.sleep(0.05)
        model = _model(gguf)
        await model.complete(PROMPT, temperature=0)
        await anyio.sleep(0.05)
        tg.cancel_scope.cancel()
    lines = capfd.readouterr().out.splitlines()
    assert lines == [f"line {i}" for i in range(1, printed + 1)]


def test_a_file_llama_cannot_load_is_a_user_error(gguf: Path) -> None:
    def broken(**options: Any) -> None:
        raise ValueError("Failed to load model from file")

    sys.modules["llama_cpp"].Llama = broken  # type: ignore[attr-defined]
    with pytest.raises(UserError, match="llama could not load .*check that the file is complete"):
        _model(gguf)


async def _until(condition: Any) -> None:
    with anyio.fail_after(10):
        while not condition():
            await anyio.sleep(0.005)


def test_sigterm_ends_a_run_whose_conversations_wait_on_llama(tmp_path: Path) -> None:
    """`sparring run` with a `local:` model: SIGTERM while one completion runs forever and
    the other conversations queue behind it ends the run (exit 130) without waiting."""
    fake = tmp_path / "llama_cpp"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        textwrap.dedent(
            """
            import pathlib, threading
            class Llama:
                def __init__(self, **options):
                    pass
                def create_chat_completion(self, **request):
                    pathlib.Path("llama-started").touch()
                    threading.Event().wait()  # never ends
            """
        )
    )
    (tmp_path / "agent.py").write_text("def respond(history):\n    return 'Hello.'\n")
    (tmp_path / "model.gguf").write_bytes(b"GGUF" + bytes(32))
    (tmp_path / "t.yaml").write_text(
        textwrap.dedent(
            """
            target: {type: callable, ref: "agent:respond"}
            scenarios:
              - id: waits
                goal: Get help.
                criteria: [The assistant helps]
                trials: 3
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    command = [sys.executable, "-m", "sparring.cli", "run", "t.yaml", "--no-live"]
    command += ["--model", "local:model.gguf", "--parallel", "3"]
    with subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        try:
            deadline = time.monotonic() + 120  # a guard, not a measurement
            while time.monotonic() < deadline:
                if (tmp_path / "llama-started").exists() or proc.poll() is not None:
                    break
                time.sleep(0.05)
            assert proc.poll() is None, proc.communicate()
            proc.send_signal(signal.SIGTERM)
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 130, stderr
