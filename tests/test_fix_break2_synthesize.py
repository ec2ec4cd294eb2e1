"""`sparring synthesize` writes only under the project root (the nearest directory up from
the test file with pyproject.toml, sparring.toml or .git): an `audio:` path outside it is an
error unless a recording is already there, and no `.gitignore` outside it is touched."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.cli.synthesize import synthesize_command
from sparring.errors import UserError
from sparring.models.speech_files import GITIGNORE_MARK, unignore_recording, write_generated
from tests.support.speech_server import SpeechServer

VOICE = """\
target: {{type: voice, callable: "sparring.demo.voice:agent"}}
scenarios:
  - id: up
    turns:
      - user: Book me a slot.
        audio: {audio}
        checks: [{{contains: booked}}]
"""


def _project(tmp_path: Path, audio: str) -> Path:
    """A project in tmp_path/proj (its sparring.toml) with tests/v.yaml playing `audio`."""
    tests = tmp_path / "proj" / "tests"
    tests.mkdir(parents=True)
    (tmp_path / "proj" / "sparring.toml").write_text("")
    (tests / "v.yaml").write_text(VOICE.format(audio=audio))
    return tests / "v.yaml"


def _synthesize(monkeypatch: pytest.MonkeyPatch, test_file: Path) -> list[str]:
    with SpeechServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        synthesize_command(paths=(str(test_file),), force=False, provider="openai", voice=None)
    return [r["input"] for r in server.requests]


@pytest.mark.parametrize("absolute", [False, True])
def test_an_audio_path_outside_the_project_is_never_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, absolute: bool
) -> None:
    outside = tmp_path / "voice_up.wav"
    test_file = _project(tmp_path, str(outside) if absolute else "../../voice_up.wav")
    with pytest.raises(UserError) as caught:
        _synthesize(monkeypatch, test_file)
    message = str(caught.value)
    assert f"its `audio:` {outside.resolve()} is outside" in message
    assert f"is outside the project ({tmp_path / 'proj'})" in message
    assert "record that file yourself, or move it under the project" in message
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]  # no WAV, hash, .gitignore


def test_a_recording_outside_the_project_is_left_alone(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    outside = tmp_path / "voice_up.wav"
    outside.write_bytes(b"RIFF recorded")
    foreign = f"{GITIGNORE_MARK}\n/voice_up.wav\n/voice_up.wav.hash\n"  # not this project's
    (tmp_path / ".gitignore").write_text(foreign)
    assert _synthesize(monkeypatch, _project(tmp_path, "../../voice_up.wav")) == []
    assert outside.read_bytes() == b"RIFF recorded"
    assert (tmp_path / ".gitignore").read_text() == foreign


def test_speech_files_refuse_a_wav_outside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    for wav in (tmp_path / "x.wav", root / ".." / "x.wav"):
        with pytest.raises(ValueError, match="outside the project root"):
            write_generated(wav, b"RIFF", text="Hi.", provider_key="espeak:en-us:160", root=root)
        with pytest.raises(ValueError, match="outside the project root"):
            unignore_recording(wav, root=root)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proj"]
    write_generated(root / "a" / "x.wav", b"RIFF", text="Hi.", provider_key="k", root=root)
    assert (root / "a" / ".gitignore").is_file()
