"""Evaluations and simulated users defined once and used by name: the library.

A **library document** holds only `evaluations:` and/or `simulated_users:` at its top level
(`sparring.loaders._library_file`):

```yaml
# tests/library.yaml
evaluations:
  - name: empathy
    prompt: How well does the assistant acknowledge the customer's frustration?
    insights:
      - {name: acknowledged, type: boolean, pass_when: true}
simulated_users:
  - name: frustrated-late-delivery
    job_title: Office manager
    description: Her order is a week late; short, impatient messages.
    evaluations: [empathy]
```

The loader reads every library document among the files it loads (a file of its own, or a
`---` document of a test file), in the files next to a test file named on its own
(`neighbour_files`: `sparring run tests/late.yaml` finds `tests/library.yaml`, and so does
the pytest plugin, which loads one file at a time) and in the files and directories of the
`library` setting; names are unique across all of them. `Library.resolve` then turns a scenario's
`evaluations: [NAME | mapping]` into `Evaluation`s and its `user: NAME` into its
`simulated_user`, adding the evaluations attached to that user. Every unknown or repeated
name is a `Problem` at its file:line:column, with the known names and a "did you mean".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from pydantic import ValidationError

from sparring.errors import ConfigError, UserError
from sparring.loaders._library_file import LibraryFile, is_library
from sparring.loaders._parse import Document, Loc, is_mapping, parse_documents
from sparring.loaders._places import closest
from sparring.loaders.errors import Problem, validation_problems
from sparring.loaders.files import TEST_FILE_SUFFIXES, discover_files, read_test_file
from sparring.scenario import AnyScenario, ScriptedScenario, SimulatedScenario
from sparring.scenario.checks import is_raw_list
from sparring.scenario.evaluations import Evaluation, SimulatedUser

T = TypeVar("T", Evaluation, SimulatedUser)

_WHERE = (
    "in a library file: a YAML file among the test paths or next to the test file, or one "
    "named in the `library` setting"
)
_MAX_NAMES = 20
"""At most this many known names are listed in an error."""


@dataclass(frozen=True)
class Defined(Generic[T]):
    """A definition and where it is: `loc` in `doc` of the file `path`."""

    value: T
    path: str
    doc: Document
    loc: Loc

    def where(self) -> str:
        """`path:line:column` of the definition."""
        line, column = self.doc.position(self.loc)
        return f"{self.path}:{line}:{column}"


@dataclass
class Library:
    """Every evaluation and simulated user read so far, by name (with where each is
    defined), and what was wrong. Python tests get one from `sparring.api.load_library()`
    and take definitions with `simulated_user(name)`, `evaluation(name)` and
    `evaluations_for(user, *names)`."""

    evaluations: dict[str, Defined[Evaluation]] = field(
        default_factory=dict[str, Defined[Evaluation]]
    )
    simulated_users: dict[str, Defined[SimulatedUser]] = field(
        default_factory=dict[str, Defined[SimulatedUser]]
    )
    problems: list[Problem] = field(default_factory=list[Problem])
    """Invalid library documents and names defined twice."""
    failed: dict[str, str] = field(default_factory=dict[str, str])
    """`evaluation NAME` / `simulated user NAME` -> `path:line:column` of a definition
    that failed to load (its problem is in `problems`), so a reference to it says so
    rather than that it is not defined."""

    def add_document(self, doc: Document, *, path: str) -> None:
        """Validate a library document (`is_library(doc.data)`) and register its names; a
        problem (bad document or entry, name defined twice) goes to `problems`. The valid
        entries of a document with a bad one are still registered, and the names of the
        bad ones kept in `failed`."""
        try:
            read = LibraryFile.model_validate(doc.data)
        except ValidationError as e:
            self.problems += validation_problems(
                e, doc=doc, path=path, single=False, root=LibraryFile
            )
            self._add_entries(doc, path=path)
            return
        for k, evaluation in enumerate(read.evaluations):
            self._add(self.evaluations, Defined(evaluation, path, doc, ("evaluations", k)))
        for k, user in enumerate(read.simulated_users):
            self._add(self.simulated_users, Defined(user, path, doc, ("simulated_users", k)))

    def _add_entries(self, doc: Document, *, path: str) -> None:
        """Of a document that failed to validate, register each entry that is valid on its
        own, and record the name of each that is not in `failed`."""
        self._add_valid(doc, path, ("evaluations", "evaluation"), Evaluation, self.evaluations)
        users = ("simulated_users", "simulated user")
        self._add_valid(doc, path, users, SimulatedUser, self.simulated_users)

    def _add_valid(
        self,
        doc: Document,
        path: str,
        key_and_noun: tuple[str, str],
        model: type[T],
        known: dict[str, Defined[T]],
    ) -> None:
        """Register each entry under `key` that `model` validates; record the others."""
        key, noun = key_and_noun
        entries = doc.data.get(key) if is_mapping(doc.data) else None
        for k, item in enumerate(entries if is_raw_list(entries) else []):
            try:
                value = model.model_validate(item)
            except ValidationError:
                name = item.get("name") if is_mapping(item) else None
                if isinstance(name, str):
                    line, column = doc.position((key, k))
                    self.failed.setdefault(f"{noun} {name}", f"{path}:{line}:{column}")
                continue
            self._add(known, Defined(value, path, doc, (key, k)))

    def add_neighbour(self, file: Path) -> None:
        """Register the library documents of `file` (`neighbour_files`), leaving out its
        other documents: its scenarios are not part of the run. A file that is not YAML
        is reported in `problems`."""
        path = str(file)
        try:
            documents = parse_documents(read_test_file(file), path=path)
        except ConfigError as e:
            self.problems.append(Problem(path, e.line, e.column, e.message))
            return
        except (UserError, UnicodeDecodeError):
            return  # unreadable: not part of this run (neighbour_files read it a moment ago)
        for doc in documents:
            if is_library(doc.data):
                self.add_document(doc, path=path)

    def _add(self, known: dict[str, Defined[T]], item: Defined[T]) -> None:
        name = item.value.name
        first = known.get(name)
        if first is None:
            known[name] = item
            return
        noun = "evaluation" if isinstance(item.value, Evaluation) else "simulated user"
        self.problems.append(
            Problem(
                item.path,
                *item.doc.position(item.loc),
                f"{noun} {name!r} is defined twice, also at {first.where()}; names are "
                "unique across the loaded library files: rename or remove one",
            )
        )

    def simulated_user(self, name: str) -> SimulatedUser:
        """The simulated user `name`.

        Raises:
            UserError: no such user; the message lists the known ones (did you mean).
        """
        found = self.simulated_users.get(name)
        if found is None:
            raise UserError(self._not_loaded("simulated user", name))
        return found.value

    def evaluation(self, name: str) -> Evaluation:
        """The evaluation `name`.

        Raises:
            UserError: no such evaluation; the message lists the known ones (did you mean).
        """
        found = self.evaluations.get(name)
        if found is None:
            raise UserError(self._not_loaded("evaluation", name))
        return found.value

    def _not_loaded(self, noun: str, name: str) -> str:
        """`_unknown` for Python code: with nothing loaded, how to load it."""
        if self.evaluations or self.simulated_users:
            return self._unknown(noun, name)
        return (
            f"unknown {noun} {name!r}: no library was loaded; give load_library() its files, "
            "e.g. load_library(['tests/library.yaml']), or set the `library` setting"
        )

    def evaluations_for(self, user: str | SimulatedUser, *names: str) -> list[Evaluation]:
        """The evaluations attached to `user` (a name or a `SimulatedUser`), then those
        `names` adds, each once: what scores a Python test played by that user.

        Raises:
            UserError: an unknown user or evaluation name.
        """
        played = self.simulated_user(user) if isinstance(user, str) else user
        wanted = dict.fromkeys([*played.evaluations, *names])
        return [self.evaluation(name) for name in wanted]

    def attached_problems(self) -> list[Problem]:
        """A simulated user's `evaluations:` naming an evaluation no library defines."""
        problems: list[Problem] = []
        for user in self.simulated_users.values():
            for j, name in enumerate(user.value.evaluations):
                if name not in self.evaluations:
                    loc = (*user.loc, "evaluations", j)
                    unknown = self._unknown("evaluation", name)
                    message = f"simulated user {user.value.name!r}: {unknown}"
                    problems.append(_at(user.path, user.doc, loc, message))
        return problems

    def resolve(
        self, scenario: AnyScenario, *, doc: Document, at: Loc, path: str
    ) -> tuple[AnyScenario, list[Problem]]:
        """`scenario` with its evaluations as `Evaluation`s (then those of its simulated
        user not already listed) and its `simulated_user` set from `user:`.

        Args:
            scenario: As validated.
            doc: The document it is in, for positions.
            at: Where the scenario is in `doc`.
            path: The file, as shown in problems.

        Returns:
            The resolved scenario (the one given when a problem was found) and the problems:
            unknown names, an evaluation listed twice, `user:` beside `persona:`.
        """
        problems: list[Problem] = []
        own: list[Evaluation] = []
        for k, item in enumerate(scenario.evaluations):
            found = item if isinstance(item, Evaluation) else self._evaluation(item)
            if found is None:
                message = self._unknown("evaluation", str(item))
                problems.append(_at(path, doc, (*at, "evaluations", k), message))
            else:
                own.append(found)
        names = [e.name for e in own]
        if twice := sorted({n for n in names if names.count(n) > 1}):
            message = f"evaluations lists {', '.join(map(repr, twice))} twice: keep one"
            problems.append(_at(path, doc, (*at, "evaluations"), message))
        update: dict[str, object] = {"evaluations": own}
        if isinstance(scenario, SimulatedScenario | ScriptedScenario) and scenario.user:
            user, trouble = self._user(scenario, doc=doc, at=at, path=path)
            problems += trouble
            if user is not None:
                update["simulated_user"] = user
                attached = (self._evaluation(n) for n in user.evaluations)
                own += [e for e in attached if e is not None and e.name not in names]
        if problems:
            return scenario, sorted(problems, key=lambda p: (p.line or 0, p.column or 0))
        return scenario.model_copy(update=update), []

    def _user(
        self, scenario: SimulatedScenario | ScriptedScenario, *, doc: Document, at: Loc, path: str
    ) -> tuple[SimulatedUser | None, list[Problem]]:
        name = scenario.user or ""
        found = self.simulated_users.get(name)
        problems: list[Problem] = []
        if found is None:
            unknown = self._unknown("simulated user", name)
            problems.append(_at(path, doc, (*at, "user"), unknown))
        if "persona" in scenario.model_fields_set:
            problems.append(
                _at(
                    path,
                    doc,
                    (*at, "persona"),
                    f"`persona:` and `user: {name}` both say who the simulated user is: keep "
                    "one (the simulated user's system_prompt or description is its persona)",
                )
            )
        return (found.value if found else None), problems

    def _evaluation(self, name: str) -> Evaluation | None:
        found = self.evaluations.get(name)
        return found.value if found else None

    def _unknown(self, noun: str, name: str) -> str:
        """`unknown evaluation 'tne'; did you mean 'tone'? known evaluations: ...`, or, for
        a name whose definition failed to load, where that definition is."""
        if (where := self.failed.get(f"{noun} {name}")) is not None:
            return (
                f"{noun} {name!r} did not load: its definition at {where} has an error "
                "(reported there); fix that"
            )
        evaluation = noun == "evaluation"
        known = sorted(self.evaluations if evaluation else self.simulated_users)
        if not known:
            key = "evaluations" if evaluation else "simulated_users"
            return f"unknown {noun} {name!r}: none is defined; define it under `{key}:` {_WHERE}"
        guess = closest(name, known)
        hint = f"did you mean {guess!r}? " if guess else ""
        shown = ", ".join(known[:_MAX_NAMES]) + (" ..." if len(known) > _MAX_NAMES else "")
        return f"unknown {noun} {name!r}; {hint}known {noun}s: {shown}"


