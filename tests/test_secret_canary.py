"""A canary secret never leaves sparring, in any form, through any artifact (issue 9, item 10).

The canary holds `"`, `\\`, a non-ASCII letter and a space, so each encoding changes it. It is
planted in a target's url (query), body and, as an ASCII twin (headers carry ASCII only),
its headers; a model's API key is a third canary. A local agent (`EchoServer`) echoes all
three in every form an agent or a report can give them: raw, JSON-encoded once (with and
without `\\u` escapes) and twice, as Python reprs, as tool-call arguments (objects and
strings), in an HTTP error body, URL-encoded (`quote`, `quote_plus`), and split across
server-sent events that are not JSON. The artifacts searched: the JSON, JUnit and Markdown
reports and the console of `sparring run` without and with a terminal, `sparring doctor`,
the pytest plugin's output and `--sparring-report`, and exception messages.

Each canary is built from distinctive ASCII tokens that survive every encoding unchanged, so
searching for the tokens finds the canary in any form, and any piece of it holding a token.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

import httpx
import pytest

from sparring.errors import ModelError, TargetError
from sparring.models.registry import resolve_model
from sparring.models.scripted import example_for_schema
from sparring.secrets import Secrets
from sparring.target_specs import HttpTargetSpec
from sparring.targets.http import HttpTarget
from sparring.transcript import Transcript, sanitized
from tests.support.echo_server import Answer, EchoRequest, EchoServer
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytest_plugins = ["pytester"]

CANARY = 'QXJ1 Ä "WZK7\\PLM9'
"""In the url's query and the body."""
HEADER_CANARY = 'HDR4 "TKN8\\VAL3'
"""In a header: printable ASCII, as HTTP requires, with `"`, `\\` and a space."""
MODEL_KEY = "sk-MDLK5-QQZ2-canary"
"""The models' API key (OPENAI_API_KEY)."""
TOKENS = ("QXJ1", "WZK7", "PLM9", "HDR4", "TKN8", "VAL3", "MDLK5", "QQZ2", "PTH2", "PQW6", "PZX5")
SECRETS_FILE = f"CANARY='{CANARY}'\nHEADER_CANARY='{HEADER_CANARY}'\n"


def _urls(value: str) -> str:
    return f"{quote(value, safe='')} {quote_plus(value)} {quote(value)}"


ECHOES: dict[str, Callable[[dict[str, str]], Answer]] = {
    "raw": lambda s: Answer({"reply": " ".join(s.values())}),
    "json": lambda s: Answer({"reply": json.dumps(s, ensure_ascii=False)}),
    "ascii": lambda s: Answer({"reply": json.dumps(s)}),
    "double": lambda s: Answer({"reply": json.dumps(json.dumps(s)), "echo": json.dumps(s)}),
    "repr": lambda s: Answer({"reply": repr(s), "echo": repr(repr(s))}),
    "tool": lambda s: Answer(
        {
            "reply": "looked it up",
            "tool_calls": [
                {"name": "lookup", "arguments": {"given": s, "nested": json.dumps(s)}},
                {"name": "lookup_text", "arguments": json.dumps({"given": json.dumps(s)})},
            ],
        }
    ),
    "url": lambda s: Answer({"reply": " ".join(_urls(v) for v in s.values())}),
    "error": lambda s: Answer({"error": {"detail": json.dumps(s)}}, status=500),
    "sse": lambda s: Answer(events=[piece for v in s.values() for piece in (v[:6], v[6:])]),
}
"""How the agent echoes what it got, by the user message it was sent."""


def echo(request: EchoRequest) -> Answer:
    """The agent: echoes the body's, the header's and the query's secret, and the model key;
    under /express/ it echoes its path instead (`echo_path`)."""
    body: dict[str, Any] = request.body or {}
    if request.path.startswith("/express/"):
        return echo_path(request.path, str(body.get("message")))
    got = {
        "body": str(body.get("key", "")),
        "header": request.headers.get("x-key", ""),
        "query": request.query.get("key", ""),
        "model_key": MODEL_KEY,
    }
    return ECHOES[str(body.get("message"))](got)


PATH_CANARY = 'PTH2 Ä "PQW6\\|^[]{}`PZX5'
"""In a url's path: httpx leaves `\\ | ^ [ ] { }` raw and percent-encodes the rest."""
PATH_TOKENS = ("PTH2", "PQW6", "PZX5")


def echo_path(path: str, message: str) -> Answer:
    """The agent answering under /express/: an Express-style 404 page quoting the path as it
    got it, or a reply quoting it with lower-case percent-encoding."""
    if message == "404":
        return Answer(f"<pre>Cannot POST {path}</pre>", status=404)
    return Answer({"reply": re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), path)})


