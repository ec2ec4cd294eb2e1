"""The target of one file, for commands that need only a target (`sparring doctor`).

The file is a test file (its scenarios' targets) or a YAML/JSON file holding only
`target:`; either way it is validated like `sparring run` validates test files, with every
problem reported at `path:line:column`.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from pydantic import BaseModel, ValidationError

from sparring.errors import ConfigError, UserError
from sparring.loaders._parse import Document, Loc, is_mapping, parse_documents
from sparring.loaders.errors import config_error, validation_problems
from sparring.loaders.files import read_test_file
from sparring.loaders.yaml import load_text
from sparring.scenario import AnyScenario
from sparring.target_specs import FROZEN, TargetSpec
from sparring.targets.registry import AnyTargetSpec

_EXAMPLE = 'target: {url: "http://localhost:8000/chat", response_path: reply}'


class _TargetFile(BaseModel):
    """A file holding only `target:`."""

    model_config = FROZEN
    target: TargetSpec


def load_target(file: str, *, scenario_id: str | None) -> tuple[AnyTargetSpec, str]:
    """The target of a test file, or of a file holding only `target:`.

    Args:
        file: The YAML or JSON file.
        scenario_id: Take this scenario's target; needed when the file's scenarios use
            different targets.

    Returns:
        The target spec and where it came from: `path:line` of its `target:` key.

    Raises:
        UserError: the file is missing or is a Python file, `scenario_id` is not in it, or
            its scenarios use several targets and none was chosen.
        ConfigError: the file is invalid, listing each problem at `path:line:column`.
    """
    path = Path(file)
    if not path.is_file():
        raise UserError(
            f"{file!r} is not a file; give a test file or a YAML file with "
            f"`target:`, e.g. {_EXAMPLE}"
        )
    if path.suffix.lower() in (".py", ".pyw"):
        raise UserError(
            f"{file} is a Python file; `sparring doctor` takes a YAML (or JSON) "
            "test file, or a YAML file holding only `target:`. To check a Suite's "
            f"target, write the same target in a YAML file, e.g. {_EXAMPLE}, and "
            "give that file"
        )
    try:
        text = read_test_file(path)
    except UnicodeDecodeError as e:
        raise UserError(f"cannot read {file!r} ({e}); save it as UTF-8 text") from None
    documents = parse_documents(text, path=file)
    data = documents[0].data if len(documents) == 1 else None
    if not (isinstance(data, dict) and data.keys() == {"target"}):
        spec, scenario = _scenario_target(load_text(text, path=file), file, scenario_id)
        return spec, _target_place(documents, scenario, file)
    if scenario_id is not None:
        raise UserError(
            f"{file} holds only a target, no scenario {scenario_id!r}; leave out --scenario"
        )
    try:
        spec = _TargetFile.model_validate(data).target
    except ValidationError as e:
        raise config_error(
            validation_problems(e, doc=documents[0], path=file, single=False)
        ) from None
    return spec, f"{file}:{documents[0].position(('target',))[0]}"


def _scenario_target(
    found: list[AnyScenario], file: str, scenario_id: str | None
) -> tuple[AnyTargetSpec, AnyScenario]:
    if scenario_id is not None:
        chosen = [s for s in found if s.id == scenario_id]
        if not chosen:
            raise UserError(
                f"no scenario {scenario_id!r} in {file}; its scenarios: "
                f"{', '.join(s.id for s in found)}"
            )
        found = chosen
    targets = {s.target.model_dump_json(): s for s in found if s.target is not None}
    if len(targets) > 1:
        raise ConfigError(
            f"its scenarios use {len(targets)} different targets; choose one "
            f"with --scenario ID (ids: {', '.join(s.id for s in found)})",
            path=file,
        )
    first = next(iter(targets.values()))
    assert first.target is not None  # the loader rejects scenarios without a target
    return first.target, first


def _target_place(documents: list[Document], scenario: AnyScenario, file: str) -> str:
    """`path:line` of the `target:` key `scenario` takes its target from: its own, else
    its document's (the scenario's own `path:line` when neither is found)."""
    line = (scenario.source or "").rpartition(":")[2]
    for doc in documents:
        entries: object = doc.data.get("scenarios") if is_mapping(doc.data) else None
        count = len(cast(list[object], entries)) if isinstance(entries, list) else None
        spots: list[Loc] = [()] if count is None else [("scenarios", i) for i in range(count)]
        for here in spots:
            if str(doc.position(here)[0]) == line:
                own: Loc = (*here, "target")
                return f"{file}:{doc.position(own if own in doc.keys else ('target',))[0]}"
    return scenario.source or file
