"""What a new user walking through the README found: the voice example's one-tool
`tool_called`, the schema of red-team files, unjudged evaluation gates, rejudging expected
outputs, `--base-url` on calibrate and rejudge, `sparring diff` defaults, overridden trials
in `show` and `runs`, red-team wording, loader hints, `.gitignore`, and message wording."""

from __future__ import annotations

import io
import json
import re
import shutil
import sqlite3
import subprocess
import sys
import wave
from pathlib import Path

import jsonschema
import pytest
from pydantic import TypeAdapter
from rich.console import Console

from sparring.errors import ConfigError
from sparring.events import RunStarted
from sparring.judging.checks import run_check
from sparring.loaders import load_paths, test_file_json_schema
from sparring.loaders._parse import parse_documents
from sparring.models.speech_files import write_generated
from sparring.redteam.summary import Rate
from sparring.reports.console import ConsoleView
from sparring.reports.diff import diff_runs, render_diff
from sparring.reports.insights import trial_facts
from sparring.reports.outcome import exit_meaning
from sparring.results import RunResult, ScenarioResult, TrialResult, Verdict
from sparring.scenario import Check, ScriptedScenario, ToolCalledCheck, expand_check_shorthand
from sparring.transcript import Message, ToolCall, Transcript
from tests import test_store_diff as diffing
from tests import test_store_rejudge as rejudging
from tests.support.openai_server import Reply, ScriptedOpenAIServer
from tests.test_calibration import case_line
from tests.test_cli import sparring

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"


def readme_yaml_after(line: str) -> str:
    """The first ```yaml block of README.md after the line `line`."""
    text = README.read_text(encoding="utf-8").split(f"\n{line}\n", 1)[1]
    found = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert found is not None, f"README has no yaml block after {line!r}"
    return found.group(1)


# --- 1. `tool_called: one_tool` ----------------------------------------------------------


def test_the_readme_voice_example_loads_with_one_tool_named_in_tool_called(
    tmp_path: Path,
) -> None:
    with wave.open(str(tmp_path / "booking_t1.wav"), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16000)
        wav.writeframes(b"\0\0" * 1600)
    test_file = tmp_path / "voice.yaml"
    test_file.write_text(readme_yaml_after("#### Voice agents"), encoding="utf-8")
    (scenario,) = load_paths([test_file])
    assert isinstance(scenario, ScriptedScenario)
    check = scenario.turns[0].checks[0]
    assert isinstance(check, ToolCalledCheck)
    assert check.include == ["create_booking"]
    data = parse_documents(test_file.read_text(encoding="utf-8"), path=str(test_file))[0].data
    jsonschema.validate(data, test_file_json_schema())


def test_tool_called_exclude_takes_one_tool_too() -> None:
    assert ToolCalledCheck.model_validate({"exclude": "refund"}).exclude == ["refund"]


# --- 5. the schema accepts what the loader accepts -----------------------------------------


def _example_files() -> list[Path]:
    return sorted(
        p for p in (ROOT / "examples").rglob("*") if p.suffix in (".yaml", ".yml", ".json")
    )


@pytest.mark.parametrize("path", _example_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_file_is_valid_against_the_json_schema(path: Path) -> None:
    for document in parse_documents(path.read_text(encoding="utf-8"), path=str(path)):
        jsonschema.validate(document.data, test_file_json_schema())


def test_the_readme_red_team_file_is_valid_against_the_json_schema() -> None:
    text = readme_yaml_after("## Red teaming")
    data = parse_documents(text, path="redteam.yaml")[0].data
    assert "redteam" in data and "scenarios" not in data
    schema = test_file_json_schema()
    jsonschema.validate(data, schema)
    jsonschema.validate({**data, "redteam": {"strategies": "plain"}}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**data, "redteam": {"plugins": ["no_such_plugin"]}}, schema)