_NEVER_SAID = "        checks:\n          - contains: never said\n"


def path_canary_file(url: str) -> str:
    """A target with the path canary in its url; a scenario per `echo_path` answer."""
    return (
        f'target:\n  url: "{url}/express/{{{{secrets.PATH_CANARY}}}}/chat"\n'
        "  body_template: {message: '{{input}}'}\n  response_path: reply\nscenarios:\n"
        f"  - id: not_found\n    turns:\n      - user: '404'\n{_NEVER_SAID}"
        f"  - id: lower_case\n    turns:\n      - user: lower\n{_NEVER_SAID}"
    )


def _target(url: str) -> str:
    return textwrap.dedent(
        f"""\
        target:
          url: "{url}/chat?key={{{{secrets.CANARY}}}}"
          headers: {{X-Key: "{{{{secrets.HEADER_CANARY}}}}"}}
          body_template: {{message: "{{{{input}}}}", key: "{{{{secrets.CANARY}}}}"}}
          response_path: reply
          tool_calls_path: tool_calls
        """
    )


def canary_file(url: str) -> str:
    """One scripted scenario per echo, each with failing checks (their reasons quote the
    reply), and one judged scenario."""
    scenarios = "".join(
        f"  - id: echo_{mode}\n    turns:\n      - user: {mode}\n        checks:\n"
        "          - contains: never said\n          - equals: nothing\n"
        for mode in ECHOES
    )
    judged = "  - id: judged\n    turns:\n      - user: raw\n        should: answer politely\n"
    return _target(url) + "scenarios:\n" + scenarios + judged


def judge_quoting_the_key(request: dict[str, Any]) -> Reply:
    """A model that writes its own API key and the canary into every text of its answer."""
    schema = request.get("response_format", {}).get("json_schema", {}).get("schema", {})
    text = f"the key is {MODEL_KEY} and {CANARY}"
    return Reply(json.dumps(example_for_schema(schema, text=text)))


def assert_no_canary(where: str, text: str) -> None:
    found = [token for token in TOKENS if token in text]
    assert not found, f"{where} holds {found}:\n{text}"


@pytest.fixture(scope="module")
def agent() -> Iterator[EchoServer]:
    with EchoServer(echo) as server:
        yield server


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer([judge_quoting_the_key] * 20) as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, agent: EchoServer) -> Path:
    (tmp_path / "canary.yaml").write_text(canary_file(agent.url("")), encoding="utf-8")
    (tmp_path / "secrets.env").write_text(SECRETS_FILE, encoding="utf-8")
    return tmp_path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    return {**env, "COLUMNS": "200", "OPENAI_API_KEY": MODEL_KEY, **extra}


def _run_args(model_server: ScriptedOpenAIServer) -> list[str]:
    return [
        sys.executable,
        "-m",
        "sparring.cli",
        "run",
        "canary.yaml",
        "--secrets-file",
        "secrets.env",
        "--model",
        "openai-compatible:judge",
        "--base-url",
        model_server.base_url,
        "--output",
        "r.json",
        "--junit",
        "r.xml",
        "--markdown",
        "r.md",
    ]


