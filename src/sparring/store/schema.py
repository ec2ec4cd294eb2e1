"""The store's tables (SQLAlchemy Core), at the newest migration.

JSON columns hold the report schema's own models (`sparring.results`) as text, so a stored
run reads back into exactly the `RunResult` the run reported.

- `runs`: one row per run. `head` is the `RunResult` without its scenarios; `invocation`
  what `sparring run` was given (paths, pattern, tags, setting options) so it can be
  resumed; `parent_run_id` the run it reran; `baseline` marks the run `sparring diff`
  compares against by default; `status` is `running`, `finished` or `interrupted` (a
  `running` run whose process is gone reads as `interrupted`, see `sparring.store.reading`).
- `scenarios`: the planned `ScenarioResult` of each scenario of a run (without trials).
- `trials`: one `TrialResult` per finished trial; `(run_id, scenario_id, trial)` is unique.
- `shards`: the slices of a run made by `sparring run --shard K/N --run-id ID`: slice
  `shard` (1-based) of `shards`, its process and end (`status` `running`, `finished` or
  `interrupted`); see `sparring.store.shards`.
- `assets` / `asset_revisions`: agents, simulated users and agent evaluations (`kind`), each
  with numbered revisions (`state` draft, preview, published or archived; `content` the
  asset's spec as JSON); see `sparring.store.assets`.
- `suites` / `suite_runs`: test suites (`cases` as JSON) and their runs (the revisions each
  run resolved, the run id once it started, or why it could not); see
  `sparring.store.suites`.
- `overrides`: people's corrections of verdicts and insights ("Verdict wrong?"), applied
  when a run is read; see `sparring.store.overrides`.
- `accounts`: local dashboard accounts (argon2 password hashes, roles); see
  `sparring.store.accounts`.
"""

from __future__ import annotations

from sqlalchemy import (
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
)

metadata = MetaData()

runs = Table(
    "runs",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("started_at", String(40), nullable=False, index=True),
    Column("finished_at", String(40)),
    Column("status", String(16), nullable=False),
    Column("exit_code", Integer),
    Column("paths", Text, nullable=False),
    Column("invocation", Text, nullable=False),
    Column("settings", Text, nullable=False),
    Column("models", Text, nullable=False),
    Column("head", Text, nullable=False),
    Column("git_commit", String(64)),
    Column("git_branch", String(255)),
    Column("user_name", String(255)),
    Column("host", String(255)),
    Column("pid", Integer),
    Column("parent_run_id", String(64)),
    Column("baseline", Boolean, nullable=False, server_default=false()),
)

scenarios = Table(
    "scenarios",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id"), primary_key=True),
    Column("scenario_id", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("data", Text, nullable=False),
)

trials = Table(
    "trials",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), ForeignKey("runs.id"), nullable=False),
    Column("scenario_id", String(255), nullable=False),
    Column("trial", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("end_reason", String(32), nullable=False),
    Column("duration_ms", Float, nullable=False),
    Column("cost_usd", Float, nullable=False),
    Column("finished_at", String(40), nullable=False),
    Column("result", Text, nullable=False),
    UniqueConstraint("run_id", "scenario_id", "trial", name="uq_trials_run_scenario_trial"),
)
Index("ix_trials_run_id", trials.c.run_id)

shards = Table(
    "shards",
    metadata,
    Column("run_id", String(64), ForeignKey("runs.id"), primary_key=True),
    Column("shard", Integer, primary_key=True),
    Column("shards", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", String(40), nullable=False),
    Column("finished_at", String(40)),
    Column("exit_code", Integer),
    Column("host", String(255)),
    Column("pid", Integer),
)

assets = Table(
    "assets",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("kind", String(32), nullable=False),
    Column("name", String(255), nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("author", String(255)),
    Column("archived_at", String(40)),
    UniqueConstraint("kind", "name", name="uq_assets_kind_name"),
)

asset_revisions = Table(
    "asset_revisions",
    metadata,
    Column("asset_id", Integer, ForeignKey("assets.id"), primary_key=True),
    Column("number", Integer, primary_key=True),
    Column("state", String(16), nullable=False),
    Column("content", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("author", String(255)),
    Column("origin", String(255)),
)

suites = Table(
    "suites",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(255), nullable=False, unique=True),
    Column("cases", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
    Column("updated_at", String(40), nullable=False),
    Column("author", String(255)),
)

suite_runs = Table(
    "suite_runs",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("suite_id", Integer, ForeignKey("suites.id"), nullable=False, index=True),
    Column("run_id", String(64), unique=True),
    Column("started_at", String(40), nullable=False),
    Column("cases", Text, nullable=False),
    Column("error", Text),
    Column("author", String(255)),
    Column("host", String(255)),
    Column("pid", Integer),
)

overrides = Table(
    "overrides",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", String(64), ForeignKey("runs.id"), nullable=False, index=True),
    Column("scenario_id", String(255), nullable=False),
    Column("trial", Integer, nullable=False),
    Column("target", String(255), nullable=False),
    Column("value", Text, nullable=False),
    Column("original", Text, nullable=False),
    Column("effect", Text),
    Column("reason", Text, nullable=False),
    Column("author", String(255), nullable=False),
    Column("at", String(40), nullable=False),
)

accounts = Table(
    "accounts",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("role", String(16), nullable=False),
    Column("password_hash", Text, nullable=False),
    Column("created_at", String(40), nullable=False),
)
