"""No quiet passes (issue 9, item 13): a gate over nothing fails, `must_pass` pins do not
count in a group's rate unless they are members, and thresholds say what they need."""

from __future__ import annotations

from sparring.config import GroupGate
from sparring.gates import TestRecord, evaluate, gated_exit_code, run_records
from sparring.results import (
    RunResult,
    ScenarioResult,
    TrialResult,
    TrialStatus,
    passes_needed,
)


def record(nodeid: str, outcome: str, *, tags: tuple[str, ...] = ()) -> TestRecord:
    return TestRecord(
        nodeid=nodeid,
        outcome=outcome,  # type: ignore[arg-type]
        names=frozenset({nodeid.rsplit("::", 1)[-1]}),
        tags=frozenset(tags),
    )


def test_a_group_that_matches_no_test_fails_and_names_what_it_looked_for() -> None:
    gate = GroupGate(threshold=0.9, tags=("bookng",), markers=("booking",))
    report = evaluate({"booking": gate}, [record("a.yaml::one", "passed", tags=("booking",))])
    assert not report.gates[0].met
    assert report.lines()[:2] == [
        "booking: 0/0 passed, 90% required: FAILED",
        "  no test of this session has tag 'bookng' or marker 'booking': a gate over no test "
        "is not met; check the spelling, and that the test files were collected",
    ]


def test_an_empty_gate_blocks_the_override_of_failures_elsewhere() -> None:
    gates = {
        "a": GroupGate(threshold=0.5, tags=("a",)),
        "b": GroupGate(tags=("b",)),  # every member skipped
    }
    report = evaluate(
        gates,
        [
            record("x::1", "passed", tags=("a",)),
            record("x::2", "failed", tags=("a",)),
            record("x::3", "skipped", tags=("b",)),
        ],
    )
    assert [g.met for g in report.gates] == [True, False]
    assert not report.overrides_exit_code
    assert report.lines()[-1] == "exit code stays 1: gate b FAILED"


def test_a_must_pass_test_outside_the_tags_does_not_lift_the_rate() -> None:
    gate = GroupGate(threshold=1.0, tags=("booking",), must_pass=("pinned",))
    report = evaluate(
        {"booking": gate},
        [
            record("a.yaml::pinned", "passed"),
            record("a.yaml::member", "failed", tags=("booking",)),
        ],
    )
    result = report.gates[0]
    assert (result.passed, result.ran, result.failures) == (0, 1, ("a.yaml::member",))
    assert not result.met
    assert (
        result.lines()[0]
        == "booking: 0/1 passed, 0% [0%, 79%], 100% required (needs 1 of 1): FAILED"
    )


def test_a_must_pass_test_with_a_member_tag_counts_once() -> None:
    gate = GroupGate(threshold=0.5, tags=("booking",), must_pass=("pinned",))
    report = evaluate(
        {"booking": gate},
        [
            record("a.yaml::pinned", "passed", tags=("booking",)),
            record("a.yaml::member", "failed", tags=("booking",)),
        ],
    )
    assert (report.gates[0].passed, report.gates[0].ran) == (1, 2)
    assert report.gates[0].met and report.overrides_exit_code


def test_a_must_pass_only_group_gates_its_pins_and_fails_when_none_ran() -> None:
    gate = GroupGate(must_pass=("one", "two"))
    ran = evaluate({"pins": gate}, [record("a::one", "passed"), record("a::two", "skipped")])
    assert ran.gates[0].met
    assert ran.lines() == [
        "pins: must_pass only: PASSED",
        "  must_pass: one ok",
        "  must_pass: two skipped",
    ]
    skipped = evaluate({"pins": gate}, [record("a::one", "skipped"), record("a::two", "skipped")])
    assert not skipped.gates[0].met
    assert skipped.lines()[:2] == [
        "pins: must_pass only: FAILED",
        "  every must_pass test was skipped: a gate over tests that did not run is not met",
    ]


def test_passes_needed_counts_like_the_scenario_status() -> None:
    assert [passes_needed(0.66, n) for n in (0, 1, 2, 3)] == [0, 1, 2, 2]
    assert passes_needed(1.0, 3) == 3
    assert passes_needed(0.9, 10) == 9  # 0.9 * 10 is 9.000000000000002 in floats
    assert passes_needed(0.0, 5) == 0


def _scenario(sid: str, statuses: list[TrialStatus], *, tags: list[str]) -> ScenarioResult:
    trials = [
        TrialResult(scenario_id=sid, trial=i, status=status, end_reason="script_done")
        for i, status in enumerate(statuses, start=1)
    ]
    return ScenarioResult(
        scenario_id=sid, name=sid, kind="scripted", threshold=1.0, tags=tags, trials=trials
    )


def _run(*scenarios: ScenarioResult) -> RunResult:
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=list(scenarios),
    )


def test_run_records_count_errors_as_failures_and_skips_as_skipped() -> None:
    run = _run(
        _scenario("ok", ["passed"], tags=["a"]),
        _scenario("bad", ["failed"], tags=["a"]),
        _scenario("broken", ["error"], tags=[]),
        _scenario("idle", ["skipped"], tags=["b"]),
    )
    assert [(r.nodeid, r.outcome, sorted(r.tags)) for r in run_records(run)] == [
        ("ok", "passed", ["a"]),
        ("bad", "failed", ["a"]),
        ("broken", "failed", []),
        ("idle", "skipped", ["b"]),
    ]


def test_a_met_gate_lifts_exit_code_1_but_never_hides_an_error() -> None:
    gates = {"a": GroupGate(threshold=0.5, tags=("a",))}
    tolerated = _run(
        _scenario("ok", ["passed"], tags=["a"]), _scenario("bad", ["failed"], tags=["a"])
    )
    report = evaluate(gates, run_records(tolerated))
    assert tolerated.exit_code == 1 and gated_exit_code(tolerated, report) == 0
    with_error = _run(
        _scenario("ok", ["passed"], tags=["a"]),
        _scenario("bad", ["failed"], tags=["a"]),
        _scenario("e", ["passed", "error"], tags=["a"]),
    )
    report = evaluate({"a": GroupGate(threshold=0.3, tags=("a",))}, run_records(with_error))
    assert report.overrides_exit_code
    assert with_error.exit_code == 1 and gated_exit_code(with_error, report) == 3
    assert report.lines(overridden_to=3)[-1].startswith("exit code overridden to 3:")
    unmet = evaluate({"a": GroupGate(tags=("a",))}, run_records(tolerated))
    assert gated_exit_code(tolerated, unmet) == 1
