"""The schema of a library file: evaluations and simulated users, defined once, used by name.

A library document is a mapping with only `evaluations:` and/or `simulated_users:` at its
top level (a test file's document has `scenarios:`, or a scenario's `id:`); it may sit in
its own file or be one `---` document of a test file. Kept apart from `library` so that
`_places` can name its models without an import cycle.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from sparring.loaders._parse import is_mapping
from sparring.scenario.evaluations import Evaluation, SimulatedUser
from sparring.target_specs import FROZEN

LIBRARY_KEYS = frozenset({"evaluations", "simulated_users"})
"""The top-level keys of a library document."""


class LibraryFile(BaseModel):
    """One library document: `evaluations` (each an `Evaluation`) and `simulated_users`
    (each a `SimulatedUser`); names are unique across every library the loader reads."""

    model_config = FROZEN
    evaluations: list[Evaluation] = Field(default_factory=list[Evaluation])
    simulated_users: list[SimulatedUser] = Field(default_factory=list[SimulatedUser])


def is_library(data: Any) -> bool:
    """Whether a parsed document is a library document: a non-empty mapping whose keys are
    all `LIBRARY_KEYS` (a scenario written at the top level has at least an `id:` too)."""
    return is_mapping(data) and bool(data) and data.keys() <= LIBRARY_KEYS
