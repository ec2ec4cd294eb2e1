"""The canonical JSON report: `RunResult.report_dict()`, versioned, UTF-8, indented.

Keys keep the schema's field order (stable across runs); derived numbers (per-scenario
status, pass rate, pass^k, per-trial failure ids, counts, exit code, passed trials that left
a step not judged (`passed_with_unjudged_steps`); 95% Wilson intervals of
the scenario, run and per-criterion pass rates, `sparring.reports.rates`; for a red-team run,
`red_team`: attack success per plugin and strategy) sit beside the data.
`load_json` reads a report back into a `RunResult`, so other formats can be rendered, and
runs re-scored, from the file alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, ValidationError

from sparring.errors import UserError
from sparring.redteam import summarize, summary_dict
from sparring.reports import unjudged_passes, write_report_text
from sparring.reports.rates import add_intervals
from sparring.results import SCHEMA_VERSION, RunResult, ScenarioResult, TrialResult


def render_json(result: RunResult) -> str:
    """The JSON report text: 2-space indented, non-ASCII kept as is, ending with a newline."""
    data = _with_unjudged(add_intervals(result.report_dict(), result), result)
    attacks = summarize(result)
    if attacks.plugins:  # a red-team run: attack success per plugin and strategy
        data["red_team"] = summary_dict(attacks)
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _with_unjudged(data: dict[str, Any], result: RunResult) -> dict[str, Any]:
    """`data` with `passed_with_unjudged_steps` for the run and each scenario: how many of
    its passed trials left a step not judged (`unjudged_passes`). Returns `data`."""
    for raw, scenario in zip(data["scenarios"], result.scenarios, strict=True):
        raw["passed_with_unjudged_steps"] = unjudged_passes(scenario.trials)
    trials = (t for s in result.scenarios for t in s.trials)
    data["passed_with_unjudged_steps"] = unjudged_passes(trials)
    return data


def write_json(result: RunResult, path: Path) -> None:
    """Write `render_json(result)` to `path` (UTF-8), creating parent folders.

    Raises:
        OSError: the file cannot be written.
    """
    write_report_text(path, render_json(result))


def load_json(text: str, *, source: str = "<report>") -> RunResult:
    """Read a JSON report (as written by `render_json`) back into a `RunResult`.

    Derived keys are dropped and recomputed from the data, so they can never disagree.

    Raises:
        UserError: not JSON, another `schema_version`, or not a report (names `source`).
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserError(
            f"{source}: not a JSON report ({e}); pass the JSON file a sparring run wrote"
        ) from None
    if not isinstance(data, dict):
        raise UserError(f"{source}: a JSON report is an object, got {type(data).__name__}")
    data = cast(dict[str, Any], data)
    version = data.get("schema_version")
    if version != SCHEMA_VERSION:
        raise UserError(
            f"{source}: report schema_version {version!r} is not supported "
            f"(this sparring reads {SCHEMA_VERSION!r}); re-run with this version"
        )
    try:
        return RunResult.model_validate(_strip_derived(data))
    except ValidationError as e:
        raise UserError(f"{source}: not a valid sparring report:\n{e}") from None


def read_json(path: Path) -> RunResult:
    """`load_json` on the UTF-8 file at `path`.

    Raises:
        OSError: the file cannot be read.
        UserError: its content is not a report of this schema version.
    """
    return load_json(Path(path).read_text(encoding="utf-8"), source=str(path))


def _strip_derived(data: dict[str, Any]) -> dict[str, Any]:
    out = _known(data, RunResult)
    scenarios: Any = out.get("scenarios")
    if isinstance(scenarios, list):
        out["scenarios"] = [_strip_scenario(s) for s in cast(list[Any], scenarios)]
    return out


def _strip_scenario(raw: Any) -> Any:
    if not isinstance(raw, dict):
        return raw
    scenario: dict[str, Any] = _known(raw, ScenarioResult)
    trials: Any = scenario.get("trials")
    if isinstance(trials, list):
        scenario["trials"] = [_known(t, TrialResult) for t in cast(list[Any], trials)]
    return scenario


def _known(raw: Any, model: type[BaseModel]) -> Any:
    """`raw` without the keys `model` does not define; anything but a dict as is."""
    if not isinstance(raw, dict):
        return raw
    return {k: v for k, v in cast(dict[str, Any], raw).items() if k in model.model_fields}
