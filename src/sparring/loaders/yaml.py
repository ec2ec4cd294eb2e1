"""YAML/JSON test files -> scenarios, with errors at file:line:column.

A test file is a mapping with `target:` (optional, shared) and `scenarios:` (a test set), or
a single scenario at top level (with its own `target:`). A file may hold several `---`
documents. Every problem found in any file is reported in one `ConfigError`, one line each:

    tests/conv/refund.yaml:14:5: unknown key 'persna' in scenarios[0] (simulated scenario); did you mean 'persona'?
"""  # noqa: E501

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from pydantic import TypeAdapter, ValidationError

from sparring.errors import ConfigError, UserError
from sparring.judging.should import ConditionGrammarWarning, condition_problem
from sparring.loaders._library_file import is_library
from sparring.loaders._parse import Document, Loc, is_mapping, parse_documents
from sparring.loaders._places import allowed_keys, closest
from sparring.loaders.attachments import resolve_file_paths
from sparring.loaders.audio import synthesizing
from sparring.loaders.cases import expand_cases
from sparring.loaders.dialects import to_native
from sparring.loaders.errors import Problem, config_error, validation_problems
from sparring.loaders.files import discover_files, read_test_file
from sparring.loaders.library import (
    Library,
    configured_library,
    library_files,
    neighbour_files,
)
from sparring.loaders.schema import test_file_json_schema
from sparring.scenario import (
    AnyScenario,
    Check,
    Scenario,
    ScriptedScenario,
    SimulatedScenario,
    SingleTurnScenario,
    TestFile,
    has_something_to_check,
    unseen_tool_calls,
)

__all__ = ["load_library", "load_paths", "load_text", "test_file_json_schema"]


def load_paths(
    paths: Sequence[str | Path],
    *,
    pattern: str | None = None,
    library: Sequence[str | Path] | None = None,
) -> list[AnyScenario]:
    """Load every scenario from test files and directories of test files.

    Each scenario gets the file's `target` when it has none, and `source="path:line"` (the
    line its mapping starts on). Evaluations and simulated users named in scenarios are
    resolved from the library documents among the files, next to a file named on its own,
    and in `library` (`sparring.loaders.library`). Everything is validated before `pattern`
    filters.

    Args:
        paths: Files (any suffix, read as YAML) or directories, searched recursively for
            `*.yaml`, `*.yml`, `*.json` in sorted order, skipping hidden directories/files.
        pattern: Regular expression searched (`re.search`) in each scenario's id and name;
            `None` keeps all. A pattern matching nothing gives an empty list.
        library: Files and directories of evaluations and simulated users read besides
            the library documents among `paths`; `None`: the `library` setting.

    Returns:
        Scenarios in file order, then in their order within each file.

    Raises:
        UserError: a path (or a `library` path) does not exist, no test files were found,
            or `pattern` is not a valid regular expression.
        ConfigError: any file is invalid (syntax, unknown keys, bad values, a scenario with
            nothing to check or no target) or two scenarios share an id; the message lists
            every problem as `path:line:column: what; how to fix`.
    """
    regex = _compile(pattern)
    loaded: list[_Loaded] = []
    problems: list[Problem] = []
    book = Library()
    files = discover_files(paths)
    for file in files:
        found, trouble = _load_file(file, book)
        loaded += found
        problems += trouble
    neighbours = neighbour_files(paths, taken=files)
    for file in neighbours:
        book.add_neighbour(file)
    problems += _read_library(book, library, skip=[*files, *neighbours])
    loaded, trouble = _resolve(loaded, book)
    problems += trouble + _duplicate_ids(loaded)
    if problems:
        raise config_error(problems)
    scenarios = [item.scenario for item in loaded]
    if regex is None:
        return scenarios
    return [s for s in scenarios if regex.search(s.id) or (s.name and regex.search(s.name))]


