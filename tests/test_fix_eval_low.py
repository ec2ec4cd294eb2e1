"""Smaller fixes around evaluations: the JSON schema takes `tool_args_judge` as one rubric,
as the loader does."""

from __future__ import annotations

import jsonschema
import pytest

from sparring.loaders.schema import test_file_json_schema
from sparring.scenario import SingleTurnScenario

SCENARIO = {"id": "a", "prompt": "Where is order 4411?", "target": {"url": "http://x"}}
RUBRIC = {"tool": "lookup_order", "rubric": "The order id is 4411"}


@pytest.mark.parametrize("rubrics", [RUBRIC, [RUBRIC, {**RUBRIC, "id": "again"}]])
def test_the_schema_takes_one_rubric_or_a_list_as_the_loader_does(rubrics: object) -> None:
    scenario = {**SCENARIO, "tool_args_judge": rubrics}
    jsonschema.validate(scenario, test_file_json_schema())
    loaded = SingleTurnScenario.model_validate({**scenario, "target": None})
    assert loaded.tool_args_judge[0].tool == "lookup_order"


def test_the_schema_still_refuses_a_rubric_without_its_tool() -> None:
    with pytest.raises(jsonschema.ValidationError):
        bad = {**SCENARIO, "tool_args_judge": {"rubric": "x"}}
        jsonschema.validate(bad, test_file_json_schema())
