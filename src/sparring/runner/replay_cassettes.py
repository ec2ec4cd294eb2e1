"""Record and replay: a run's model calls and target exchanges kept in cassettes, and a
later run answered from them (DESIGN.md section 2: the runner owns replay).

A cassette directory holds one JSON Lines file per role (`CASSETTE_FILES`): `agent.jsonl`
the target's replies, `user.jsonl` the simulated user's model, `judge.jsonl` the judge's
model (every call made with it, explanations too). The first line of each says what it is;
every other line is one answer: the request key, the scenario and trial that asked, the
`seq`-th time that trial asked it, the request as it was asked, the answer (or the error
it raised) and the line's `digest` (`entry_digest`: a line edited by hand is refused, not
replayed). Secrets are masked in all of it (`sparring.secrets`), the key included: a key is
the SHA-256 of the canonical JSON of the masked request (`request_key`), so a replayed run,
which only ever sees masked text, asks for the same keys.

Which trial asks is known from the `TrialStarted` event, which the runner emits in the
trial's own task (`observe` marks it there, `current_trial` reads it), so each trial
is answered with its own recording. A request is answered by the entry recorded for the
same trial at the same `seq`, else by an entry of that key the same trial recorded and
that is not used yet, else (without `strict`) by one the same scenario recorded, else it
is a miss: with `strict`, a `ModelError` or `TargetError` naming the role and what was
missing (the trial is `error`); without, the live model or target answers. A scenario is
never answered with another scenario's recording. An entry is used once per
run: more trials than were recorded never repeat a recorded conversation.

Wrappers: `sparring.runner.replay_models.ReplayModel` (the Model protocol) and
`sparring.runner.replay_targets.ReplayTarget` (the Target protocol).
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

from sparring.errors import UserError
from sparring.events import Event, Observer, TrialStarted

Role = Literal["agent", "user", "judge"]
ROLES: tuple[Role, ...] = ("agent", "user", "judge")
CASSETTE_FILES: dict[Role, str] = {r: f"{r}.jsonl" for r in ROLES}
CASSETTE_VERSION = 2
"""2: every answer line has its `digest`."""
_ANSWERS: dict[Role, str] = {
    "agent": "agent reply",
    "user": "simulated user answer",
    "judge": "judge answer",
}


@dataclass(frozen=True, slots=True)
class TrialKey:
    """The trial that makes a request: its scenario id and 1-based trial number."""

    scenario: str
    trial: int

    def __str__(self) -> str:
        return f"scenario {self.scenario!r} trial {self.trial}"


_CURRENT: ContextVar[TrialKey | None] = ContextVar("sparring_replay_trial", default=None)


def current_trial() -> TrialKey | None:
    """The trial the running task plays (`None` outside a trial: see `observe`)."""
    return _CURRENT.get()


def request_key(request: Any) -> str:
    """The SHA-256 (64 hex digits) of `request` as canonical JSON: keys sorted, no spaces,
    non-ASCII kept. `request` must already be masked and hold only JSON values."""
    canonical = json.dumps(request, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def entry_digest(entry: dict[str, Any]) -> str:
    """The `digest` of a cassette line: `request_key` of all of `entry` but its digest (the
    request, the answer, who asked), so a line changed after it was recorded is told."""
    return request_key({k: v for k, v in entry.items() if k != "digest"})


def _finite(value: Any) -> Any:
    """`value` (JSON values) with every non-finite number (a tool argument `1e999` parsed
    as infinity, a NaN) as `None`, as the JSON report has it."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in cast(dict[str, Any], value).items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in cast(list[Any], value)]
    return value


def _strict_line(entry: dict[str, Any]) -> str:
    """`entry` (JSON values, no digest) as a cassette line with its digest: strict JSON,
    so a cassette holds no `Infinity` or `NaN` that other JSON readers reject."""
    finite: dict[str, Any] = _finite(entry)
    line = {**finite, "digest": entry_digest(finite)}
    return json.dumps(line, ensure_ascii=False, allow_nan=False)


