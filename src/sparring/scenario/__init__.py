"""What a test says: scenarios (simulated, scripted, single-turn), criteria, checks.

These pydantic models are the test-file schema: the YAML loader validates against them and
`sparring schema` prints their JSON Schema. All are frozen and reject unknown keys.
`checks.py` holds the check specs, `kinds.py` the scenario kinds, criteria and thresholds.
"""

from sparring.scenario.checks import (
    CHECK_TYPES,
    Check,
    ContainsCheck,
    EqualsCheck,
    JsonSchemaCheck,
    LatencyBelowCheck,
    NotContainsCheck,
    RegexCheck,
    ToolArgsCheck,
    ToolCalledCheck,
    expand_check_shorthand,
    is_raw_list,
)
from sparring.scenario.kinds import (
    EXPECTED_OUTPUT_ID,
    AnyScenario,
    Criterion,
    Scenario,
    ScriptedScenario,
    ScriptedTurn,
    SimulatedScenario,
    SingleTurnScenario,
    TestFile,
    Threshold,
    has_something_to_check,
    parse_threshold,
    scenario_kind,
    unseen_tool_calls,
)

__all__ = [
    "AnyScenario",
    "CHECK_TYPES",
    "Check",
    "ContainsCheck",
    "Criterion",
    "EXPECTED_OUTPUT_ID",
    "EqualsCheck",
    "JsonSchemaCheck",
    "LatencyBelowCheck",
    "NotContainsCheck",
    "RegexCheck",
    "Scenario",
    "ScriptedScenario",
    "ScriptedTurn",
    "SimulatedScenario",
    "SingleTurnScenario",
    "TestFile",
    "Threshold",
    "ToolArgsCheck",
    "ToolCalledCheck",
    "expand_check_shorthand",
    "has_something_to_check",
    "is_raw_list",
    "parse_threshold",
    "scenario_kind",
    "unseen_tool_calls",
]
