"""JUnit XML: one `<testsuite>` per scenario, one `<testcase>` per verdict per trial.

Layout (CI tools such as GitLab, Jenkins and GitHub test reporters read it):

- `<testsuites name="sparring run <id>">` with totals;
- `<testsuite name=<scenario id>>` with `tests / failures / errors / skipped / time`,
  a `timestamp`, and `<properties>` (name, kind, threshold, pass rate, status, source,
  `not_judged`: the steps its counted trials left unjudged, and the usage totals of
  `UsageTotals`: model calls, tokens, `cost_usd`, unpriced calls,
  the target's tokens, empty when unknown);
- per trial, one `<testcase classname=<scenario id> name="trial 2 / c1: <description>">` per
  criterion, `should` and check: `<failure>` for `not_met` (reason, evidence and cited turns
  in the text), `<error>` for `error`, `<skipped>` for `skipped`; a `met` one a person
  overrode carries an `override` property;
- per trial with evaluations, its gating insights that did not pass as testcases like
  verdicts (`<failure>`, or `<error>` for an insight in error), and a `trial N /
  evaluations` testcase whose `<properties>` hold the score, `evaluations_passed` and each
  insight (`insight.<evaluation.insight>`: value, pass, reasoning), the featured first;
  gates never judged (no judge call made) make that testcase `<skipped>`;
  `explain_failures`' explanation ends the text of the trial's failures;
- a trial that errored, timed out or was `invalid` (its simulated user failed) gets a
  testcase `trial N / conversation` with an `<error>` carrying the error text, end reason
  and, for an internal error, the traceback (also when it has no verdicts). `invalid` is an
  error, not a skip: the run exits 3 for it, and CI tools count JUnit errors (the test could
  not complete) apart from failures (the agent misbehaved), so their counts agree;
- planned trials that never started (`--fail-fast` stopped the run, or it was interrupted)
  get a testcase `trial N / not run` with `<skipped message="not run: <why>">`, so a
  scenario that never ran is a skipped testcase, not an empty testsuite;
- for scenarios with more than one trial (run or planned), one `pass rate` testcase,
  failing when the threshold is missed; when the scenario passed its threshold, the
  failures and errors of single trials become `<system-out>` notes, so the CI counts agree
  with sparring's verdict and exit code;
- when Python suite hooks failed outside every trial (after_all), a `<testsuite name="suite
  hooks">` with one `<error>` testcase per failure.

Times are seconds; the first testcase of a trial carries the trial's duration, so the
testcases add up to the suite time. Characters that XML 1.0 forbids are removed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from sparring.reports import one_line, percent, why_not_run, write_report_text
from sparring.reports.insights import (
    EXPLANATION_LABEL,
    evaluations_passed_text,
    gate_text,
    gate_verdicts,
    ordered,
    override_text,
    score_text,
    value_text,
)
from sparring.reports.outcome import model_text, passed_text, verdict_what
from sparring.reports.rates import interval_text, rates_across_trials
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict, usage_totals

_XML_ILLEGAL = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MESSAGE_CHARS = 500


def render_junit(result: RunResult) -> str:
    """The JUnit XML report as text, with an XML declaration, indented."""
    root = ET.Element("testsuites", name=_clean(f"sparring run {result.run_id}"))
    models = {f"model.{m.role}": model_text(m) for m in result.models}
    suites = [
        _suite(s, timestamp=result.started_at, why_not_run=why_not_run(result), models=models)
        for s in result.scenarios
    ]
    if result.hook_errors:
        suites.append(_hooks_suite(result.hook_errors, timestamp=result.started_at))
    root.extend(suites)
    for key in ("tests", *_COUNT_KEYS):
        root.set(key, str(sum(int(s.get(key, "0")) for s in suites)))
    root.set("time", _seconds(result.duration_ms))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, "unicode") + "\n"


def write_junit(result: RunResult, path: Path) -> None:
    """Write `render_junit(result)` to `path` (UTF-8), creating parent folders.

    Raises:
        OSError: the file cannot be written.
    """
    write_report_text(path, render_junit(result))


_COUNT_KEYS = {"failures": "failure", "errors": "error", "skipped": "skipped"}


def _suite(
    scenario: ScenarioResult, *, timestamp: str, why_not_run: str, models: dict[str, str]
) -> ET.Element:
    suite = ET.Element("testsuite", name=_clean(scenario.scenario_id), timestamp=_clean(timestamp))
    suite.append(_properties(scenario, models))
    cases: list[ET.Element] = []
    for trial in scenario.trials:
        cases.extend(_trial_cases(trial))
    if scenario.status == "passed":  # the threshold absorbed these: CI must agree
        for case in cases:
            _tolerate(case, scenario)
    cases.extend(_not_run_cases(scenario, why_not_run))
    if len(scenario.trials) > 1 or (scenario.trials and scenario.missing_trials):
        cases.append(_threshold_case(scenario))
    suite.extend(cases)
    suite.set("tests", str(len(cases)))
    for key, tag in _COUNT_KEYS.items():
        suite.set(key, str(sum(case.find(tag) is not None for case in cases)))
    suite.set("time", _seconds(sum(t.duration_ms for t in scenario.trials)))
    return suite


def _hooks_suite(errors: list[str], *, timestamp: str) -> ET.Element:
    """A `<testsuite name="suite hooks">` with one errored case per failed after_all hook."""
    suite = ET.Element(
        "testsuite",
        name="suite hooks",
        timestamp=_clean(timestamp),
        tests=str(len(errors)),
        failures="0",
        errors=str(len(errors)),
        skipped="0",
        time="0.000",
    )
    for i, error in enumerate(errors, start=1):
        case = ET.SubElement(
            suite, "testcase", classname="suite hooks", name=_clean(f"hook {i}"), time="0.000"
        )
        _outcome(case, "error", error, error, kind="hook_error")
    return suite


def _properties(scenario: ScenarioResult, models: dict[str, str]) -> ET.Element:
    """The scenario's facts, usage, the models' sampling settings (`model.judge`:
    `judge openai:gpt-4o-mini, temperature 0, seed 1234`) and, with several trials, each
    criterion, `should`, check and gating insight met across them (`met_across_trials.c1`:
    `7/10 met, 70% [40%, 89%]`)."""
    props = ET.Element("properties")
    values = {
        "name": scenario.name,
        "kind": scenario.kind,
        "status": scenario.status,
        "threshold": percent(scenario.threshold),
        "pass_rate": percent(scenario.pass_rate),
        "pass_rate_interval": interval_text(scenario.passed_trials, len(scenario.counted)),
        "trials": str(len(scenario.trials)),
        "source": scenario.source or "",
        "score": score_text(scenario.score),
        "not_judged": str(sum(t.not_judged for t in scenario.counted)),
    }
    usage = usage_totals(scenario.trials)
    values.update(
        {
            name: ""
            if value is None
            else f"{value:.6f}"
            if isinstance(value, float)
            else str(value)
            for name, value in usage.model_dump().items()
        }
    )
    values.update(models)
    values.update({f"met_across_trials.{c.id}": c.text for c in rates_across_trials(scenario)})
    for name, value in values.items():
        ET.SubElement(props, "property", name=_clean(name), value=_clean(value))
    return props


def _trial_cases(trial: TrialResult) -> list[ET.Element]:
    verdicts = [*trial.verdicts, *gate_verdicts(trial.insights)]
    cases = [_verdict_case(trial, v) for v in verdicts]
    if _needs_trial_case(trial):
        cases.insert(0, _conversation_case(trial))
    if trial.insights:
        cases.append(_evaluations_case(trial))
    elif trial.evaluations_passed == "pending" and trial.status != "skipped":
        case = _case(trial, f"trial {trial.trial} / evaluations")
        _outcome(case, "skipped", "evaluation gates not judged: no judge call was made")
        cases.append(case)
    for i, case in enumerate(cases):
        case.set("time", _seconds(trial.duration_ms if i == 0 else 0))
    return cases


def _not_run_cases(scenario: ScenarioResult, why: str) -> list[ET.Element]:
    """A skipped `trial N / not run` testcase per planned trial that never started."""
    ran = {t.trial for t in scenario.trials}
    missing = [n for n in range(1, scenario.planned_trials + 1) if n not in ran]
    cases: list[ET.Element] = []
    for n in missing:
        case = ET.Element(
            "testcase",
            classname=_clean(scenario.scenario_id),
            name=f"trial {n} / not run",
            time="0.000",
        )
        _outcome(case, "skipped", f"not run: {why}")
        cases.append(case)
    return cases


def _needs_trial_case(trial: TrialResult) -> bool:
    if trial.status in ("timed_out", "invalid") or not trial.verdicts:
        return True
    if trial.status == "error":
        return trial.error is not None or not any(v.status == "error" for v in trial.verdicts)
    return False


def _verdict_case(trial: TrialResult, verdict: Verdict) -> ET.Element:
    at = f" @ turn {verdict.turn}" if verdict.turn is not None else ""
    name = f"trial {trial.trial} / {verdict.id}{at}: {verdict.description}"
    case = _case(trial, name)
    if verdict.status == "met":
        if verdict.override is not None:  # a person made it met: say so
            props = ET.SubElement(case, "properties")
            ET.SubElement(
                props, "property", name="override", value=_clean(override_text(verdict.override))
            )
        return case
    if verdict.status == "skipped":
        _outcome(case, "skipped", verdict.reason or trial.error or "skipped")
        return case
    tag = "failure" if verdict.status == "not_met" else "error"
    text = _verdict_text(verdict)
    if tag == "failure" and trial.explanation:
        text += f"\n\n{EXPLANATION_LABEL}: {trial.explanation}"
    _outcome(
        case,
        tag,
        verdict.reason or verdict.description,
        text,
        kind=f"{verdict.kind} {verdict.status}",
    )
    return case


def _evaluations_case(trial: TrialResult) -> ET.Element:
    """`trial N / evaluations`: the score and every insight's value as properties."""
    case = _case(trial, f"trial {trial.trial} / evaluations")
    props = ET.SubElement(case, "properties")
    values = {
        "score": score_text(trial.score),
        "evaluations_passed": evaluations_passed_text(trial),
    }
    for i in ordered(trial.insights):
        parts = [value_text(i), gate_text(i), i.reasoning, override_text(i.override)]
        values[f"insight.{i.id}"] = " · ".join(p for p in parts if p)
    for name, value in values.items():
        ET.SubElement(props, "property", name=_clean(name), value=_clean(one_line(value, 2000)))
    return case


