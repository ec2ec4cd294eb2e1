"""`LiveKitAdapter` against a real LiveKit `AgentSession` with offline plugins
(`tests/support/livekit_fakes.py`: an STT that listens for loud audio followed by silence,
a scripted LLM, a TTS speaking silence); nothing goes over the network."""

from __future__ import annotations

import logging
from array import array
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="the livekit extra is not installed")

from livekit.agents import Agent, AgentSession, function_tool  # noqa: E402
from livekit.agents.llm import ChatMessage  # noqa: E402

from sparring.adapters.livekit import LiveKitAdapter  # noqa: E402
from sparring.errors import TargetError  # noqa: E402
from sparring.models.speech import Audio, write_wav  # noqa: E402
from sparring.target_specs import VoiceTargetSpec  # noqa: E402
from sparring.targets.adapters.livekit import pcm_frames  # noqa: E402
from sparring.targets.voice import UserAudio, voice_target  # noqa: E402
from sparring.transcript import Message, Transcript  # noqa: E402
from tests.support.livekit_fakes import LLMTurn, LoudnessSTT, ScriptedLLM, SilentTTS  # noqa: E402
from tests.support.speech_server import FakeSpeech, tone_pcm  # noqa: E402

pytestmark = pytest.mark.anyio


@function_tool
async def create_booking(time: str) -> str:
    """Book a slot at `time`."""
    return f"BK-42 at {time}"


class Booking:
    """A factory of sessions sharing one scripted STT and LLM (one conversation)."""

    def __init__(self, heard: list[str], replies: list[LLMTurn]) -> None:
        self.stt, self.llm = LoudnessSTT(heard), ScriptedLLM(replies)

    def __call__(self) -> tuple[AgentSession[Any], Agent]:
        session = AgentSession[Any](
            stt=self.stt,
            llm=self.llm,
            tts=SilentTTS(),
            turn_handling={"turn_detection": "stt", "endpointing": {"min_delay": 0.1}},
        )
        return session, Agent(instructions="You book slots.", tools=[create_booking])


def adapter(factory: Any, **options: Any) -> LiveKitAdapter:
    return LiveKitAdapter(factory, audio=UserAudio(FakeSpeech()), grace_period_s=0.2, **options)


async def test_a_wav_per_turn_into_a_real_agent_session(tmp_path: Path) -> None:
    booking = Booking(
        ["book me a slot at ten", "thanks"],
        [
            LLMTurn(tool_calls=[("create_booking", {"time": "10am"})]),
            LLMTurn("Booked: BK-42 at 10am."),
            LLMTurn("You're welcome."),
        ],
    )
    recording = tmp_path / "t1.wav"  # 8 kHz stereo: resampled and mixed down on the way in
    mono = array("h", tone_pcm(0.6, rate=8000))
    stereo = array("h", [sample for s in mono for sample in (s, s)]).tobytes()
    recording.write_bytes(write_wav(Audio(stereo, 8000, 2, 2)))
    conversation = await adapter(booking, sample_rate=16000).open_session()
    try:
        first = Message(role="user", content="Book me a slot at 10am.", audio=str(recording))
        reply = await conversation.send(Transcript(messages=(first,)))
        second = Message(role="user", content="Thanks for that.")  # spoken by FakeSpeech
        thanks = await conversation.send(Transcript(messages=(first, reply, second)))
    finally:
        await conversation.close()
    assert reply.content == "Booked: BK-42 at 10am."
    (call,) = reply.tool_calls
    assert (call.name, call.arguments, call.result) == (
        "create_booking",
        {"time": "10am"},
        "BK-42 at 10am",
    )
    assert reply.raw == {"heard": ["book me a slot at ten"]}
    assert reply.audio_ms is not None and reply.audio_ms >= 4 * 50  # SilentTTS: 50 ms a word
    assert reply.first_audio_ms is not None and reply.latency_ms is not None
    assert thanks.content == "You're welcome." and thanks.tool_calls == ()
    # the STT really heard each WAV through the session: 0.6 s, then 3 words x 100 ms
    assert booking.stt.utterances_s == [pytest.approx(0.6, abs=0.03), pytest.approx(0.3, abs=0.03)]
    last_context = [
        m.text_content for m in booking.llm.contexts[-1].items if isinstance(m, ChatMessage)
    ]
    assert last_context[-2:] == ["Booked: BK-42 at 10am.", "thanks"]