def test_sparring_run_reports_and_plain_console_hold_no_canary(
    project: Path, model_server: ScriptedOpenAIServer
) -> None:
    done = subprocess.run(
        _run_args(model_server),
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (1, 3), done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads((project / "r.json").read_text(encoding="utf-8"))
    trials = {s["scenario_id"]: s["trials"][0] for s in report["scenarios"]}
    assert len(trials) == len(ECHOES) + 1
    assert "***" in trials["echo_raw"]["transcript"]["messages"][1]["content"]  # it did echo
    assert trials["echo_error"]["status"] == "error"
    for name in ("r.json", "r.xml", "r.md"):
        assert_no_canary(name, (project / name).read_text(encoding="utf-8"))
    assert_no_canary("console", done.stdout + done.stderr)


def test_sparring_run_in_a_terminal_shows_no_canary(
    project: Path, model_server: ScriptedOpenAIServer
) -> None:
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        _run_args(model_server),
        cwd=project,
        env=_env(TERM="xterm-256color"),
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    output = bytearray()
    while True:  # read until the child closes the terminal
        ready, _, _ = select.select([primary], [], [], 120)
        if not ready:
            proc.kill()
            break
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the child's side closed
            break
        if not chunk:
            break
        output += chunk
    os.close(primary)
    assert proc.wait(timeout=60) in (1, 3)
    text = output.decode("utf-8", "replace")
    assert "sparring results" in text  # the run did show in the terminal
    assert_no_canary("terminal", text)


@pytest.fixture
def path_project(tmp_path: Path, agent: EchoServer) -> Path:
    (tmp_path / "path.yaml").write_text(path_canary_file(agent.url("")), encoding="utf-8")
    (tmp_path / "secrets.env").write_text(f"PATH_CANARY='{PATH_CANARY}'\n", encoding="utf-8")
    return tmp_path


def test_a_secret_in_the_url_path_echoed_by_the_agent_stays_out_of_every_artifact(
    path_project: Path,
) -> None:
    """httpx leaves `\\` and others raw in a path; the agent's 404 page and its reply (with
    lower-case hex) quote that path: the console, every report and the store mask it."""
    reports = ["-o", "r.json", "--junit", "r.xml", "--markdown", "r.md", "--html", "r.html"]
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "run", "path.yaml", "--secrets-file"]
        + ["secrets.env", "--store", "store.db", *reports],
        cwd=path_project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # failed and erred
    report = json.loads((path_project / "r.json").read_text(encoding="utf-8"))
    trials = {s["scenario_id"]: s["trials"][0] for s in report["scenarios"]}
    assert "Cannot POST /express/***/chat" in json.dumps(trials["not_found"])  # it did echo
    assert "/express/***/chat" in json.dumps(trials["lower_case"])
    texts = {name: (path_project / name).read_text(encoding="utf-8") for name in reports[1::2]}
    texts["console"] = done.stdout + done.stderr
    texts["store"] = (path_project / "store.db").read_bytes().decode("utf-8", "replace")
    for where, text in texts.items():
        found = [token for token in PATH_TOKENS if token in text]
        assert not found, f"{where} holds {found}:\n{text}"


@pytest.mark.parametrize("message", ["404", "lower"])
def test_doctor_shows_no_secret_of_the_url_path(path_project: Path, message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "sparring.cli", "doctor", "path.yaml", "--secrets-file"]
        + ["secrets.env", "--message", message],
        cwd=path_project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert "/express/***/chat" in done.stdout, done.stdout + done.stderr
    found = [token for token in PATH_TOKENS if token in done.stdout + done.stderr]
    assert not found, f"doctor --message {message} holds {found}:\n{done.stdout}"


@pytest.mark.parametrize("mode", list(ECHOES))
def test_doctor_shows_no_canary(project: Path, mode: str) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sparring.cli",
            "doctor",
            "canary.yaml",
            "--secrets-file",
            "secrets.env",
            "--message",
            mode,
        ],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode in (0, 3), done.stdout + done.stderr
    assert_no_canary(f"doctor --message {mode}", done.stdout + done.stderr)


SUITE_TEST = """
from sparring.api import Suite

suite = Suite(target={TARGET})


@suite.scenario
async def test_echo_in_an_assertion():
    async with suite.session() as session:
        response = await session.send("double")
        assert response.message == "something else", response.message
"""


def test_pytest_output_and_sparring_report_hold_no_canary(
    pytester: pytest.Pytester, agent: EchoServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", MODEL_KEY)
    pytester.makepyprojecttoml(
        '[tool.sparring]\nyaml_dirs = ["evals"]\nsecrets_file = "secrets.env"\n'
    )
    (pytester.path / "secrets.env").write_text(SECRETS_FILE, encoding="utf-8")
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "canary.yaml").write_text(canary_file(agent.url("")))
    target = {
        "url": agent.url("/chat?key={{secrets.CANARY}}"),
        "headers": {"X-Key": "{{secrets.HEADER_CANARY}}"},
        "body_template": {"message": "{{input}}", "key": "{{secrets.CANARY}}"},
        "response_path": "reply",
    }
    pytester.makepyfile(test_canary_suite=SUITE_TEST.replace("{TARGET}", repr(target)))
    result = pytester.runpytest("-v", "-rA", "--sparring-report=report.md")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == len(ECHOES) + 1, result.stdout.str()  # + the suite test
    output = result.stdout.str() + result.stderr.str()
    assert "test_echo_in_an_assertion FAILED" in output
    assert_no_canary("pytest output", output)
    assert_no_canary("--sparring-report", (pytester.path / "report.md").read_text())


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["error", "sse", "double"])
async def test_exceptions_and_kept_replies_hold_no_canary(agent: EchoServer, mode: str) -> None:
    secrets = Secrets(
        {"OPENAI_API_KEY": MODEL_KEY, "CANARY": CANARY, "HEADER_CANARY": HEADER_CANARY}
    )
    spec = HttpTargetSpec(
        url=agent.url("/chat?key={{secrets.CANARY}}"),
        headers={"X-Key": "{{secrets.HEADER_CANARY}}"},
        body_template={"message": "{{input}}", "key": "{{secrets.CANARY}}"},
        response_path="reply",
    )
    async with httpx.AsyncClient(follow_redirects=False) as client:
        target = HttpTarget(spec, client=client, secrets=secrets)
        try:
            reply = await target.send(mode, [])
        except TargetError as e:
            assert mode == "error"
            assert_no_canary("TargetError", f"{e} {e!r}")
        else:
            kept = sanitized(reply, secrets.scrub)
            assert_no_canary("kept reply", Transcript(messages=(kept,)).model_dump_json())


