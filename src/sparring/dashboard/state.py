"""The dashboard's view of the store: suites with their runs, runs as results.

One `Dashboard` per server process, kept on the app (`app.state.dashboard`); pages and the
API read and change the store through it and the store's own modules.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from sparring.dashboard.auth import Principal, Sessions
from sparring.dashboard.catalog import Filters, SuiteRow, file_suites, saved_suite
from sparring.dashboard.runs import SuiteRunner
from sparring.dashboard.views import ConversationRow, conversation_rows
from sparring.errors import UserError
from sparring.results import RunResult
from sparring.store.accounts import verify_password
from sparring.store.assets import (
    KIND_LABELS,
    Asset,
    AssetKind,
    AssetNotFound,
    get_asset,
    list_assets,
)
from sparring.store.database import Store
from sparring.store.reading import list_runs, load_run
from sparring.store.suite_status import list_suites
from sparring.store.suites import Suite

RUNS_SHOWN = 20
"""How many of a suite's latest runs list their conversations (Transcripts, Metrics)."""


class NotFound(UserError):
    """A suite, run or conversation the request names is not in the store (HTTP 404)."""


@dataclass
class Dashboard:
    """The state of one dashboard server: its `store`, whether it runs as a single local
    owner (`local_owner`: bound to 127.0.0.1 with no accounts), its sessions, and the
    `runner` of saved suites (`None`: suites cannot run from this server)."""

    store: Store
    local_owner: bool = True
    runner: SuiteRunner | None = None
    sessions: Sessions = field(default_factory=Sessions)

    def authenticate(self, name: str, password: str) -> Principal | None:
        """The account `name` signs in as with `password`; `None` when they do not match.

        Raises:
            AccountError: argon2 is not installed (extra `dashboard`).
        """
        account = verify_password(self.store, name, password)
        return None if account is None else Principal(account.name, account.role)

    @asynccontextmanager
    async def serving(self) -> AsyncGenerator[None]:
        """While the server serves: suite runs started meanwhile run inside; when it stops,
        a run still going is cancelled and kept `interrupted`."""
        if self.runner is None:
            yield
            return
        async with self.runner.serving():
            yield

    def suites(self, filters: Filters | None = None) -> list[SuiteRow]:
        """Every suite, saved ones and those of test files, newest last run first (never
        run last), those passing `filters` when given."""
        stored = {r.id: r for r in list_runs(self.store)}
        names = {
            a.id: a.name
            for kind in ("agent", "simulated_user")
            for archived in (False, True)
            for a in list_assets(self.store, kind, archived=archived)
        }
        saved = [saved_suite(s, stored, names) for s in list_suites(self.store)]
        taken = {r.id for s in saved for r in s.runs}
        rows = saved + file_suites(stored.values(), saved_runs=taken, load=self.run)
        rows.sort(key=lambda s: s.last_run or "", reverse=True)
        return [s for s in rows if filters is None or filters.keep(s)]

    def suite(self, suite_id: str) -> SuiteRow:
        """Suite `suite_id` (a saved suite's number, or `files-...`).

        Raises:
            NotFound: no such suite.
        """
        found = next((s for s in self.suites() if s.id == suite_id), None)
        if found is None:
            raise NotFound(f"no suite {suite_id!r}; the suites list (/suites) shows them all")
        return found

    def asset(self, kind: AssetKind, asset_id: int) -> Asset:
        """Asset `asset_id`, which must be a `kind` one.

        Raises:
            AssetNotFound: no such asset, or not of this kind.
        """
        asset = get_asset(self.store, asset_id)
        if asset.kind != kind:
            raise AssetNotFound(f"no {KIND_LABELS[kind]} with id {asset_id}")
        return asset

    def saved(self, suite_id: str) -> Suite:
        """The saved suite `suite_id` names.

        Raises:
            NotFound: no such suite, or it is made of test files (edit those instead).
        """
        suite = self.suite(suite_id).saved
        if suite is None:
            raise NotFound(
                f"suite {suite_id!r} is made of test files: change and run those files "
                "(`sparring run PATHS`) instead"
            )
        return suite

    async def start(self, suite_id: int, who: Principal) -> str | None:
        """Start a run of saved suite `suite_id` for `who` (see `SuiteRunner.start`): the
        run's id, `None` when it could not start.

        Raises:
            UserError: `who` may not run suites, this server runs none, or the suite
                cannot run now (SuiteBusy, SuiteError).
        """
        return await self._runner_for(who).start(suite_id, author=who.name)

    def _runner_for(self, who: Principal) -> SuiteRunner:
        """The runner of saved suites, when `who` may run them.

        Raises:
            UserError: `who` may not run suites, or this server runs none.
        """
        if not who.may("run_suites"):
            raise UserError(f"{who.name} is a {who.role} and may not run test suites")
        if self.runner is None:
            raise UserError("this dashboard runs no suites (it was started without a runner)")
        return self.runner

    async def resume(self, suite_id: int, who: Principal) -> str | None:
        """Resume saved suite `suite_id`'s interrupted run for `who` (see
        `SuiteRunner.resume`): the run's id, `None` when it could not start.

        Raises:
            UserError: `who` may not run suites, this server runs none, or there is
                nothing to resume (SuiteError says why) or it is being resumed (SuiteBusy).
        """
        return await self._runner_for(who).resume(suite_id, author=who.name)

    async def run_tests(self, text: str, *, name: str, who: Principal) -> str:
        """Run the test file `text` (YAML or JSON, any dialect `sparring run` reads) sent
        to the API, kept as a run of paths `api:<name>`; its run id.

        A file sent over the network may not make the server read its own files
        (`cases_from:`, `files:`, `audio:`) or call its Python functions (targets other
        than `SERVER_TARGETS`): run such tests with `sparring run` where they live (see
        `sparring.dashboard.guards`). Its `{{secrets.NAME}}` come from the server's
        secrets file only.

        Raises:
            ConfigError: the file is invalid, or uses `cases_from:`, `files:` or `audio:`
                (with `api:<name>:line:column`; refused before any path is resolved).
            UserError: one of the above, `who` may not run tests, or it could not start.
        """
        from sparring.dashboard.guards import check_no_server_files, check_test_file
        from sparring.loaders.yaml import load_text

        if not who.may("run_suites"):
            raise UserError(f"{who.name} is a {who.role} and may not run tests")
        if self.runner is None:
            raise UserError("this dashboard runs no tests (it was started without a runner)")
        path = f"api:{name}"
        check_test_file(text, path=path)
        scenarios = load_text(text, path=path)
        check_no_server_files(scenarios)
        return await self.runner.start_tests(scenarios, name=name, author=who.name)

    def run(self, run_id: str) -> RunResult:
        """Stored run `run_id` as its result, overrides applied.

        Raises:
            NotFound: no such run.
        """
        try:
            return load_run(self.store, run_id)
        except UserError as e:
            raise NotFound(str(e)) from None

    def conversations(self, suite: SuiteRow) -> list[ConversationRow]:
        """Every conversation of `suite`'s latest `RUNS_SHOWN` runs (`conversation_rows`),
        those of its runs going on in this server In progress or Evaluating."""
        running = {r.id for r in suite.runs if r.status == "running"}
        rows = self.results(suite)
        if self.runner is None:
            return conversation_rows(rows, running=running, cases=suite.cases)
        return conversation_rows(
            rows, running=running, cases=suite.cases, judging=self.runner.judging
        )

    def results(self, suite: SuiteRow) -> list[RunResult]:
        """The results of `suite`'s latest `RUNS_SHOWN` runs, newest first (the older ones
        stay in its run history)."""
        return [self.run(s.id) for s in suite.runs[:RUNS_SHOWN]]
