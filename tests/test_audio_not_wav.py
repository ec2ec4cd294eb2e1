"""A scripted turn's `audio:` that is not a WAV a voice target can play (no RIFF/WAVE
header, or not integer PCM) is a load error at its file:line, not a trial the agent fails."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from sparring.errors import ConfigError
from sparring.loaders import load_paths
from sparring.models.speech import Audio, write_wav

VOICE_FILE = """\
target: {type: voice, callable: "sparring.demo.voice:agent"}
scenarios:
  - id: booking
    turns:
      - user: Book me a slot tomorrow at 10am.
        audio: booking.wav
        checks: [{contains: booked}]
"""


def _float_wav() -> bytes:
    """A RIFF/WAVE file of 32-bit float samples (format 3): not integer PCM."""
    fmt = struct.pack("<HHIIHH", 3, 1, 16000, 64000, 4, 32)
    chunks = b"fmt " + struct.pack("<I", 16) + fmt + b"data" + struct.pack("<I", 8) + bytes(8)
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"RIFFxxxxnotwav", "no RIFF/WAVE header"),
        (b"root:x:0:0:root:/root:/bin/bash\n", "no RIFF/WAVE header"),
        (_float_wav(), "not integer PCM (format 3, 32 bits)"),
    ],
)
def test_an_audio_file_that_is_not_a_playable_wav_is_a_load_error_at_its_line(
    tmp_path: Path, content: bytes, why: str
) -> None:
    test = tmp_path / "voice.yaml"
    test.write_text(VOICE_FILE)
    (tmp_path / "booking.wav").write_bytes(content)
    with pytest.raises(ConfigError) as caught:
        load_paths([test])
    message = str(caught.value)
    assert f"{test}:6:16: audio: 'booking.wav' ({tmp_path / 'booking.wav'}) is not a WAV" in message
    assert why in message and "sparring synthesize" in message


def test_a_real_wav_and_a_system_file_copied_as_one(tmp_path: Path) -> None:
    test = tmp_path / "voice.yaml"
    test.write_text(VOICE_FILE)
    (tmp_path / "booking.wav").write_bytes(write_wav(Audio(b"\0\0" * 1600, 16000, 1, 2)))
    (scenario,) = load_paths([test])
    assert scenario.id == "booking"
    shutil.copy("/etc/passwd", tmp_path / "booking.wav")
    with pytest.raises(ConfigError, match=r"voice.yaml:6:16: audio: .* is not a WAV"):
        load_paths([test])
