"""Benchmark: N simulated conversations against an in-process target and a slow scripted model.

Prints wall time against the ideal (turns + 1) x latency (every conversation runs at once,
so the ideal is one conversation's chain of model calls), model calls per conversation and
CPU time per turn. The bar: wall time within 1.10 x the ideal.

    python bench/run_bench.py [--conversations 100] [--turns 5] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import time

import anyio

from sparring.models.scripted import ScriptedModel, example_for_schema
from sparring.runner import RunSettings, run_scenarios
from sparring.scenario import SimulatedScenario
from sparring.targets.scripted import ScriptedTarget


def _scenarios(count: int, turns: int) -> list[SimulatedScenario]:
    return [SimulatedScenario(
        id=f"conversation-{i}", persona="A customer in a hurry.", goal="Get a refund.",
        max_turns=turns, min_turns=turns,
        criteria=["The assistant apologises", "The assistant offers a refund"],
        restrictions=["The assistant asks for a card number"]) for i in range(count)]


async def _bench(args: argparse.Namespace) -> None:
    model = ScriptedModel(handler=lambda messages, schema: example_for_schema(schema or {}),
                          latency_seconds=args.latency_ms / 1000, name="scripted-bench")
    target = ScriptedTarget([lambda t: f"Sorry about that. Reply {len(t.messages)}."]
                            * args.turns)
    scenarios = _scenarios(args.conversations, args.turns)
    settings = RunSettings(parallel=args.conversations)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = await run_scenarios(scenarios, targets=lambda s: target, user_model=model,
                                 judge_model=model, settings=settings)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    ideal = (args.turns + 1) * args.latency_ms / 1000
    statuses = {s.status for s in result.scenarios}
    calls = len(model.calls) / args.conversations
    turns_run = sum(t.transcript.user_turns for s in result.scenarios for t in s.trials)
    print(f"conversations     {args.conversations} x {args.turns} turns, "
          f"model latency {args.latency_ms} ms, statuses {sorted(statuses)}")
    print(f"wall time         {wall:.3f} s  (ideal {ideal:.3f} s, ratio {wall / ideal:.3f}, "
          f"bar 1.10)")
    print(f"model calls/conv  {calls:.2f}  (turns + 1 = {args.turns + 1})")
    print(f"CPU time          {cpu:.3f} s total, {cpu / turns_run * 1e6:.0f} us per turn")


def main() -> None:
    """Parse arguments and run the benchmark once."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--latency-ms", type=float, default=200)
    anyio.run(_bench, parser.parse_args())


if __name__ == "__main__":
    main()
