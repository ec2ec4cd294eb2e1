"""Speech synthesis: text to a WAV, for `sparring synthesize` and for voice targets that
must say a message nobody recorded (a simulated user's, a scripted turn without `audio:`).

Two providers, chosen by name (`speech_provider`):

- `espeak`: the espeak-ng program (Debian package `espeak-ng`), offline and free; robotic
  but clear. Options: `voice` (an espeak-ng voice, default `en-us`), `speed_wpm` (words per
  minute, default 160).
- `openai`: OpenAI's speech API (`POST /v1/audio/speech`) through the openai SDK. Options:
  `voice` (default `alloy`), `model` (default `gpt-4o-mini-tts`); the key is
  `OPENAI_API_KEY`, the endpoint `OPENAI_BASE_URL` (default OpenAI's).

Without a name, `openai` is used when `OPENAI_API_KEY` is set, else `espeak`.

Every WAV a provider returns is plain 16-bit PCM with correct chunk sizes (streamed WAVs,
whose headers claim 2 GB, are repaired) and carries the text it says in a RIFF `LIST/INFO`
chunk (`ICMT`), so an agent or a person can tell what a generated file says (`wav_text`).
"""

from __future__ import annotations

import os
import shutil
import struct
from dataclasses import dataclass
from typing import Protocol

import anyio

from sparring.errors import MissingPart, ModelError, UserError

PROVIDERS = ("espeak", "openai")
"""Names `speech_provider` knows."""
ESPEAK_INSTALL = "apt-get install espeak-ng"
OPENAI_VOICE, OPENAI_MODEL = "alloy", "gpt-4o-mini-tts"
"""The openai provider's default voice and speech model."""


@dataclass(frozen=True, slots=True)
class Audio:
    """PCM audio: `pcm` is little-endian samples, channels interleaved; `sample_width` is
    bytes per sample (2 = 16-bit)."""

    pcm: bytes
    sample_rate: int
    channels: int
    sample_width: int

    @property
    def duration_ms(self) -> float:
        """Length in milliseconds."""
        frame_bytes = self.channels * self.sample_width
        return len(self.pcm) / frame_bytes / self.sample_rate * 1000


def read_wav(data: bytes) -> Audio:
    """The PCM audio of a WAV file's bytes; chunk sizes larger than the file (streamed
    WAVs from espeak-ng or an HTTP API) are cut to what is there.

    Raises:
        ValueError: not a RIFF/WAVE file, no `fmt ` or `data` chunk, or not integer PCM
            (format 1); the message says which.
    """
    if len(data) < 12 or data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ValueError("not a WAV file (no RIFF/WAVE header)")
    fmt: tuple[int, int, int, int] | None = None
    offset = 12
    while offset + 8 <= len(data):
        kind, size = (
            data[offset : offset + 4],
            struct.unpack("<I", data[offset + 4 : offset + 8])[0],
        )
        body = data[offset + 8 : offset + 8 + size]
        if kind == b"fmt " and len(body) >= 16:
            code, channels, rate, _, _, bits = struct.unpack("<HHIIHH", body[:16])
            fmt = (code, channels, rate, bits)
        elif kind == b"data":
            if fmt is None:
                raise ValueError("the WAV file has its data before its `fmt ` chunk")
            code, channels, rate, bits = fmt
            if code not in (1, 0xFFFE) or bits % 8:
                raise ValueError(f"the WAV file is not integer PCM (format {code}, {bits} bits)")
            width = bits // 8
            usable = len(body) - len(body) % (width * channels)
            return Audio(body[:usable], rate, channels, width)
        offset += 8 + size + size % 2
    raise ValueError("the WAV file has no `fmt ` and `data` chunks")


def write_wav(audio: Audio, *, text: str | None = None) -> bytes:
    """A WAV file holding `audio`, with `text` in a `LIST/INFO/ICMT` chunk when given."""
    block = audio.channels * audio.sample_width
    fmt = struct.pack(
        "<HHIIHH",
        1,
        audio.channels,
        audio.sample_rate,
        audio.sample_rate * block,
        block,
        audio.sample_width * 8,
    )
    chunks = _chunk(b"fmt ", fmt) + _chunk(b"data", audio.pcm)
    if text is not None:
        comment = text.encode("utf-8") + b"\0"
        chunks += _chunk(b"LIST", b"INFO" + _chunk(b"ICMT", comment))
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


def wav_text(data: bytes) -> str | None:
    """The text a WAV says by its `LIST/INFO/ICMT` chunk (what `write_wav` stores), or
    `None` when it has none (hand recordings) or is not a WAV file."""
    offset = 12
    while offset + 8 <= len(data) and data[:4] == b"RIFF":
        kind, size = (
            data[offset : offset + 4],
            struct.unpack("<I", data[offset + 4 : offset + 8])[0],
        )
        body = data[offset + 8 : offset + 8 + size]
        if kind == b"LIST" and body[:4] == b"INFO":
            inner = 4
            while inner + 8 <= len(body):
                sub = body[inner : inner + 4]
                length = struct.unpack("<I", body[inner + 4 : inner + 8])[0]
                if sub == b"ICMT":
                    value = body[inner + 8 : inner + 8 + length]
                    return value.rstrip(b"\0").decode("utf-8", "replace")
                inner += 8 + length + length % 2
        offset += 8 + size + size % 2
    return None


def _chunk(kind: bytes, body: bytes) -> bytes:
    return kind + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