async def test_preload_puts_the_history_into_the_agent() -> None:
    booking = Booking(["and now?"], [LLMTurn("Still booked.")])
    conversation = await adapter(booking).open_session()
    try:
        history = Transcript(
            messages=(
                Message(role="user", content="Book it."),
                Message(role="agent", content="Booked."),
            )
        )
        assert await conversation.preload(history) == history
        ask = Message(role="user", content="And now?")
        reply = await conversation.send(history.with_message(ask))
    finally:
        await conversation.close()
    assert reply.content == "Still booked."
    seen = [
        (m.role, m.text_content)
        for m in booking.llm.contexts[0].items
        if isinstance(m, ChatMessage)
    ]
    assert seen[-3:] == [("user", "Book it."), ("assistant", "Booked."), ("user", "and now?")]


async def test_factory_mistakes_are_target_errors() -> None:
    with pytest.raises(TargetError, match="returned str; return .AgentSession"):
        await adapter(lambda: "session").open_session()

    def broken() -> Any:
        raise RuntimeError("no model key")

    with pytest.raises(TargetError, match="the session factory raised RuntimeError"):
        await adapter(broken).open_session()

    async def made_async() -> tuple[AgentSession[Any], Agent]:
        return Booking([], [])()

    conversation = await adapter(made_async).open_session()
    await conversation.close()


def test_frames_are_mono_16_bit_at_the_rate_and_size_asked() -> None:
    frames = pcm_frames(
        Audio(tone_pcm(0.25, rate=8000), 8000, 1, 2), sample_rate=16000, frame_ms=20
    )
    assert len(frames) == 13 and {len(f) for f in frames} == {640}  # 250 ms, last one padded
    eight_bit = Audio(bytes([128, 255, 0, 128] * 40), 8000, 1, 1)
    assert len(pcm_frames(eight_bit, sample_rate=8000, frame_ms=20)) == 1


def test_yaml_livekit_target_takes_the_streaming_settings() -> None:
    spec = VoiceTargetSpec(
        type="voice",
        livekit="tests.test_voice_livekit:Booking",
        sample_rate=16000,
        frame_ms=40,
        grace_period_s=2.5,
    )
    target = voice_target(spec)
    assert isinstance(target, LiveKitAdapter)
    assert (target.sample_rate, target.frame_ms, target.grace_period_s) == (16000, 40, 2.5)
    assert target.name == "tests.test_voice_livekit:Booking"


class Greeter(Agent):
    async def on_enter(self) -> None:
        self.session.generate_reply()  # pyright: ignore[reportUnknownMemberType]


async def test_a_greeting_is_over_before_the_first_message_and_opens_the_first_reply() -> None:
    booking = Booking(["hello"], [LLMTurn("Welcome to booking."), LLMTurn("How can I help?")])

    def greeting_session() -> tuple[AgentSession[Any], Agent]:
        session, _ = booking()
        return session, Greeter(instructions="You greet, then book slots.")

    conversation = await adapter(greeting_session).open_session()
    try:
        assert len(booking.llm.contexts) == 1  # the greeting, before anything was sent
        hello = Message(role="user", content="Hello there.")
        reply = await conversation.send(Transcript(messages=(hello,)))
    finally:
        await conversation.close()
    assert reply.parts == ("Welcome to booking.", "How can I help?")
    assert reply.raw == {"heard": ["hello"]}


async def test_files_fail_the_turn_and_a_normal_end_logs_no_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from sparring.targets.attachments import attachment_of

    caplog.set_level(logging.ERROR)
    conversation = await adapter(Booking([], [])).open_session()
    try:
        receipt = attachment_of("receipt.txt", b"Order 10237")
        sent = Message(role="user", content="Here it is.", files=(receipt,))
        with pytest.raises(TargetError, match=r"audio only.*\(receipt.txt\)"):
            await conversation.send(Transcript(messages=(sent,)))
    finally:
        await conversation.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []
