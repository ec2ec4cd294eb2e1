"""What a new user trying sparring from its README found: sub-tests that passed with a
`should` nobody judged, the data-driven example, `--tag` typos, `--quiet` order, the
`not_regex` lines of Markdown, the threshold message, and trials of skipped pytest tests."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from rich.console import Console

from sparring.events import RunFinished, RunStarted, ScenarioFinished
from sparring.loaders import load_paths
from sparring.reports.console import ConsoleView
from sparring.reports.html import render_html
from sparring.reports.markdown import render_markdown
from sparring.results import RunResult, ScenarioResult, SubtestResult, TrialResult, Verdict
from sparring.runner import RunSettings, TargetPool, run_scenarios
from sparring.scenario.base import parse_threshold
from sparring.secrets import Secrets
from sparring.transcript import Message, Transcript
from tests.test_console import run_events
from tests.test_reports import sample_run
from tests.test_run_cli_options import _project as project  # pyright: ignore[reportPrivateUsage]
from tests.test_run_cli_options import sparring

pytest_plugins = ["pytester"]

NO_MODEL = "no model configured"
README = Path(__file__).parent.parent / "README.md"
DEMO_AGENT = "target: {type: callable, ref: 'sparring.demo.agent:chat'}\n"


def readme_yaml(section: str) -> str:
    """The first ```yaml block of README.md's `### <section>`."""
    text = README.read_text(encoding="utf-8").split(f"### {section}\n", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", text.split("\n### ", 1)[0], re.S)
    assert found is not None, f"README section {section!r} has no yaml block"
    return found.group(1)


def _verdict(id: str, status: str, kind: str = "should") -> Verdict:
    reason = NO_MODEL if status == "skipped" else "as asked"
    return Verdict(id=id, kind=kind, description=f"about {id}", status=status, reason=reason)  # type: ignore[arg-type]


def _unjudged_subtest_run() -> RunResult:
    """A Python test's unfold: step 2 passed its check while its `should` was skipped (no
    judge model), step 3 only had a `should` (skipped), step 4 failed its check (so the
    trial failed and reports show them all)."""
    chat = Transcript(
        messages=(Message(role="user", content="Hi"), Message(role="agent", content="Hello"))
    )
    verdicts = [
        _verdict("unfold1.step2.should1", "skipped"),
        _verdict("unfold1.step2.check1", "met", kind="check"),
        _verdict("unfold1.step3.should1", "skipped"),
        _verdict("unfold1.step4.check1", "not_met", kind="check"),
    ]
    subtests = [
        SubtestResult(id=f"unfold1.step{k}", name=f"step {k}", status=status, transcript=chat)  # type: ignore[arg-type]
        for k, status in ((2, "passed"), (3, "skipped"), (4, "failed"))
    ]
    trial = TrialResult(
        scenario_id="py",
        trial=1,
        status="failed",
        end_reason="script_done",
        verdicts=verdicts,
        subtests=subtests,
    )
    scenario = ScenarioResult(
        scenario_id="py", name="py", kind="python", threshold=1.0, trials=[trial]
    )
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=[scenario],
    )


def test_a_sub_test_whose_should_was_not_judged_says_so_in_every_report() -> None:
    run = _unjudged_subtest_run()
    out = io.StringIO()
    with ConsoleView(console=Console(file=out, force_terminal=False, width=100)) as view:
        for event in run_events(run):
            view(event)
    lines = [line.strip() for line in out.getvalue().splitlines()]
    assert "✔ unfold1.step2 passed (1 not judged): step 2" in lines
    assert "⏭ unfold1.step3 skipped: step 3" in lines  # says it already
    assert "✘ unfold1.step4 failed: step 4" in lines
    markdown = render_markdown(run)
    assert "Sub-test unfold1.step2: ✅ passed (1 not judged) · step 2" in markdown
    assert "Sub-test unfold1.step3: ⏭ skipped · step 3" in markdown
    assert "Sub-test unfold1.step4: ❌ failed · step 4" in markdown
    html = render_html(run)
    assert "passed</span> (1 not judged) sub-test <code>unfold1.step2</code>" in html
    assert "failed</span> sub-test <code>unfold1.step4</code>" in html


async def run_on_demo_agent(directory: Path, scenarios_yaml: str) -> RunResult:
    """Run a test file of `scenarios_yaml` in `directory` against the demo agent, with no
    model (simulated scenarios and `should`s are skipped)."""
    (directory / "t.yaml").write_text(DEMO_AGENT + scenarios_yaml, encoding="utf-8")
    async with TargetPool(secrets=Secrets({})) as pool:
        return await run_scenarios(
            load_paths([directory / "t.yaml"]),
            targets=pool.for_scenario,
            user_model=None,
            judge_model=None,
            settings=RunSettings(),
        )


