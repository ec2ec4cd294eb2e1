"""Group gates: gate CI on the pass rate of a group of tests instead of on every single test.

Pure logic for both front ends: the pytest plugin (`sparring.pytest_plugin`) turns test
reports into `TestRecord`s, `sparring run` its scenarios (`run_records`); both print
`GateReport.lines()` after their summary. A group (`[tool.sparring.groups.NAME]`,
`sparring.config.GroupGate`) rates every test with one of its tags or markers: its gate is
met when at least `threshold` of those members that ran passed (skipped ones do not count),
none of its `must_pass` tests failed, and every `must_pass` entry names some test of the
session: a misspelt entry fails the gate (its line lists close names) instead of silently
pinning nothing. A `must_pass` test counts in the rate only when its tags or markers make it
a member; a skipped one does not fail the gate.

No quiet passes: a gate over nothing is not met. A group with tags or markers whose members
were all skipped, or that matched no test at all (`0/0`), fails and says why; so does a
`must_pass`-only group whose pinned tests were all skipped.

The session's exit code 1 (tests failed) is overridden only when there are gates, every gate
is met, and every failed test belongs to some group: a failing test outside every group keeps
the run red, and so does a session that stopped early (`-x`, `--maxfail`, `--fail-fast`): its
gates were judged on part of the tests. Gates only ever lift exit code 1: a gate that is not
met when no test failed changes nothing (tests that were skipped, e.g. without a model, do
not make CI red; `--fail-on-skip` does).

A `sparring run` scenario whose adaptive trials ended `undecided` is neither: it counts in
its group's rate as not passed and is listed as `undecided:`, never as `failed:`; it keeps
no exit code 1 and no gate lifts the exit code 3 it gives.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from sparring.config import GroupGate
from sparring.reports import percent, plural
from sparring.reports.rates import rate_text
from sparring.results import RunResult, ScenarioResult, passes_needed

Outcome = Literal["passed", "failed", "undecided", "skipped"]
"""`undecided` (only under `sparring run`): adaptive trials left the pass rate around the
threshold; not a pass, not a failure (exit code 3, which gates never lift)."""
MustPassStatus = Literal["passed", "failed", "undecided", "skipped", "no match"]


@dataclass(frozen=True, kw_only=True)
class TestRecord:
    """What the gates need to know about one test.

    Attributes:
        nodeid: pytest's node id, e.g. `tests/evals/booking.yaml::confirm_slot` (under
            `sparring run`: the scenario id).
        outcome: `failed` if any phase (setup, call, teardown) failed, else `passed` if the
            test ran and passed, `undecided` for a scenario whose adaptive trials ended
            `undecided`, else `skipped`.
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
    """`failed` if any test it names failed, else `undecided` if one is, `passed` if all
    that ran passed, `skipped` if none ran, `no match` if it names no test of the session."""
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
    """Members that passed, failed or were undecided (skipped ones are left out)."""
    skipped: int
    failures: tuple[str, ...]
    """Node ids of the members that failed."""
    undecided: tuple[str, ...] = ()
    """Node ids of the members that were undecided: they count in `ran`, not as passed."""
    must_pass: tuple[MustPass, ...]
    met: bool
    rated: bool = True
    """The group has tags or markers, so its members' pass rate is gated; `False` for a
    group of `must_pass` entries only."""
    nothing_ran: str | None = None
    """Why the gate is not met though no count says so: nothing of the group ran."""

    @property
    def needed(self) -> int:
        """Members that must pass out of the `ran` ones to reach `threshold`."""
        return passes_needed(self.threshold, self.ran)

    def lines(self) -> list[str]:
        """The gate as text: a headline, then why nothing counted, failures and `must_pass`
        status, indented."""
        verdict = "PASSED" if self.met else "FAILED"
        if not self.rated:
            head = f"{self.name}: must_pass only: {verdict}"
        else:
            rate = rate_text(self.passed, self.ran)
            skipped = f", {self.skipped} skipped" if self.skipped else ""
            needs = f" (needs {self.needed} of {self.ran})" if self.ran else ""
            head = (
                f"{self.name}: {rate}{skipped}, "
                f"{percent(self.threshold)} required{needs}: {verdict}"
            )
        out = [head, *([f"  {self.nothing_ran}"] if self.nothing_ran else [])]
        out += [f"  failed: {nodeid}" for nodeid in self.failures]
        out += [f"  undecided: {nodeid}" for nodeid in self.undecided]
        return [*out, *(pin.line() for pin in self.must_pass)]


