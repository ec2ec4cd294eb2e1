"""Voice: speech synthesis (espeak-ng, the OpenAI speech API), `sparring synthesize` and its
cache rules, `audio:` at load time, the voice callable target and the demo voice agent."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sparring.cli.synthesize import synthesize_command
from sparring.errors import ConfigError, ModelError, TargetError, UserError
from sparring.loaders.yaml import load_paths
from sparring.models.speech import (
    Audio,
    EspeakSpeech,
    OpenAISpeech,
    read_wav,
    speech_provider,
    wav_text,
    write_wav,
)
from sparring.models.speech_files import generated_path, hash_path
from sparring.scenario import ScriptedScenario
from sparring.target_specs import VoiceTargetSpec
from sparring.targets.registry import build_target
from sparring.targets.voice import UserAudio, VoiceCallableTarget, VoiceReply
from sparring.transcript import Message, Transcript
from tests.support.speech_server import FakeSpeech, SpeechServer, streamed_wav, tone_pcm

pytestmark = pytest.mark.anyio
ESPEAK = shutil.which("espeak-ng") or shutil.which("espeak")
needs_espeak = pytest.mark.skipif(
    ESPEAK is None, reason="espeak-ng is not installed (apt-get install espeak-ng)"
)


# --- WAV files -------------------------------------------------------------------------


def test_streamed_wav_headers_are_repaired_and_text_kept() -> None:
    audio = read_wav(streamed_wav(tone_pcm(0.5)))
    assert (audio.sample_rate, audio.channels, audio.sample_width) == (24000, 1, 2)
    assert audio.duration_ms == pytest.approx(500)
    again = write_wav(audio, text="Où est ma commande ?")
    assert read_wav(again) == audio
    assert wav_text(again) == "Où est ma commande ?"
    assert wav_text(streamed_wav(tone_pcm(0.1))) is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"hello", "not a WAV file"),
        (b"RIFF\0\0\0\0WAVE", "no `fmt ` and `data` chunks"),
        (streamed_wav(b"").replace(b"\x01\x00\x01\x00", b"\x03\x00\x01\x00", 1), "not integer PCM"),
    ],
)
def test_unusable_wavs_say_why(data: bytes, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        read_wav(data)


# --- providers -------------------------------------------------------------------------


@needs_espeak
async def test_espeak_speaks_the_text_into_a_wav() -> None:
    data = await EspeakSpeech().synthesize("--help where is my order?")  # never an option
    audio = read_wav(data)
    assert audio.sample_width == 2 and audio.duration_ms > 500
    assert wav_text(data) == "--help where is my order?"
    assert EspeakSpeech(voice="en-gb", speed_wpm=120).key == "espeak:en-gb:120"


def test_espeak_missing_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UserError, match="apt-get install espeak-ng"):
        speech_provider("espeak")


async def test_openai_speech_through_the_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    with SpeechServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        speech = speech_provider(None, voice="nova")  # a key set: openai by default
        data = await speech.synthesize("Where is my order?")
    assert server.requests == [
        {
            "model": "gpt-4o-mini-tts",
            "voice": "nova",
            "input": "Where is my order?",
            "response_format": "wav",
        }
    ]
    assert server.authorization == ["Bearer sk-test"]
    assert read_wav(data).duration_ms == pytest.approx(400)
    assert wav_text(data) == "Where is my order?"
    assert speech.key == "openai:gpt-4o-mini-tts:nova"


async def test_openai_speech_errors_are_model_errors() -> None:
    with SpeechServer(status=400) as server:
        speech = OpenAISpeech(api_key="sk-test", base_url=server.base_url)
        with pytest.raises(ModelError, match="the OpenAI speech API failed: BadRequestError"):
            await speech.synthesize("Hi")


def test_provider_choice_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(UserError, match="use one of: espeak, openai"):
        speech_provider("polly")
    with pytest.raises(UserError, match="set OPENAI_API_KEY"):
        speech_provider("openai")
    with pytest.raises(UserError, match="has no `model`"):
        speech_provider("espeak", model="x")


# --- sparring synthesize ---------------------------------------------------------------

VOICE_FILE = """\
target: {type: voice, callable: "sparring.demo.voice:agent"}
scenarios:
  - id: booking
    turns:
      - user: Book me a slot tomorrow at 10am.
        audio: booking_t1.wav
        checks: [{contains: booked}]
      - user: Actually, move it to 11am.
        checks: [{contains: moved}]
      - user: Thanks.
        audio: recorded.wav
        checks: [{contains: welcome}]