def test_a_scenario_without_kind_is_one_kind_only_in_the_json_schema() -> None:
    minimal = {"id": "x", "criteria": ["The agent is polite"]}  # simulated, as loaded
    jsonschema.validate(minimal, test_file_json_schema())
    red_team = {"id": "x", "kind": "red_team", "plugins": "jailbreak"}
    jsonschema.validate(red_team, test_file_json_schema())


# --- 3. rejudge grades a single-turn scenario's expected_output ---------------------------

EXPECTED = """target: {type: callable, ref: 'rejudge_agent:agent'}
scenarios:
  - id: booking
    prompt: Book me a slot at 10am
    expected_output: The slot is booked for 10am.
"""


project = rejudging.project  # the fixture: a project with a callable agent, models scripted
rejudge_cli = rejudging._sparring  # pyright: ignore[reportPrivateUsage]


def test_rejudge_grades_a_single_turn_scenario_against_its_expected_output(
    project: Path,
) -> None:
    (project / "suite.yaml").write_text(EXPECTED, encoding="utf-8")
    run_id = rejudging._stored_run(project)  # pyright: ignore[reportPrivateUsage]
    done = rejudge_cli("rejudge", run_id, "--judge-model", "scripted:not_met")
    assert done.exit_code == 1, done.output
    new_id = done.output.split("as run ")[1].split()[0]
    assert rejudge_cli("report", new_id, "-o", "new.json").exit_code == 0
    (trial,) = json.loads((project / "new.json").read_text())["scenarios"][0]["trials"]
    assert [(v["id"], v["status"]) for v in trial["verdicts"]] == [("expected_output", "not_met")]


# --- 4. --base-url on calibrate and rejudge -----------------------------------------------

UNREADABLE = [Reply("no idea") for _ in range(20)]
"""A judge endpoint whose every answer is unreadable: each case or verdict is an `error`."""


