"""Group gates: gate CI on the pass rate of a group of tests instead of on every single test.

Pure logic for the pytest plugin (`sparring.pytest_plugin`), which turns test reports into
`TestRecord`s and prints `GateReport.lines()` at the end of the session. A group
(`[tool.sparring.groups.NAME]`, `sparring.config.GroupGate`) holds every test with one of
its tags or markers, or named in its `must_pass`. Its gate is met when at least `threshold`
of its members that ran passed (skipped ones do not count), none of its `must_pass` tests
failed, and every `must_pass` entry names some test of the session: a misspelt entry fails
the gate (its line lists close names) instead of silently pinning nothing. A skipped
`must_pass` test does not fail it. A group whose members were all skipped has nothing to gate
and is met.

The session's exit code 1 (tests failed) becomes 0 only when there are gates, every gate is
met, and every failed test belongs to some group: a failing test outside every group keeps
the run red, and so does a session that stopped early (`-x`, `--maxfail`): its gates were
judged on part of the tests. Gates only ever turn 1 into 0: a gate that is not met when no
test failed changes nothing.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from sparring.config import GroupGate
from sparring.reports import percent, plural

Outcome = Literal["passed", "failed", "skipped"]
MustPassStatus = Literal["passed", "failed", "skipped", "no match"]


@dataclass(frozen=True, kw_only=True)
class TestRecord:
    """What the gates need to know about one test.

    Attributes:
        nodeid: pytest's node id, e.g. `tests/evals/booking.yaml::confirm_slot`.
        outcome: `failed` if any phase (setup, call, teardown) failed, else `passed` if the
            test ran and passed, else `skipped`.
        names: Other names `must_pass` may use: the test's name, a scenario's id.
        tags: Scenario tags (YAML `tags:`).
        markers: Names of the test's pytest markers.
    """

    __test__ = False  # not a pytest test class
    nodeid: str
    outcome: Outcome
    names: frozenset[str] = frozenset()
    tags: frozenset[str] = frozenset()
    markers: frozenset[str] = frozenset()

    def known_as(self, name: str) -> bool:
        """Whether `name` (a `must_pass` entry) names this test."""
        return name == self.nodeid or name in self.names


@dataclass(frozen=True, kw_only=True)
class MustPass:
    """One `must_pass` entry of a group and what became of the tests it names."""

    entry: str
    status: MustPassStatus
    """`failed` if any test it names failed, `passed` if all that ran passed, `skipped` if
    none ran, `no match` if it names no test of the session."""
    close: tuple[str, ...] = ()
    """For `no match`: names of the session's tests that look like `entry` (did-you-mean)."""

    def line(self) -> str:
        """The entry as one indented line of the group summary."""
        if self.status == "passed":
            return f"  must_pass: {self.entry} ok"
        if self.status != "no match":
            return f"  must_pass: {self.entry} {self.status}"
        hint = (
            f"did you mean {' or '.join(repr(n) for n in self.close)}?"
            if self.close
            else "check its spelling (a node id, test name or scenario id) and that its "
            "file was collected without errors"
        )
        return f"  must_pass: {self.entry} matched no test of this session; {hint}"


@dataclass(frozen=True, kw_only=True)
class GateResult:
    """One group's gate: counts over its members, failures, `must_pass` status, verdict."""

    name: str
    threshold: float
    passed: int
    ran: int
    """Members that passed or failed (skipped ones are left out)."""
    skipped: int
    failures: tuple[str, ...]
    """Node ids of the members that failed."""
    must_pass: tuple[MustPass, ...]
    met: bool

    def lines(self) -> list[str]:
        """The gate as text: a headline, then failures and `must_pass` status, indented."""
        rate = percent(self.passed / self.ran) if self.ran else "-"
        skipped = f", {self.skipped} skipped" if self.skipped else ""
        head = (
            f"{self.name}: {self.passed}/{self.ran} passed ({rate}){skipped}, "
            f"{percent(self.threshold)} required: {'PASSED' if self.met else 'FAILED'}"
        )
        out = [head, *(f"  failed: {nodeid}" for nodeid in self.failures)]
        return [*out, *(pin.line() for pin in self.must_pass)]


