"""A simulated user in voice mode (`mode: voice`): its prompt asks for spoken words, a voice
target speaks its messages through the speech provider, and against a text target
`sparring run` notes that they go as text."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.models.scripted import ScriptedModel
from sparring.models.speech import wav_text
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import SimulatedScenario
from sparring.scenario.evaluations import SimulatedUser
from sparring.simulator import SPOKEN, next_user_message, voice_mode_notes
from sparring.target_specs import HttpTargetSpec, VoiceTargetSpec
from sparring.targets.voice import UserAudio, VoiceCallableTarget
from sparring.transcript import Transcript
from tests.support.speech_server import FakeSpeech

pytestmark = pytest.mark.anyio


def scenario(mode: Literal["text", "voice"], **more: Any) -> SimulatedScenario:
    user = SimulatedUser(name="caller", description="Sam, 68, books by phone", mode=mode)
    return SimulatedScenario.model_validate(
        {"id": "call", "goal": "Book a slot", "max_turns": 2, "simulated_user": user, **more}
    )


async def _system_prompt(mode: Literal["text", "voice"]) -> str:
    model = ScriptedModel([{"message": "Hi, I'd like a slot.", "done": False, "done_reason": None}])
    await next_user_message(
        model, scenario=scenario(mode), transcript=Transcript(messages=()), may_stop=False
    )
    (messages, _), *_ = model.calls
    return messages[0]["content"]


async def test_a_voice_mode_user_is_asked_for_spoken_words_only() -> None:
    spoken, typed = await _system_prompt("voice"), await _system_prompt("text")
    assert SPOKEN in spoken and SPOKEN not in typed
    assert spoken.replace("\n" + SPOKEN, "") == typed  # one line, nothing else changes
    assert len(SPOKEN) < 160  # lean


async def test_a_voice_mode_user_is_heard_through_the_speech_provider() -> None:
    heard: list[str | None] = []

    def agent(audio: bytes, history: Any) -> str:
        heard.append(wav_text(audio))
        return "Sure, ten thirty works."

    model = ScriptedModel(
        [{"message": m, "done": False, "done_reason": None} for m in ("Ten thirty?", "Thanks.")]
    )
    speech = FakeSpeech()
    result = await run_scenarios(
        [scenario("voice", criteria=[])],
        targets=lambda s: VoiceCallableTarget(agent, audio=UserAudio(speech)),
        user_model=model,
        judge_model=None,
        settings=RunSettings(),
        observer=lambda e: None,
    )
    assert heard == speech.said == ["Ten thirty?", "Thanks."]
    assert SPOKEN in model.calls[0][0][0]["content"]
    assert result.scenarios[0].trials[0].transcript.messages[0].content == "Ten thirty?"


def test_a_voice_mode_user_against_a_text_target_is_a_note_not_an_error(tmp_path: Path) -> None:
    voice = VoiceTargetSpec(type="voice", callable="sparring.demo.voice:agent")
    http = HttpTargetSpec(url="http://127.0.0.1:9/chat")
    assert voice_mode_notes([scenario("voice", target=voice), scenario("text", target=http)]) == []
    (note,) = voice_mode_notes([scenario("voice", target=http)])
    assert "simulated user 'caller' is in voice mode" in note and "sent as text" in note
    (tmp_path / "library.yaml").write_text(
        "simulated_users:\n  - name: caller\n    description: Sam, 68\n    mode: voice\n"
    )
    (tmp_path / "t.yaml").write_text(
        'target: {url: "http://127.0.0.1:9/chat"}\n'
        "scenarios:\n  - id: call\n    user: caller\n    goal: Book a slot\n"
    )
    done = CliRunner().invoke(cli, ["run", str(tmp_path), "--list"])
    assert done.exit_code == 0, done.output
    assert f"note: {tmp_path / 't.yaml'}:3" in done.output and "in voice mode" in done.output