def test_calibrate_takes_base_url_for_an_openai_compatible_judge(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "labels.jsonl").write_text(case_line("met", "I can refund it.") + "\n")
    monkeypatch.chdir(tmp_path)
    for key in ("SPARRING_MODEL", "SPARRING_JUDGE_MODEL", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    with ScriptedOpenAIServer(UNREADABLE) as server:
        args = ["--judge-model", "openai-compatible:local-judge", "--base-url", server.base_url]
        done = rejudge_cli("calibrate", "labels.jsonl", *args)
    assert done.exit_code == 3, done.output
    assert server.requests and server.requests[0]["model"] == "local-judge"


def test_rejudge_takes_base_url_for_an_openai_compatible_judge(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    run_id = rejudging._stored_run(project)  # pyright: ignore[reportPrivateUsage]
    with ScriptedOpenAIServer(UNREADABLE) as server:
        args = ["--judge-model", "openai-compatible:local-judge", "--base-url", server.base_url]
        done = rejudge_cli("rejudge", run_id, *args)
    assert done.exit_code == 3, done.output
    assert server.requests and server.requests[0]["model"] == "local-judge"


# --- 6. sparring diff: the previous run of the same paths; unrelated runs ----------------

OTHER_SUITE = """target: {type: callable, ref: 'agent_module:agent'}
scenarios:
  - {id: unrelated, prompt: hi, checks: [{contains: fine}]}
"""


def _run_other(tmp_path: Path) -> str:
    done = sparring("run", "other.yaml", "--no-live", "-o", "other.json", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    return json.loads((tmp_path / "other.json").read_text())["run_id"]


def _in_order(tmp_path: Path, *run_ids: str) -> None:
    """Start times one second apart, in this order (runs started within a second tie)."""
    with sqlite3.connect(tmp_path / ".sparring" / "sparring.db") as conn:
        for second, run_id in enumerate(run_ids):
            at = f"2026-01-01T00:00:{second:02d}+00:00"
            conn.execute("UPDATE runs SET started_at = ? WHERE id = ?", (at, run_id))


def test_diff_defaults_to_the_previous_run_of_the_same_paths(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(diffing.SUITE)
    (tmp_path / "other.yaml").write_text(OTHER_SUITE)
    first = diffing._run_suite(tmp_path, "fine")  # pyright: ignore[reportPrivateUsage]
    other = _run_other(tmp_path)
    second = diffing._run_suite(tmp_path, "nope")  # pyright: ignore[reportPrivateUsage]
    _in_order(tmp_path, first, other, second)
    compared = sparring("diff", "--fail-on-regression", cwd=tmp_path)
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert f"Diff: base {first} -> run {second}" in compared.stdout
    again = _run_other(tmp_path)  # the agent now says "nope"
    _in_order(tmp_path, first, other, second, again)
    last = sparring("diff", cwd=tmp_path)
    assert f"Diff: base {other} -> run {again}" in last.stdout, last.stdout + last.stderr


def test_a_diff_of_runs_sharing_no_scenario_says_so_and_exits_2_when_gating(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(diffing.SUITE)
    base = diffing._run_suite(tmp_path, "fine")  # pyright: ignore[reportPrivateUsage]
    (tmp_path / "suite.yaml").write_text(OTHER_SUITE)
    run = diffing._run_suite(tmp_path, "fine")  # pyright: ignore[reportPrivateUsage]
    compared = sparring("diff", base, run, "--fail-on-regression", cwd=tmp_path)
    assert compared.returncode == 2, compared.stdout + compared.stderr
    last = compared.stdout.splitlines()[-1]
    assert last.startswith("Nothing compared: the two runs share no scenario"), last
    assert "No regressions" not in compared.stdout
    assert sparring("diff", base, run, cwd=tmp_path).returncode == 0  # reported only


def test_a_criterion_newly_failing_in_a_scenario_that_did_not_regress_is_named() -> None:
    base = diffing._run("b", s=[False, False])  # pyright: ignore[reportPrivateUsage]
    run = diffing._run("r", s=[False, False])  # pyright: ignore[reportPrivateUsage]
    for trial in base.scenarios[0].trials:  # failed on something else, `polite` met
        trial.verdicts[0] = trial.verdicts[0].model_copy(update={"status": "met"})
    compared = diff_runs(base, run)
    assert not compared.regressions  # failed before, failed now
    text = render_diff(compared)
    assert "    newly failing criteria: polite" in text
    assert text[-1] == (
        "No scenario regressed (none newly fails or dropped significantly), but criteria "
        "newly fail: s polite"
    )


# --- 7. overridden trials in `show RUN` and `runs`; 12. `runs --status` with no match -----


def test_show_and_runs_mark_the_trials_a_person_overrode(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(diffing.SUITE)
    run_id = diffing._run_suite(tmp_path, "fine")  # pyright: ignore[reportPrivateUsage]
    args = ("override", run_id, "greet", "2", "check1", "--value", "not_met")
    done = sparring(*args, "--reason", "it was rude", "--author", "ann", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    listed = sparring("runs", cwd=tmp_path).stdout
    assert "4 trials: 1 failed, 3 passed (1 overridden)" in listed, listed
    shown = sparring("show", run_id, cwd=tmp_path).stdout
    assert "Overridden by a person (`sparring override`): greet trial 2;" in shown, shown
    scenario = sparring("show", run_id, "--scenario", "greet", cwd=tmp_path).stdout
    assert "  trial 2: failed (overridden) (" in scenario and "trial 1: passed (" in scenario


def test_runs_with_a_status_no_run_has_says_none_matches(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(diffing.SUITE)
    diffing._run_suite(tmp_path, "fine")  # pyright: ignore[reportPrivateUsage]
    done = sparring("runs", "--status", "interrupted", cwd=tmp_path)
    assert done.stdout.strip() == (
        "No stored run is interrupted: `sparring runs` without --status lists them all."
    )


# --- 8. red-team rates say skipped / errored, not "undecided" ----------------------------


@pytest.mark.parametrize(
    ("statuses", "text"),
    [
        (["skipped"] * 7, "not run (7 skipped)"),
        ([], "not run"),
        (["skipped", "error", "timed_out"], "not decided (1 skipped, 2 errored)"),
        (["failed", "passed", "skipped"], "1/2 (50%, 95% CI 9%-91%), 1 skipped"),
        (["passed", "invalid"], "0/1 (0%, 95% CI 0%-79%), 1 errored"),
    ],
)
def test_a_red_team_rate_says_what_happened_to_the_attempts_not_decided(
    statuses: list[str], text: str
) -> None:
    rate = Rate()
    for n, status in enumerate(statuses, start=1):
        rate.count(TrialResult(scenario_id="a", trial=n, status=status, end_reason="script_done"))  # type: ignore[arg-type]
    assert rate.text() == text
    assert "undecided" not in rate.text()


# --- 9. loader hints: a library file, a red-team file ----------------------------------


def test_running_a_library_file_says_it_is_one_and_how_it_is_used(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "tests").mkdir()
    library = (ROOT / "examples" / "library.yaml").read_text(encoding="utf-8")
    (tmp_path / "tests" / "library.yaml").write_text(library, encoding="utf-8")
    done = sparring("run", "tests/library.yaml", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "tests/library.yaml is a library file: evaluations and simulated users" in done.stderr
    assert "only sparring reports?" not in done.stderr


def test_running_a_red_team_file_points_to_sparring_redteam(tmp_path: Path) -> None:
    red_team = tmp_path / "redteam.yaml"
    red_team.write_text(readme_yaml_after("## Red teaming"), encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_paths([red_team])
    message = str(raised.value)
    assert f"a `redteam:` file is run by `sparring redteam {red_team}`" in message
    assert "unknown key 'redteam'" not in message


# --- 2. evaluation gates never judged are "not judged", like a skipped `should` ----------


def _gated_run(*, fail_on_skip: bool) -> RunResult:
    """One passed trial: its check met, its evaluation gates never judged (no model)."""
    check = Verdict(id="check1", kind="check", description="contains 10234", status="met")
    trial = TrialResult(
        scenario_id="gated",
        trial=1,
        status="passed",
        end_reason="script_done",
        verdicts=[check],
        evaluations_passed="pending",
    )
    scenario = ScenarioResult(
        scenario_id="gated", name="gated", kind="single_turn", threshold=1.0, trials=[trial]
    )
    return RunResult(
        sparring_version="0",
        run_id="r",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=[scenario],
        fail_on_skip=fail_on_skip,
    )


def test_evaluation_gates_never_judged_are_not_judged_and_fail_on_skip_exits_3() -> None:
    assert _gated_run(fail_on_skip=False).exit_code == 0
    gated = _gated_run(fail_on_skip=True)
    assert gated.exit_code == 3
    out = io.StringIO()
    view = ConsoleView(
        console=Console(file=out, width=150, color_system=None),
        live=False,
        summary_at_exit=False,
    )
    view.summary(gated)
    text = out.getvalue()
    assert "passed (1 not judged)" in text, text
    assert "not judged: the evaluation gates of 1 trial" in text
    assert "exit code 3: steps were skipped under --fail-on-skip" in text
    assert trial_facts(gated.scenarios[0].trials[0]) == ["evaluations not judged"]


# --- 10. .gitignore: the results store after `init`, generated audio after `synthesize` ---

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _untracked(repo: Path) -> list[str]:
    """What `git status` shows in `repo`, one path a line."""
    done = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return [line[3:] for line in done.stdout.splitlines()]


@needs_git
def test_init_keeps_the_results_store_out_of_git(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".gitignore").write_text("*.pyc")  # the user's own, without a last newline
    done = sparring("init", "--dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"added /.sparring/ to {tmp_path / '.gitignore'}" in done.stdout
    assert (tmp_path / ".gitignore").read_text().splitlines()[0] == "*.pyc"
    (tmp_path / ".sparring" / "artifacts").mkdir(parents=True)
    (tmp_path / ".sparring" / "sparring.db").write_bytes(b"")
    (tmp_path / ".sparring" / "artifacts" / "shot.png").write_bytes(b"")
    assert sorted(_untracked(tmp_path)) == [
        ".gitignore",
        "sparring.toml",
        "tests/conversations/example.yaml",
    ]


def test_init_does_not_repeat_an_ignored_store(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text(".sparring/\n")
    done = sparring("init", "--dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / ".gitignore").read_text() == ".sparring/\n"
    assert "added" not in done.stdout


@needs_git
def test_a_generated_audio_folder_leaves_git_status_clean(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    wav = tmp_path / "audio" / "voice" / "booking.t1.wav"
    write_generated(wav, b"RIFF", text="Book it.", provider_key="espeak:en-us:160", root=tmp_path)
    assert _untracked(tmp_path) == []
    kept = tmp_path / "recorded.wav"  # a recording beside a user's own .gitignore
    kept.write_bytes(b"RIFF")
    (tmp_path / ".gitignore").write_text("*.pyc\n")
    write_generated(
        tmp_path / "t1.wav", b"RIFF", text="Hi.", provider_key="espeak:en-us:160", root=tmp_path
    )
    assert sorted(_untracked(tmp_path)) == [".gitignore", "recorded.wav"]


# --- 11. `users add` with no terminal to type a password at -----------------------------


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, "pass word 1\n"], ids=["empty", "once"])
def test_users_add_without_a_terminal_asks_for_password_stdin(
    tmp_path: Path, stdin: int | str
) -> None:
    args = ["users", "add", "ann", "--role", "owner", "--store", f"sqlite:///{tmp_path}/s.db"]
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        stdin=stdin if isinstance(stdin, int) else None,
        input=stdin if isinstance(stdin, str) else None,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "error: no password given: standard input ended before it was typed" in done.stderr
    assert "--password-stdin" in done.stderr and "Interrupted" not in done.stderr


# --- 13. wording: plurals, a tool's calls, what exit code 1 says failed -------------------


def test_the_first_line_counts_one_scenario_and_one_trial_in_the_singular() -> None:
    out = io.StringIO()
    view = ConsoleView(
        console=Console(file=out, width=150, color_system=None), live=False, summary_at_exit=False
    )
    view(RunStarted(scenarios=1, trials=1, user_model=None, judge_model=None))
    assert out.getvalue().startswith("sparring: 1 scenario, 1 trial\n"), out.getvalue()


def test_a_tool_args_failure_shows_the_arguments_and_their_turn() -> None:
    call = ToolCall.from_arguments("refund", {"amount": 20})
    chat = Transcript(
        messages=(
            Message(role="user", content="Refund me"),
            Message(role="agent", content="Done", tool_calls=(call,)),
        )
    )
    spec = TypeAdapter(Check).validate_python(
        expand_check_shorthand({"tool_args": {"tool": "refund", "args": {"amount": 25}}})
    )
    verdict = run_check(spec, chat, check_id="check1", turn=None)
    assert verdict.reason.endswith('it was called with {"amount": 20} at turn 1')


@pytest.mark.parametrize(
    ("kinds", "said"),
    [
        (["check"], "the agent did not meet its checks"),
        (["criterion"], "the agent did not meet its criteria"),
        (["should", "check"], "the agent did not meet its criteria and checks"),
    ],
)
def test_exit_code_1_says_whether_checks_or_criteria_failed(kinds: list[str], said: str) -> None:
    verdicts = [
        Verdict(id=f"v{i}", kind=kind, description="d", status="not_met")  # type: ignore[arg-type]
        for i, kind in enumerate(kinds)
    ]
    trial = TrialResult(
        scenario_id="s", trial=1, status="failed", end_reason="script_done", verdicts=verdicts
    )
    scenario = ScenarioResult(
        scenario_id="s", name="s", kind="single_turn", threshold=1.0, trials=[trial]
    )
    result = RunResult(sparring_version="0", run_id="r", started_at="x", scenarios=[scenario])
    assert exit_meaning(result) == f"at least one scenario failed: {said}"
