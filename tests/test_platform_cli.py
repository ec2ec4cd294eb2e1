"""`sparring users` and `sparring override` from the command line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sparring.store.accounts import list_accounts, verify_password
from sparring.store.database import open_store
from sparring.store.overrides import list_overrides
from sparring.store.reading import load_run
from tests.test_platform_store import _judged_trial, _stored_run


def sparring(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARRING_", "OPENAI_"))}
    return subprocess.run(
        [sys.executable, "-m", "sparring.cli", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def test_users_add_list_set_role_remove(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    done = sparring("users", "list", "--store", url)
    assert done.returncode == 0 and "No accounts" in done.stdout
    done = sparring(
        "users", "add", "vic", "--password-stdin", "--store", url, stdin="pass word 1\n"
    )
    assert done.returncode == 0, done.stderr
    assert "Added vic (viewer)." in done.stdout and "No account is owner yet" in done.stdout
    done = sparring("users", "set-role", "vic", "owner", "--store", url)
    assert done.stdout.strip() == "vic is now owner."
    store = open_store(url)
    assert [(a.name, a.role) for a in list_accounts(store)] == [("vic", "owner")]
    assert verify_password(store, "vic", "pass word 1") is not None
    store.close()
    done = sparring("users", "remove", "vic", "--store", url)
    assert done.returncode == 2 and "last owner" in done.stderr
    done = sparring("users", "add", "x", "--password-stdin", "--store", url, stdin="short\n")
    assert done.returncode == 2 and "too short" in done.stderr
    assert "vic  owner" in sparring("users", "list", "--store", url).stdout


def test_override_corrects_a_verdict_of_a_stored_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/s.db"
    store = open_store(url)
    run_id = _stored_run(store, _judged_trial(c1="not_met"))
    store.close()
    args = ("override", run_id[:1], "s1", "1", "c1", "--store", url)
    done = sparring(*args, "--value", "met", "--reason", "it did apologise", "--author", "ann")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "Overrode c1 of s1 trial 1 in run r1: not_met -> met (by ann). "
        "Trial now passed, scenario passed (overridden)."
    )
    store = open_store(url)
    (label,) = list_overrides(store)
    assert (label.value, label.reason, label.criterion) == ("met", "it did apologise", "text of c1")
    assert load_run(store, run_id).scenarios[0].status == "passed"
    store.close()
    done = sparring(*args, "--value", "maybe", "--reason", "r")
    assert done.returncode == 2 and "met or not_met, not 'maybe'" in done.stderr
    assert "--reason" in sparring("override", "--help").stdout


def test_users_add_asks_for_the_password_twice(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sparring.cli.users import users

    url = f"sqlite:///{tmp_path}/s.db"
    runner = CliRunner()
    done = runner.invoke(
        users, ["add", "ann", "--role", "owner", "--store", url], input="one\ntwo\n"
    )
    assert done.exit_code != 0 and "do not match" in done.output
    asked = runner.invoke(
        users, ["add", "ann", "--role", "owner", "--store", url], input="pass word\npass word\n"
    )
    assert asked.exit_code == 0 and "Added ann (owner)." in asked.output
    assert "pass word" not in asked.output
    store = open_store(url)
    assert verify_password(store, "ann", "pass word") is not None
    store.close()