def _conversation_case(trial: TrialResult) -> ET.Element:
    case = _case(trial, f"trial {trial.trial} / conversation")
    status, reason = trial.status, trial.end_reason
    if status == "skipped":
        _outcome(case, "skipped", trial.error or "skipped")
    elif status in ("error", "timed_out", "invalid"):  # invalid: an error, not a failure
        message = trial.error or f"the trial ended with {status} ({reason})"
        text = (
            f"{message}\n\nstatus: {status}\nend reason: {reason}\n"
            f"turns: {trial.transcript.user_turns}"
        ) + (f"\n\n{trial.traceback}" if trial.traceback else "")
        _outcome(case, "error", message, text, kind=reason)
    return case


def _threshold_case(scenario: ScenarioResult) -> ET.Element:
    counted = scenario.counted
    passed = scenario.passed_trials
    name = (
        f"pass rate {passed}/{len(counted)} = {percent(scenario.pass_rate)} "
        f"(threshold {percent(scenario.threshold)})"
    )
    case = ET.Element(
        "testcase", classname=_clean(scenario.scenario_id), name=_clean(name), time="0.000"
    )
    status = scenario.status
    if status == "failed":
        _outcome(
            case,
            "failure",
            f"pass rate {percent(scenario.pass_rate)} "
            f"{interval_text(passed, len(counted))} is below the "
            f"threshold {percent(scenario.threshold)}: {passed_text(scenario)}",
            kind="threshold",
        )
    elif status in ("error", "invalid"):
        _outcome(
            case,
            "error",
            "the threshold is undecided: trials that errored, timed out, never ran or "
            "were invalid (the simulated user failed) could have made the difference",
            kind="threshold",
        )
    elif status == "undecided":
        _outcome(
            case,
            "error",
            f"the threshold is undecided: after {len(scenario.trials)} trials (the most "
            f"allowed) the 95% interval {interval_text(passed, len(counted))} of the pass rate "
            f"still holds the threshold {percent(scenario.threshold)}",
            kind="threshold",
        )
    elif status in ("skipped", "not_run"):
        _outcome(case, "skipped", f"no trial ran ({status})")
    return case


