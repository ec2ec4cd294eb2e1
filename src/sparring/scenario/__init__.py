"""What a test says: scenarios (simulated, scripted, single-turn), criteria, checks.

These pydantic models are the test-file schema: the YAML loader validates against them and
`sparring schema` prints their JSON Schema. All are frozen and reject unknown keys.
`checks.py` holds the check specs, `kinds.py` the scenario kinds, criteria and thresholds.
"""

from sparring.scenario.checks import (
    CHECK_TYPES,
    Check,
    ContainsCheck,
    ConversationEnd,
    EndReasonCheck,
    EqualsCheck,
    JsonSchemaCheck,
    LatencyBelowCheck,
    NotContainsCheck,
    NotRegexCheck,
    RegexCheck,
    ToolArgsCheck,
    ToolCalledCheck,
    expand_check_shorthand,
    is_raw_list,
)
from sparring.scenario.kinds import (
    EMPTY_REPLY_ID,
    EXPECTED_OUTPUT_ID,
    GOAL_CRITERION_ID,
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
from sparring.scenario.red_team import RedTeamScenario, RedTeamSettings

__all__ = [
    "AnyScenario",
    "CHECK_TYPES",
    "Check",
    "ContainsCheck",
    "ConversationEnd",
    "Criterion",
    "GOAL_CRITERION_ID",
    "EMPTY_REPLY_ID",
    "EXPECTED_OUTPUT_ID",
    "EndReasonCheck",
    "EqualsCheck",
    "JsonSchemaCheck",
    "LatencyBelowCheck",
    "NotContainsCheck",
    "NotRegexCheck",
    "RedTeamScenario",
    "RedTeamSettings",
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
