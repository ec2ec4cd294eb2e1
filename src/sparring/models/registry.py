"""Resolve a model spec such as `openai:gpt-4o-mini` to a `Model`.

Providers are loaded lazily from a dict of loaders, so importing this module imports no
SDK; a provider's SDK is imported only when a model of that provider is resolved.

- `openai:NAME`: OpenAI, or `base_url` / `OPENAI_BASE_URL`; key from `api_key` or
  `OPENAI_API_KEY`, required.
- `ollama:NAME`: `base_url`, else `OLLAMA_HOST`, else http://localhost:11434/v1; no key.
- `openai-compatible:NAME`: `base_url` (or `OPENAI_BASE_URL`), required; key optional.
- `anthropic:NAME`: Anthropic, or `base_url` / `ANTHROPIC_BASE_URL`; key from `api_key` or
  `ANTHROPIC_API_KEY`, required (extra `anthropic`).
- `local:PATH.gguf`: a GGUF file run in this process by llama-cpp-python (extra `local`);
  no key, no URL.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Any

from sparring.errors import UserError
from sparring.models.base import Model

if TYPE_CHECKING:
    from sparring.config import Settings

OLLAMA_DEFAULT_URL = "http://localhost:11434/v1"
_NO_KEY = "not-needed"
"""Sent as the bearer key to servers that need none (the SDK insists on one)."""


@dataclass(frozen=True, slots=True)
class ModelOptions:
    """Connection settings passed to a provider loader (see `resolve_model`)."""

    base_url: str | None = None
    api_key: str | None = None
    timeout_s: float = 120
    max_retries: int = 4


ProviderLoader = Callable[[str, str, ModelOptions], Model]
"""`loader(spec, model_name, options) -> Model`; imports its SDK only when called."""


def _openai_class() -> Any:
    return import_module("sparring.models.openai").OpenAIModel


def _openai(spec: str, model: str, o: ModelOptions) -> Model:
    key = o.api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        raise UserError(
            f"model {spec!r} needs an OpenAI API key: export OPENAI_API_KEY=sk-... "
            "(or SPARRING_API_KEY, or api_key in sparring.toml). For a local "
            "server use 'ollama:NAME', or 'openai-compatible:NAME' with --base-url"
        )
    return _openai_class()(
        name=spec,
        model=model,
        api_key=key,
        base_url=o.base_url or os.environ.get("OPENAI_BASE_URL") or None,
        timeout_s=o.timeout_s,
        max_retries=o.max_retries,
    )


def ollama_base_url(host: str | None) -> str:
    """The OpenAI-compatible URL of an Ollama server given as `OLLAMA_HOST` would be.

    Read as Ollama reads it: `None` or empty -> http://localhost:11434/v1; a bare host
    (`myhost`, `0.0.0.0:8080`) gets `http://`, port 11434 unless given, and `/v1`; a URL
    (`https://ollama.example.com`) keeps its scheme's default port. `0.0.0.0` (a listen
    address) is dialled as 127.0.0.1.
    """
    if not host:
        return OLLAMA_DEFAULT_URL
    scheme, sep, rest = host.strip().partition("://")
    if not sep:  # like Ollama: a bare host gets port 11434, a URL its scheme's default
        scheme, rest = "http", scheme
    rest = rest.rstrip("/")
    hostport, slash, path = rest.partition("/")
    if not sep and ":" not in hostport.rpartition("]")[2]:
        hostport += ":11434"
    if hostport.startswith("0.0.0.0"):
        hostport = "127.0.0.1" + hostport[len("0.0.0.0") :]
    path = f"/{path}" if slash else ""
    if not path.endswith("/v1"):
        path += "/v1"
    return f"{scheme}://{hostport}{path}"


def _ollama(spec: str, model: str, o: ModelOptions) -> Model:
    base_url = o.base_url or ollama_base_url(os.environ.get("OLLAMA_HOST"))
    return _openai_class()(
        name=spec,
        model=model,
        base_url=base_url,
        api_key=o.api_key or _NO_KEY,
        timeout_s=o.timeout_s,
        max_retries=o.max_retries,
    )


def _compatible(spec: str, model: str, o: ModelOptions) -> Model:
    base_url = o.base_url or os.environ.get("OPENAI_BASE_URL")
    if not base_url:
        raise UserError(
            f"model {spec!r} needs a base_url, the endpoint root ending in /v1 "
            "(e.g. http://localhost:8000/v1): pass --base-url (or base_url in "
            "sparring.toml) or set OPENAI_BASE_URL"
        )
    key = o.api_key or os.environ.get("OPENAI_API_KEY") or _NO_KEY
    return _openai_class()(
        name=spec,
        model=model,
        base_url=base_url,
        api_key=key,
        timeout_s=o.timeout_s,
        max_retries=o.max_retries,
    )


def _anthropic(spec: str, model: str, o: ModelOptions) -> Model:
    cls = import_module("sparring.models.anthropic").AnthropicModel
    return cls(
        name=spec,
        model=model,
        base_url=o.base_url,
        api_key=o.api_key,
        timeout_s=o.timeout_s,
        max_retries=o.max_retries,
    )


def _local(spec: str, model: str, o: ModelOptions) -> Model:
    return import_module("sparring.models.local").LocalModel(name=spec, path=model)


_EXAMPLE_MODEL = {
    "openai": "gpt-4o-mini",
    "ollama": "qwen2.5:7b",
    "anthropic": "claude-haiku-4-5",
    "local": "models/qwen2.5-0.5b.gguf",
}

PROVIDERS: dict[str, ProviderLoader] = {
    "openai": _openai,
    "ollama": _ollama,
    "openai-compatible": _compatible,
    "anthropic": _anthropic,
    "local": _local,
}


def register_provider(name: str, loader: ProviderLoader) -> None:
    """Make `name:MODEL` specs resolve through `loader` (replacing any earlier one)."""
    PROVIDERS[name] = loader


def split_model_spec(spec: str, *, what: str = "model") -> tuple[str, str]:
    """`provider:name` -> `(provider, name)`, the provider one of `PROVIDERS`.

    Everything after the first `:` is the name, so names may contain colons. `what` names
    the spec in errors (`"model"`, `"[tool.sparring.prices] key"`).

    Raises:
        UserError: no `:` (a bare provider or a bare model name), an empty provider or
            name, or an unknown provider (with a did-you-mean).
    """
    provider, sep, name = spec.strip().partition(":")
    providers = ", ".join(sorted(PROVIDERS))
    if not sep and provider in PROVIDERS:
        raise UserError(
            f"{what} {spec!r} names no model; write '{provider}:MODEL', e.g. "
            f"'{provider}:{_EXAMPLE_MODEL.get(provider, 'my-model')}'"
        )
    if not sep:
        raise UserError(
            f"{what} {spec!r} is not 'provider:name'; write e.g. "
            f"'openai:{provider or 'gpt-4o-mini'}' or 'ollama:qwen2.5:7b'"
        )
    if not provider:
        raise UserError(
            f"{what} {spec!r} names no provider; write 'provider:name' with a "
            f"provider from: {providers}"
        )
    if provider not in PROVIDERS:
        close = difflib.get_close_matches(provider, PROVIDERS, n=1)
        hint = f" Did you mean '{close[0]}:{name}'?" if close else ""
        raise UserError(
            f"unknown model provider {provider!r} in {what} {spec!r}; use one of: "
            f"{providers}.{hint}"
        )
    if not name:
        raise UserError(
            f"{what} {spec!r} names no model; write e.g. "
            f"'{provider}:{_EXAMPLE_MODEL.get(provider, 'my-model')}'"
        )
    return provider, name


def resolve_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout_s: float = 120,
    max_retries: int = 4,
) -> Model:
    """Build the model a spec names, e.g. `openai:gpt-4o-mini` or `ollama:qwen2.5:7b`.

    Everything after the first `:` is the model name, so names may contain colons.

    Args:
        spec: `provider:name`, provider one of `PROVIDERS`.
        base_url: Endpoint root ending in `/v1` (overrides the provider's default).
        api_key: Bearer key (overrides the provider's environment variable).
        timeout_s: Limit for one HTTP attempt, in seconds.
        max_retries: Retries of a failed attempt (429, 5xx, timeouts).

    Raises:
        UserError: a spec `split_model_spec` rejects, a missing
            key / base_url / extra the provider needs, or a `local:` path that is not a
            GGUF file.
    """
    provider, name = split_model_spec(spec)
    options = ModelOptions(
        base_url=base_url, api_key=api_key, timeout_s=timeout_s, max_retries=max_retries
    )
    return PROVIDERS[provider](spec.strip(), name, options)


OWN_ENDPOINT_PROVIDERS = frozenset({"openai", "ollama", "anthropic", "local"})
"""Providers with an endpoint of their own (`OPENAI_BASE_URL`, `OLLAMA_HOST`,
`ANTHROPIC_BASE_URL`, a local file): the `base_url` setting, meant for `openai-compatible`
models, never redirects them."""


def model_from_settings(spec: str, settings: Settings) -> Model:
    """The model `spec` names, connected with the settings' `api_key`, model timeout and
    retries, and `base_url` unless its provider has an endpoint of its own
    (`OWN_ENDPOINT_PROVIDERS`); the settings' `prices` are applied first
    (`pricing.set_prices`).

    Raises:
        UserError: as `resolve_model`; a `prices` key whose provider is unknown (checked
            here, not when the settings are loaded, so providers registered by then count).
    """
    from sparring.models.pricing import set_prices

    for priced in settings.prices:
        split_model_spec(priced, what="[tool.sparring.prices] key")
    set_prices(settings.prices)
    own_endpoint = split_model_spec(spec)[0] in OWN_ENDPOINT_PROVIDERS
    return resolve_model(
        spec,
        base_url=None if own_endpoint else settings.base_url,
        api_key=settings.api_key,
        timeout_s=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )


def models_from_settings(settings: Settings) -> tuple[Model | None, Model | None]:
    """The simulated user's and the judge's model (`None` where none is configured); one
    object when both name the same spec.

    Raises:
        UserError: as `model_from_settings`.
    """
    user_spec, judge_spec = settings.resolved_user_model, settings.resolved_judge_model
    user = model_from_settings(user_spec, settings) if user_spec is not None else None
    if judge_spec == user_spec:
        return user, user
    return user, model_from_settings(judge_spec, settings) if judge_spec is not None else None
