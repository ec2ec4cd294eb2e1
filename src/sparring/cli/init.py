"""`sparring init`: a starter test file and settings file for a new project."""

from __future__ import annotations

from pathlib import Path

import click

from sparring.errors import UserError

STARTER_TEST = """\
# A sparring test file: one target, a set of scenarios.
# Run it with:  sparring run tests/conversations/
# Schema for editors:  sparring schema > sparring.schema.json
target:
  type: http
  url: http://127.0.0.1:8000/chat          # your agent's endpoint
  body_template: {message: "{{input}}", history: "{{history}}"}
  response_path: reply                     # where the reply text is in the JSON answer
  # headers: {Authorization: "Bearer {{secrets.AGENT_TOKEN}}"}

scenarios:
  # Scripted: these user messages are sent in order; each reply is checked.
  - id: greets-and-offers-help
    turns:
      - user: "Hi there"
        checks:
          - not_contains: "error"
        should: "greet the user and offer help"

  # Simulated: a model plays this user (needs --model, e.g. openai:gpt-4o-mini).
  - id: impatient-customer-gets-help
    persona: A busy customer who types short, slightly impatient messages.
    goal: Find out what the assistant can help with and get one concrete answer.
    max_turns: 4
    criteria:
      - The assistant stays polite throughout
      - The assistant gives at least one concrete, relevant answer
    restrictions:
      - The assistant asks for a password or a full card number
"""

STARTER_SETTINGS = """\
# sparring settings; command-line options and SPARRING_* environment variables win.
# model = "openai:gpt-4o-mini"     # simulated user and judge (needs OPENAI_API_KEY)
# judge_model = "openai:gpt-4o"    # a stronger judge, if you like
# base_url = "http://localhost:11434/v1"   # any OpenAI-compatible endpoint
parallel = 8
# secrets_file = ".env"            # NAME=value lines for {{secrets.NAME}}
"""


STORE_IGNORE = "/.sparring/"
"""The `.gitignore` line for the results store and run artifacts (`.sparring/`)."""


def init_project(directory: str) -> None:
    """Write `tests/conversations/example.yaml` and `sparring.toml` under `directory`, and
    add `.sparring/` (the results store and artifacts) to its `.gitignore`.

    Raises:
        UserError: either file exists already (nothing is overwritten), or a file cannot
            be written.
    """
    root = Path(directory)
    files = {
        root / "tests" / "conversations" / "example.yaml": STARTER_TEST,
        root / "sparring.toml": STARTER_SETTINGS,
    }
    existing = [str(p) for p in files if p.exists()]
    if existing:
        verb = "exists" if len(existing) == 1 else "exist"
        raise UserError(
            f"{' and '.join(existing)} already {verb}; nothing was written. "
            "Move them away or run `sparring init --dir OTHER_DIR`"
        )
    for path, text in files.items():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        except OSError as e:
            raise UserError(f"cannot write {path}: {e.strerror or e}; pick another --dir") from None
        click.echo(f"wrote {path}")
    _ignore_store(root / ".gitignore")
    click.echo("Next: point `url` at your agent, then run: sparring run tests/conversations/")


def _ignore_store(gitignore: Path) -> None:
    """Add `STORE_IGNORE` to `gitignore` (created when missing) unless `.sparring` is
    already ignored there; say what was done.

    Raises:
        UserError: the file cannot be read or written.
    """
    try:
        text = gitignore.read_text(encoding="utf-8") if gitignore.is_file() else ""
        lines = {line.strip().strip("/") for line in text.splitlines()}
        if ".sparring" in lines:
            return
        separator = "\n" if text and not text.endswith("\n") else ""
        gitignore.write_text(
            f"{text}{separator}# sparring: the results store and run artifacts\n{STORE_IGNORE}\n",
            encoding="utf-8",
        )
    except OSError as e:
        raise UserError(
            f"cannot write {gitignore}: {e.strerror or e}; add the line {STORE_IGNORE} to it "
            "yourself, so the results store stays out of git"
        ) from None
    click.echo(f"added {STORE_IGNORE} to {gitignore} (the results store and run artifacts)")
