"""A scripted turn's audio at load time: which WAV a voice target will play for it.

- `audio: PATH` (relative to the test file): that file. Missing, it is a load error saying
  to record it or run `sparring synthesize`; generated (it has a `.wav.hash`) from text other
  than the turn's `user:`, it is a load error saying to synthesize it again; not a WAV a
  voice target can play (no RIFF/WAVE header, not integer PCM: `read_wav`), a load error.
- No `audio:`: the WAV at the turn's generated path
  (`sparring.models.speech_files.generated_path`) when `sparring synthesize` made it from
  the turn's current text, or when it is a recording put there (no `.wav.hash`; one that is
  not a playable WAV is a load error); otherwise none, and a voice target speaks the text
  itself.

`sparring synthesize` loads test files whose WAVs do not exist yet, and which may have no
target (synthesis needs none): inside `loading_to_synthesize()` a missing `audio:` file and
a scenario without a target are no errors (`synthesizing()`).
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from sparring.models.speech import read_wav
from sparring.models.speech_files import WavState, generated_path, wav_state

_HEAD_BYTES = 1024 * 1024
"""How much of an `audio:` file is read at load to check it is a WAV: its RIFF/WAVE header,
`fmt ` chunk and the start of its `data`."""
_SYNTHESIZING: ContextVar[bool] = ContextVar("sparring_synthesizing", default=False)


@contextmanager
def loading_to_synthesize() -> Generator[None]:
    """Within this block (`sparring synthesize`), loading accepts `audio:` paths to files
    that do not exist yet, and scenarios without a target."""
    token = _SYNTHESIZING.set(True)
    try:
        yield
    finally:
        _SYNTHESIZING.reset(token)


def synthesizing() -> bool:
    """Whether test files are being loaded inside `loading_to_synthesize()`."""
    return _SYNTHESIZING.get()


def turn_audio(
    written: str | None, *, text: str, test_file: str, scenario_id: str, turn: int
) -> tuple[str | None, str | None]:
    """The WAV (absolute path) a voice target plays for one scripted turn, and what is wrong
    with the turn's `audio:` (the message of a load error) or `None`.

    Args:
        written: The turn's `audio:` as written, or `None`.
        text: The turn's `user:` text.
        test_file: The test file's path as shown in errors.
        scenario_id: The scenario's id (names a generated WAV).
        turn: The turn's number, from 1.
    """
    file = Path(test_file)
    if written is None:
        generated = generated_path(file, scenario_id, turn).absolute()
        state = wav_state(generated, text=text)
        if state is WavState.RECORDED:  # a recording put where `sparring synthesize` writes
            problem = _wav_problem(generated)
            return str(
                generated
            ), None if problem is None else f"the recording {generated} {problem}"
        return (str(generated) if state is WavState.CURRENT else None), None
    resolved = (file.parent / Path(written).expanduser()).absolute()
    shown = repr(written) if written == str(resolved) else f"{written!r} ({resolved})"
    state = wav_state(resolved, text=text)
    if resolved.exists() and not resolved.is_file():
        return str(resolved), f"audio: {shown} is not a file; name a WAV file"
    if synthesizing():  # `sparring synthesize` (re)makes missing and stale WAVs
        return str(resolved), None
    if state is WavState.MISSING:
        return str(resolved), (
            f"audio: {shown} does not exist; record the turn there, or run `sparring "
            f"synthesize {test_file}` to generate it from the turn's `user:` text"
        )
    if state is WavState.STALE:
        return str(resolved), (
            f"audio: {shown} was generated from other text than the turn's `user:`; run "
            f"`sparring synthesize {test_file}` to generate it again (or delete "
            f"{resolved.name}.hash to keep the file as a recording)"
        )
    problem = _wav_problem(resolved)
    return str(resolved), None if problem is None else f"audio: {shown} {problem}"


def _wav_problem(wav: Path) -> str | None:
    """What keeps the file `wav` from being played by a voice target (its first
    `_HEAD_BYTES` checked as `read_wav` reads it), with how to fix it; `None`: nothing."""
    try:
        with wav.open("rb") as opened:
            head = opened.read(_HEAD_BYTES)
    except OSError as e:
        return f"cannot be read ({e.strerror or e}); check its permissions"
    try:
        read_wav(head)  # a WAV cut short is read as far as it goes
    except ValueError as e:
        return (
            f"is not a WAV a voice target can play: {e}; record the turn as a 16-bit PCM "
            "WAV there, or delete the file and run `sparring synthesize`"
        )
    return None
