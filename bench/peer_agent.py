"""The peer workload's agent under test: answers at once, the same text every turn."""

from mock_model import AGENT_REPLY


def respond(history: list[dict[str, str]]) -> str:
    """The `callable` target of bench/peer_workload.yaml."""
    return AGENT_REPLY
