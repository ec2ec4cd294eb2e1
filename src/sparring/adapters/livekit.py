"""Import path of `sparring.targets.adapters.livekit.LiveKitAdapter` beside the other
framework adapters (extra `livekit`)."""

from sparring.targets.adapters.livekit import LiveKitAdapter

__all__ = ["LiveKitAdapter"]
