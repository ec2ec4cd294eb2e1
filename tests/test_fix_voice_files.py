"""Files sent to a voice target: a voice callable gets them as `files=` (the shape a callable
target's history has), one that cannot take them fails the trial naming them; never a silent
drop."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from sparring.errors import TargetError
from sparring.loaders.yaml import load_paths
from sparring.runner import RunSettings, run_scenarios
from sparring.targets.attachments import attachment_of
from sparring.targets.voice import UserAudio, VoiceCallableTarget
from sparring.transcript import Message, Transcript
from tests.support.speech_server import FakeSpeech

pytestmark = pytest.mark.anyio
RECEIPT = attachment_of("receipt.txt", b"Order 10237, 2 x mug")


async def test_a_voice_callable_gets_the_message_files_in_the_callable_shape() -> None:
    got: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []

    async def agent(audio: bytes, history: list[dict[str, Any]], files: Any = None) -> str:
        got.append((history, files))
        return "Thanks, I see the receipt."

    session = await VoiceCallableTarget(agent, audio=UserAudio(FakeSpeech())).open_session()
    first = Message(role="user", content="Here it is.", files=(RECEIPT,))
    reply = await session.send(Transcript(messages=(first,)))
    second = Message(role="user", content="And now?")
    await session.send(Transcript(messages=(first, reply, second)))
    entry = {"name": "receipt.txt", "mime_type": "text/plain", "data": RECEIPT.data}
    assert got[0] == ([], [entry])
    assert base64.b64decode(entry["data"]) == b"Order 10237, 2 x mug"
    assert got[1] == (  # later: in the history, as a callable target's history has them
        [
            {"role": "user", "content": "Here it is.", "files": [entry]},
            {"role": "assistant", "content": "Thanks, I see the receipt."},
        ],
        None,
    )


async def test_files_reach_a_voice_callable_taking_keywords_and_plain_calls_stay_two_args() -> None:
    seen: list[dict[str, Any]] = []

    def agent(audio: bytes, history: Any, **options: Any) -> str:
        seen.append(options)
        return "ok"

    session = await VoiceCallableTarget(agent, audio=UserAudio(FakeSpeech())).open_session()
    await session.send(Transcript(messages=(Message(role="user", content="Hi"),)))
    await session.send(Transcript(messages=(Message(role="user", content="x", files=(RECEIPT,)),)))
    assert seen[0] == {} and [f["name"] for f in seen[1]["files"]] == ["receipt.txt"]


async def test_a_voice_callable_without_files_fails_the_trial_naming_them(tmp_path: Path) -> None:
    heard: list[bytes] = []

    async def agent(audio: bytes, history: Any) -> str:
        heard.append(audio)
        return "Sure."

    session = await VoiceCallableTarget(agent, audio=UserAudio(FakeSpeech())).open_session()
    sent = Message(role="user", content="Here it is.", files=(RECEIPT,))
    with pytest.raises(TargetError, match=r"files of this message \(receipt.txt\).*files=None"):
        await session.send(Transcript(messages=(sent,)))
    assert heard == []  # not called without them

    (tmp_path / "receipt.txt").write_text("Order 10237")
    (tmp_path / "t.yaml").write_text(
        "target: {type: voice, callable: 'sparring.demo.voice:agent'}\n"
        "scenarios:\n  - id: receipt\n    turns:\n      - user: Here it is.\n"
        "        files: [receipt.txt]\n        checks: [{contains: Sure}]\n"
    )
    result = await run_scenarios(
        load_paths([tmp_path / "t.yaml"]),
        targets=lambda s: VoiceCallableTarget(agent, audio=UserAudio(FakeSpeech())),
        user_model=None,
        judge_model=None,
        settings=RunSettings(),
        observer=lambda e: None,
    )
    trial = result.scenarios[0].trials[0]
    assert trial.status == "error" and "receipt.txt" in (trial.error or "")
