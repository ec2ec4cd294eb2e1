"""What the dashboard agrees to run: agents reached over the network only, and test files
sent to the API that use nothing of the server but its secrets file.

The dashboard runs tests inside its own process, for whoever may use it. A `callable`
target (framework adapters are callables too) or a `voice` one (`callable:` or `livekit:`)
would import and call a Python function of the server; `cases_from:`, `files:` and
`audio:` in a file sent over the network would read the server's disk. So every agent the
dashboard stores or runs has one of `SERVER_TARGETS` (`check_target_type`: agents created
or edited through pages and the API, test files sent to `POST /api/tests`, and every
scenario of a stored suite when it starts), and test files sent to the API may not name
files (`check_test_file`, `check_no_server_files`). Such tests run with `sparring run`
where their code and files live.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sparring.errors import ConfigError, UserError
from sparring.scenario import AnyScenario

SERVER_TARGETS = ("http", "openai_chat", "a2a", "parlant", "browser")
"""The target types the dashboard runs: agents it reaches over the network."""


def check_target_type(target_type: str, *, where: str) -> None:
    """Refuse a target type the dashboard does not run (see the module docstring).

    Args:
        target_type: The target's `type` (`http`, `callable`, `voice`, ...).
        where: What holds the target, for the message (e.g. `agent 'Shop bot'`).

    Raises:
        UserError: `target_type` is not one of `SERVER_TARGETS`; the message says why and
            how to run such tests instead.
    """
    if target_type in SERVER_TARGETS:
        return
    raise UserError(
        f"{where} has a `{target_type}` target, which the dashboard does not run: "
        "`callable` and `voice` targets (and framework adapters) import and call Python "
        "code inside the server. Give an agent the dashboard reaches over the network "
        f"({', '.join(SERVER_TARGETS)}), or run such tests with `sparring run` where their "
        "code lives"
    )


def check_agent(name: str, content: Mapping[str, Any]) -> None:
    """Refuse the content of agent `name` (a `target:` mapping) unless it is valid and its
    target is one the dashboard runs: before it is created or saved as a Draft.

    Raises:
        AssetError: `content` is not a valid target.
        UserError: its type is not one of `SERVER_TARGETS` (`check_target_type`).
    """
    from sparring.store.asset_specs import validate_content

    checked = validate_content("agent", name, content)
    check_target_type(str(checked["type"]), where=f"agent {name!r}")


def check_scenarios(scenarios: Sequence[AnyScenario]) -> None:
    """Refuse scenarios whose target the dashboard does not run (`check_target_type`);
    one without a target is left to the runner, which says what to add.

    Raises:
        UserError: the first scenario with such a target, named.
    """
    for scenario in scenarios:
        target: object = scenario.target
        if target is not None:
            kind = getattr(target, "type", None)
            check_target_type(
                kind if isinstance(kind, str) else type(target).__name__,
                where=f"scenario {scenario.id!r}",
            )


def check_test_file(text: str, *, path: str) -> None:
    """Refuse a test file sent to the API that names files on the server's disk: rows
    (`cases_from:`), attachments (`files:`) or a turn's `audio:`, before it is loaded
    (loading would read them, and say where they are). Keys so named inside a `target:`
    (e.g. a body template's field) or a `cases:` row (data) attach nothing.

    Raises:
        ConfigError: the text does not parse, or such a key, at `path:line:column`.
    """
    from sparring.loaders._parse import parse_documents

    for document in parse_documents(text, path=path):
        for loc, (line, column) in document.keys.items():
            key = loc[-1] if loc else None
            if key in _SERVER_FILE_KEYS and not _DATA_KEYS.intersection(loc[:-1]):
                raise ConfigError(_SERVER_FILE_KEYS[key], path=path, line=line, column=column)


_SERVER_FILE_KEYS = {
    "cases_from": "a test file sent to the dashboard cannot use `cases_from:` (it would read "
    "a file on the server); write the rows inline under `cases:`, or run the file with "
    "`sparring run`",
    "files": "a test sent to the API cannot attach files (`files:` would be read from the "
    "server's disk); run it with `sparring run` where the files are",
    "audio": "a test sent to the API cannot attach files (a turn's `audio:` would be read from "
    "the server's disk); leave it out for the voice target to speak the text, or run the "
    "test with `sparring run` where the files are",
}
"""Keys of a test file that name files on the server, and why a file sent to the API may
not use them."""
_DATA_KEYS = frozenset({"target", "cases"})
"""Where keys so named are data: a target's fields, rows filling `{{vars.NAME}}`."""


def check_no_server_files(scenarios: Sequence[AnyScenario]) -> None:
    """Refuse scenarios of a test file sent to the API that attach files or audio (they
    would be read from the server's disk).

    Raises:
        UserError: the first such scenario, named.
    """
    for scenario in scenarios:
        turns: list[Any] = getattr(scenario, "turns", None) or []
        attached = [getattr(t, "files", None) or getattr(t, "audio", None) for t in turns]
        if getattr(scenario, "files", None) or any(attached):
            raise UserError(
                f"scenario {scenario.id!r}: a test sent to the API cannot attach files or "
                "audio (they would be read from the server's disk); run it with `sparring run`"
            )
