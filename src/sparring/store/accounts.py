"""Local accounts of the dashboard and what each role may do (`sparring users`).

Roles follow the platform's table: an **owner** and an **editor** may view, export and
change everything (simulated users, agent evaluations, agents, test suites, runs,
overrides); a **viewer** may only view and export. Only an owner manages accounts. The last
owner cannot be removed or demoted, so someone can always manage the accounts.

Passwords are kept as argon2 hashes (`argon2-cffi`, extra `dashboard`, imported only when
a password is hashed or checked), never in clear.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, get_args

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from sparring.errors import UserError
from sparring.store.database import Store
from sparring.store.schema import accounts
from sparring.store.writer import now_iso

if TYPE_CHECKING:
    from argon2 import PasswordHasher

Role = Literal["owner", "editor", "viewer"]
ROLES: tuple[Role, ...] = get_args(Role)
Action = Literal[
    "view", "export", "edit_assets", "edit_suites", "run_suites", "override", "manage_users"
]
"""What a request does: `view` pages and the API's reads, `export` results; `edit_assets`
create, edit, publish, clone or archive agents, simulated users and agent evaluations;
`edit_suites` create, edit or delete test suites; `run_suites` run or rerun them;
`override` correct a verdict or insight; `manage_users` add, remove or change accounts."""
ACTIONS: tuple[Action, ...] = get_args(Action)

_ALLOWED: dict[Role, frozenset[Action]] = {
    "owner": frozenset(ACTIONS),
    "editor": frozenset(a for a in ACTIONS if a != "manage_users"),
    "viewer": frozenset(("view", "export")),
}
NAME_PATTERN = r"^[A-Za-z0-9_.@-]{1,64}$"
"""Account names: 1-64 letters, digits, `_ . @ -`."""
MIN_PASSWORD_LENGTH = 8


class AccountError(UserError):
    """An account operation cannot be done: bad name, role or password, an unknown or
    existing account, the last owner, or argon2 missing. The message says how to fix it."""


@dataclass(frozen=True, kw_only=True)
class Account:
    """A local account: `name`, `role`, and when it was created (ISO 8601 UTC)."""

    name: str
    role: Role
    created_at: str


def can(role: str | None, action: Action) -> bool:
    """Whether `role` (`owner`, `editor`, `viewer`; `None` or anything else: no one) may do
    `action` (see `Action`). The dashboard asks this before every write."""
    return role in _ALLOWED and action in _ALLOWED[role]  # type: ignore[index]


def parse_role(text: str) -> Role:
    """`text` (any case) as a `Role`.

    Raises:
        AccountError: not one of owner, editor, viewer.
    """
    role = text.strip().lower()
    if role not in ROLES:
        raise AccountError(f"no role {text!r}; use one of {', '.join(ROLES)}")
    return role  # type: ignore[return-value]


def add_account(store: Store, name: str, password: str, *, role: str) -> Account:
    """Create account `name` with `role` and `password` (kept as an argon2 hash).

    Raises:
        AccountError: `name` is not 1-64 letters, digits, `_ . @ -`; `role` is unknown; the
            password is shorter than `MIN_PASSWORD_LENGTH`; `name` exists; argon2 missing.
    """
    if not re.fullmatch(NAME_PATTERN, name):
        raise AccountError(
            f"account name {name!r} is not allowed; use 1-64 letters, digits, _ . @ -"
        )
    account = Account(name=name, role=parse_role(role), created_at=now_iso())
    row = {
        "name": name,
        "role": account.role,
        "password_hash": hash_password(password),
        "created_at": account.created_at,
    }
    try:
        with store.engine.begin() as conn:
            conn.execute(insert(accounts), row)
    except IntegrityError:
        raise AccountError(
            f"account {name!r} exists; `sparring users set-role {name} ROLE` changes its role"
        ) from None
    return account


def list_accounts(store: Store) -> list[Account]:
    """Every account, by name."""
    query = select(accounts.c.name, accounts.c.role, accounts.c.created_at).order_by(
        accounts.c.name
    )
    with store.engine.connect() as conn:
        return [Account(name=n, role=r, created_at=c) for n, r, c in conn.execute(query)]


def has_accounts(store: Store) -> bool:
    """Whether any account exists (without one, a dashboard bound to 127.0.0.1 runs as a
    single local owner)."""
    with store.engine.connect() as conn:
        return bool(conn.execute(select(func.count()).select_from(accounts)).scalar())


def remove_account(store: Store, name: str) -> None:
    """Delete account `name`.

    Raises:
        AccountError: no such account, or it is the last owner.
    """
    with store.engine.begin() as conn:
        role = _role_of(conn, name)
        _keep_an_owner(conn, name, role, "remove")
        conn.execute(delete(accounts).where(accounts.c.name == name))


def set_role(store: Store, name: str, role: str) -> Account:
    """Give account `name` the role `role`.

    Raises:
        AccountError: no such account, an unknown role, or it would demote the last owner.
    """
    new = parse_role(role)
    with store.engine.begin() as conn:
        old = _role_of(conn, name)
        if new != "owner":
            _keep_an_owner(conn, name, old, "demote")
        conn.execute(update(accounts).where(accounts.c.name == name).values(role=new))
        created = conn.execute(
            select(accounts.c.created_at).where(accounts.c.name == name)
        ).scalar_one()
    return Account(name=name, role=new, created_at=created)


def verify_password(store: Store, name: str, password: str) -> Account | None:
    """The account `name` when `password` is its password; `None` otherwise (no such
    account, or a wrong password), taking about as long either way.

    Raises:
        AccountError: argon2 is not installed (extra `dashboard`).
    """
    from argon2.exceptions import VerificationError

    hasher = _hasher()
    query = select(accounts).where(accounts.c.name == name)
    with store.engine.connect() as conn:
        row = conn.execute(query).first()
    stored = row.password_hash if row is not None else _DUMMY_HASH.get(hasher)
    try:
        hasher.verify(stored, password)
    except VerificationError:
        return None
    if row is None:
        return None
    return Account(name=row.name, role=row.role, created_at=row.created_at)


def hash_password(password: str) -> str:
    """`password` as an argon2id hash (with its salt and parameters).

    Raises:
        AccountError: the password is shorter than `MIN_PASSWORD_LENGTH` characters, or
            argon2 is not installed (extra `dashboard`).
    """
    if len(password) < MIN_PASSWORD_LENGTH:
        raise AccountError(
            f"the password is too short: use at least {MIN_PASSWORD_LENGTH} characters"
        )
    return _hasher().hash(password)


class _DummyHash:
    """A hash of a random password, checked when the account does not exist, so a wrong
    name costs the same time as a wrong password."""

    _value: str | None = None

    def get(self, hasher: PasswordHasher) -> str:
        if self._value is None:
            import secrets

            self._value = hasher.hash(secrets.token_urlsafe(16))
        return self._value


_DUMMY_HASH = _DummyHash()


def _hasher() -> PasswordHasher:
    try:
        from argon2 import PasswordHasher
    except ImportError:
        raise AccountError(
            'accounts need argon2 to hash passwords: pip install "sparring[dashboard]"'
        ) from None
    return PasswordHasher()


def _role_of(conn: Connection, name: str) -> Role:
    role = conn.execute(select(accounts.c.role).where(accounts.c.name == name)).scalar()
    if role is None:
        raise AccountError(f"no account {name!r}; `sparring users list` shows the accounts")
    return role


def _keep_an_owner(conn: Connection, name: str, role: Role, what: str) -> None:
    """Refuse to `what` (remove, demote) account `name` when it is the last owner."""
    if role != "owner":
        return
    owners = conn.execute(
        select(func.count()).select_from(accounts).where(accounts.c.role == "owner")
    ).scalar()
    if owners == 1:
        raise AccountError(
            f"cannot {what} {name!r}: it is the last owner, and only an owner manages "
            f"accounts; make another account owner first (`sparring users set-role NAME owner`)"
        )