def load_text(
    text: str, *, path: str = "<text>", library: Sequence[str | Path] | None = None
) -> list[AnyScenario]:
    """Load the scenarios of one test file given as text (YAML or JSON).

    Args:
        text: The file's content.
        path: Shown in errors and in each scenario's `source`.
        library: As `load_paths`.

    Raises:
        ConfigError: as `load_paths`, for this one file.
    """
    book = Library()
    loaded, problems = _load_documents(text, path=path, library=book)
    problems += _read_library(book, library, skip=[])
    loaded, trouble = _resolve(loaded, book)
    problems += trouble + _duplicate_ids(loaded)
    if problems:
        raise config_error(problems)
    return [item.scenario for item in loaded]


def load_library(paths: Sequence[str | Path] | None = None) -> Library:
    """The evaluations and simulated users of library files, for Python tests
    (`sparring.api.load_library`).

    Args:
        paths: Library files and directories; `None`: the `library` setting.

    Raises:
        UserError: a path does not exist.
        ConfigError: a library file is invalid, or a name is defined twice or unknown (at
            file:line:column).
    """
    book = Library()
    problems = _read_library(book, paths, skip=[])
    if problems:
        raise config_error(problems)
    return book


class _Loaded(NamedTuple):
    scenario: AnyScenario
    path: str
    line: int
    column: int
    doc: Document
    at: Loc


def _read_library(
    book: Library, paths: Sequence[str | Path] | None, *, skip: Sequence[Path]
) -> list[Problem]:
    """Read the library files of `paths` (`None`: the `library` setting) but those in
    `skip` (already read) into `book`; its problems, and a scenario found there, returned."""
    seen = {f.resolve() for f in skip}
    problems: list[Problem] = []
    for file in library_files(configured_library() if paths is None else paths):
        if file.resolve() in seen:
            continue
        found, trouble = _load_file(file, book)
        problems += trouble + [
            Problem(
                item.path,
                item.line,
                item.column,
                "a library file holds only `evaluations:` and `simulated_users:`; move "
                "scenarios to a test file",
            )
            for item in found[:1]
        ]
    return problems + book.problems + book.attached_problems()


def _resolve(loaded: list[_Loaded], book: Library) -> tuple[list[_Loaded], list[Problem]]:
    """Each scenario with its evaluations and simulated user resolved from `book`; one
    that still has nothing to check is a problem."""
    out: list[_Loaded] = []
    problems: list[Problem] = []
    for item in loaded:
        scenario, trouble = book.resolve(item.scenario, doc=item.doc, at=item.at, path=item.path)
        out.append(item._replace(scenario=scenario))
        problems += trouble
        skipped = getattr(scenario, "user", None)  # by `_scenario_problems`, until now
        if skipped and not (trouble or has_something_to_check(scenario)):
            problems.append(Problem(item.path, item.line, item.column, _nothing_to_check(scenario)))
    return out, problems


def _compile(pattern: str | None) -> re.Pattern[str] | None:
    if pattern is None:
        return None
    try:
        return re.compile(pattern)
    except re.error as e:
        raise UserError(
            f"pattern {pattern!r} is not a valid regular expression ({e}); put a "
            r"backslash before special characters such as ( [ + * ?, e.g. 'a\+b'"
        ) from None


def _load_file(file: Path, library: Library) -> tuple[list[_Loaded], list[Problem]]:
    path = str(file)
    try:
        text = read_test_file(file)
    except UnicodeDecodeError as e:
        return [], [
            Problem(
                path,
                None,
                None,
                f"not UTF-8 text ({e.reason} at byte {e.start}); save the file as UTF-8",
            )
        ]
    return _load_documents(text, path=path, library=library)


def _load_documents(
    text: str, *, path: str, library: Library
) -> tuple[list[_Loaded], list[Problem]]:
    try:
        documents = parse_documents(text, path=path)
    except ConfigError as e:
        return [], [Problem(path, e.line, e.column, e.message)]
    if not documents or all(d.data is None for d in documents):
        return [], [Problem(path, None, None, "the file is empty; " + _SHAPE)]
    loaded: list[_Loaded] = []
    problems: list[Problem] = []
    for doc in documents:
        if is_library(doc.data):
            library.add_document(doc, path=path)
            continue
        found, trouble = _load_document(doc, path=path)
        loaded += found
        problems += trouble
    return loaded, problems