class SpeechProvider(Protocol):
    """Turns text into speech.

    `key` names the provider and its settings (e.g. `espeak:en-us:160`): two providers
    with the same key make the same audio, so a WAV generated under a key is still current
    while the text and the key are unchanged.
    """

    @property
    def key(self) -> str:
        """The provider and its settings, as one string without spaces."""
        ...

    async def synthesize(self, text: str, /) -> bytes:
        """`text` spoken, as WAV bytes (16-bit PCM, `text` in its INFO chunk).

        Raises:
            UserError: the provider cannot work here (no espeak-ng, no API key).
            ModelError: the synthesis failed (the program or the API answered an error).
        """
        ...


class EspeakSpeech:
    """espeak-ng, run as a program (offline).

    Args:
        voice: An espeak-ng voice name (`espeak-ng --voices` lists them).
        speed_wpm: Speaking rate, words per minute (80-450).
        program: The espeak-ng executable; `None` looks for `espeak-ng`, then `espeak`, on
            PATH.

    Raises:
        MissingPart: no espeak-ng program found (the message gives the install line).
    """

    def __init__(
        self, *, voice: str = "en-us", speed_wpm: int = 160, program: str | None = None
    ) -> None:
        found = program or shutil.which("espeak-ng") or shutil.which("espeak")
        if found is None:
            raise MissingPart(
                "speech synthesis with espeak needs the espeak-ng program, which is not "
                f"installed; install it (Debian/Ubuntu: `{ESPEAK_INSTALL}`, macOS: `brew "
                "install espeak-ng`), or use the OpenAI speech API with OPENAI_API_KEY set "
                "(`sparring synthesize --provider openai`, `speech: openai` on a voice target)"
            )
        self.program, self.voice, self.speed_wpm = found, voice, speed_wpm

    @property
    def key(self) -> str:
        """`espeak:<voice>:<speed_wpm>`."""
        return f"espeak:{self.voice}:{self.speed_wpm}"

    async def synthesize(self, text: str, /) -> bytes:
        """`text` spoken by espeak-ng (text given on stdin, so it is never read as options).

        Raises:
            ModelError: espeak-ng failed or wrote no audio.
        """
        command = [self.program, "--stdin", "--stdout", "-v", self.voice, "-s", str(self.speed_wpm)]
        result = await anyio.run_process(command, input=text.encode("utf-8"), check=False)
        if result.returncode != 0:
            stderr = result.stderr.decode("utf-8", "replace").strip()
            raise ModelError(f"espeak-ng failed (exit {result.returncode}): {stderr[:300]}")
        return _normalised(result.stdout, text, source="espeak-ng")


class OpenAISpeech:
    """OpenAI's speech API (`client.audio.speech.create`, WAV output) via the openai SDK.

    Args:
        voice: One of the API's voices (`alloy`, `echo`, `nova`, ...).
        model: The speech model.
        api_key: `None` reads `OPENAI_API_KEY`.
        base_url: `None` reads `OPENAI_BASE_URL`, else OpenAI's.
        timeout_s: Limit for one request, in seconds.

    Raises:
        UserError: no key given and `OPENAI_API_KEY` unset.
    """

    def __init__(
        self,
        *,
        voice: str = OPENAI_VOICE,
        model: str = OPENAI_MODEL,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout_s: float = 60,
    ) -> None:
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            raise UserError(
                "speech synthesis with openai needs an API key: set OPENAI_API_KEY, or use "
                f"`--provider espeak` (offline; `{ESPEAK_INSTALL}`)"
            )
        self.voice, self.model, self.timeout_s = voice, model, timeout_s
        self._api_key, self._base_url = key, base_url or os.environ.get("OPENAI_BASE_URL")

    @property
    def key(self) -> str:
        """`openai:<model>:<voice>`."""
        return f"openai:{self.model}:{self.voice}"

    async def synthesize(self, text: str, /) -> bytes:
        """`text` spoken by the API, asked for as WAV.

        Raises:
            ModelError: the API failed (HTTP error, connection error, not a WAV).
        """
        import openai

        client = openai.AsyncOpenAI(
            api_key=self._api_key, base_url=self._base_url, timeout=self.timeout_s
        )
        try:
            response = await client.audio.speech.create(
                model=self.model, voice=self.voice, input=text, response_format="wav"
            )
            data = response.content
        except openai.OpenAIError as e:
            raise ModelError(f"the OpenAI speech API failed: {type(e).__name__}: {e}") from None
        finally:
            await client.close()
        return _normalised(data, text, source="the OpenAI speech API")


def _normalised(data: bytes, text: str, *, source: str) -> bytes:
    try:
        audio = read_wav(data)
    except ValueError as e:
        raise ModelError(f"{source} returned no usable WAV: {e}") from None
    if not audio.pcm:
        raise ModelError(f"{source} returned an empty WAV for {text[:80]!r}")
    return write_wav(audio, text=text)


def speech_provider(
    name: str | None = None, *, voice: str | None = None, model: str | None = None
) -> SpeechProvider:
    """The provider called `name` (`espeak` or `openai`) with its default settings, `voice`
    and `model` (openai) replacing them when given. `None`: `openai` when `OPENAI_API_KEY` is
    set, else `espeak`.

    Raises:
        UserError: an unknown name, `model` for espeak, or the provider cannot work here
            (see `EspeakSpeech`, `OpenAISpeech`).
    """
    if name is None:
        name = "openai" if os.environ.get("OPENAI_API_KEY") else "espeak"
    if name == "espeak":
        if model is not None:
            raise UserError("the espeak speech provider has no `model`; give only `voice`")
        return EspeakSpeech() if voice is None else EspeakSpeech(voice=voice)
    if name == "openai":
        return OpenAISpeech(voice=voice or OPENAI_VOICE, model=model or OPENAI_MODEL)
    raise UserError(f"unknown speech provider {name!r}; use one of: {', '.join(PROVIDERS)}")
