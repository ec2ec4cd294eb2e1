"""Group gates (`sparring.gates`): membership, pass rates, must_pass and the exit code."""

from __future__ import annotations

from sparring.config import GroupGate
from sparring.gates import MustPass, Outcome, TestRecord, evaluate


def record(
    nodeid: str, outcome: Outcome, *, tags: tuple[str, ...] = (), markers: tuple[str, ...] = ()
) -> TestRecord:
    name = nodeid.rsplit("::", 1)[-1]
    return TestRecord(
        nodeid=nodeid,
        outcome=outcome,
        names=frozenset({name, name.split("[")[0]}),
        tags=frozenset(tags),
        markers=frozenset(markers),
    )


def test_skipped_members_do_not_count_and_two_thirds_meets_a_066_threshold() -> None:
    report = evaluate(
        {"booking": GroupGate(threshold=0.66, tags=("booking",))},
        [
            record("a.yaml::one", "passed", tags=("booking",)),
            record("a.yaml::two", "passed", tags=("booking", "smoke")),
            record("a.yaml::three", "failed", tags=("booking",)),
            record("a.yaml::four", "skipped", tags=("booking",)),
            record("a.yaml::other", "passed", tags=("smoke",)),
        ],
    )
    gate = report.gates[0]
    assert (gate.passed, gate.ran, gate.skipped, gate.failures) == (2, 3, 1, ("a.yaml::three",))
    assert gate.met and report.overrides_exit_code
    assert report.lines() == [
        "booking: 2/3 passed, 66.7% [21%, 94%], 1 skipped, 66% required (needs 2 of 3): PASSED",
        "  failed: a.yaml::three",
        "exit code overridden to 0: every gate is met and every failed test belongs to a group",
    ]


def test_a_group_whose_members_all_skipped_fails_but_changes_no_exit_code_0() -> None:
    report = evaluate(
        {"g": GroupGate(markers=("slow",))}, [record("t.py::test_a", "skipped", markers=("slow",))]
    )
    assert not report.gates[0].met
    assert not report.tests_failed and not report.overrides_exit_code
    assert report.lines() == [
        "g: 0/0 passed, 1 skipped, 100% required: FAILED",
        "  nothing ran (1 member, all skipped): a gate over tests that did not run is not met",
        "no test failed, so the gates change nothing",
    ]


def test_must_pass_names_parametrized_tests_by_their_function_name() -> None:
    gate = GroupGate(threshold=0.5, markers=("booking",), must_pass=("test_pinned",))
    report = evaluate(
        {"booking": gate},
        [
            record("t.py::test_pinned[1]", "passed"),
            record("t.py::test_pinned[2]", "failed"),
            record("t.py::test_other", "passed", markers=("booking",)),
        ],
    )
    assert report.gates[0].must_pass == (MustPass(entry="test_pinned", status="failed"),)
    assert report.gates[0].ran == 1  # pinned, but not a member: not in the rate
    assert not report.gates[0].met and not report.overrides_exit_code
    assert report.lines()[-1] == "exit code stays 1: gate booking FAILED"


def test_every_gate_must_be_met_for_the_override() -> None:
    report = evaluate(
        {"a": GroupGate(tags=("a",), threshold=0.5), "b": GroupGate(tags=("b",))},
        [
            record("x::1", "failed", tags=("a",)),
            record("x::2", "passed", tags=("a",)),
            record("x::3", "failed", tags=("b",)),
        ],
    )
    assert [g.met for g in report.gates] == [True, False]
    assert not report.overrides_exit_code
    assert report.ungated_failures == ()


def test_a_must_pass_entry_that_matches_no_test_fails_the_gate_and_names_close_ones() -> None:
    gate = GroupGate(threshold=0.5, tags=("booking",), must_pass=("confirm_slott", "zzz"))
    report = evaluate(
        {"booking": gate},
        [
            record("a.yaml::confirm_slot", "passed", tags=("booking",)),
            record("a.yaml::cancel_slot", "failed", tags=("booking",)),
        ],
    )
    assert [pin.status for pin in report.gates[0].must_pass] == ["no match", "no match"]
    assert not report.gates[0].met and not report.overrides_exit_code
    assert report.lines() == [
        "booking: 1/2 passed, 50% [9%, 91%], 50% required (needs 1 of 2): FAILED",
        "  failed: a.yaml::cancel_slot",
        "  must_pass: confirm_slott matched no test of this session; did you mean 'confirm_slot'?",
        "  must_pass: zzz matched no test of this session; check its spelling (a node id, test "
        "name or scenario id) and that its file was collected without errors",
        "exit code stays 1: gate booking FAILED",
    ]


def test_a_skipped_must_pass_test_keeps_the_gate_met_and_says_skipped() -> None:
    gate = GroupGate(tags=("booking",), threshold=0.5, must_pass=("confirm_slot",))
    report = evaluate(
        {"booking": gate},
        [
            record("a.yaml::confirm_slot", "skipped"),
            record("a.yaml::one", "passed", tags=("booking",)),
            record("a.yaml::two", "failed", tags=("booking",)),
        ],
    )
    assert report.gates[0].met and report.overrides_exit_code
    assert "  must_pass: confirm_slot skipped" in report.lines()


def test_an_unmet_gate_without_failures_says_it_changes_nothing() -> None:
    report = evaluate({"g": GroupGate(must_pass=("typo",))}, [record("a.yaml::one", "passed")])
    assert not report.gates[0].met and not report.overrides_exit_code
    assert report.lines()[-1] == "no test failed, so the gates change nothing"


def test_a_run_that_stopped_early_never_overrides_and_says_why() -> None:
    records = [
        record("a.yaml::one", "passed", tags=("b",)),
        record("a.yaml::two", "failed", tags=("b",)),
    ]
    gates = {"b": GroupGate(threshold=0.5, tags=("b",))}
    assert evaluate(gates, records).overrides_exit_code
    report = evaluate(gates, records, stopped_early=True)
    assert report.gates[0].met and not report.overrides_exit_code
    assert report.lines()[-1] == "exit code stays 1: the run stopped early (-x / --maxfail)"