_SHAPE = (
    "a test file is a mapping with `target:` and `scenarios:` (a list of scenarios), "
    "or one scenario with its own `id:` and `target:`"
)


@functools.cache
def _scenario_adapter() -> TypeAdapter[Any]:
    return TypeAdapter(Scenario)


def _load_document(doc: Document, *, path: str) -> tuple[list[_Loaded], list[Problem]]:
    """Validate one document, then give each scenario its target and source."""
    doc, trouble = to_native(doc, path=path)  # another tool's test file, by its shape
    if not trouble:
        doc, trouble = expand_cases(doc, path=path)  # a scenario template over rows
    if trouble:
        return [], trouble
    line, column = doc.position(())
    data = doc.data
    if not is_mapping(data):
        hint = "; put the list under `scenarios:`" if isinstance(data, list) else ""
        return [], [
            Problem(
                path,
                line,
                column,
                f"expected a mapping at the top level, got {_kind_of(data)}; {_SHAPE}{hint}",
            )
        ]
    if _REPORT_KEYS <= data.keys():
        return [], []  # a sparring JSON report saved among the tests: not a test file
    single = "scenarios" not in data
    if single and not _SCENARIO_KEYS.intersection(data):
        return [], _no_scenarios(data, doc=doc, path=path)
    try:
        if single:
            scenarios: list[AnyScenario] = [_scenario_adapter().validate_python(data)]
            file_target = None
        else:
            test_file = TestFile.model_validate(data)
            scenarios, file_target = list(test_file.scenarios), test_file.target
    except ValidationError as e:
        return [], validation_problems(e, doc=doc, path=path, single=single)
    out: list[_Loaded] = []
    unsendable: list[Problem] = []
    for i, scenario in enumerate(scenarios):
        here: Loc = () if single else ("scenarios", i)
        line, column = doc.position(here)
        update, trouble = resolve_file_paths(scenario, doc=doc, at=here, path=path)
        unsendable += trouble
        update["source"] = f"{path}:{line}"
        if scenario.target is None and file_target is not None:
            update["target"] = file_target
        out.append(_Loaded(scenario.model_copy(update=update), path, line, column, doc, here))
        _warn_conditions(scenario, doc=doc, at=here, path=path)
    return out, unsendable + _scenario_problems(out, path=path, single=single)


def _warn_conditions(scenario: AnyScenario, *, doc: Document, at: Loc, path: str) -> None:
    """Warn (`ConditionGrammarWarning`, attributed to the test file and the line of the
    `should`) about each `should` not written as a verb phrase, as Python tests are."""
    if isinstance(scenario, ScriptedScenario):
        places = [((*at, "turns", n, "should"), t.should) for n, t in enumerate(scenario.turns)]
    elif isinstance(scenario, SingleTurnScenario):
        places = [((*at, "should"), scenario.should)]
    else:
        return
    for loc, conditions in places:
        for k, condition in enumerate(conditions):
            problem = condition_problem(condition)
            if problem is not None:
                line, _ = doc.position((*loc, k), value=True)
                warnings.warn_explicit(problem, ConditionGrammarWarning, path, line)


_REPORT_KEYS = frozenset({"schema_version", "sparring_version", "run_id"})
_SCENARIO_KEYS = frozenset(
    k for m in (SimulatedScenario, ScriptedScenario, SingleTurnScenario) for k in allowed_keys(m)
) - {"target"}
"""Keys that make a file without `scenarios:` one scenario (`target:` alone does not)."""