@dataclass(frozen=True, kw_only=True)
class GateReport:
    """Every gate of a session and what they do to its exit code."""

    gates: tuple[GateResult, ...]
    ungated_failures: tuple[str, ...]
    """Failed tests that belong to no group."""
    tests_failed: bool
    stopped_early: bool = False
    """The session stopped before running every test (`-x`, `--maxfail`)."""

    @property
    def overrides_exit_code(self) -> bool:
        """True when the session's exit code 1 should become 0 (see the module docstring)."""
        return (
            self.tests_failed
            and bool(self.gates)
            and all(g.met for g in self.gates)
            and not self.ungated_failures
            and not self.stopped_early
        )

    def lines(self) -> list[str]:
        """The group summary: every gate, then what happens to the exit code and why."""
        out = [line for gate in self.gates for line in gate.lines()]
        if not self.tests_failed:
            if any(not g.met for g in self.gates):
                out.append("no test failed, so the gates change nothing")
            return out
        if self.overrides_exit_code:
            return [
                *out,
                "exit code overridden to 0: every gate is met and every failed test "
                "belongs to a group",
            ]
        if self.stopped_early:
            out.append("exit code stays 1: the run stopped early (-x / --maxfail)")
        failed = [g.name for g in self.gates if not g.met]
        if failed:
            out.append(f"exit code stays 1: gate {', '.join(failed)} FAILED")
        if self.ungated_failures:
            count = plural(len(self.ungated_failures), "failed test")
            out.append(
                f"exit code stays 1: {count} in no group: " + ", ".join(self.ungated_failures)
            )
        return out


def evaluate(
    groups: Mapping[str, GroupGate], records: Iterable[TestRecord], *, stopped_early: bool = False
) -> GateReport:
    """Evaluate every group's gate over the session's tests.

    Args:
        groups: Gates by group name, from `[tool.sparring.groups]`.
        records: One record per test of the session.
        stopped_early: The session stopped before running every test (`-x`,
            `--maxfail`), so the gates cannot turn its exit code 1 into 0.

    Returns:
        Gates in the order of `groups`, with the failed tests that are in no group.
    """
    tests = list(records)
    members = {name: [t for t in tests if _is_member(t, gate)] for name, gate in groups.items()}
    known = _Names(
        nodeids=sorted({t.nodeid for t in tests}),
        names=sorted({name for t in tests for name in t.names}),
    )
    gates = tuple(_gate(name, gate, members[name], known) for name, gate in groups.items())
    grouped = {t.nodeid for group in members.values() for t in group}
    failed = [t.nodeid for t in tests if t.outcome == "failed"]
    return GateReport(
        gates=gates,
        ungated_failures=tuple(n for n in failed if n not in grouped),
        tests_failed=bool(failed),
        stopped_early=stopped_early,
    )


def _is_member(test: TestRecord, gate: GroupGate) -> bool:
    return (
        bool(test.tags.intersection(gate.tags))
        or bool(test.markers.intersection(gate.markers))
        or any(test.known_as(name) for name in gate.must_pass)
    )


def _gate(name: str, gate: GroupGate, members: list[TestRecord], known: _Names) -> GateResult:
    passed = sum(t.outcome == "passed" for t in members)
    failures = tuple(t.nodeid for t in members if t.outcome == "failed")
    ran = passed + len(failures)
    pins = tuple(_must_pass(entry, members, known) for entry in gate.must_pass)
    met = (not ran or passed >= gate.threshold * ran - 1e-9) and all(
        pin.status in ("passed", "skipped") for pin in pins
    )
    return GateResult(
        name=name,
        threshold=gate.threshold,
        passed=passed,
        ran=ran,
        skipped=len(members) - ran,
        failures=failures,
        must_pass=pins,
        met=met,
    )


@dataclass(frozen=True, kw_only=True)
class _Names:
    """The session's tests' names, for did-you-mean: node ids, and the shorter names."""

    nodeids: list[str]
    names: list[str]


def _must_pass(entry: str, members: list[TestRecord], known: _Names) -> MustPass:
    """What became of the tests `entry` names; for no match, the closest names of the same
    form (a node id if `entry` has `::`, else a test name or scenario id)."""
    outcomes = {t.outcome for t in members if t.known_as(entry)}
    if not outcomes:
        candidates = known.nodeids if "::" in entry else known.names
        return MustPass(
            entry=entry,
            status="no match",
            close=tuple(difflib.get_close_matches(entry, candidates, n=3)),
        )
    if "failed" in outcomes:
        return MustPass(entry=entry, status="failed")
    return MustPass(entry=entry, status="passed" if "passed" in outcomes else "skipped")
