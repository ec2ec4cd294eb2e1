"""Stream 10,000 trials into an SQLite results store, as `sparring run` does, and report the
time the writes take on the event loop, the time to drain them, and peak RSS.

    .venv/bin/python bench/store_bench.py [--trials 10000]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from sparring.results import RunResult, ScenarioResult, TrialResult
from sparring.store.database import open_store
from sparring.store.provenance import current_provenance
from sparring.store.reading import list_runs
from sparring.store.writer import RunRecord, RunWriter
from sparring.transcript import Message, Transcript


def _trial(scenario: int, number: int) -> TrialResult:
    messages = []
    for turn in range(4):
        messages.append(Message(role="user", content=f"question {turn} " * 20))
        messages.append(Message(role="agent", content=f"answer {turn} " * 60, latency_ms=120.0))
    return TrialResult(
        scenario_id=f"s{scenario}",
        trial=number,
        status="passed",
        end_reason="goal_achieved",
        transcript=Transcript(messages=tuple(messages)),
        duration_ms=900.0,
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trials", type=int, default=10_000)
    args = parser.parse_args()
    per_scenario = 10
    scenarios = args.trials // per_scenario
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(f"sqlite:///{Path(tmp) / 'bench.db'}")
        planned = RunResult(
            sparring_version="bench",
            run_id="bench",
            started_at="2025-01-01T00:00:00+00:00",
            scenarios=[
                ScenarioResult(
                    scenario_id=f"s{i}",
                    name=f"s{i}",
                    kind="simulated",
                    threshold=1.0,
                    planned_trials=per_scenario,
                )
                for i in range(scenarios)
            ],
        )
        trials = [_trial(i, n) for i in range(scenarios) for n in range(1, per_scenario + 1)]
        writer = RunWriter(store)
        record = RunRecord(
            paths=[], invocation={}, settings={}, provenance=current_provenance(Path.cwd())
        )
        started = time.perf_counter()
        writer.start(planned, record=record)
        for trial in trials:
            writer.add(trial)
        on_loop = time.perf_counter() - started
        writer.finish(planned, exit_code=0)
        total = time.perf_counter() - started
        (run,) = list_runs(store)
        assert sum(run.trial_counts.values()) == len(trials), run.trial_counts
        store.close()
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        f"{len(trials)} trials: {on_loop * 1000:.0f} ms on the event loop "
        f"({on_loop / len(trials) * 1e6:.1f} us per trial), all written in {total:.2f} s; "
        f"peak RSS {rss_mb:.0f} MB"
    )


if __name__ == "__main__":
    main()
