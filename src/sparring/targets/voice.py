"""Voice targets: the agent hears each user message as audio (DESIGN.md section 4, `voice`).

What a voice target plays for a user message (`UserAudio`): the message's WAV file
(`Message.audio`: a scripted turn's `audio:`, or the WAV `sparring synthesize` made for the
turn), else the message's text spoken by the target's speech provider (a simulated user's
messages, turns nobody synthesized). The provider is made at its first use, so a test whose
turns all have recordings needs none; the last `SPOKEN_KEPT` texts it spoke are kept, so the
trials of a scripted turn are spoken once.

`VoiceCallableTarget` calls a Python function `agent(audio, history) -> reply` for any voice
stack: `audio` is the WAV file's bytes; `history` is the conversation before this message as
`[{"role": "user" | "assistant", "content": str}]` (what the user said, as written in the
test or by the simulated user, and the agent's replies as recorded; an earlier message sent
with files has them under `"files"`, as a callable target's history has). A message sent
with files is played as `agent(audio, history, files=files)`, `files` in that same shape,
`[{"name": str, "mime_type": str, "data": str}]` (`data` base64); a function without a
`files` parameter (or `**kwargs`) then fails the trial naming the files, never dropping
them. The reply is anything a
callable target's function may return (a str, `(text, tool_calls)`, a `Message`), or a
`VoiceReply` carrying the spoken reply's WAV: its length becomes the reply's `audio_ms`, and
as a function answers all at once, its time to first audio (`first_audio_ms`) is the
reply's latency.

`voice_target(spec)` builds the target a `type: voice` spec describes: the callable above,
or a LiveKit `AgentSession` (`sparring.targets.adapters.livekit`, extra `livekit`).
"""

from __future__ import annotations

import functools
import inspect
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sparring.errors import MissingPart, ModelError, TargetError, UserError
from sparring.models.speech import SpeechProvider, read_wav, speech_provider
from sparring.target_specs import VoiceTargetSpec
from sparring.targets.attachments import FileEntry, file_entries
from sparring.targets.base import StatelessSession, Target
from sparring.targets.callable import CallableTarget, load_callable
from sparring.targets.templates import History, chat_history, tool_calls_from
from sparring.transcript import Message, Transcript

SPOKEN_KEPT = 128
"""Texts a `UserAudio` keeps the speech of (least recently used dropped)."""
VoiceFunction = Callable[..., Any]
"""`agent(audio, history) -> reply` (plus `files=` for a message sent with files), sync or
async."""


class UserAudio:
    """The audio a voice target plays for each user message (see module docstring).

    Args:
        speech: The provider that speaks messages without a WAV; `None` picks one at first
            use (`speech_provider()`: openai with `OPENAI_API_KEY`, else espeak).
        make: Builds the provider when `speech` is `None`.
    """

    def __init__(
        self,
        speech: SpeechProvider | None = None,
        *,
        make: Callable[[], SpeechProvider] = speech_provider,
    ) -> None:
        self._speech, self._make = speech, make
        self._spoken: OrderedDict[str, bytes] = OrderedDict()

    async def for_message(self, message: Message) -> bytes:
        """The WAV bytes to play for the user `message`.

        Raises:
            TargetError: the message's WAV file cannot be read (moved or deleted after the
                test file was loaded).
            MissingPart: espeak-ng is not installed (the trial is skipped).
            ModelError: synthesis failed, or no speech provider can work here (no API
                key; the message says how to fix it): a failure of sparring's side, not
                the agent's.
        """
        if message.audio is not None:
            try:
                return Path(message.audio).read_bytes()
            except OSError as e:
                raise TargetError(f"cannot read the audio file {message.audio}: {e}") from None
        text = message.content
        if text in self._spoken:
            self._spoken.move_to_end(text)
            return self._spoken[text]
        if self._speech is None:
            try:
                self._speech = self._make()
            except MissingPart as e:  # the trial is skipped, saying what to install
                raise MissingPart(f"cannot speak the user's message: {e}") from None
            except UserError as e:
                raise ModelError(f"cannot speak the user's message: {e}") from None
        self._spoken[text] = spoken = await self._speech.synthesize(text)
        if len(self._spoken) > SPOKEN_KEPT:
            self._spoken.popitem(last=False)
        return spoken


@dataclass(frozen=True, slots=True)
class VoiceReply:
    """A voice agent's reply: what it said as `text`, the spoken `audio` (WAV bytes) when
    there is one, and its tool calls (as a callable's reply takes them)."""

    text: str
    audio: bytes | None = None
    tool_calls: Sequence[Any] = ()