def _tolerate(case: ET.Element, scenario: ScenarioResult) -> None:
    """Turn a failure / error of one trial into a note, for a scenario that passed anyway."""
    for tag in ("failure", "error"):
        element = case.find(tag)
        if element is not None:
            case.remove(element)
            note = ET.SubElement(case, "system-out")
            note.text = _clean(
                f"{tag} in this trial, tolerated: the scenario passed with pass rate "
                f"{percent(scenario.pass_rate)} >= threshold {percent(scenario.threshold)}\n"
                f"{element.text or element.get('message', '')}"  # the text starts with it
            )


def _case(trial: TrialResult, name: str) -> ET.Element:
    return ET.Element("testcase", classname=_clean(trial.scenario_id), name=_clean(name))


def _outcome(
    case: ET.Element, tag: str, message: str, text: str | None = None, *, kind: str | None = None
) -> None:
    element = ET.SubElement(case, tag, message=_clean(one_line(message, _MESSAGE_CHARS)))
    if kind is not None:
        element.set("type", _clean(kind))
    if text is not None:
        element.text = _clean(text)


def _verdict_text(verdict: Verdict) -> str:
    lines = [
        verdict.reason or "(no reason given)",
        "",
        f"{verdict.id} {verdict_what(verdict)}",
        f"status: {verdict.status}",
    ]
    if verdict.evidence:
        lines.append("evidence:")
        lines.extend(f"  > {quote}" for quote in verdict.evidence)
    if verdict.turns:
        lines.append("turns: " + ", ".join(str(t) for t in verdict.turns))
    if verdict.override is not None:
        lines.append(override_text(verdict.override))
    return "\n".join(lines)


def _seconds(ms: float) -> str:
    return f"{ms / 1000:.3f}"


def _clean(text: str) -> str:
    """Remove characters XML 1.0 does not allow (controls, lone surrogates, U+FFFE/FFFF)."""
    return _XML_ILLEGAL.sub("", text)