def _no_scenarios(data: dict[str, Any], *, doc: Document, path: str) -> list[Problem]:
    """A file with neither `scenarios:` nor any scenario key: say so, and check its keys
    (a `sparring redteam` file: say which command runs it)."""
    if "redteam" in data:
        return [
            Problem(
                path,
                *doc.position(("redteam",)),
                f"a `redteam:` file is run by `sparring redteam {path}`, not `sparring run`; "
                "or, to run the attacks with other tests, write them as a scenario under "
                "`scenarios:` with `kind: red_team`",
            )
        ]
    problems = [
        Problem(
            path,
            *doc.position(()),
            "no scenarios in this file; add `scenarios:` "
            "(a list of scenarios) or write one scenario at the top level (with "
            "its own `id:`)",
        )
    ]
    for key in data:
        if key != "target":
            guess = closest(key, ["scenarios", "target", *sorted(_SCENARIO_KEYS)])
            hint = (
                f"did you mean {guess!r}?"
                if guess
                else "a test file holds `target:` and `scenarios:`"
            )
            problems.append(
                Problem(
                    path, *doc.position((key,)), f"unknown key {key!r} at the top level; {hint}"
                )
            )
    return problems


def _kind_of(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    return "nothing" if value is None else f"{type(value).__name__} {value!r:.60}"


def _scenario_problems(loaded: list[_Loaded], *, path: str, single: bool) -> list[Problem]:
    """Scenarios with nothing to check (one with a `user:` once resolved: its user's
    evaluations may score it, `_resolve`), and scenarios with no target anywhere."""
    problems = [
        Problem(path, item.line, item.column, _nothing_to_check(item.scenario))
        for item in loaded
        if not (has_something_to_check(item.scenario) or getattr(item.scenario, "user", None))
    ]
    problems += [
        Problem(
            path,
            item.line,
            item.column,
            f"scenario {item.scenario.id!r} checks tool calls, but {why}",
        )
        for item in loaded
        if (why := unseen_tool_calls(item.scenario.target, _checks(item.scenario)))
    ]
    untargeted = [item for item in loaded if item.scenario.target is None and not synthesizing()]
    if untargeted:
        first = untargeted[0]
        problems.append(
            Problem(
                path,
                first.line,
                first.column,
                _no_target([item.scenario.id for item in untargeted], single=single),
            )
        )
    return problems


def _checks(scenario: AnyScenario) -> list[Check]:
    """Every check of the scenario: its own and its turns'."""
    return [*scenario.checks, *(c for t in getattr(scenario, "turns", []) for c in t.checks)]


def _nothing_to_check(scenario: AnyScenario) -> str:
    """What to add to a scripted or single-turn scenario with nothing to check (a simulated
    one is always judged, on its goal at least)."""
    if isinstance(scenario, SingleTurnScenario):
        add = "`expected_output:`, `should:`, `checks:` or `criteria:`"
    else:
        add = "`should:` or `checks:` to a turn, or `criteria:` / `checks:` to the scenario"
    return f"scenario {scenario.id!r} has nothing to check; add {add}"


def _no_target(ids: list[str], *, single: bool) -> str:
    example = '`target: {url: "http://localhost:8000/chat"}`'
    if single:
        return f"scenario {ids[0]!r} has no target; add one, e.g. {example}"
    names = ", ".join(repr(i) for i in ids)
    return (
        f"no target for scenario{'s' if len(ids) > 1 else ''} {names}; add `target:` at "
        f"the top of the file (shared by its scenarios) or to each scenario, e.g. {example}"
    )


def _duplicate_ids(loaded: list[_Loaded]) -> list[Problem]:
    first: dict[str, _Loaded] = {}
    problems: list[Problem] = []
    for item in loaded:
        sid = item.scenario.id
        if sid not in first:
            first[sid] = item
            continue
        where = f"{first[sid].path}:{first[sid].line}:{first[sid].column}"
        problems.append(
            Problem(
                item.path,
                item.line,
                item.column,
                f"duplicate scenario id {sid!r}, also used at {where}; "
                "scenario ids must be unique across the loaded files: rename "
                "one",
            )
        )
    return problems