def _at(path: str, doc: Document, loc: Loc, message: str) -> Problem:
    """A problem at the value of `loc` in `doc`."""
    return Problem(path, *doc.position(loc, value=True), message)


def library_files(paths: Sequence[str | Path]) -> list[Path]:
    """The YAML/JSON files of the `library` setting's files and directories (directories
    searched recursively, as test directories are).

    Raises:
        UserError: a path does not exist, or a directory holds no YAML/JSON file; the
            message names the setting.
    """
    files: list[Path] = []
    for raw in paths:
        if not Path(raw).exists():
            raise UserError(
                f"library path {str(raw)!r} (from the `library` setting) does not exist; "
                "name files or directories of evaluations and simulated users, relative to "
                "the settings file"
            )
        try:
            files += discover_files([raw])
        except UserError:
            raise UserError(
                f"library directory {str(raw)!r} (from the `library` setting) holds no "
                "*.yaml, *.yml or *.json file"
            ) from None
    return files


_LIBRARY_LINE = re.compile(r"^(?:evaluations|simulated_users)[ \t]*:", re.MULTILINE)
"""A top-level `evaluations:` or `simulated_users:` line: the file may hold a library."""


def neighbour_files(paths: Sequence[str | Path], *, taken: Sequence[Path]) -> list[Path]:
    """Library files next to the test files named in `paths` (not directories): the
    `*.yaml`, `*.yml` and `*.json` files of the same directory, not hidden and not in
    `taken`, with a top-level `evaluations:` or `simulated_users:` line (only those are
    parsed, so a directory of many test files costs little). Sorted by directory, then name.
    """
    seen = {f.resolve() for f in taken}
    found: list[Path] = []
    for raw in paths:
        named = Path(raw)
        if not named.is_file():
            continue
        for sibling in sorted(named.parent.iterdir()):
            resolved = sibling.resolve()
            if (
                resolved in seen
                or sibling.name.startswith(".")
                or not sibling.name.endswith(TEST_FILE_SUFFIXES)
                or not sibling.is_file()
            ):
                continue
            seen.add(resolved)
            try:
                text = read_test_file(sibling)
            except (UserError, UnicodeDecodeError):
                continue
            if _LIBRARY_LINE.search(text):
                found.append(sibling)
    return found


def configured_library() -> tuple[str, ...]:
    """The `library` setting's paths (absolute), from the settings found from the current
    directory (`sparring.config.load_settings`).

    Raises:
        ConfigError: the settings files are invalid.
    """
    from sparring.config import load_settings

    return load_settings({}).library