@dataclass(frozen=True, kw_only=True)
class GateReport:
    """Every gate of a session and what they do to its exit code."""

    gates: tuple[GateResult, ...]
    ungated_failures: tuple[str, ...]
    """Failed tests that belong to no group."""
    tests_failed: bool
    stopped_early: bool = False
    """The session stopped before running every test (`-x`, `--maxfail`, `--fail-fast`)."""
    stopped_by: str = "-x / --maxfail"
    """What stopped it, as the summary names it."""

    @property
    def overrides_exit_code(self) -> bool:
        """True when the session's exit code 1 should be lifted (see the module docstring)."""
        return (
            self.tests_failed
            and bool(self.gates)
            and all(g.met for g in self.gates)
            and not self.ungated_failures
            and not self.stopped_early
        )

    def lines(self, *, overridden_to: int = 0) -> list[str]:
        """The group summary: every gate, then what happens to the exit code and why;
        `overridden_to` is the code an override gives (3 under `sparring run` when some
        scenario could not run besides the tolerated failures)."""
        out = [line for gate in self.gates for line in gate.lines()]
        if not self.tests_failed:
            if any(not g.met for g in self.gates):
                out.append("no test failed, so the gates change nothing")
            return out
        if self.overrides_exit_code:
            return [
                *out,
                f"exit code overridden to {overridden_to}: every gate is met and every failed "
                "test belongs to a group",
            ]
        if self.stopped_early:
            out.append(f"exit code stays 1: the run stopped early ({self.stopped_by})")
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
    groups: Mapping[str, GroupGate],
    records: Iterable[TestRecord],
    *,
    stopped_early: bool = False,
    stopped_by: str = "-x / --maxfail",
) -> GateReport:
    """Evaluate every group's gate over the session's tests.

    Args:
        groups: Gates by group name, from `[tool.sparring.groups]`.
        records: One record per test of the session.
        stopped_early: The session stopped before running every test, so the gates
            cannot lift its exit code 1.
        stopped_by: What stopped it (`-x / --maxfail`, `--fail-fast`), for the summary.

    Returns:
        Gates in the order of `groups`, with the failed tests that are in no group.
    """
    tests = list(records)
    known = _Names(
        nodeids=sorted({t.nodeid for t in tests}),
        names=sorted({name for t in tests for name in t.names}),
    )
    gates = tuple(_gate(name, gate, tests, known) for name, gate in groups.items())
    grouped = {
        t.nodeid
        for gate in groups.values()
        for t in tests
        if _is_member(t, gate) or any(t.known_as(entry) for entry in gate.must_pass)
    }
    failed = [t.nodeid for t in tests if t.outcome == "failed"]
    return GateReport(
        gates=gates,
        ungated_failures=tuple(n for n in failed if n not in grouped),
        tests_failed=bool(failed),
        stopped_early=stopped_early,
        stopped_by=stopped_by,
    )


def run_records(result: RunResult) -> list[TestRecord]:
    """One record per scenario of a `sparring run`: `passed` when the scenario passed,
    `failed` when it failed or errored (not a pass), `undecided` when it is (not a pass
    either, but no failure: exit code 3), else `skipped` (skipped, not run, `invalid`: the
    agent was not tested; `done`: nothing to judge). Known as its id and name."""
    return [
        TestRecord(
            nodeid=s.scenario_id,
            outcome=_outcome(s),
            names=frozenset({s.scenario_id, s.name}),
            tags=frozenset(s.tags),
        )
        for s in result.scenarios
    ]