class Cassette:
    """The recorded answers of one role, read from its file, each used at most once.

    Safe to use from several tasks and threads at once.
    """

    def __init__(self, role: Role, path: Path, entries: list[dict[str, Any]]) -> None:
        self.role, self.path = role, path
        self._entries = entries
        self._by_key: dict[str, list[int]] = {}
        for index, entry in enumerate(entries):
            self._by_key.setdefault(str(entry["key"]), []).append(index)
        self._used: set[int] = set()
        self._lock = threading.Lock()

    @classmethod
    def load(cls, role: Role, directory: Path) -> Cassette:
        """The cassette of `role` in `directory`; an empty one when it has no such file
        (every request then misses, and a miss names the file). A last line cut short (no
        newline, not JSON: a run killed as it wrote it) is no answer.

        Raises:
            UserError: the file cannot be read, or a line is not a cassette entry (with
                the file:line and how to fix it).
        """
        path = directory / CASSETTE_FILES[role]
        if not path.exists():
            return cls(role, path, [])
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise UserError(f"{path}: cannot read the cassette: {e}; record it again") from None
        torn = not text.endswith("\n")
        return cls(role, path, list(_entries(path, text.splitlines(), role, torn=torn)))

    @property
    def model_name(self) -> str | None:
        """The model spec the first model answer was recorded from (`None`: none kept)."""
        return next((str(e["model"]) for e in self._entries if e.get("model")), None)

    def target_name(self, scenario: str) -> str | None:
        """The name of the target scenario `scenario`'s replies were recorded from."""
        return next(
            (
                str(e["target"])
                for e in self._entries
                if e.get("scenario") == scenario and e.get("target")
            ),
            None,
        )

    @property
    def entries(self) -> list[dict[str, Any]]:
        """Every recorded answer, in file order."""
        return list(self._entries)

    def take(
        self, key: str, *, at: TrialKey | None, seq: int, strict: bool = False
    ) -> dict[str, Any] | None:
        """The entry answering `key` asked the `seq`-th time by trial `at`: the one recorded
        there, else the first of that key not used yet that the same trial recorded, else
        (not `strict`) that the same scenario recorded; `None` when there is none."""
        wanted = (None, None, seq) if at is None else (at.scenario, at.trial, seq)
        least = 2 if strict else 1  # fields shared, from the scenario on
        with self._lock:
            unused = [i for i in self._by_key.get(key, []) if i not in self._used]
            shared = {i: _shared(self._entries[i], wanted) for i in unused}
            found = max(unused, key=lambda i: shared[i], default=None)
            if found is None or shared[found] < least:
                return None
            self._used.add(found)
        return self._entries[found]


def _shared(entry: dict[str, Any], wanted: tuple[str | None, int | None, int]) -> int:
    """How many of (scenario, trial, seq) `entry` shares with `wanted`, from the first on."""
    got = (entry.get("scenario"), entry.get("trial"), entry.get("seq"))
    return next((n for n in range(3) if got[n] != wanted[n]), 3)


def _entries(path: Path, lines: list[str], role: Role, *, torn: bool) -> Iterator[dict[str, Any]]:
    """The entries of a cassette file's `lines`, after its header (checked); with `torn`
    (no newline at the end), a last line that is not JSON is left out.

    Raises:
        UserError: a line that is not a JSON object with a `key` string, whose `digest` does
            not match it (edited), or a header for another role or version (with the
            file:line).
    """
    header = True
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value: Any = json.loads(line)
        except ValueError as e:
            if torn and number == len(lines):
                return
            raise UserError(
                f"{path}:{number}: not a JSON line ({e}); the file is damaged, record it again"
            ) from None
        if header:
            _check_header(f"{path}:{number}", value, role)
            header = False
            continue
        entry = cast(dict[str, Any], value) if isinstance(value, dict) else {}
        if not isinstance(entry.get("key"), str):
            raise UserError(
                f"{path}:{number}: a cassette entry is a JSON object with a string `key`; "
                "the file is damaged, record it again"
            )
        if entry.get("digest") != entry_digest(entry):
            raise UserError(
                f"{path}:{number}: the line was changed after it was recorded (its `digest` "
                "does not match); record the cassettes again (`--record DIR`) instead of "
                "editing them"
            )
        yield entry


def _check_header(where: str, value: Any, role: Role) -> None:
    """Refuse a first line that is not the header of a `role` cassette of this version.

    Raises:
        UserError: naming the file, what was expected and what to do.
    """
    expected: dict[str, Any] = {"cassette": role, "version": CASSETTE_VERSION}
    if value != expected:
        got = json.dumps(value, ensure_ascii=False)[:120]
        raise UserError(
            f"{where}: expected the header {json.dumps(expected)} (a {role} cassette), got "
            f"{got}; record the cassettes again with this sparring (`--record DIR`)"
        )


class CassetteWriter:
    """Writes one role's cassette: a header line, then one line per answer (with its
    `digest`), each written whole and flushed at once (an interrupted run keeps what it
    had).

    Safe to use from several tasks and threads at once.
    """

    def __init__(
        self,
        role: Role,
        directory: Path,
        *,
        scrub: Callable[[str], str],
        keep: Callable[[dict[str, Any]], bool] | None = None,
    ) -> None:
        """Create (or empty) the cassette of `role` in `directory`; with `keep`, the
        answers already there that `keep` accepts are written again first (a `--resume`
        keeps the trials it does not run again).

        Raises:
            UserError: the directory or file cannot be written, or (with `keep`) the
                cassette there cannot be read or is damaged.
        """
        self.path = directory / CASSETTE_FILES[role]
        self._scrub = scrub
        self._lock = threading.Lock()
        kept = (
            [] if keep is None else [e for e in Cassette.load(role, directory).entries if keep(e)]
        )
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._file: IO[str] = self.path.open("w", encoding="utf-8")
        except OSError as e:
            raise UserError(
                f"cannot record to {self.path}: {e.strerror or e}; give a writable --record DIR"
            ) from None
        self._line(json.dumps({"cassette": role, "version": CASSETTE_VERSION}))
        for entry in kept:
            self.copy(entry)

    def copy(self, entry: dict[str, Any]) -> None:
        """Append an entry read from a cassette (masked and checked already) as it was."""
        self._line(_strict_line({k: v for k, v in entry.items() if k != "digest"}))

    def write(self, entry: dict[str, Any]) -> None:
        """Append `entry` (JSON values, already masked) as one line, with its digest."""
        # every part is masked where it is built; the whole line once more, for any form
        # a part's masking could not see (a secret split across two strings is not one)
        text = json.dumps(_finite(entry), ensure_ascii=False, allow_nan=False)
        self._line(_strict_line(json.loads(self._scrub(text))))

    def _line(self, line: str) -> None:
        with self._lock:
            if not self._file.closed:
                self._file.write(line + "\n")
                self._file.flush()

    def close(self) -> None:
        """Close the file; later writes are dropped."""
        with self._lock:
            self._file.close()