"""


def _synthesize(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *args: str, **kw: Any) -> str:
    """Run `sparring synthesize` in process with the openai provider on a local server."""
    with SpeechServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        synthesize_command(
            paths=kw.get("paths", args or (str(tmp_path / "voice.yaml"),)),
            force=kw.get("force", False),
            provider="openai",
            voice=kw.get("voice"),
        )
    return "\n".join(r["input"] for r in server.requests)


def test_synthesize_writes_missing_wavs_with_hashes_and_gitignore(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = tmp_path / "voice.yaml"
    test.write_text(VOICE_FILE)
    recording = write_wav(Audio(tone_pcm(0.2), 24000, 1, 2))
    (tmp_path / "recorded.wav").write_bytes(recording)
    said = _synthesize(monkeypatch, tmp_path)
    assert said.splitlines() == ["Book me a slot tomorrow at 10am.", "Actually, move it to 11am."]
    explicit, generated = tmp_path / "booking_t1.wav", generated_path(test, "booking", 2)
    assert generated == tmp_path / "audio" / "voice" / "booking.t2.wav"
    assert wav_text(explicit.read_bytes()) == "Book me a slot tomorrow at 10am."
    assert hash_path(explicit).read_text().endswith(" openai:gpt-4o-mini-tts:alloy\n")
    assert (tmp_path / "recorded.wav").read_bytes() == recording  # a recording is kept
    assert not hash_path(tmp_path / "recorded.wav").exists()
    ignored = (tmp_path / ".gitignore").read_text().splitlines()
    assert ignored[-2:] == ["/booking_t1.wav", "/booking_t1.wav.hash"]
    assert "/recorded.wav" not in ignored
    assert "/booking.t2.wav" in (generated.parent / ".gitignore").read_text().splitlines()
    assert "2 written, 0 unchanged, 1 recording kept" in capsys.readouterr().out
    # the loader now plays the generated WAV for the turn without `audio:`
    (scenario,) = load_paths([test])
    assert isinstance(scenario, ScriptedScenario)
    assert [t.audio for t in scenario.turns] == [
        str(explicit),
        str(generated),
        str(tmp_path / "recorded.wav"),
    ]


def test_synthesize_skips_unchanged_redoes_changed_and_force_keeps_recordings(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    test = tmp_path / "voice.yaml"
    test.write_text(VOICE_FILE)
    (tmp_path / "recorded.wav").write_bytes(write_wav(Audio(tone_pcm(0.2), 24000, 1, 2)))
    _synthesize(monkeypatch, tmp_path)
    gitignore = (tmp_path / ".gitignore").read_text()
    assert _synthesize(monkeypatch, tmp_path) == ""  # unchanged: nothing asked for
    assert (tmp_path / ".gitignore").read_text() == gitignore  # entries not repeated
    test.write_text(VOICE_FILE.replace("move it to 11am", "move it to noon"))
    assert _synthesize(monkeypatch, tmp_path) == "Actually, move it to noon."
    assert _synthesize(monkeypatch, tmp_path, voice="nova").count("\n") == 1  # new voice: both
    said = _synthesize(monkeypatch, tmp_path, force=True, voice="nova")
    assert said.splitlines() == ["Book me a slot tomorrow at 10am.", "Actually, move it to noon."]
    assert "1 recording kept" in capsys.readouterr().out.splitlines()[-1]


def test_synthesize_refuses_one_wav_wanted_with_two_texts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "voice.yaml").write_text(VOICE_FILE.replace("recorded.wav", "booking_t1.wav"))
    with pytest.raises(UserError, match="both want .*booking_t1.wav with different text"):
        _synthesize(monkeypatch, tmp_path)


@needs_espeak
def test_synthesize_command_with_espeak(tmp_path: Path) -> None:
    (tmp_path / "voice.yaml").write_text(VOICE_FILE.replace("        audio: recorded.wav\n", ""))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    command = [sys.executable, "-m", "sparring.cli", "synthesize", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "3 written, 0 unchanged, 0 recordings kept (espeak:en-us:160)" in done.stdout
    again = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert "0 written, 3 unchanged" in again.stdout


# --- audio: at load time ---------------------------------------------------------------


def test_missing_or_stale_audio_is_a_load_error_at_file_line(tmp_path: Path) -> None:
    test = tmp_path / "voice.yaml"
    test.write_text(VOICE_FILE)
    (tmp_path / "recorded.wav").write_bytes(write_wav(Audio(tone_pcm(0.1), 24000, 1, 2)))
    with pytest.raises(ConfigError) as caught:
        load_paths([test])
    assert f"{test}:6:16: audio: 'booking_t1.wav' ({tmp_path / 'booking_t1.wav'}) does not " in str(
        caught.value
    )
    assert f"run `sparring synthesize {test}`" in str(caught.value)
    (tmp_path / "booking_t1.wav").write_bytes(b"x")
    hash_path(tmp_path / "booking_t1.wav").write_text("0000 espeak:en-us:160\n")
    with pytest.raises(ConfigError, match="6:16: audio: .* was generated from other text"):
        load_paths([test])


def test_agent_eval_transcripts_keep_audio(tmp_path: Path) -> None:
    (tmp_path / "booking_t1.wav").write_bytes(write_wav(Audio(tone_pcm(0.1), 24000, 1, 2)))
    test = tmp_path / "booking_voice.yaml"
    test.write_text(
        "id: booking_voice\ntarget: {type: voice, callable: 'sparring.demo.voice:agent'}\n"
        "turns:\n  - user: Book me a slot.\n    audio: booking_t1.wav\n"
        "    expect: {reply_contains_any: [booked]}\n"
    )
    (scenario,) = load_paths([test])
    assert isinstance(scenario, ScriptedScenario)
    assert scenario.turns[0].audio == str(tmp_path / "booking_t1.wav")


@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("{type: voice}", "exactly one of `callable: module:function`"),
        ("{type: voice, callable: 'a:b', livekit: 'c:d'}", "exactly one of"),
        ("{type: voice, callable: 'a:b', frame_ms: 5}", "1:50: target.frame_ms: frame_ms must be"),
        ("{type: voice, calable: 'a:b'}", "unknown key 'calable' in target .voice target.; did"),
    ],
)
def test_voice_target_spec_errors(tmp_path: Path, target: str, problem: str) -> None:
    test = tmp_path / "t.yaml"
    test.write_text(f"target: {target}\nid: x\nprompt: Hi\nchecks: [{{contains: a}}]\n")
    with pytest.raises(ConfigError, match=problem):
        load_paths([test])


# --- the voice callable target ---------------------------------------------------------


async def test_voice_callable_hears_the_wav_or_the_spoken_text(tmp_path: Path) -> None:
    heard: list[tuple[bytes, list[dict[str, Any]]]] = []

    async def agent(audio: bytes, history: list[dict[str, Any]]) -> VoiceReply:
        heard.append((audio, history))
        reply = write_wav(Audio(tone_pcm(0.25), 24000, 1, 2))
        return VoiceReply("Booked.", audio=reply, tool_calls=[{"name": "book", "arguments": {}}])

    recording = tmp_path / "t1.wav"
    recording.write_bytes(write_wav(Audio(tone_pcm(0.1), 16000, 1, 2)))
    speech = FakeSpeech()
    target = VoiceCallableTarget(agent, audio=UserAudio(speech))
    session = await target.open_session()
    first = Message(role="user", content="Book it.", audio=str(recording))
    reply = await session.send(Transcript(messages=(first,)))
    assert heard[0] == (recording.read_bytes(), [])
    assert (reply.content, reply.audio_ms, [c.name for c in reply.tool_calls]) == (
        "Booked.",
        250.0,
        ["book"],
    )
    assert reply.first_audio_ms == reply.latency_ms is not None
    second = Message(role="user", content="Thanks a lot.")
    await session.send(Transcript(messages=(first, reply, second)))
    await (await target.open_session()).send(Transcript(messages=(second,)))  # a new trial
    assert wav_text(heard[1][0]) == "Thanks a lot." and speech.said == ["Thanks a lot."]
    assert heard[2][0] == heard[1][0]  # spoken once, kept
    assert heard[1][1] == [
        {"role": "user", "content": "Book it."},
        {"role": "assistant", "content": "Booked."},
    ]


async def test_voice_callable_errors_are_target_errors(tmp_path: Path) -> None:
    def bad_audio(audio: bytes, history: Any) -> VoiceReply:
        return VoiceReply("x", audio=b"not a wav")

    session = await VoiceCallableTarget(bad_audio, audio=UserAudio(FakeSpeech())).open_session()
    with pytest.raises(TargetError, match="replied with audio that is not a WAV"):
        await session.send(Transcript(messages=(Message(role="user", content="Hi"),)))
    gone = Message(role="user", content="Hi", audio=str(tmp_path / "gone.wav"))
    with pytest.raises(TargetError, match="cannot read the audio file"):
        await session.send(Transcript(messages=(gone,)))

    def no_espeak() -> FakeSpeech:
        raise UserError("speech synthesis with espeak needs the espeak-ng program")

    mute = await VoiceCallableTarget(bad_audio, audio=UserAudio(make=no_espeak)).open_session()
    with pytest.raises(ModelError, match="cannot speak the user's message: .* espeak-ng"):
        await mute.send(Transcript(messages=(Message(role="user", content="Hi"),)))


async def test_yaml_voice_target_builds_the_callable() -> None:
    import httpx

    from sparring.secrets import Secrets

    spec = VoiceTargetSpec(type="voice", callable="sparring.demo.voice:agent", speech="espeak")
    async with httpx.AsyncClient() as client:
        target = build_target(spec, client=client, secrets=Secrets({}))
    assert isinstance(target, VoiceCallableTarget)
    assert target.name == "sparring.demo.voice:agent"


# --- the demo voice agent and the example ----------------------------------------------


async def test_demo_voice_agent_reads_the_words_from_the_wav() -> None:
    from sparring.demo.voice import NOT_HEARD, agent

    said = await FakeSpeech().synthesize("Where is my order 10237?")
    reply = await agent(said, [])
    assert "delay" in reply.text.lower()
    assert [c["name"] for c in reply.tool_calls] == ["lookup_order"]
    unknown = await agent(write_wav(Audio(tone_pcm(0.1), 24000, 1, 2)), [])
    assert unknown.text == NOT_HEARD


@needs_espeak
def test_voice_example_passes(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "voice"
    shutil.copytree(example, tmp_path / "voice", ignore=shutil.ignore_patterns("audio"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "SPARRING_"))}
    env["SPARRING_STORE"] = os.environ["SPARRING_STORE"]  # the test's own, not the repository's
    report = tmp_path / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", str(tmp_path / "voice"), "-o", str(report)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert Path(env["SPARRING_STORE"]).is_file()  # the run is kept in tmp_path
    (scenario,) = json.loads(report.read_text())["scenarios"]
    messages = scenario["trials"][0]["transcript"]["messages"]
    assert messages[0]["audio"].endswith("recordings/where_is_my_order.wav")
    replies = [m for m in messages if m["role"] == "agent"]
    assert all(m["audio_ms"] > 0 and m["first_audio_ms"] is not None for m in replies)


# --- in a run --------------------------------------------------------------------------


class BrokenSpeech(FakeSpeech):
    async def synthesize(self, text: str, /) -> bytes:
        raise ModelError("espeak-ng failed (exit 1): no voice")


async def test_a_simulated_user_speaks_through_the_synthesis_provider() -> None:
    from sparring.models.scripted import ScriptedModel
    from sparring.runner import RunSettings, run_scenarios
    from sparring.scenario import SimulatedScenario

    heard: list[str | None] = []

    def agent(audio: bytes, history: Any) -> str:
        heard.append(wav_text(audio))
        return "Sure."

    speech = FakeSpeech()
    scenario = SimulatedScenario.model_validate(
        {"id": "sim", "goal": "Book a slot", "max_turns": 2, "checks": [{"contains": "Sure"}]}
    )
    model = ScriptedModel(
        [{"message": m, "done": False, "done_reason": None} for m in ("Book at ten.", "Thanks!")]
    )
    result = await run_scenarios(
        [scenario],
        targets=lambda s: VoiceCallableTarget(agent, audio=UserAudio(speech)),
        user_model=model,
        judge_model=None,
        settings=RunSettings(),
        observer=lambda e: None,
    )
    assert result.scenarios[0].trials[0].status == "passed"
    assert heard == speech.said == ["Book at ten.", "Thanks!"]
    failed = await run_scenarios(
        [scenario],
        targets=lambda s: VoiceCallableTarget(agent, audio=UserAudio(BrokenSpeech())),
        user_model=ScriptedModel([{"message": "Hi", "done": False, "done_reason": None}]),
        judge_model=None,
        settings=RunSettings(),
        observer=lambda e: None,
    )
    trial = failed.scenarios[0].trials[0]
    assert (trial.status, trial.end_reason) == ("error", "model_error")  # not the agent's fault


async def test_python_sessions_send_a_wav_to_a_voice_target(tmp_path: Path) -> None:
    from sparring.api import open_session

    heard: list[bytes] = []

    async def agent(audio: bytes, history: Any) -> str:
        heard.append(audio)
        return "Booked."

    recording = tmp_path / "t1.wav"
    recording.write_bytes(write_wav(Audio(tone_pcm(0.1), 16000, 1, 2)))
    target = VoiceCallableTarget(agent, audio=UserAudio(FakeSpeech()))
    async with open_session(target) as session:
        reply = await session.send("Book it.", audio=recording)
        with pytest.raises(UserError, match="audio 'gone.wav' is not a file"):
            await session.send("Again.", audio="gone.wav")
    assert reply.message == "Booked." and heard == [recording.read_bytes()]
    assert reply.transcript.messages[0].audio == str(recording)


def test_synthesize_failure_exits_3_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "voice.yaml").write_text(VOICE_FILE)
    with SpeechServer(status=400) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        code = synthesize_command(
            paths=(str(tmp_path),), force=False, provider="openai", voice=None
        )
    assert code == 3
    assert "speech synthesis failed: the OpenAI speech API failed" in capsys.readouterr().err
    assert not (tmp_path / "booking_t1.wav").exists()


def test_synthesize_without_paths_walks_yaml_dirs(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "voice.yaml").write_text(
        VOICE_FILE.replace("        audio: recorded.wav\n", "")
    )
    (tmp_path / "sparring.toml").write_text('yaml_dirs = ["evals"]\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SPARRING_STORE", raising=False)
    said = _synthesize(monkeypatch, tmp_path, paths=())
    assert said.count("\n") == 2
    assert (tmp_path / "evals" / "booking_t1.wav").is_file()
