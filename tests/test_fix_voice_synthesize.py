"""`sparring synthesize`: only turns a voice target plays get WAVs (text-only tests cost no
synthesis; a transcript without a target still gets its `audio:` WAVs), and a generated WAV
replaced by a recording is taken off the generated `.gitignore` (the user's lines kept)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparring.cli.synthesize import synthesize_command
from sparring.models.speech import Audio, write_wav
from sparring.models.speech_files import hash_path, unignore_recording
from tests.support.speech_server import SpeechServer, tone_pcm

MIXED = """\
target: {url: "http://127.0.0.1:9/chat"}
scenarios:
  - id: typed
    turns:
      - user: Where is my order?
        checks: [{contains: order}]
      - user: Play this one.
        audio: named.wav
        checks: [{contains: order}]
  - id: spoken
    target: {type: voice, callable: "sparring.demo.voice:agent"}
    turns:
      - user: Book me a slot.
        checks: [{contains: booked}]
"""


def _synthesize(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> list[str]:
    """Run `sparring synthesize` with the openai provider on a local server; what it said."""
    with SpeechServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code = synthesize_command(
            paths=tuple(str(p) for p in paths), force=False, provider="openai", voice=None
        )
    assert code == 0
    return [r["input"] for r in server.requests]


def test_only_turns_a_voice_target_plays_are_synthesized(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mixed.yaml").write_text(MIXED)
    said = _synthesize(monkeypatch, tmp_path / "mixed.yaml")
    assert said == ["Play this one.", "Book me a slot."]  # not "Where is my order?"
    assert (tmp_path / "named.wav").is_file()
    assert (tmp_path / "audio" / "mixed" / "spoken.t1.wav").is_file()
    assert not (tmp_path / "audio" / "mixed" / "typed.t1.wav").exists()
    assert "1 turn without `audio:` skipped: their target is not a voice target" in (
        capsys.readouterr().out
    )


def test_a_transcript_without_a_target_gets_its_audio_wavs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "booking_voice.yaml").write_text(
        "id: booking_voice\nturns:\n  - user: Book me a slot.\n    audio: booking_t1.wav\n"
        "    expect: {reply_contains_any: [booked]}\n  - user: Thanks.\n"
        "    expect: {reply_contains_any: [welcome]}\n"
    )
    (tmp_path / "native.yaml").write_text(
        "scenarios:\n  - id: n\n    turns:\n      - user: Hello there.\n"
        "        audio: hello.wav\n        checks: [{contains: hi}]\n"
    )
    assert sorted(_synthesize(monkeypatch, tmp_path)) == ["Book me a slot.", "Hello there."]
    assert (tmp_path / "booking_t1.wav").is_file() and (tmp_path / "hello.wav").is_file()


def test_a_generated_wav_replaced_by_a_recording_leaves_the_gitignore(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "mixed.yaml").write_text(MIXED)
    (tmp_path / ".gitignore").write_text("*.log\n/named.wav.bak\n")  # the user's own lines
    _synthesize(monkeypatch, tmp_path / "mixed.yaml")
    gitignore = tmp_path / ".gitignore"
    assert "/named.wav" in gitignore.read_text().splitlines()
    recording = write_wav(Audio(tone_pcm(0.2), 24000, 1, 2))
    (tmp_path / "named.wav").write_bytes(recording)  # replaced by hand, as the error advises
    hash_path(tmp_path / "named.wav").unlink()
    capsys.readouterr()
    assert _synthesize(monkeypatch, tmp_path / "mixed.yaml") == []
    lines = gitignore.read_text().splitlines()
    assert "/named.wav" not in lines and "/named.wav.hash" not in lines
    assert lines[:2] == ["*.log", "/named.wav.bak"]  # untouched
    assert (tmp_path / "named.wav").read_bytes() == recording
    assert "kept named.wav, a recording" in capsys.readouterr().out.replace(str(tmp_path) + "/", "")
    generated = tmp_path / "audio" / "mixed"
    assert "/spoken.t1.wav" in (generated / ".gitignore").read_text().splitlines()
    assert not unignore_recording(tmp_path / "named.wav", root=tmp_path)  # nothing left


def test_a_recording_at_a_turns_generated_path_is_played(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from sparring.errors import ConfigError
    from sparring.loaders.yaml import load_paths
    from sparring.scenario import ScriptedScenario

    test = tmp_path / "mixed.yaml"
    test.write_text(MIXED)
    _synthesize(monkeypatch, test)
    generated = tmp_path / "audio" / "mixed" / "spoken.t1.wav"
    generated.write_bytes(write_wav(Audio(tone_pcm(0.2), 24000, 1, 2)))  # recorded by hand
    hash_path(generated).unlink()
    test.write_text(MIXED.replace("Book me a slot.", "Book me a slot, please."))  # no hash
    spoken = load_paths([test])[1]
    assert isinstance(spoken, ScriptedScenario) and spoken.turns[0].audio == str(generated)
    generated.write_bytes(b"not a wav")
    with pytest.raises(ConfigError, match="the recording .*spoken.t1.wav is not a WAV"):
        load_paths([test])