def merge_cassettes(parts: Sequence[Path], into: Path) -> None:
    """Write each role's cassette in `into` with every answer of that role's cassettes in
    the directories `parts`, in their order: one session recorded in parts (by the
    pytest-xdist workers), replayed as one. Every part is read before `into` is written.

    Raises:
        UserError: a part cannot be read or is damaged, or `into` cannot be written.
    """
    for role in ROLES:
        entries = [e for part in parts for e in Cassette.load(role, part).entries]
        writer = CassetteWriter(role, into, scrub=lambda text: text)  # masked when recorded
        try:
            for entry in entries:
                writer.copy(entry)
        finally:
            writer.close()


@dataclass(kw_only=True)
class Tape:
    """One role's cassettes in a run: `source` answers (when the role is replayed), `sink`
    keeps every answer (when recording); with `strict`, a miss is an error, not a live call.
    """

    role: Role
    source: Cassette | None = None
    sink: CassetteWriter | None = None
    strict: bool = False
    option_prefix: str = "--"
    """How a miss's message spells the options (`ReplayOptions.option_prefix`)."""
    asked: int = 0
    """Requests made of the role."""
    replayed: int = 0
    """Requests answered from `source`."""
    missed: int = 0
    """Requests `source` did not answer and nothing else did (`miss`): the others were
    answered live."""
    _asked: Counter[tuple[TrialKey | None, str]] = field(default_factory=Counter[Any])
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ask(
        self, key: str, *, replay: bool = True
    ) -> tuple[TrialKey | None, int, dict[str, Any] | None]:
        """The trial asking `key`, how many times it has asked it (this time included),
        and the recorded entry answering it (`None`: a miss, the role is live, or not
        `replay`: the caller answers live anyway)."""
        at = current_trial()
        entry = None
        with self._lock:
            self._asked[at, key] += 1
            seq = self._asked[at, key]
            if self.source is not None and replay:
                entry = self.source.take(key, at=at, seq=seq, strict=self.strict)
            self.asked += 1
            self.replayed += entry is not None
        return at, seq, entry

    def keep(self, key: str, at: TrialKey | None, seq: int, body: dict[str, Any]) -> None:
        """Record an answer (`body`: the request and the answer or error) under `key`."""
        if self.sink is None:
            return
        where: dict[str, Any] = {"scenario": None, "trial": None}
        if at is not None:
            where = {"scenario": at.scenario, "trial": at.trial}
        self.sink.write({"key": key, **where, "seq": seq, **body})

    def keep_replayed(self, at: TrialKey | None, seq: int, entry: dict[str, Any]) -> None:
        """Record a replayed `entry` again, as asked now by trial `at` the `seq`-th time."""
        body = {k: v for k, v in entry.items() if k not in ("key", "scenario", "trial", "seq")}
        self.keep(str(entry["key"]), at, seq, body)

    def miss(self, key: str, at: TrialKey | None, what: str) -> str:
        """Count a request nothing answers (a miss under `strict`, or with no live model)
        and say so: the role, the trial, what was asked, the cassette, how to get an
        answer."""
        assert self.source is not None
        with self._lock:
            self.missed += 1
        trial = f" of {at}" if at is not None else ""
        return (
            f"replay: no recorded {_ANSWERS[self.role]} for {what}{trial} in "
            f"{self.source.path} (request {key[:12]}); record it again "
            f"(`{self.option_prefix}record DIR`) or let the {self.role} answer live "
            f"(`{self.option_prefix}live-role {self.role}`)"
        )


def observe(observer: Observer) -> Observer:
    """`observer`, after marking the trial each `TrialStarted` starts as the one its task
    plays (`current_trial`): the runner emits it from the trial's own task, first thing."""

    def marked(event: Event) -> None:
        if isinstance(event, TrialStarted):
            _CURRENT.set(TrialKey(event.scenario_id, event.trial))
        observer(event)

    return marked