@pytest.mark.anyio
async def test_the_readme_data_driven_example_passes_against_the_demo_agent(
    tmp_path: Path,
) -> None:
    example = readme_yaml("Data-driven scenarios")
    (tmp_path / "rows.csv").write_text("id,mood,order\nlate,worried,10237\n", encoding="utf-8")
    result = await run_on_demo_agent(tmp_path, example)  # `status[late]` needs a model
    statuses = {s.scenario_id: s.status for s in result.scenarios}
    assert statuses == {
        "refund[late-order]": "passed",
        "refund[2]": "passed",
        "status[late]": "skipped",
    }


@pytest.mark.parametrize("value", [-1, "-5%", 101, "150%"])
def test_an_out_of_range_threshold_says_it_must_be_above_0(value: object) -> None:
    with pytest.raises(ValueError, match=r"out of range") as caught:
        parse_threshold(value)
    assert "a fraction above 0 up to 1 (0.8) or a percent above 0 up to 100" in str(caught.value)


@pytest.mark.anyio
async def test_markdown_quotes_a_failed_not_regex_reply_once_and_shows_its_flag_twice(
    tmp_path: Path,
) -> None:
    checks = '[{not_regex: "DELAYED", ignore_case: true}, {not_contains: "tent"}]'
    scenario = "scenarios:\n  - id: nr\n    turns:\n      - user: Where is order 10237?\n"
    result = await run_on_demo_agent(tmp_path, scenario + f"        checks: {checks}\n")
    markdown = render_markdown(result)
    regex_line = next(line for line in markdown.splitlines() if "**t1.check1**" in line)
    assert (
        "does not match /DELAYED/i: expected no reply in turn 1 to match /DELAYED/i" in regex_line
    )
    assert markdown.count("Basecamp 2-Person Tent) is delayed") == 3  # 2 checks, the reply


def test_quiet_prints_scenario_lines_in_file_order_as_soon_as_they_can() -> None:
    run = sample_run()  # refund, broken, nomodel, greet: finished here in reverse order
    out = io.StringIO()
    view = ConsoleView(console=Console(file=out, force_terminal=False, width=100), quiet=True)
    view(RunStarted(scenarios=4, trials=6, user_model=None, judge_model=None, run=run))
    ids = [s.scenario_id for s in run.scenarios]
    printed: list[list[str]] = []
    for scenario in reversed(run.scenarios[1:]):  # greet, nomodel, broken: all wait
        view(ScenarioFinished(scenario))
        printed.append([i for i in ids if f"■ {i}:" in out.getvalue()])
    assert printed == [[], [], []]
    view(ScenarioFinished(run.scenarios[0]))  # refund, the first: every line prints
    lines = [line for line in out.getvalue().splitlines() if line.startswith("■ ")]
    assert [line.split(":")[0][2:] for line in lines] == ids
    view(RunFinished(run))
    assert out.getvalue().count("■ refund:") == 1


def test_a_skipped_sparring_test_reports_its_planned_trials(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.sparring]\n")
    pytester.makepyfile(
        test_skip="""
        import pytest

        @pytest.mark.skip(reason="not today")
        @pytest.mark.sparring(trials=3, threshold=0.66)
        def test_later():
            pass
        """
    )
    result = pytester.runpytest("--sparring-report", "r.md")
    result.assert_outcomes(skipped=1)
    report = (pytester.path / "r.md").read_text(encoding="utf-8")
    row = next(line for line in report.splitlines() if line.startswith("| test_skip.py"))
    assert row.split(" | ")[2:4] == ["3", "0"]  # Trials, Passed


def test_a_tag_no_scenario_has_exits_2_with_the_known_tags_and_a_did_you_mean(
    tmp_path: Path,
) -> None:
    project(tmp_path)
    typo = sparring("run", "suite.yaml", "--tag", "smok", cwd=tmp_path)
    assert typo.returncode == 2
    assert (
        "--tag smok matches no scenario (did you mean --tag smoke?); known tags: smoke, status"
        in typo.stderr
    )
    one_of_two = sparring(
        "run", "suite.yaml", "--list", "--tag", "status", "--tag", "smok", cwd=tmp_path
    )
    assert one_of_two.returncode == 2 and "--tag smok matches no scenario" in one_of_two.stderr
