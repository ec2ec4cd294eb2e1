"""A bundled demo agent (a support bot for the fictional shop Northwind Outfitters).

`respond(history)` is the agent as a pure function (`agent.chat` in the shape of a callable
target); `DemoServer` / `serve` put it behind HTTP (`/chat`, `/chat/stream`,
`/v1/chat/completions`, A2A at `/a2a`, Parlant's session API at `/agents` and `/sessions`)
for the example suite in `examples/`.
Run it with `python -m sparring.demo.server --port 8787`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sparring.demo.agent import ORDERS, TODAY, DemoReply, Order, respond

if TYPE_CHECKING:
    from sparring.demo.server import DemoServer, serve

__all__ = ["ORDERS", "TODAY", "DemoReply", "DemoServer", "Order", "respond", "serve"]


def __getattr__(name: str) -> Any:
    # The server is imported on first use, so `python -m sparring.demo.server` runs cleanly.
    if name in ("DemoServer", "serve"):
        from sparring.demo import server

        return getattr(server, name)
    raise AttributeError(f"module 'sparring.demo' has no attribute {name!r}")
