"""`LiveKitAdapter`: a LiveKit voice agent (`livekit.agents.AgentSession`) as the agent under
test (extra `livekit`).

`LiveKitAdapter(session_factory)` calls `session_factory()` (sync or async) once per
conversation for a fresh `(AgentSession, Agent)`, replaces the session's audio input and
output with sparring's own (no room, no network of its own: the session's STT, LLM and TTS
are whatever the factory gave it) and starts it. Each user message is then played into the
session as audio at real-time pace, one `frame_ms` frame at a time, mono 16-bit PCM at
`sample_rate`: the message's WAV (resampled as needed), or its text spoken by the speech
provider (`sparring.targets.voice.UserAudio`). After the audio, silence keeps streaming, as
from an open microphone, so the session's own turn detection ends the user's turn.

The reply is complete once the agent has added at least one assistant message to the
conversation, is back to `listening`, and nothing happened (no conversation item, tool
call, state change or audio frame) for `grace_period_s`. A conversation starts the same way:
after `session.start`, silence streams until the agent is quiet, so what it says unasked (a
greeting) is over before the first user message. The reply is recorded as:

- `content`: the assistant messages of the turn (`conversation_item_added`; for the first
  turn, the greeting first), joined by newlines (`parts` holds each when there are several);
- `tool_calls`: every call of `function_tools_executed`, with its output as result;
- `audio_ms`: the length of the audio the agent spoke; `first_audio_ms`: the time from the
  end of the user's audio to the agent's first audio frame; `latency_ms`: the time from the
  end of the user's audio to its first assistant message;
- `raw`: `{"heard": [...]}`, the user transcripts the session's STT produced.

Earlier turns (unfold, `preload`) go into the agent's chat context as text. A message sent
with files ends the trial as an error naming them: a session hears audio only.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable
from typing import Any, cast

import anyio

from sparring.errors import TARGET_TIMEOUT_HINT, TargetError, TargetTimeout, UserError
from sparring.models.speech import Audio, read_wav
from sparring.targets.adapters._base import missing_extra
from sparring.targets.voice import UserAudio
from sparring.transcript import Message, ToolCall, Transcript

try:
    import numpy as np
    import numpy.typing as npt
    from livekit import rtc
    from livekit.agents import Agent, AgentSession
    from livekit.agents.llm import ChatMessage
    from livekit.agents.voice.events import (
        AgentStateChangedEvent,
        CloseEvent,
        ConversationItemAddedEvent,
        FunctionToolsExecutedEvent,
    )
    from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities
except ImportError as e:  # pragma: no cover - the dev environment has every extra
    raise missing_extra("the LiveKit adapter", "livekit") from e

Floats = npt.NDArray[np.float64]
SessionFactory = Callable[[], Any]
"""`() -> (AgentSession, Agent)`, or an awaitable of it."""


class LiveKitAdapter:
    """A LiveKit `AgentSession` per conversation, fed audio (see module docstring).

    Args:
        session_factory: Returns a new `(AgentSession, Agent)` for each conversation.
        name: Shown in reports; default the factory's qualified name.
        sample_rate: Rate of the audio streamed in, Hz.
        frame_ms: Length of each streamed frame, ms.
        grace_period_s: Quiet time after the agent's last output that ends its reply, s.
        timeout_s: Limit for one reply (from the end of the user's audio), s.
        audio: Where each message's audio comes from; default `UserAudio()`.

    Raises:
        UserError: a setting out of range.
    """

    def __init__(
        self,
        session_factory: SessionFactory,
        *,
        name: str | None = None,
        sample_rate: int = 24000,
        frame_ms: int = 20,
        grace_period_s: float = 1.0,
        timeout_s: float = 60,
        audio: UserAudio | None = None,
    ) -> None:
        if not callable(session_factory):
            raise UserError("LiveKitAdapter needs a function returning (AgentSession, Agent)")
        if sample_rate < 8000 or not 10 <= frame_ms <= 100 or grace_period_s < 0:
            raise UserError(
                f"LiveKitAdapter settings out of range: sample_rate {sample_rate} (>= 8000 Hz), "
                f"frame_ms {frame_ms} (10-100), grace_period_s {grace_period_s} (>= 0)"
            )
        self.factory = session_factory
        self.name = name or getattr(session_factory, "__qualname__", "livekit")
        self.sample_rate, self.frame_ms, self.grace_period_s = sample_rate, frame_ms, grace_period_s
        self.timeout_s = timeout_s
        self.audio = audio or UserAudio()

    async def open_session(self) -> LiveKitConversation:
        """Build a session with the factory and start it.

        Raises:
            TargetError: the factory raised, returned something else than `(AgentSession,
                Agent)`, or the session failed to start.
        """
        try:
            made: Any = self.factory()
            if inspect.isawaitable(made):
                made = await made
        except Exception as e:
            raise TargetError(f"{self.name}: the session factory raised {e!r}") from e
        pair = cast(tuple[Any, ...], made) if isinstance(made, tuple) else ()
        if not (
            len(pair) == 2 and isinstance(pair[0], AgentSession) and isinstance(pair[1], Agent)
        ):
            raise TargetError(
                f"{self.name}: the session factory returned {type(cast(object, made)).__name__}; "
                "return "
                "(AgentSession(...), Agent(...))"
            )
        conversation = LiveKitConversation(self, cast(AgentSession[Any], pair[0]), pair[1])
        await conversation.start()
        return conversation

    async def aclose(self) -> None:
        """Nothing shared to release (each conversation closes its session)."""


class _Microphone(AudioInput):
    """The session's audio input: frames sparring pushes, silence when there are none."""

    def __init__(self, *, sample_rate: int, frame_ms: int) -> None:
        super().__init__(label="sparring")
        self._samples = sample_rate * frame_ms // 1000
        self._rate = sample_rate
        self._send, self._receive = anyio.create_memory_object_stream[rtc.AudioFrame](1000)

    def push(self, pcm: bytes) -> None:
        """Queue one frame of mono 16-bit PCM (`frame_ms` long)."""
        frame = rtc.AudioFrame(pcm, self._rate, 1, len(pcm) // 2)
        self._send.send_nowait(frame)

    def silence(self) -> bytes:
        """One frame of silence."""
        return b"\0\0" * self._samples

    async def __anext__(self) -> rtc.AudioFrame:
        try:
            return await self._receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):  # closed: a normal end
            raise StopAsyncIteration from None

    def close(self) -> None:
        """End the stream (the session sees the microphone go away)."""
        self._send.close()
        self._receive.close()


class _Speaker(AudioOutput):
    """The session's audio output: measures what the agent says; plays nothing, so every
    segment finishes as soon as it is flushed."""

    def __init__(self, on_frame: Callable[[float], None]) -> None:
        super().__init__(label="sparring", capabilities=AudioOutputCapabilities(pause=False))
        self._on_frame = on_frame
        self._segment_s = 0.0

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if not self._segment_s:
            self.on_playback_started(created_at=time.time())
        self._segment_s += frame.duration
        self._on_frame(frame.duration)

    def flush(self) -> None:
        super().flush()
        self._finish(interrupted=False)

    def clear_buffer(self) -> None:
        self._finish(interrupted=True)

    def _finish(self, *, interrupted: bool) -> None:
        if self._segment_s:
            played, self._segment_s = self._segment_s, 0.0
            self.on_playback_finished(playback_position=played, interrupted=interrupted)


class _Turn:
    """What the session emitted since the user's audio started."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.heard: list[str] = []
        self.calls: list[ToolCall] = []
        self.audio_s = 0.0
        self.audio_end: float | None = None
        self.first_audio: float | None = None
        self.first_text: float | None = None
        self.last_event = time.perf_counter()


class LiveKitConversation:
    """One conversation: a started `AgentSession` with sparring's microphone and speaker."""

    def __init__(self, adapter: LiveKitAdapter, session: AgentSession[Any], agent: Agent) -> None:
        self._adapter, self._session, self._agent = adapter, session, agent
        self._mic = _Microphone(sample_rate=adapter.sample_rate, frame_ms=adapter.frame_ms)
        self._turn = _Turn()
        self._opening: list[str] = []
        self._closed: str | None = None

    async def start(self) -> None:
        """Attach the microphone and speaker, listen to the session's events, start it, and
        let the agent say what it says first (a greeting), until it is quiet.

        Raises:
            TargetError: the session failed to start, or closed.
            TargetTimeout: the agent was not quiet within the adapter's `timeout_s`.
        """
        session = self._session
        session.input.audio = self._mic
        session.output.audio = _Speaker(self._on_audio)
        events: Any = session  # rtc.EventEmitter's callbacks are untyped
        events.on("conversation_item_added", self._on_item)
        events.on("function_tools_executed", self._on_tools)
        events.on("agent_state_changed", self._on_state)
        events.on("close", self._on_close)
        try:
            await events.start(self._agent, record=False)
        except Exception as e:
            raise TargetError(
                f"{self._adapter.name}: the AgentSession failed to start: {e!r}"
            ) from e
        await self._listen(lambda: self._quiet(self._turn))
        self._opening = self._turn.texts

    def _on_item(self, event: ConversationItemAddedEvent) -> None:
        item = event.item
        if isinstance(item, ChatMessage):
            text = item.text_content or ""
            if item.role == "assistant" and text:
                self._turn.texts.append(text)
                self._turn.first_text = self._turn.first_text or time.perf_counter()
            elif item.role == "user":
                self._turn.heard.append(text)
        self._turn.last_event = time.perf_counter()

    def _on_tools(self, event: FunctionToolsExecutedEvent) -> None:
        outputs = {o.call_id: o.output for o in event.function_call_outputs}
        for call in event.function_calls:
            self._turn.calls.append(
                ToolCall.from_arguments(
                    call.name, call.arguments, id=call.call_id, result=outputs.get(call.call_id)
                )
            )
        self._turn.last_event = time.perf_counter()

    def _on_state(self, event: AgentStateChangedEvent) -> None:
        self._turn.last_event = time.perf_counter()

    def _on_audio(self, duration_s: float) -> None:
        self._turn.audio_s += duration_s
        self._turn.first_audio = self._turn.first_audio or time.perf_counter()
        self._turn.last_event = time.perf_counter()

    def _on_close(self, event: CloseEvent) -> None:
        self._closed = f"{event.reason.value}" + (f": {event.error}" if event.error else "")

    async def send(self, transcript: Transcript, /) -> Message:
        """Play the last (user) message into the session; return the agent's reply.

        Raises:
            TargetError: the message has files (a session hears audio only), its audio is
                not a WAV, or the session closed.
            TargetTimeout: no complete reply within the adapter's `timeout_s`.
        """
        message = transcript.messages[-1]
        if message.files:
            raise TargetError(
                f"{self._adapter.name}: a LiveKit AgentSession hears audio only, so it cannot "
                f"take the files of this message ({', '.join(f.name for f in message.files)}); "
                "test files through a voice callable (`files=`), an http, openai_chat, a2a "
                "or callable target"
            )
        wav = await self._adapter.audio.for_message(message)
        try:
            frames = pcm_frames(
                read_wav(wav),
                sample_rate=self._adapter.sample_rate,
                frame_ms=self._adapter.frame_ms,
            )
        except ValueError as e:
            raise TargetError(f"the audio of turn {transcript.user_turns} is unusable: {e}") from e
        self._turn = turn = _Turn()
        clock = _Pace(self._adapter.frame_ms / 1000)
        for frame in frames:
            self._mic.push(frame)
            await clock.tick()
        turn.audio_end = time.perf_counter()
        await self._listen(lambda: bool(turn.texts) and self._quiet(turn))
        opening, self._opening = self._opening, []
        return _reply(turn, opening)

    async def _listen(self, done: Callable[[], bool]) -> None:
        """Stream silence at real-time pace until `done()`.

        Raises:
            TargetError: the session closed.
            TargetTimeout: not `done()` within the adapter's `timeout_s`.
        """
        clock = _Pace(self._adapter.frame_ms / 1000)
        deadline = time.perf_counter() + self._adapter.timeout_s
        while not done():
            if self._closed is not None:
                raise TargetError(f"{self._adapter.name}: the AgentSession closed ({self._closed})")
            if time.perf_counter() > deadline:
                raise TargetTimeout(
                    target=self._adapter.name,
                    timeout_seconds=self._adapter.timeout_s,
                    hint=TARGET_TIMEOUT_HINT,
                )
            self._mic.push(self._mic.silence())
            await clock.tick()

    def _quiet(self, turn: _Turn) -> bool:
        """The agent is listening and nothing happened for the grace period."""
        quiet_s = time.perf_counter() - turn.last_event
        return self._session.agent_state == "listening" and quiet_s >= self._adapter.grace_period_s

    async def preload(self, history: Transcript, /) -> Transcript:
        """Put `history` into the agent's chat context as text; returns it unchanged."""
        context = self._agent.chat_ctx.copy()
        for m in history.messages:
            if m.role in ("user", "agent"):
                context.add_message(
                    role="user" if m.role == "user" else "assistant", content=m.content
                )
        await self._agent.update_chat_ctx(context)
        return history

    async def close(self) -> None:
        """Close the session (its STT, LLM and TTS streams)."""
        self._mic.close()
        with anyio.CancelScope(shield=True):
            await self._session.aclose()


class _Pace:
    """Real-time pacing: `tick()` returns when the next frame is due (no drift)."""

    def __init__(self, frame_s: float) -> None:
        self._frame_s, self._start, self._frames = frame_s, time.perf_counter(), 0

    async def tick(self) -> None:
        self._frames += 1
        due = self._start + self._frames * self._frame_s
        await anyio.sleep(max(0.0, due - time.perf_counter()))


def _reply(turn: _Turn, opening: list[str]) -> Message:
    """The reply of `turn`; what the agent said before the first user message (`opening`)
    comes first."""
    end = turn.audio_end or time.perf_counter()
    texts = [*opening, *turn.texts]

    def since_end(moment: float | None) -> float | None:
        return None if moment is None else round((moment - end) * 1000, 3)

    return Message(
        role="agent",
        content="\n".join(texts),
        parts=tuple(texts) if len(texts) > 1 else (),
        tool_calls=tuple(turn.calls),
        latency_ms=since_end(turn.first_text),
        audio_ms=round(turn.audio_s * 1000, 3) if turn.audio_s else None,
        first_audio_ms=since_end(turn.first_audio),
        raw={"heard": list(turn.heard)},
    )


def pcm_frames(audio: Audio, *, sample_rate: int, frame_ms: int) -> list[bytes]:
    """`audio` as mono 16-bit PCM at `sample_rate`, cut into `frame_ms` frames (the last
    one padded with silence). Channels are averaged; rates are converted by linear
    interpolation."""
    samples = _mono_float(audio)
    if audio.sample_rate != sample_rate and samples.size:
        count = max(1, round(samples.size * sample_rate / audio.sample_rate))
        positions: Floats = np.linspace(0, samples.size - 1, count, dtype=np.float64)
        known: Floats = np.arange(samples.size, dtype=np.float64)
        samples = np.interp(positions, known, samples)
    scaled: Floats = np.clip(np.round(samples * 32767), -32768, 32767)
    pcm = scaled.astype("<i2").tobytes()
    size = sample_rate * frame_ms // 1000 * 2
    pcm += b"\0" * (-len(pcm) % size)
    return [pcm[i : i + size] for i in range(0, len(pcm), size)]


def _mono_float(audio: Audio) -> Floats:
    """Samples in [-1, 1], channels averaged."""
    width = audio.sample_width
    raw = np.frombuffer(audio.pcm, dtype=np.uint8).reshape(-1, width)
    if width == 1:
        values = raw[:, 0].astype(np.float64) - 128
    else:
        padded = np.zeros((raw.shape[0], 4), dtype=np.uint8)
        padded[:, 4 - width :] = raw  # little-endian sample in the top bytes of an int32
        values = padded.view("<i4")[:, 0].astype(np.float64)
    full_scale = 128.0 if width == 1 else 2147483648.0
    return (values / full_scale).reshape(-1, audio.channels).mean(axis=1)
