"""`sparring synthesize`: a WAV for every scripted turn a voice target will play (`type:
voice`) that has text and no recording.

Which turns get one: every `user:` turn that names an `audio: PATH`, whatever the target
(none needed: a pytest-agent-eval transcript takes its target from elsewhere), and every
`user:` turn of a scenario whose target is `voice`. Turns of other targets without `audio:`
are sent as text, so they get none (no paid synthesis for text-only tests).

Where each WAV goes, and when it is written (`sparring.models.speech_files`):

- a turn with `audio: PATH` gets it at PATH; a turn without, at
  `audio/<test file stem>/<scenario id>.t<N>.wav` beside the test file (N: the turn's
  position in `turns:`, from 1), which the loader then plays for that turn;
- a WAV without a `.wav.hash` file is a recording and is never touched, `--force` or not;
  if the `.gitignore` beside it still lists it (a generated WAV replaced by hand), it is
  taken off the list so that it can be committed;
- a generated WAV whose hash still matches (same text, same provider and voice) is skipped;
  `--force` makes it again;
- each directory with generated WAVs gets a `.gitignore` entry for them and their hash files.

Nothing is written outside the project root (the nearest directory up from the test file
holding pyproject.toml, sparring.toml or .git, else the test file's own directory): an
`audio:` path outside it (`../../x.wav`, an absolute path elsewhere) is an error unless a
recording is already there, which is played and left alone; no `.gitignore` outside it is
created or edited.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import click

from sparring.errors import ModelError, UserError

if TYPE_CHECKING:
    from sparring.models.speech import SpeechProvider

DEFAULT_TESTS = "tests/conversations"
EXIT_FAILED = 3


@dataclass(frozen=True, slots=True)
class _Wanted:
    wav: Path
    text: str
    where: str
    """`file: scenario turn N`, for messages."""
    root: Path
    """The project root of the test file: `wav` is under it."""


def synthesize_command(
    *, paths: tuple[str, ...], force: bool, provider: str | None, voice: str | None
) -> int:
    """Write the missing and stale generated WAVs of the scripted turns in `paths`.

    Args:
        paths: Test files or directories; none: the settings' `yaml_dirs`, else
            `tests/conversations`.
        force: Make every generated WAV again (recordings are still kept).
        provider: `espeak` or `openai`; `None`: openai with OPENAI_API_KEY, else espeak.
        voice: The provider's voice; `None` for its default.

    Returns:
        0 when every WAV is in place; 3 when the synthesis failed (the message says why;
        the WAVs written before stay).

    Raises:
        UserError: no test files, a provider that cannot work here, two turns wanting
            different text in one WAV, an `audio:` path outside the project root with no
            recording there, or a WAV or `.gitignore` that cannot be written.
        ConfigError: a test file has a problem (at file:line).
    """
    from sparring.loaders.audio import loading_to_synthesize
    from sparring.loaders.yaml import load_paths
    from sparring.models.speech import speech_provider

    with loading_to_synthesize():
        scenarios = load_paths(paths or _default_paths())
    wanted, text_only = _wanted(scenarios)
    if text_only:
        click.echo(
            f"{text_only} turn{'s' if text_only != 1 else ''} without `audio:` skipped: "
            "their target is not a voice target (`type: voice`), so their text is sent"
        )
    speech = speech_provider(provider, voice=voice)
    try:
        written, unchanged, recorded = anyio.run(_write_all, wanted, speech, force)
    except ModelError as e:
        click.secho(f"error: speech synthesis failed: {e}", fg="red", err=True)
        return EXIT_FAILED
    click.echo(
        f"{written} written, {unchanged} unchanged, {recorded} recording"
        f"{'s' if recorded != 1 else ''} kept ({speech.key})"
    )
    return 0


def _default_paths() -> tuple[str, ...]:
    from sparring.config.settings import load_settings

    configured = load_settings({}).yaml_dirs
    if configured:
        return configured
    if Path(DEFAULT_TESTS).is_dir():
        return (DEFAULT_TESTS,)
    raise UserError(
        f"give the test files or directories to synthesize, e.g. `sparring synthesize "
        f"{DEFAULT_TESTS}`"
    )


def _wanted(scenarios: Sequence[object]) -> tuple[list[_Wanted], int]:
    """Each WAV the scripted turns want, once (see the module docstring for which), and the
    number of text-only turns left out; two turns wanting different text in one file are
    an error."""
    from sparring.models.speech_files import generated_path
    from sparring.scenario import ScriptedScenario
    from sparring.store.location import project_root

    out: dict[Path, _Wanted] = {}
    text_only = 0
    for scenario in scenarios:
        if not isinstance(scenario, ScriptedScenario) or scenario.source is None:
            continue
        test_file = scenario.source.rpartition(":")[0]
        root = project_root(Path(test_file).parent)
        voice = getattr(scenario.target, "type", None) == "voice"
        for n, turn in enumerate(scenario.turns, start=1):
            if turn.user is None:
                continue
            generated = generated_path(Path(test_file), scenario.id, n).absolute()
            named = turn.audio is not None and Path(turn.audio) != generated
            if not (named or voice):
                text_only += 1
                continue
            wav = Path(turn.audio) if named and turn.audio else generated
            item = _Wanted(wav, turn.user, f"{test_file}: {scenario.id} turn {n}", root)
            if not _in_project(item):
                continue
            seen = out.setdefault(wav, item)
            if seen.text != item.text:
                raise UserError(
                    f"{seen.where} and {item.where} both want {wav} with different text; "
                    "give one of them its own `audio:` path"
                )
    return list(out.values()), text_only


def _in_project(item: _Wanted) -> bool:
    """Whether `item.wav` is under its project root; `False` for a recording outside it
    (played as it is, never touched).

    Raises:
        UserError: `item.wav` is outside the project root and no recording is there.
    """
    from sparring.models.speech_files import WavState, outside_root, wav_state

    if not outside_root(item.wav, item.root):
        return True
    if wav_state(item.wav, text=item.text) is WavState.RECORDED:
        return False
    raise UserError(
        f"{item.where}: its `audio:` {item.wav.resolve()} is outside the project "
        f"({item.root}), where sparring synthesize writes nothing: record that file "
        "yourself, or move it under the project and change `audio:`"
    )


async def _write_all(
    wanted: list[_Wanted], speech: SpeechProvider, force: bool
) -> tuple[int, int, int]:
    """Synthesize what is missing or stale; (written, unchanged, recordings kept)."""
    from sparring.models.speech_files import WavState, wav_state, write_generated

    written = unchanged = recorded = 0
    for item in wanted:
        state = wav_state(item.wav, text=item.text, provider_key=speech.key)
        if state is WavState.RECORDED:
            recorded += 1
            _keep_recording(item)
            continue
        if state is WavState.CURRENT and not force:
            unchanged += 1
            continue
        data = await speech.synthesize(item.text)
        try:
            write_generated(item.wav, data, text=item.text, provider_key=speech.key, root=item.root)
        except OSError as e:
            raise UserError(f"cannot write {item.wav} ({item.where}): {e}") from None
        click.echo(f"wrote {_shown(item.wav)}  ({item.where})")
        written += 1
    return written, unchanged, recorded


def _keep_recording(item: _Wanted) -> None:
    """Take the recording at `item.wav` off the generated list of its `.gitignore`, saying so.

    Raises:
        UserError: the `.gitignore` cannot be read or written.
    """
    from sparring.models.speech_files import unignore_recording

    try:
        changed = unignore_recording(item.wav, root=item.root)
    except OSError as e:
        raise UserError(f"cannot update {item.wav.parent / '.gitignore'}: {e}") from None
    if changed:
        click.echo(
            f"kept {_shown(item.wav)}, a recording ({item.where}): taken off "
            f"{_shown(item.wav.parent / '.gitignore')} so that it can be committed"
        )


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)
