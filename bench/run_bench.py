"""Benchmark: N simulated conversations against an in-process target and a slow scripted model.

Prints wall time against the ideal (turns + 1) x latency (every conversation runs at once,
so the ideal is one conversation's chain of model calls), model calls per conversation and
CPU time per turn. The bar: wall time within 1.10 x the ideal.

    python bench/run_bench.py [--conversations 100] [--turns 5] [--latency-ms 200] [--http]

With `--http` the models are reached the real way: the openai SDK over HTTP to a scripted
OpenAI-compatible server (tests/support/openai_server.py) in a separate process, so the
numbers include sparring's HTTP client and parsing cost (CPU time is this process only).
"""

from __future__ import annotations

import argparse
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio

from sparring.models.base import Model
from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import SimulatedScenario
from sparring.targets.scripted import ScriptedTarget


def _scenarios(count: int, turns: int) -> list[SimulatedScenario]:
    return [
        SimulatedScenario(
            id=f"conversation-{i}",
            persona="A customer in a hurry.",
            goal="Get a refund.",
            max_turns=turns,
            min_turns=turns,
            criteria=["The assistant apologises", "The assistant offers a refund"],
            restrictions=["The assistant asks for a card number"],
        )
        for i in range(count)
    ]


_SERVER = """
import json, sys, time
from sparring.models.scripted import example_for_schema
from tests.support.openai_server import Reply, ScriptedOpenAIServer
delay = float(sys.argv[1])
def answer(request):
    schema = request["response_format"]["json_schema"]["schema"]
    return Reply(json.dumps(example_for_schema(schema, text="Sorry about that")), delay_s=delay)
with ScriptedOpenAIServer([answer] * 1_000_000) as server:
    print(server.base_url, flush=True)
    sys.stdin.read()
"""


@contextlib.contextmanager
def _openai_server(latency_ms: float) -> Iterator[str]:
    root = Path(__file__).resolve().parent.parent
    with subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(latency_ms / 1000)],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdin is not None
        try:
            yield proc.stdout.readline().strip()
        finally:
            proc.stdin.close()


async def _bench(args: argparse.Namespace, model: Model) -> None:
    target = ScriptedTarget([lambda t: f"Sorry about that. Reply {len(t.messages)}."] * args.turns)
    scenarios = _scenarios(args.conversations, args.turns)
    settings = RunSettings(parallel=args.conversations)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = await run_scenarios(
        scenarios, targets=lambda s: target, user_model=model, judge_model=model, settings=settings
    )
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    await model.aclose()
    ideal = (args.turns + 1) * args.latency_ms / 1000
    statuses = {s.status for s in result.scenarios}
    total_calls = sum(t.usage.model_calls for s in result.scenarios for t in s.trials)
    calls = total_calls / args.conversations
    turns_run = sum(t.transcript.user_turns for s in result.scenarios for t in s.trials)
    print(
        f"conversations     {args.conversations} x {args.turns} turns, "
        f"model latency {args.latency_ms} ms via {'HTTP' if args.http else 'in-process'}, "
        f"statuses {sorted(statuses)}"
    )
    print(
        f"wall time         {wall:.3f} s  (ideal {ideal:.3f} s, ratio {wall / ideal:.3f}, bar 1.10)"
    )
    print(f"model calls/conv  {calls:.2f}  (turns + 1 = {args.turns + 1})")
    print(
        f"CPU time          {cpu:.3f} s total, {cpu / turns_run * 1e6:.0f} us per turn, "
        f"{cpu / total_calls * 1e6:.0f} us per model call (bar 1000 over HTTP)"
    )


def main() -> None:
    """Parse arguments and run the benchmark once."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument(
        "--http", action="store_true", help="reach the models through the openai SDK over HTTP"
    )
    args = parser.parse_args()
    if not args.http:
        model = ScriptedModel(
            handler=lambda _, schema: example_for_schema(schema or {}, text="Sorry about that"),
            latency_seconds=args.latency_ms / 1000,
            name="scripted-bench",
        )
        anyio.run(_bench, args, model)
        return
    from sparring.models.openai import OpenAIModel

    with _openai_server(args.latency_ms) as base_url:
        model = OpenAIModel(
            name="openai-compatible:bench", model="bench", base_url=base_url, api_key="bench"
        )
        anyio.run(_bench, args, model)


if __name__ == "__main__":
    main()
