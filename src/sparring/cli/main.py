"""`sparring ...` commands. Imports only click at start-up; each command imports its work.

Exit codes: 0 everything that ran passed, 1 some scenario failed, 2 usage or configuration
error, 3 some scenario could not run (target or model error, timeout), 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from sparring.cli import calibrate, diff, export, generate, history, override, rejudge, users

EXIT_USAGE = 2


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="sparring")
def cli() -> None:
    """Test conversational AI agents with simulated users, checks and LLM judges.

    Start with `sparring init`, then `sparring run tests/conversations/`.
    """


@cli.command(
    epilog="Exit codes: 0 everything that ran passed, 1 some scenario failed, "
    "2 usage or configuration error, 3 some scenario could not run, 130 interrupted."
)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--pattern", "-k", metavar="REGEX", help="Run scenarios whose id or name matches.")
@click.option(
    "--tag",
    "tags",
    multiple=True,
    metavar="TAG",
    help="Run scenarios with this tag (repeat for any of several; Python tests have none).",
)
@click.option("--parallel", "-p", type=int, help="Trials in flight at once (default 8).")
@click.option("--trials", type=int, help="Override every scenario's trials.")
@click.option(
    "--adaptive",
    is_flag=True,
    help="Scenarios without their own trials: add trials (3 to 30) only until the pass rate "
    "is clearly above or below threshold.",
)
@click.option(
    "--model",
    "-m",
    metavar="SPEC",
    help="Model for simulated user and judge, e.g. openai:gpt-4o-mini.",
)
@click.option("--user-model", metavar="SPEC", help="Model for the simulated user only.")
@click.option("--judge-model", metavar="SPEC", help="Model for the judge only.")
@click.option(
    "--base-url",
    metavar="URL",
    help="Endpoint of openai-compatible: models (openai: and ollama: keep their own).",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(allow_dash=True),
    help="Write the JSON report here; `-` for standard output (the live view goes to stderr).",
)
@click.option("--junit", type=click.Path(), help="Write a JUnit XML report here.")
@click.option("--markdown", type=click.Path(), help="Write a Markdown report here.")
@click.option("--html", type=click.Path(), help="Write the HTML report here (one offline page).")
@click.option(
    "--xlsx", type=click.Path(), help="Write the xlsx export here (Runs, Insights, Transcript)."
)
@click.option(
    "--csv", "csv_zip", type=click.Path(), help="Write the csv-zip export here (one CSV per sheet)."
)
@click.option(
    "--fail-fast",
    is_flag=True,
    help="Start no new trial once a scenario can no longer reach its threshold.",
)
@click.option(
    "--fail-on-skip",
    is_flag=True,
    help="Exit 3 when anything was skipped (e.g. no model configured in CI).",
)
@click.option(
    "--explain-failures/--no-explain-failures",
    default=None,
    help="One more judge-model call per failed trial explains why it failed and what to "
    "change in the agent (default: off, or the settings' explain_failures).",
)
@click.option("--list", "list_only", is_flag=True, help="List the scenarios and exit.")
@click.option(
    "--reply-timeout",
    "reply_timeout_s",
    type=float,
    metavar="SECONDS",
    help="Limit for one target reply.",
)
@click.option(
    "--conversation-timeout",
    "conversation_timeout_s",
    type=float,
    metavar="SECONDS",
    help="Limit for one conversation (default 600).",
)
@click.option("--secrets-file", type=click.Path(), help="NAME=value file for {{secrets.NAME}}.")
@click.option(
    "--live/--no-live", default=None, help="Live view (default: when output is a terminal)."
)
@click.option("--quiet", "-q", is_flag=True, help="Print one line per scenario, then the summary.")
@click.option(
    "--store",
    metavar="URL",
    help="Keep the run in this store (default .sparring/sparring.db in the project root).",
)
@click.option("--no-store", is_flag=True, help="Do not keep the run in the results store.")
@click.option(
    "--resume",
    is_flag=False,
    flag_value="",
    metavar="[RUN_ID]",
    help="Run the trials of an interrupted run that have no result (default: the last one).",
)
@click.option(
    "--rerun-failed",
    is_flag=False,
    flag_value="",
    metavar="[RUN_ID]",
    help="Run only the scenarios that failed or erred in a stored run (default: the last).",
)
@click.option(
    "--shard",
    metavar="K/N",
    help="Run the K-th of N slices of the trials into the run --run-id names (CI matrix).",
)
@click.option(
    "--run-id",
    metavar="ID",
    help="With --shard: the shared run every slice adds to (created by the first).",
)
@click.option(
    "--record",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Keep every agent reply and model answer in cassettes in DIR (secrets masked).",
)
@click.option(
    "--replay",
    metavar="DIR",
    type=click.Path(file_okay=False),
    help="Answer from the cassettes in DIR; what they lack is asked live.",
)
@click.option(
    "--replay-strict",
    is_flag=True,
    help="With --replay: what the cassettes lack makes the trial error (CI without keys).",
)
@click.option(
    "--live-role",
    "live_roles",
    multiple=True,
    type=click.Choice(["agent", "user", "judge"]),
    help="With --replay: this role answers live, not from the cassettes (repeatable).",
)
@click.option(
    "--replay-users",
    metavar="RUN",
    help="Send stored run RUN's simulated user messages to the agent again, trial by trial.",
)
def run(**options: Any) -> None:
    """Run the conversation tests in PATHS: YAML/JSON test files and Python files with a
    `sparring.api.Suite` (files or directories; default tests/conversations)."""
    from sparring.cli.run import run_command

    sys.exit(run_command(**options))


@cli.command(
    epilog="Exit codes: 0 the target answered with a reply, 2 the file or an option "
    "is wrong, 3 the target failed or its reply looks wrong."
)
@click.argument("file", type=click.Path())
@click.option("--message", default="Hello", show_default=True, help="The user message sent.")
@click.option(
    "--scenario",
    metavar="ID",
    help="Use this scenario's target (when the file's scenarios use several).",
)
@click.option("--secrets-file", type=click.Path(), help="NAME=value file for {{secrets.NAME}}.")
def doctor(file: str, message: str, scenario: str | None, secrets_file: str | None) -> None:
    """Send one message to the target in FILE and explain what came back.

    FILE is a test file, or a YAML file holding only `target:`. Shows the HTTP requests
    (credentials masked) and responses, the reply read from them, and how to fix the
    usual mistakes (wrong response_path, redirects, HTTP errors, agent not running).
    """
    from sparring.cli.doctor.command import doctor_command

    sys.exit(
        doctor_command(file=file, message=message, secrets_file=secrets_file, scenario=scenario)
    )


@cli.command(epilog="Exit codes: 0 every file was written, 2 a file or an option is wrong.")
@click.argument("files", nargs=-1, required=True, type=click.Path())
@click.option("--output", "-o", "out_dir", required=True, type=click.Path(file_okay=False))
@click.option("--force", is_flag=True, help="Overwrite files that exist in the output directory.")
def convert(files: tuple[str, ...], out_dir: str, force: bool) -> None:
    """Rewrite pytest-agent-eval transcripts and Plainwright conversation tests (FILES) as
    sparring YAML test files in the --output directory."""
    from sparring.cli.convert import convert_command

    sys.exit(convert_command(files=files, out_dir=out_dir, force=force))


@cli.command(
    epilog="Exit codes: 0 every WAV is in place, 2 a file or an option is wrong, "
    "3 the speech synthesis failed."
)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--force", is_flag=True, help="Make generated WAVs again (recordings are kept).")
@click.option(
    "--provider",
    type=click.Choice(["openai", "espeak"]),
    help="Speech synthesis (default: openai with OPENAI_API_KEY set, else espeak).",
)
@click.option("--voice", metavar="NAME", help="The provider's voice, e.g. alloy or en-us.")
def synthesize(
    paths: tuple[str, ...], force: bool, provider: str | None, voice: str | None
) -> None:
    """Write a WAV for every scripted turn a voice target plays (one naming an `audio:` path,
    or any turn of a `type: voice` scenario) with text and no recording (PATHS: test files
    or directories; default: yaml_dirs, else tests/conversations). Unchanged turns are
    skipped (.wav.hash); hand-recorded WAVs are never overwritten."""
    from sparring.cli.synthesize import synthesize_command

    sys.exit(synthesize_command(paths=paths, force=force, provider=provider, voice=voice))


@cli.command(epilog="Exit codes as for `sparring run`: 1 means an attack succeeded.")
@click.argument("file", type=click.Path())
@click.option("--plugins", metavar="A,B", help="Attack plugins (default: all), e.g. pii_leak.")
@click.option(
    "--strategies", metavar="A,B", help="Strategies (default: all), e.g. plain,base64,crescendo."
)
@click.option("--attempts", type=int, help="Attempts (trials) per attack (default 1).")
@click.option("--model", "-m", metavar="SPEC", help="Model for crescendo attacker and judge.")
@click.option("--user-model", metavar="SPEC", help="Model for the crescendo attacker only.")
@click.option("--judge-model", metavar="SPEC", help="Model for the judge only.")
@click.option("--base-url", metavar="URL", help="Endpoint of openai-compatible: models.")
@click.option("--parallel", "-p", type=int, help="Trials in flight at once (default 8).")
@click.option("--output", "-o", type=click.Path(allow_dash=True), help="Write the JSON report.")
@click.option("--junit", type=click.Path(), help="Write a JUnit XML report here.")
@click.option("--markdown", type=click.Path(), help="Write a Markdown report here.")
@click.option("--html", type=click.Path(), help="Write the HTML report here.")
@click.option("--report", type=click.Path(), help="Write the red-team summary (Markdown) here.")
@click.option(
    "--fail-on-skip",
    is_flag=True,
    help="Exit 3 when anything was skipped or not judged (e.g. no model: detectors only).",
)
@click.option("--secrets-file", type=click.Path(), help="NAME=value file for {{secrets.NAME}}.")
@click.option("--live/--no-live", default=None, help="Live view (default: on a terminal).")
@click.option("--quiet", "-q", is_flag=True, help="One line per attack, then the summary.")
@click.option("--no-store", is_flag=True, help="Do not keep the run in the results store.")
def redteam(**options: Any) -> None:
    """Attack the target in FILE: prompt injection, jailbreaks, leaks of the system prompt,
    canaries and personal data, off-topic requests.

    FILE holds `target:` and optionally `redteam: {canaries, policy, plugins, strategies,
    objective}`, or `scenarios:` with `kind: red_team` ones. Templated attacks need no model;
    crescendo escalations and judge-decided attacks need --model.
    """
    from sparring.cli.redteam import redteam_command

    sys.exit(redteam_command(**options))


@cli.command()
def schema() -> None:
    """Print the JSON Schema of test files (for editors and linters)."""
    import json

    from sparring.loaders.yaml import test_file_json_schema

    click.echo(json.dumps(test_file_json_schema(), indent=2))


@cli.command()
@click.option(
    "--dir",
    "directory",
    default=".",
    type=click.Path(file_okay=False),
    help="Project directory (default: here).",
)
def init(directory: str) -> None:
    """Write a starter test file and sparring.toml for a new project."""
    from sparring.cli.init import init_project

    init_project(directory)


@cli.command("demo-agent", context_settings={"ignore_unknown_options": True})
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8787, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--vulnerable",
    is_flag=True,
    help="A deliberately weak mode for red-team demos: it leaks a canary under one injection.",
)
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def demo_agent(host: str, port: int, vulnerable: bool, command: tuple[str, ...]) -> None:
    """Serve the bundled demo support agent; with `-- COMMAND`, run it then stop.

    Example: sparring demo-agent --port 8787 -- sparring run examples/
    """
    from sparring.cli.demo import demo_agent_command

    sys.exit(demo_agent_command(host=host, port=port, command=command, vulnerable=vulnerable))


@cli.command(epilog="Exit codes: 0 stopped with Ctrl-C, 2 it could not start.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8790, show_default=True, type=click.IntRange(0, 65535))
@click.option("--store", metavar="URL", help=history.STORE_HELP)
@click.option(
    "--secrets-file",
    type=click.Path(),
    help="NAME=value file for {{secrets.NAME}} (the only source: not the environment).",
)
def serve(host: str, port: int, store: str | None, secrets_file: str | None) -> None:
    """Serve the dashboard: test suites, runs, transcripts, metrics, exports, overrides,
    simulated users, agent evaluations and agents, with a JSON API under /api.

    On 127.0.0.1 without accounts it runs as a single local owner; any other address needs
    accounts (`sparring users add NAME --role owner`). Needs: pip install "sparring[dashboard]"
    """
    from sparring.cli.serve import serve_command

    sys.exit(serve_command(host=host, port=port, store=store, secrets_file=secrets_file))


cli.add_command(history.runs)
cli.add_command(history.show)
cli.add_command(history.report)
cli.add_command(export.export)
cli.add_command(diff.diff)
cli.add_command(diff.baseline)
cli.add_command(rejudge.rejudge)
cli.add_command(override.override)
cli.add_command(users.users)
cli.add_command(calibrate.calibrate)
cli.add_command(generate.generate)


def main() -> None:
    """Console entry point: runs the CLI, turning UserError into a message and exit 2."""
    from sparring.errors import UserError

    try:
        cli.main(standalone_mode=False)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except UserError as e:
        click.secho(f"error: {e}", fg="red", err=True)
        sys.exit(EXIT_USAGE)
