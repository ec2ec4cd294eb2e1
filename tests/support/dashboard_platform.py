"""The platform side of the dashboard tests: a scripted simulated user and judge for suite
runs, the seed's assets, and the dashboard served for a browser (uvicorn in a thread)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import Any

from fastapi.testclient import TestClient

from sparring.dashboard.app import create_app
from sparring.dashboard.origins import allowed_hosts
from sparring.dashboard.runs import SuiteRunner
from sparring.dashboard.state import Dashboard
from sparring.models.base import ChatMessage
from sparring.models.scripted import ScriptedModel
from sparring.runner import RunSettings
from sparring.store.database import Store
from tests.support.judging import agent_quote

OPENING = "My order 10234 has not arrived yet."
EVALUATION: dict[str, Any] = {
    "description": "Did the agent say where the order is?",
    "prompt": "Assess the assistant: did it say where the order is and when it arrives?",
    "insights": [
        {"name": "located", "type": "boolean", "pass_when": True},
        {"name": "tone", "type": "score", "description": "How polite, 0-1"},
    ],
}
USER: dict[str, Any] = {
    "job_title": "Customer",
    "description": "A customer whose parcel is late",
    "system_prompt": 'Open the conversation by saying: "My order 10234 has not arrived yet."',
    "mode": "text",
    "evaluations": [],
}


class PlatformModels:
    """One scripted model playing both sides: the simulated user says `OPENING`, then ends
    (goal achieved) once the agent answered; the judge gives insight `located` true when
    the agent's last reply names a delivery date, `tone` 0.9, and every criterion met,
    quoting the reply. Each answer waits `latency_seconds` (a run can then be caught In
    progress)."""

    def __init__(self, *, latency_seconds: float = 0.0) -> None:
        self.latency_seconds = latency_seconds

    def __call__(self) -> tuple[ScriptedModel, ScriptedModel]:
        model = ScriptedModel(handler=self.answer, latency_seconds=self.latency_seconds)
        return model, model

    def answer(self, messages: Sequence[ChatMessage], schema: dict[str, Any] | None) -> Any:
        properties = (schema or {}).get("properties", {})
        if "done_reason" in properties:
            answered = any("Northwind" in str(m["content"]) for m in messages)
            if answered:
                return {"message": "", "done": True, "done_reason": "goal_achieved"}
            return {"message": OPENING, "done": False, "done_reason": None}
        quote = agent_quote(messages)
        insights = {
            name: {
                "reasoning": f"The user said: {quote}",
                "evidence": [quote],
                "turns": [1],
                "value": ("delivery" in quote.lower()) if name.endswith("located") else 0.9,
            }
            for name in properties.get("insights", {}).get("properties", {})
        }
        verdicts = {
            i: {"reason": "It said so.", "evidence": [quote], "turns": [1], "verdict": "met"}
            for i in properties.get("verdicts", {}).get("required", [])
        }
        return {"replies": {}, "insights": insights, "verdicts": verdicts}


def platform_dashboard(
    store: Store, *, local_owner: bool = True, latency_seconds: float = 0.0
) -> Dashboard:
    """A dashboard over `store` whose suite runs use `PlatformModels`."""
    runner = SuiteRunner(
        store=store,
        models=PlatformModels(latency_seconds=latency_seconds),
        settings=RunSettings(parallel=2),
    )
    return Dashboard(store=store, local_owner=local_owner, runner=runner)


LOCAL = "http://127.0.0.1:8790"
"""Where the test client's dashboard is said to be served (its `Host`)."""


def dashboard_client(dashboard: Dashboard) -> TestClient:
    """A test client of `dashboard` as `sparring serve` serves it on 127.0.0.1:8790 (its
    Host and Origin checks on); use it as a context manager to run its lifespan."""
    return TestClient(create_app(dashboard, hosts=allowed_hosts("127.0.0.1", 8790)), LOCAL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(dashboard: Dashboard) -> Generator[str]:
    """`dashboard` served by uvicorn on a free loopback port (in a thread) while inside;
    yields its base URL. The port is bound here and the socket handed to uvicorn, so no
    other process (another test worker) can take it in between."""
    import uvicorn

    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        port = listening.getsockname()[1]
        config = uvicorn.Config(
            create_app(dashboard, hosts=allowed_hosts("127.0.0.1", port)),
            log_level="warning",
            lifespan="on",
        )
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, args=([listening],), daemon=True)
        thread.start()
        deadline = time.monotonic() + 60
        while not server.started:
            assert time.monotonic() < deadline and thread.is_alive(), "the dashboard did not start"
            time.sleep(0.05)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True
            thread.join(timeout=20)
