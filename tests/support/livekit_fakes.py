"""Offline STT, LLM and TTS plugins for a real LiveKit `AgentSession` (no network).

livekit-agents ships no fake plugins (only `livekit.agents.testing.fake_job_context`), so
these implement its plugin interfaces:

- `LoudnessSTT`: a streaming STT that really listens: a run of loud frames (RMS above a
  threshold) followed by `silence_s` of quiet is one utterance; for each it emits
  START_OF_SPEECH, FINAL_TRANSCRIPT (the next of `transcripts`) and END_OF_SPEECH. So the
  transcript comes only if audio with speech and then silence really arrived.
- `ScriptedLLM`: answers each request with the next `LLMTurn` (text and/or tool calls),
  and records the chat context it was given.
- `SilentTTS`: speaks any text as silence, 50 ms per word, at 24 kHz.
"""

from __future__ import annotations

import asyncio
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from livekit import rtc
from livekit.agents import APIConnectOptions, utils
from livekit.agents.llm import (
    LLM,
    ChatChunk,
    ChatContext,
    ChoiceDelta,
    FunctionToolCall,
    LLMStream,
    Tool,
)
from livekit.agents.stt import (
    STT,
    RecognizeStream,
    SpeechData,
    SpeechEvent,
    SpeechEventType,
    STTCapabilities,
)
from livekit.agents.tts import TTS, AudioEmitter, ChunkedStream, TTSCapabilities
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, NOT_GIVEN, NotGivenOr
from livekit.agents.utils.audio import AudioBuffer


class LoudnessSTT(STT):
    def __init__(self, transcripts: list[str], *, threshold: float = 500, silence_s: float = 0.3):
        super().__init__(capabilities=STTCapabilities(streaming=True, interim_results=False))
        self.transcripts = list(transcripts)
        self.threshold, self.silence_s = threshold, silence_s
        self.utterances_s: list[float] = []
        """Length of each utterance heard, in seconds."""

    async def _recognize_impl(
        self,
        buffer: AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> SpeechEvent:
        raise NotImplementedError("LoudnessSTT only streams")

    def stream(
        self,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> RecognizeStream:
        return _LoudnessStream(stt=self, conn_options=conn_options)


def _rms(frame: rtc.AudioFrame) -> float:
    data = bytes(frame.data.cast("B"))
    samples = struct.unpack(f"<{len(data) // 2}h", data)
    return math.sqrt(sum(s * s for s in samples) / max(1, len(samples)))


class _LoudnessStream(RecognizeStream):
    def __init__(self, *, stt: LoudnessSTT, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=stt, conn_options=conn_options)
        self._owner = stt

    async def _run(self) -> None:
        speaking_s = quiet_s = 0.0
        async for item in self._input_ch:
            if not isinstance(item, rtc.AudioFrame):
                continue
            if _rms(item) > self._owner.threshold:
                if speaking_s == 0:
                    self._event(SpeechEventType.START_OF_SPEECH)
                speaking_s += item.duration
                quiet_s = 0.0
            elif speaking_s:
                quiet_s += item.duration
                if quiet_s >= self._owner.silence_s:
                    self._owner.utterances_s.append(speaking_s)
                    text = self._owner.transcripts.pop(0) if self._owner.transcripts else ""
                    self._event(SpeechEventType.FINAL_TRANSCRIPT, text)
                    self._event(SpeechEventType.END_OF_SPEECH)
                    speaking_s = quiet_s = 0.0

    def _event(self, kind: SpeechEventType, text: str = "") -> None:
        alternatives = [SpeechData(language="en", text=text)] if text else []
        self._event_ch.send_nowait(SpeechEvent(type=kind, alternatives=alternatives))


@dataclass
class LLMTurn:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


class ScriptedLLM(LLM):
    def __init__(self, turns: list[LLMTurn]) -> None:
        super().__init__()
        self.turns = list(turns)
        self.contexts: list[ChatContext] = []

    def chat(
        self,
        *,
        chat_ctx: ChatContext,
        tools: list[Tool] | None = None,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
        parallel_tool_calls: NotGivenOr[bool] = NOT_GIVEN,
        tool_choice: Any = NOT_GIVEN,
        extra_kwargs: NotGivenOr[dict[str, Any]] = NOT_GIVEN,
    ) -> LLMStream:
        self.contexts.append(chat_ctx.copy())
        turn = self.turns.pop(0) if self.turns else LLMTurn("(no more scripted replies)")
        return _ScriptedStream(
            self, turn, chat_ctx=chat_ctx, tools=tools or [], conn_options=conn_options
        )


class _ScriptedStream(LLMStream):
    def __init__(
        self,
        llm: ScriptedLLM,
        turn: LLMTurn,
        *,
        chat_ctx: ChatContext,
        tools: list[Tool],
        conn_options: APIConnectOptions,
    ) -> None:
        super().__init__(llm, chat_ctx=chat_ctx, tools=tools, conn_options=conn_options)
        self._turn = turn

    async def _run(self) -> None:
        await asyncio.sleep(0.01)
        calls = [
            FunctionToolCall(name=name, arguments=_json(args), call_id=f"call_{i}")
            for i, (name, args) in enumerate(self._turn.tool_calls)
        ]
        delta = ChoiceDelta(role="assistant", content=self._turn.text or None, tool_calls=calls)
        self._event_ch.send_nowait(ChatChunk(id=utils.shortuuid(), delta=delta))


def _json(value: Any) -> str:
    import json

    return json.dumps(value)


class SilentTTS(TTS):
    def __init__(self) -> None:
        super().__init__(
            capabilities=TTSCapabilities(streaming=False), sample_rate=24000, num_channels=1
        )

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> ChunkedStream:
        return _SilentStream(tts=self, input_text=text, conn_options=conn_options)


class _SilentStream(ChunkedStream):
    async def _run(self, output_emitter: AudioEmitter) -> None:
        output_emitter.initialize(
            request_id=utils.shortuuid(),
            sample_rate=24000,
            num_channels=1,
            mime_type="audio/pcm",
        )
        words = max(1, len(self.input_text.split()))
        output_emitter.push(b"\0\0" * (24000 * 50 // 1000) * words)
        output_emitter.flush()
