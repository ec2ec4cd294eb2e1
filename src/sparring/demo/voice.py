"""The demo agent as a voice agent: `agent(audio, history)` for a `type: voice` target.

It does no speech recognition. It reads the words a WAV says from the WAV's `LIST/INFO/ICMT`
comment, which sparring's speech synthesis writes into every WAV it makes (`sparring
synthesize`, and a voice target speaking a message nobody recorded); a WAV without one (a
recording from a microphone) gets "Sorry, I could not make out what you said." It answers
the words like the text demo agent (`sparring.demo.agent.respond`, same orders and tools)
and speaks its answer with espeak-ng when that is installed (else it answers in text only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparring.demo.agent import respond
from sparring.errors import UserError
from sparring.models.speech import EspeakSpeech, wav_text
from sparring.targets.voice import VoiceReply

NOT_HEARD = "Sorry, I could not make out what you said. Could you say it again?"


async def agent(audio: bytes, history: Sequence[Mapping[str, Any]]) -> VoiceReply:
    """Answer the words of `audio` (from its INFO comment) after `history`.

    Args:
        audio: A WAV file's bytes.
        history: The conversation before this message, `[{"role", "content"}]`.

    Returns:
        The reply text, its tool calls, and the reply spoken as a WAV (espeak-ng), or no
        audio when espeak-ng is not installed.
    """
    words = wav_text(audio)
    if not words:
        return VoiceReply(NOT_HEARD, audio=await _spoken(NOT_HEARD))
    reply = respond([*history, {"role": "user", "content": words}])
    return VoiceReply(reply.reply, audio=await _spoken(reply.reply), tool_calls=reply.tool_calls)


async def _spoken(text: str) -> bytes | None:
    try:
        speech = EspeakSpeech()
    except UserError:
        return None
    return await speech.synthesize(text)
