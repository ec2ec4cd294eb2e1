"""Build labels.jsonl (the `sparring calibrate` example) from judge-triples.jsonl.

judge-triples.jsonl (in the team's shared external data) converts two MIT-licensed sources:
LLMBar (Zeng et al. 2023, princeton-nlp/LLMBar, MIT, Copyright 2023 Princeton NLP), whose
expert-curated pairwise labels give each output `met` (preferred) or `not_met`, and
tau-bench (sierra-research/tau-bench historical trajectories, MIT, Copyright 2024 Sierra),
whose environment reward gives each airline conversation `met` (reward 1) or `not_met`.
This script keeps a few short cases of each, in sparring's labels format:

    python examples/calibration/make_labels.py PATH/TO/judge-triples.jsonl
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

LLMBAR_PAIRS = 8
TAU_EACH = 3
TASK_DONE = (
    "The agent fully accomplishes what this customer wanted, exactly as the customer "
    "specified (no wrong or extra booking, cancellation or modification, all requested "
    "information given), or rightly refuses what the airline's policy forbids."
)


def main(source: Path, out: Path) -> None:
    rows = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    cases = _llmbar(rows) + _tau(rows)
    out.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    print(f"wrote {len(cases)} cases to {out}")


def _llmbar(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    pairs: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        if "pair_id" in row and len(json.dumps(row["transcript"])) < 1200:
            pairs.setdefault(row["pair_id"], []).append(row)
    natural = [p for k, p in pairs.items() if "Natural" in k and len(p) == 2]
    adversarial = [p for k, p in pairs.items() if "Adversarial" in k and len(p) == 2]
    chosen = natural[: LLMBAR_PAIRS // 2] + adversarial[: LLMBAR_PAIRS // 2]
    return [
        {
            "id": row["id"],
            "criterion_id": "follows_instruction",
            "criterion": row["criterion"],
            "label": "met" if row["verdict"] == "pass" else "not_met",
            "transcript": [{"role": m["role"], "content": m["content"]} for m in row["transcript"]],
            "source": "LLMBar (princeton-nlp/LLMBar, MIT)",
        }
        for pair in chosen
        for row in pair
    ]


def _tau(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tau = sorted((r for r in rows if "tau-bench" in r["source"]), key=lambda r: len(json.dumps(r)))
    picked = [r for r in tau if r["verdict"] == "pass"][:TAU_EACH]
    picked += [r for r in tau if r["verdict"] == "fail"][:TAU_EACH]
    return [
        {
            "id": row["id"],
            "criterion_id": "task_done",
            "criterion": TASK_DONE,
            "description": "An airline customer service chat. Customer goal: "
            + row["criterion"].split("Customer goal: ", 1)[1],
            "label": "met" if row["verdict"] == "pass" else "not_met",
            "transcript": _tau_messages(row["transcript"]),
            "source": "tau-bench (sierra-research/tau-bench, MIT)",
        }
        for row in picked
    ]


def _tau_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI-style messages -> sparring's: tool results go into the agent's tool calls."""
    out: list[dict[str, Any]] = []
    results = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    for m in messages:
        if m["role"] == "tool":
            continue
        message: dict[str, Any] = {
            "role": m["role"],
            "content": (m.get("content") or "").replace("###STOP###", "").strip(),
        }
        calls: list[dict[str, Any]] = m.get("tool_calls") or []
        if calls:
            message["tool_calls"] = [
                {
                    "name": c["function"]["name"],
                    "arguments": json.loads(c["function"]["arguments"]),
                    "result": results.get(c["id"]),
                }
                for c in calls
            ]
        out.append(message)
    return out


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(__file__).with_name("labels.jsonl"))
