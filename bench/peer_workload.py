"""Peer-workload benchmark: `sparring run` on N simulated conversations over real HTTP.

    python bench/peer_workload.py                        # 100 conversations, 200 ms latency
    python bench/peer_workload.py --scale                # 1,000 at --parallel 1000, 2 s latency
    python bench/peer_workload.py --repeat 3             # median of 3 runs

The workload (bench/peer_workload.yaml) is the one compared across tools: persona, goal,
3 criteria, 5 user turns, a zero-latency Python agent (bench/peer_agent.py). The models are
a mock OpenAI-compatible server (bench/mock_model.py) with a fixed latency, in its own
process; `sparring run` runs in another, as a user would start it, with every conversation
in flight at once (`--trials N --parallel N`).

Printed per run: wall time of the `sparring run` process against the ideal (the chain of
model calls of one conversation: 5 user turns + 1 judge call, times the latency), the run's
own wall time from its JSON report, the time from process start to the first model request
(start-up), model calls and prompt characters per conversation by purpose (simulated user /
judge), CPU time of the sparring process per model call, and its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
MAX_TRIALS = 100
USER_TURNS = 5
CALLS_IN_CHAIN = USER_TURNS + 1


def _mock(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, str(HERE / "mock_model.py"), "--latency-ms", str(latency_ms)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _stats(base_url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base_url}/stats", timeout=10) as response:
        return json.loads(response.read())


def _workload(conversations: int, folder: Path) -> tuple[Path, int]:
    """The YAML to run and its trials per scenario: bench/peer_workload.yaml itself up to
    100 conversations (trials are capped at 100), else copies of its scenario."""
    if conversations <= MAX_TRIALS:
        return HERE / "peer_workload.yaml", conversations
    yaml = YAML()
    workload = yaml.load((HERE / "peer_workload.yaml").read_text())
    (scenario,) = workload["scenarios"]
    copies = -(-conversations // MAX_TRIALS)
    workload["scenarios"] = [{**scenario, "id": f"{scenario['id']}-{i}"} for i in range(copies)]
    path = folder / "workload.yaml"
    with path.open("w") as f:
        yaml.dump(workload, f)
    return path, conversations // copies


def _sparring(
    workload: Path, trials: int, parallel: int, base_url: str, folder: Path
) -> tuple[float, float, Any, dict[str, Any]]:
    """Run `sparring run` as a user would; its wall time, start time, rusage and report."""
    report = folder / "result.json"
    command = [
        *([sys.executable, "-m", "sparring.cli"]),
        "run",
        str(workload),
        *("--model", "openai-compatible:mock", "--base-url", base_url),
        *("--trials", str(trials), "--parallel", str(parallel)),
        *("--no-live", "-o", str(report)),
    ]
    started = time.monotonic()
    proc = subprocess.Popen(
        command, cwd=HERE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    assert proc.stderr is not None
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        sys.exit(f"sparring run exited {os.waitstatus_to_exitcode(status)}:\n{proc.stderr.read()}")
    return wall, started, usage, json.loads(report.read_text())


def _run_once(args: argparse.Namespace) -> dict[str, float]:
    """One conversation first (start-up and 6 calls: the CPU that is not per call), then
    the workload."""
    mock, base_url = _mock(args.latency_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            one = _sparring(HERE / "peer_workload.yaml", 1, 1, base_url, Path(tmp))[2]
            one_calls = _stats(base_url)["requests"]
            workload, trials = _workload(args.conversations, Path(tmp))
            wall, started, usage, result = _sparring(
                workload, trials, args.parallel, base_url, Path(tmp)
            )
        stats = _stats(base_url)
    finally:
        assert mock.stdin is not None
        mock.stdin.close()
        mock.wait()
    numbers = _numbers(args, wall, started, usage, stats, result)
    extra_cpu = numbers["cpu_s"] - (one.ru_utime + one.ru_stime)
    numbers["cpu_ms_per_call_run"] = extra_cpu / (stats["requests"] - one_calls) * 1000
    return numbers


def _numbers(
    args: argparse.Namespace,
    wall: float,
    started: float,
    usage: Any,
    stats: dict[str, Any],
    result: dict[str, Any],
) -> dict[str, float]:
    n, requests = args.conversations, stats["requests"]
    trials = [t for s in result["scenarios"] for t in s["trials"]]
    passed = sum(t["status"] == "passed" for t in trials)
    return {
        "wall_s": wall,
        "run_s": result["duration_ms"] / 1000,
        "ideal_s": CALLS_IN_CHAIN * args.latency_ms / 1000,
        "startup_s": (stats["first_request_monotonic"] or started) - started,
        "passed": passed,
        "trials": len(trials),
        "calls_per_conv": requests / n,
        "user_kchars_per_conv": stats["prompt_chars"]["user"] / n / 1000,
        "judge_kchars_per_conv": stats["prompt_chars"]["judge"] / n / 1000,
        "cpu_ms_per_call": (usage.ru_utime + usage.ru_stime) / max(requests, 1) * 1000,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "peak_in_flight": stats["peak_in_flight"],
    }


def _print(numbers: dict[str, float], target_ratio: float) -> None:
    ideal = numbers["ideal_s"]
    print(
        f"  wall {numbers['wall_s']:.2f} s = {numbers['wall_s'] / ideal:.2f} x ideal "
        f"({ideal:.1f} s; target <= {target_ratio}) | run alone {numbers['run_s']:.2f} s = "
        f"{numbers['run_s'] / ideal:.2f} x | start-up to first model call "
        f"{numbers['startup_s']:.2f} s"
    )
    print(
        f"  trials passed {numbers['passed']:.0f}/{numbers['trials']:.0f} | model calls/conv "
        f"{numbers['calls_per_conv']:.2f} | prompt kchars/conv: user "
        f"{numbers['user_kchars_per_conv']:.1f} + judge {numbers['judge_kchars_per_conv']:.1f} "
        f"= {numbers['user_kchars_per_conv'] + numbers['judge_kchars_per_conv']:.1f}"
    )
    print(
        f"  CPU {numbers['cpu_s']:.2f} s = {numbers['cpu_ms_per_call']:.2f} ms per model call "
        f"(whole process), {numbers['cpu_ms_per_call_run']:.2f} ms per call beyond the "
        f"first conversation | peak RSS {numbers['peak_rss_mb']:.0f} MB | "
        f"most requests in flight {numbers['peak_in_flight']:.0f}"
    )


def main() -> None:
    """Parse arguments, run the workload `--repeat` times, print each run and the median."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--parallel", type=int, default=None)
    parser.add_argument("--latency-ms", type=float, default=None)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--scale",
        action="store_true",
        help="1,000 conversations at --parallel 1000 with 2 s latency",
    )
    args = parser.parse_args()
    default_n, default_latency = (1000, 2000) if args.scale else (100, 200)
    args.conversations = args.conversations or default_n
    args.parallel = args.parallel or args.conversations
    args.latency_ms = args.latency_ms or default_latency
    print(
        f"{args.conversations} conversations x {USER_TURNS} user turns, --parallel "
        f"{args.parallel}, model latency {args.latency_ms:g} ms"
    )
    runs: list[dict[str, float]] = []
    for i in range(args.repeat):
        print(f"run {i + 1}:")
        runs.append(_run_once(args))
        _print(runs[-1], 1.25)
    if args.repeat > 1:
        print("median:")
        _print({k: statistics.median(r[k] for r in runs) for k in runs[0]}, 1.25)


if __name__ == "__main__":
    main()
