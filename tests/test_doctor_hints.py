"""`sparring doctor` points at the `target:` it checked, proposes a `tool_calls_path` when
the body holds tool calls (issue 9, item 18), and never calls a Parlant preamble a reply
(item 20)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.parlant_server import Say, ScriptedParlantServer
from tests.test_doctor import Stage, diagnosis, doctor, stage, target_file

__all__ = ["stage"]  # the fixture, shared with test_doctor.py

SUITE = """\
# support agent
target: {{url: "{ok}", response_path: reply}}
scenarios:
  - id: greeting
    turns: [{{user: Hi, checks: [{{contains: Hi}}]}}]
  - id: other
    name: its own target
    target:
      url: "{broken}"
    turns: [{{user: Hi, checks: [{{contains: x}}]}}]
---
id: alone
target: {{url: "{broken}"}}
turns: [{{user: Hi, checks: [{{contains: x}}]}}]
"""


def test_doctor_cites_the_line_of_the_target_it_checked(tmp_path: Path, stage: Stage) -> None:
    ok = stage.route("/ok", 200, json.dumps({"reply": "Hi there"}))
    broken = stage.route("/broken", 500, '{"detail": "boom"}')
    file = tmp_path / "suite.yaml"
    file.write_text(SUITE.format(ok=ok, broken=broken), encoding="utf-8")
    shared = doctor(str(file), "--scenario", "greeting")
    assert shared.exit_code == 0, shared.output
    assert f"(target: {file}:2)" in shared.output  # the file's `target:`, not the scenario
    own = doctor(str(file), "--scenario", "other")
    assert own.exit_code == 3
    assert f"(target: {file}:8)" in own.output
    assert f"The target is at {file}:8." in diagnosis(own)  # where to apply the fix
    alone = doctor(str(file), "--scenario", "alone")
    assert f"(target: {file}:13)" in alone.output
    only = doctor(target_file(tmp_path, {"url": ok, "response_path": "reply"}))
    assert f"(target: {tmp_path / 'target.yaml'}:1)" in only.output
    assert "The target is at" not in only.output  # nothing to fix


def test_tool_calls_anywhere_in_the_body_get_a_tool_calls_path(
    tmp_path: Path, stage: Stage
) -> None:
    nested = stage.route(
        "/nested",
        200,
        json.dumps(
            {
                "reply": "Order 10234 has shipped.",
                "data": {"steps": [{"name": "lookup_order", "arguments": {"order_id": "10234"}}]},
            }
        ),
    )
    result = doctor(target_file(tmp_path, {"url": nested, "response_path": "reply"}))
    assert result.exit_code == 0, result.output
    found = diagnosis(result)
    assert "NOTE: tool calls found at `data.steps`, but the target does not read" in found
    assert "fix: add `tool_calls_path: data.steps` to the target" in found

    openai = stage.route(
        "/openai",
        200,
        json.dumps(
            {
                "choices": [
                    {
                        "message": {
                            "content": "Looking it up.",
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "lookup_order", "arguments": "{}"},
                                }
                            ],
                        }
                    }
                ]
            }
        ),
    )
    result = doctor(
        target_file(tmp_path, {"url": openai, "response_path": "choices.0.message.content"})
    )
    assert "add `tool_calls_path: choices[0].message.tool_calls`" in diagnosis(result)

    events = [{"delta": "Shipped."}, {"calls": [{"name": "lookup_order", "args": {"id": 1}}]}]
    streamed = stage.route(
        "/stream",
        200,
        "".join(f"data: {json.dumps(e)}\n\n" for e in events),
        content_type="text/event-stream",
    )
    result = doctor(target_file(tmp_path, {"url": streamed, "response_path": "delta"}))
    assert "NOTE: tool calls found at `calls`" in diagnosis(result)


def test_tool_calls_the_target_reads_get_no_note(tmp_path: Path, stage: Stage) -> None:
    url = stage.route(
        "/read", 200, json.dumps({"reply": "ok", "calls": [{"name": "x", "arguments": {}}]})
    )
    result = doctor(
        target_file(tmp_path, {"url": url, "response_path": "reply", "tool_calls_path": "calls"})
    )
    assert result.exit_code == 0
    assert "tool_calls_path" not in diagnosis(result)
    assert "Tool calls: x({})" in result.output


def test_a_parlant_preamble_is_not_called_a_reply(tmp_path: Path) -> None:
    with ScriptedParlantServer(
        [Say(preamble="Let me check that for you.")], agent_id="agent-1"
    ) as server:
        only = doctor(
            target_file(tmp_path, {"type": "parlant", "url": server.url, "agent_id": "agent-1"})
        )
    assert only.exit_code == 3, only.output
    found = diagnosis(only)
    assert (
        "PROBLEM: the agent sent only its preamble ('Let me check that for you.'), no answer"
        in found
    )
    assert "OK" not in found

    with ScriptedParlantServer(
        [Say("Order 10234 has shipped.", preamble="Let me check that for you.")]
    ) as server:
        both = doctor(
            target_file(tmp_path, {"type": "parlant", "url": server.url, "agent_id": "agent-1"})
        )
    assert both.exit_code == 0, both.output
    assert "Reply: 'Let me check that for you.\\nOrder 10234 has shipped.'" in both.output
    found = diagnosis(both)
    assert "NOTE: the reply starts with the agent's preamble ('Let me check that for you.')" in (
        found
    )
    assert "OK: the target answered with a reply" in found