@pytest.mark.anyio
async def test_a_model_error_quoting_the_key_holds_no_canary() -> None:
    rejected = Reply(f"Incorrect API key provided: {MODEL_KEY}", status=401)
    with ScriptedOpenAIServer([rejected]) as server:
        model = resolve_model(
            "openai-compatible:judge", base_url=server.base_url, api_key=MODEL_KEY, max_retries=0
        )
        with pytest.raises(ModelError) as info:
            await model.complete([{"role": "user", "content": "hi"}], temperature=0)
        await model.aclose()
    assert_no_canary("ModelError", f"{info.value} {info.value!r}")


# --- the forms, one by one ------------------------------------------------------------------


def _escaped(value: str, depth: int, *, ascii_only: bool) -> str:
    for _ in range(depth):
        value = json.dumps({"echo": value}, ensure_ascii=ascii_only)
    return value


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_a_secret_is_masked_however_deep_it_is_json_escaped(depth: int, ascii_only: bool) -> None:
    secrets = Secrets({"CANARY": CANARY})
    secrets.get("CANARY")
    text = _escaped(CANARY, depth, ascii_only=ascii_only)
    assert_no_canary("scrubbed", secrets.scrub(text))
    assert_no_canary("scrubbed repr", secrets.scrub(repr({"text": text})))
    assert_no_canary("scrubbed ascii", secrets.scrub(ascii([text])))


def test_url_encoded_forms_and_pieces_cut_by_an_ellipsis_are_masked() -> None:
    secrets = Secrets({"CANARY": CANARY})
    secrets.get("CANARY")
    for form in (quote(CANARY, safe=""), quote_plus(CANARY), quote(CANARY)):
        assert secrets.scrub(f"?key={form}&x=1") == "?key=***&x=1"
        assert_no_canary("cut", secrets.scrub(f'said: "{form[:12]}…"'))
    assert secrets.scrub(f"{json.dumps(CANARY)[1:9]}… more") == "***… more"
    assert secrets.scrub("a normal text… that was cut") == "a normal text… that was cut"


def test_percent_encoding_with_lower_case_hex_or_some_characters_left_raw_is_masked() -> None:
    secrets = Secrets({"CANARY": CANARY, "PATH_CANARY": PATH_CANARY})
    for name in ("CANARY", "PATH_CANARY"):
        value = secrets.get(name)
        upper = quote(value, safe="")
        forms = [upper, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), upper)]
        forms += [str(httpx.URL(f"http://h/{value}/x")), quote(upper, safe="")]  # %255C
        for form in forms:
            assert_no_canary(f"{name} as {form}", secrets.scrub(f"GET {form} 404"))
        assert_no_canary("cut", secrets.scrub(f"said: {forms[1][:14]}…"))


def test_the_models_api_keys_are_secrets_from_the_environment_and_the_settings() -> None:
    env = {"OPENAI_API_KEY": "sk-env-key-123", "ANTHROPIC_API_KEY": "ant-key-456"}
    secrets = Secrets.load(env=env, api_key="setting-key-789")
    said = "sk-env-key-123, ant-key-456 and setting-key-789"
    assert secrets.scrub(said) == "***, *** and ***"
    assert Secrets.load(env={}).scrub(said) == said  # no key set: nothing to mask


def test_html_character_references_and_decomposed_letters_are_masked() -> None:
    secrets = Secrets({"CANARY": CANARY})
    secrets.get("CANARY")
    for form in (
        CANARY.replace('"', "&quot;"),
        CANARY.replace('"', "&#34;").replace("Ä", "&#xC4;"),
        unicodedata.normalize("NFD", CANARY),
        quote(unicodedata.normalize("NFD", CANARY)),
    ):
        assert secrets.scrub(f"<p>{form}</p>") == "<p>***</p>", form
