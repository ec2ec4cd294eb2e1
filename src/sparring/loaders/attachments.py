"""Paths in test files -> absolute paths: `files:` of single-turn and simulated scenarios
and of scripted turns, each relative to the test file's directory; scripted turns' `audio:` through
`sparring.loaders.audio`.

A path to nothing sendable (missing, a directory, unreadable, a file over the size limit) is
a problem at the line of the path, saying how to fix it; files are checked here, so a run
never starts with a file it cannot send.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sparring.loaders._parse import Document, Loc
from sparring.loaders.audio import turn_audio
from sparring.loaders.errors import Problem
from sparring.scenario import (
    AnyScenario,
    ScriptedScenario,
    ScriptedTurn,
    SimulatedScenario,
    SingleTurnScenario,
)
from sparring.targets.attachments import file_problem


def resolve_file_paths(
    scenario: AnyScenario, *, doc: Document, at: Loc, path: str
) -> tuple[dict[str, Any], list[Problem]]:
    """The scenario's file paths made absolute, relative to the test file at `path`.

    Args:
        scenario: A validated scenario of the document `doc`.
        doc: Its document (for line numbers).
        at: Where the scenario's mapping is in `doc`, e.g. `("scenarios", 2)`.
        path: The test file, as shown in errors; `<text>` and other names of no directory
            resolve against the current directory.

    Returns:
        The fields to update on the scenario (`files` or `turns`; empty when it names no
        file), and one problem per path that cannot be sent.
    """
    resolver = _Resolver(doc, Path(path).parent, path)
    if isinstance(scenario, SingleTurnScenario | SimulatedScenario) and scenario.files:
        return {"files": resolver.files(scenario.files, (*at, "files"))}, resolver.problems
    if isinstance(scenario, ScriptedScenario):
        turns = [
            resolver.turn(t, (*at, "turns", n), scenario.id, n + 1)
            for n, t in enumerate(scenario.turns)
        ]
        return {"turns": turns}, resolver.problems
    return {}, []


class _Resolver:
    def __init__(self, doc: Document, base: Path, path: str) -> None:
        self.doc, self.base, self.path = doc, base, path
        self.problems: list[Problem] = []

    def turn(self, turn: ScriptedTurn, at: Loc, scenario_id: str, number: int) -> ScriptedTurn:
        update: dict[str, Any] = {"files": self.files(turn.files, (*at, "files"))}
        if turn.user is not None:  # the WAV a voice target plays (sparring.loaders.audio)
            update["audio"], problem = turn_audio(
                turn.audio,
                text=turn.user,
                test_file=self.path,
                scenario_id=scenario_id,
                turn=number,
            )
            if problem is not None:
                line, column = self.doc.position((*at, "audio"), value=True)
                self.problems.append(Problem(self.path, line, column, problem))
        return turn.model_copy(update=update)

    def files(self, paths: list[str], at: Loc) -> list[str]:
        return [self.one(p, (*at, k)) for k, p in enumerate(paths)]

    def one(self, written: str, at: Loc) -> str:
        resolved = (self.base / Path(written).expanduser()).absolute()
        problem = file_problem(resolved)
        if problem is not None:
            line, column = self.doc.position(at, value=True)
            shown = repr(written) if written == str(resolved) else f"{written!r} ({resolved})"
            self.problems.append(Problem(self.path, line, column, f"files: {shown} {problem}"))
        return str(resolved)
