"""Build a `Target` from its spec (the `target:` of a test file).

Transports are leaves imported only here; `openai_chat`, `a2a`, `parlant` and `browser` are
imported lazily so their SDKs load only when a test uses them.
"""

from __future__ import annotations

from importlib import import_module
from typing import assert_never

import httpx

from sparring.secrets import Secrets
from sparring.target_specs import (
    A2ATargetSpec,
    BrowserTargetSpec,
    CallableTargetSpec,
    HttpTargetSpec,
    OpenAIChatTargetSpec,
    ParlantTargetSpec,
    VoiceTargetSpec,
)
from sparring.targets.base import Target

AnyTargetSpec = (
    HttpTargetSpec
    | OpenAIChatTargetSpec
    | CallableTargetSpec
    | A2ATargetSpec
    | ParlantTargetSpec
    | VoiceTargetSpec
    | BrowserTargetSpec
)


def build_target(spec: AnyTargetSpec, *, client: httpx.AsyncClient, secrets: Secrets) -> Target:
    """The target a spec describes.

    Args:
        spec: One of the `TargetSpec` union.
        client: The run's shared HTTP client (`follow_redirects=False`), for `http`.
        secrets: Fills `{{secrets.NAME}}` and scrubs values from errors.

    Raises:
        UserError: the spec cannot work: a response path that does not parse, an http
            target that never sends the user's message or has a header HTTP cannot carry,
            a callable ref that cannot be imported, a missing optional dependency.
    """
    match spec:
        case HttpTargetSpec():
            from sparring.targets.http import HttpTarget

            return HttpTarget(spec, client=client, secrets=secrets)
        case CallableTargetSpec():
            from sparring.targets.callable import CallableTarget, load_callable

            return CallableTarget(load_callable(spec.ref), name=spec.ref, timeout_s=spec.timeout_s)
        case OpenAIChatTargetSpec():
            module = import_module("sparring.targets.openai_chat")
            return module.OpenAIChatTarget(spec, secrets=secrets)
        case A2ATargetSpec():
            module = import_module("sparring.targets.a2a")
            return module.A2ATarget(spec, client=client, secrets=secrets)
        case ParlantTargetSpec():
            module = import_module("sparring.targets.parlant")
            return module.ParlantTarget(spec, client=client, secrets=secrets)
        case VoiceTargetSpec():
            module = import_module("sparring.targets.voice")
            return module.voice_target(spec)
        case BrowserTargetSpec():
            module = import_module("sparring.targets.browser")
            return module.BrowserTarget.from_settings(spec)
        case _:
            assert_never(spec)
