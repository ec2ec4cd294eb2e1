"""`sparring users add|list|remove|set-role`: the local accounts of the dashboard (`sparring
serve`) and their roles (owner, editor, viewer). Imports only click at start-up; each
command opens the store itself."""

from __future__ import annotations

import sys

import click

from sparring.cli.history import STORE_HELP

_ROLES = ("owner", "editor", "viewer")


@click.group("users")
def users() -> None:
    """Local accounts of the dashboard: owners and editors change everything, viewers read
    and export; only owners manage accounts. Passwords are kept as argon2 hashes (extra
    `dashboard`)."""


@users.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(_ROLES), default="viewer", show_default=True)
@click.option(
    "--password-stdin", is_flag=True, help="Read the password from standard input (one line)."
)
@click.option("--store", metavar="URL", help=STORE_HELP)
def add(name: str, role: str, password_stdin: bool, store: str | None) -> None:
    """Add account NAME with --role; the password is asked for (twice), or read from
    standard input with --password-stdin."""
    from sparring.cli.history import open_named
    from sparring.store.accounts import add_account, list_accounts

    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else _asked_password()
    opened = open_named(store)
    try:
        account = add_account(opened, name, password, role=role)
        owners = [a for a in list_accounts(opened) if a.role == "owner"]
    finally:
        opened.close()
    click.echo(f"Added {account.name} ({account.role}).")
    if not owners:
        click.echo(
            "No account is owner yet: only an owner manages accounts in the dashboard "
            "(`sparring users set-role NAME owner`)."
        )


def _asked_password() -> str:
    """The password typed twice at the prompt (or piped in, two lines).

    Raises:
        UserError: standard input is closed, or ended before the password was given (a
            script, CI): `--password-stdin` is the way there.
        click.exceptions.Abort: Ctrl-C at a terminal's prompt (exit 130, "Interrupted.").
    """
    from sparring.errors import UserError

    no_password = UserError(
        "no password given: standard input ended before it was typed (twice); pipe it in "
        "with --password-stdin, e.g. `printf '%s\\n' \"$PASSWORD\" | sparring users add "
        "NAME --password-stdin`"
    )
    if sys.stdin is None or sys.stdin.closed:
        raise no_password
    try:
        return click.prompt("Password", hide_input=True, confirmation_prompt=True)
    except click.exceptions.Abort:
        if sys.stdin.isatty():
            raise  # Ctrl-C
        raise no_password from None


@users.command("list")
@click.option("--store", metavar="URL", help=STORE_HELP)
def list_(store: str | None) -> None:
    """List the accounts: name, role, created."""
    from sparring.cli.history import open_named
    from sparring.store.accounts import list_accounts

    opened = open_named(store)
    try:
        found = list_accounts(opened)
    finally:
        opened.close()
    if not found:
        click.echo(
            "No accounts: `sparring serve` on 127.0.0.1 runs as a single local owner. "
            "`sparring users add NAME --role owner` adds one."
        )
    for account in found:
        click.echo(f"{account.name}  {account.role}  {account.created_at[:19].replace('T', ' ')}")


@users.command("remove")
@click.argument("name")
@click.option("--store", metavar="URL", help=STORE_HELP)
def remove(name: str, store: str | None) -> None:
    """Remove account NAME (not the last owner)."""
    from sparring.cli.history import open_named
    from sparring.store.accounts import remove_account

    opened = open_named(store)
    try:
        remove_account(opened, name)
    finally:
        opened.close()
    click.echo(f"Removed {name}.")


@users.command("set-role")
@click.argument("name")
@click.argument("role", type=click.Choice(_ROLES))
@click.option("--store", metavar="URL", help=STORE_HELP)
def set_role_(name: str, role: str, store: str | None) -> None:
    """Give account NAME the role ROLE (the last owner stays owner)."""
    from sparring.cli.history import open_named
    from sparring.store.accounts import set_role

    opened = open_named(store)
    try:
        account = set_role(opened, name, role)
    finally:
        opened.close()
    click.echo(f"{account.name} is now {account.role}.")