class VoiceCallableTarget:
    """Calls `fn(audio, history)` for each user message; stateless.

    Args:
        fn: Sync or async `agent(audio: bytes, history) -> reply` (see module docstring).
        name: Shown in reports; default is the function's qualified name.
        timeout_s: Limit for one reply, in seconds.
        audio: Where each message's audio comes from; default `UserAudio()`.
    """

    def __init__(
        self,
        fn: VoiceFunction,
        *,
        name: str | None = None,
        timeout_s: float = 60,
        audio: UserAudio | None = None,
    ) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", None) or type(fn).__name__
        self.timeout_s = timeout_s
        self.audio = audio or UserAudio()

    async def open_session(self) -> VoiceCallableSession:
        """Start a conversation."""
        return VoiceCallableSession(self)

    async def aclose(self) -> None:
        """Nothing to release."""

    async def call(
        self, audio: bytes, history: History, files: list[FileEntry] | None = None
    ) -> Message:
        """Call the function (with `files=files` when there are some); its reply as an
        agent `Message`.

        Raises:
            TargetError: the function raised or returned no reply, a `VoiceReply`'s audio
                is not a WAV, or `files` were given to a function without a `files`
                parameter.
            TargetTimeout: no reply within `timeout_s`.
        """
        if files and not _takes_files(self.fn):
            names = ", ".join(f["name"] for f in files)
            raise TargetError(
                f"target {self.name!r} was sent the files of this message ({names}), but "
                "its function takes no `files` parameter: define it as `agent(audio, "
                'history, files=None)` to get them as [{"name", "mime_type", "data"}]'
            )
        wrapped = _with_audio(self.fn, audio, self.name, files)
        reply = await CallableTarget(wrapped, name=self.name, timeout_s=self.timeout_s).call(
            history
        )
        if reply.audio_ms is not None and reply.first_audio_ms is None:
            reply = reply.model_copy(update={"first_audio_ms": reply.latency_ms})
        return reply


class VoiceCallableSession(StatelessSession):
    """One conversation with a `VoiceCallableTarget`."""

    def __init__(self, target: VoiceCallableTarget) -> None:
        self._target = target

    async def send(self, transcript: Transcript, /) -> Message:
        """Play the last (user) message's audio to the function, with the earlier
        conversation as history and the message's files."""
        messages = transcript.messages
        if not messages or messages[-1].role != "user":
            raise ValueError("a target session is sent a transcript ending with a user message")
        message = messages[-1]
        audio = await self._target.audio.for_message(message)
        files = file_entries(message.files) or None
        return await self._target.call(audio, chat_history(messages[:-1]), files)

    async def close(self) -> None:
        """Nothing to release."""


def _takes_files(fn: VoiceFunction) -> bool:
    """Whether `fn` accepts `files=` (a `files` parameter or `**kwargs`); a function whose
    signature cannot be read is assumed to (the call says if not)."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return True
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD or (p.name == "files" and p.kind in named)
        for p in parameters
    )


def _with_audio(
    fn: VoiceFunction, audio: bytes, name: str, files: list[FileEntry] | None
) -> Callable[[History], Any]:
    """`fn` with `audio` (and `files=files` when given) bound, turning a `VoiceReply` into a
    `Message`; async when `fn` is."""
    call = getattr(fn, "__call__", None)  # noqa: B004  # objects with `async def __call__`
    bound = functools.partial(fn, audio, files=files) if files else functools.partial(fn, audio)
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):

        async def answer(history: History) -> Any:
            return voice_message(await bound(history), target=name)

        return answer
    return lambda history: voice_message(bound(history), target=name)


def voice_message(reply: Any, *, target: str) -> Any:
    """A `VoiceReply` as an agent `Message` (`audio_ms` from its WAV); anything else as is.

    Raises:
        TargetError: the reply's audio is not a WAV file.
    """
    if not isinstance(reply, VoiceReply):
        return reply
    audio_ms = None
    if reply.audio is not None:
        try:
            audio_ms = round(read_wav(reply.audio).duration_ms, 3)
        except ValueError as e:
            raise TargetError(
                f"target {target!r} replied with audio that is not a WAV: {e}"
            ) from None
    calls = tool_calls_from(list(reply.tool_calls), where=f"target {target!r} tool calls")
    return Message(role="agent", content=reply.text, tool_calls=calls, audio_ms=audio_ms)


def is_voice_target(target: object) -> bool:
    """Whether `target`, a target spec or a `Target`, plays each user message as audio (a
    `type: voice` spec, a `VoiceCallableTarget` or a LiveKit adapter)."""
    return isinstance(target, VoiceTargetSpec) or isinstance(
        getattr(target, "audio", None), UserAudio
    )


def voice_target(spec: VoiceTargetSpec) -> Target:
    """The target of a `type: voice` spec: its `callable`, or its `livekit` session factory
    in a `LiveKitAdapter`.

    Raises:
        UserError: the ref cannot be imported, or the `livekit` extra is missing.
    """
    audio = UserAudio(make=functools.partial(speech_provider, spec.speech, voice=spec.speech_voice))
    if spec.callable is not None:
        fn = load_callable(spec.callable)
        return VoiceCallableTarget(fn, name=spec.callable, timeout_s=spec.timeout_s, audio=audio)
    assert spec.livekit is not None  # the spec names exactly one of them
    from sparring.targets.adapters.livekit import LiveKitAdapter

    return LiveKitAdapter(
        load_callable(spec.livekit),
        name=spec.livekit,
        sample_rate=spec.sample_rate,
        frame_ms=spec.frame_ms,
        grace_period_s=spec.grace_period_s,
        audio=audio,
    )