def gated_exit_code(result: RunResult, report: GateReport) -> int:
    """`result`'s exit code once the gates had their say: 1 is lifted when
    `report.overrides_exit_code`, to what the run's code would be without its failed
    scenarios (0, or 3 when others could not run or a hook failed); any other code stays."""
    if result.exit_code != 1 or not report.overrides_exit_code:
        return result.exit_code
    kept = [s for s in result.scenarios if s.status != "failed"]
    return result.model_copy(update={"scenarios": kept}).exit_code


def _outcome(scenario: ScenarioResult) -> Outcome:
    status = scenario.status
    if status in ("passed", "undecided"):
        return status
    return "failed" if status in ("failed", "error") else "skipped"


def _is_member(test: TestRecord, gate: GroupGate) -> bool:
    """Whether the gate rates `test`: one of its tags or markers (a `must_pass` entry alone
    pins a test without making it a member)."""
    return bool(test.tags.intersection(gate.tags)) or bool(test.markers.intersection(gate.markers))


def _gate(name: str, gate: GroupGate, tests: list[TestRecord], known: _Names) -> GateResult:
    members = [t for t in tests if _is_member(t, gate)]
    passed = sum(t.outcome == "passed" for t in members)
    failures = tuple(t.nodeid for t in members if t.outcome == "failed")
    undecided = tuple(t.nodeid for t in members if t.outcome == "undecided")
    ran = passed + len(failures) + len(undecided)
    pins = tuple(_must_pass(entry, tests, known) for entry in gate.must_pass)
    rated = bool(gate.tags or gate.markers)
    nothing_ran = _nothing_ran(gate, members) if rated else _no_pin_ran(pins)
    met = (
        nothing_ran is None
        and passed >= passes_needed(gate.threshold, ran)
        and all(pin.status in ("passed", "skipped") for pin in pins)
    )
    return GateResult(
        name=name,
        threshold=gate.threshold,
        passed=passed,
        ran=ran,
        skipped=len(members) - ran,
        failures=failures,
        undecided=undecided,
        must_pass=pins,
        met=met,
        rated=rated,
        nothing_ran=nothing_ran,
    )


def _nothing_ran(gate: GroupGate, members: list[TestRecord]) -> str | None:
    """Why a rated gate has nothing to rate (every member skipped, or no member), or
    `None` when some member ran."""
    if any(t.outcome != "skipped" for t in members):
        return None
    if members:
        return (
            f"nothing ran ({plural(len(members), 'member')}, all skipped): a gate over "
            "tests that did not run is not met"
        )
    wanted = [f"tag {t!r}" for t in gate.tags] + [f"marker {m!r}" for m in gate.markers]
    return (
        f"no test of this session has {' or '.join(wanted)}: a gate over no test is not "
        "met; check the spelling, and that the test files were collected"
    )


def _no_pin_ran(pins: tuple[MustPass, ...]) -> str | None:
    """Why a `must_pass`-only gate has nothing to gate (every pinned test skipped), or
    `None`. Entries that match nothing fail the gate on their own lines."""
    if pins and all(pin.status == "skipped" for pin in pins):
        return "every must_pass test was skipped: a gate over tests that did not run is not met"
    return None


@dataclass(frozen=True, kw_only=True)
class _Names:
    """The session's tests' names, for did-you-mean: node ids, and the shorter names."""

    nodeids: list[str]
    names: list[str]


def _must_pass(entry: str, tests: list[TestRecord], known: _Names) -> MustPass:
    """What became of the tests `entry` names; for no match, the closest names of the same
    form (a node id if `entry` has `::`, else a test name or scenario id)."""
    outcomes = {t.outcome for t in tests if t.known_as(entry)}
    if not outcomes:
        candidates = known.nodeids if "::" in entry else known.names
        return MustPass(
            entry=entry,
            status="no match",
            close=tuple(difflib.get_close_matches(entry, candidates, n=3)),
        )
    for status in ("failed", "undecided"):
        if status in outcomes:
            return MustPass(entry=entry, status=status)
    return MustPass(entry=entry, status="passed" if "passed" in outcomes else "skipped")
