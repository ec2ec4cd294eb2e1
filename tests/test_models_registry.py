"""resolve_model: specs, environment, lazy provider import, helpful errors."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sparring.config import Settings
from sparring.errors import UserError
from sparring.models.base import Model
from sparring.models.openai import OpenAIModel
from sparring.models.pricing import Price, price_of
from sparring.models.registry import (
    OLLAMA_DEFAULT_URL,
    PROVIDERS,
    ModelOptions,
    model_from_settings,
    ollama_base_url,
    register_provider,
    resolve_model,
    split_model_spec,
)
from sparring.models.scripted import ScriptedModel
from tests.support.openai_server import Reply, ScriptedOpenAIServer

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST"):
        monkeypatch.delenv(name, raising=False)


def _openai(spec: str, **kwargs: object) -> OpenAIModel:
    model = resolve_model(spec, **kwargs)  # type: ignore[arg-type]
    assert isinstance(model, OpenAIModel)
    return model


def test_openai_uses_env_key_and_default_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    model = _openai("openai:gpt-4o-mini", timeout_s=30, max_retries=1)
    assert (model.name, model.model) == ("openai:gpt-4o-mini", "gpt-4o-mini")
    assert model.base_url == "https://api.openai.com/v1"
    assert (model.timeout_s, model.max_retries) == (30, 1)
    assert isinstance(model, Model)


def test_openai_honours_openai_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    model = _openai("openai:gpt-4o", api_key="sk-arg")
    assert model.base_url == "http://127.0.0.1:9/v1"


def test_openai_without_key_explains_what_to_do() -> None:
    with pytest.raises(UserError, match=r"export OPENAI_API_KEY=sk-\.\.\. \(or SPARRING_API_KEY"):
        resolve_model("openai:gpt-4o-mini")


def test_ollama_keeps_colons_in_the_name_and_needs_no_key() -> None:
    model = _openai("ollama:qwen2.5:7b")
    assert model.model == "qwen2.5:7b"
    assert model.name == "ollama:qwen2.5:7b"
    assert model.base_url == OLLAMA_DEFAULT_URL


def test_ollama_reads_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:8080")
    assert _openai("ollama:llama3").base_url == "http://gpu-box:8080/v1"
    assert _openai("ollama:llama3", base_url="http://x:1/v1").base_url == "http://x:1/v1"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434/v1"),
        ("", "http://localhost:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:11434", "http://127.0.0.1:11434/v1"),
        ("myhost", "http://myhost:11434/v1"),
        ("https://ollama.example.com", "https://ollama.example.com/v1"),
        (" myhost:1234 ", "http://myhost:1234/v1"),
        ("http://myhost:8080/", "http://myhost:8080/v1"),
        ("http://myhost:8080/v1", "http://myhost:8080/v1"),
        ("[::1]:5000", "http://[::1]:5000/v1"),
    ],
)
def test_ollama_base_url(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url


def test_openai_compatible_requires_base_url() -> None:
    with pytest.raises(UserError, match="needs a base_url"):
        resolve_model("openai-compatible:my-model")
    model = _openai("openai-compatible:my-model", base_url="http://127.0.0.1:9/v1")
    assert (model.model, model.base_url) == ("my-model", "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        (
            "opanai:gpt-4o",
            r"unknown model provider 'opanai' in model 'opanai:gpt-4o'.*Did you "
            r"mean 'openai:gpt-4o'\?",
        ),
        ("olama:qwen2.5:7b", r"Did you mean 'ollama:qwen2.5:7b'\?"),
        ("zzz:x", r"use one of: anthropic, local, ollama, openai, openai-compatible\.$"),
        ("gpt-4o-mini", r"not 'provider:name'; write e.g. 'openai:gpt-4o-mini'"),
        ("openai:", r"names no model"),
        (
            ":x",
            r"^model ':x' names no provider; write 'provider:name' with a provider from: "
            r"anthropic, local, ollama, openai, openai-compatible$",
        ),
        (" : ", r"names no provider"),
    ],
)
def test_bad_specs_are_user_errors(spec: str, pattern: str) -> None:
    with pytest.raises(UserError, match=pattern):
        resolve_model(spec)


def test_split_model_spec_keeps_colons_in_the_name() -> None:
    assert split_model_spec(" ollama:qwen2.5:7b ") == ("ollama", "qwen2.5:7b")


def test_a_price_for_an_unknown_provider_fails_when_models_are_resolved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", PROVIDERS["ollama"])  # registered by a plugin
    model_from_settings("ollama:m", Settings(prices={"fake:m": (1, 2)}))
    assert price_of("fake:m") == Price(1, 2)
    settings = Settings(prices={"olama:llama3": (0.2, 0.6)})
    with pytest.raises(
        UserError,
        match=r"unknown model provider 'olama' in "
        r"\[tool.sparring.prices\] key 'olama:llama3'.*Did you mean "
        r"'ollama:llama3'\?",
    ):
        model_from_settings("ollama:m", settings)


def test_register_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(PROVIDERS, "fake", PROVIDERS["openai"])
    seen: list[tuple[str, str, ModelOptions]] = []

    def loader(spec: str, name: str, options: ModelOptions) -> Model:
        seen.append((spec, name, options))
        return ScriptedModel(["hi"], name=spec)

    register_provider("fake", loader)
    model = resolve_model("fake:echo", timeout_s=5)
    assert model.name == "fake:echo"
    assert seen == [("fake:echo", "echo", ModelOptions(timeout_s=5))]


def test_importing_the_registry_does_not_import_the_sdk() -> None:
    code = (
        "import sys, sparring.models.registry, sparring.models.structured; "
        "print('openai' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


async def test_resolved_model_talks_to_the_endpoint() -> None:
    with ScriptedOpenAIServer([Reply("pong")]) as server:
        model = resolve_model("openai-compatible:m", base_url=server.base_url)
        try:
            completion = await model.complete([{"role": "user", "content": "ping"}], temperature=0)
        finally:
            await model.aclose()
    assert completion.text == "pong"
    assert server.headers[0]["authorization"] == "Bearer not-needed"
