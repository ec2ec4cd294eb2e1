"""Model prices: the built-in table, dated names, free local providers, user prices."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from sparring.config import load_settings
from sparring.demo.server import DemoServer
from sparring.errors import ConfigError, UserError
from sparring.models.base import ChatMessage, Completion
from sparring.models.pricing import Price, call_cost_usd, price_of, set_prices
from sparring.models.structured import complete_json
from sparring.results import Usage
from tests.support.openai_server import ScriptedOpenAIServer
from tests.test_cli import SUITE, sparring, valid_answer

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("spec", "price"),
    [
        ("openai:gpt-4o-mini", Price(0.15, 0.6)),
        ("openai:gpt-4o-mini-2024-07-18", Price(0.15, 0.6)),  # dated: same model
        ("openai:gpt-4o-2024-08-06", Price(2.5, 10)),  # not gpt-4o-mini's price
        ("openai:o3-mini", Price(1.1, 4.4)),
        ("anthropic:claude-sonnet-4-20250514", Price(3, 15)),
        ("anthropic:claude-3-5-haiku-latest", Price(0.8, 4)),
        ("anthropic:claude-opus-4-5", Price(5, 25)),
        ("ollama:qwen2.5:7b", Price(0, 0)),
        ("local:/models/smol.gguf", Price(0, 0)),
    ],
)
def test_known_models_have_prices(spec: str, price: Price) -> None:
    assert price_of(spec) == price


@pytest.mark.parametrize(
    "spec",
    [
        "openai:gpt-4o-mini-turbo",  # a variant the table does not know: no guess
        "anthropic:claude-opus-4-9",
        "openai-compatible:llama3",  # could be any hosted server
        "anthropic:gpt-4o",  # names are looked up under their own provider
        "scripted",
    ],
)
def test_unknown_models_have_no_price(spec: str) -> None:
    assert price_of(spec) is None


def test_user_prices_win_and_replace_earlier_ones() -> None:
    set_prices({"openai-compatible:llama3": (0.2, 0.6), "openai:gpt-4o-mini": [1, 2]})
    assert price_of("openai-compatible:llama3") == Price(0.2, 0.6)
    assert price_of("openai:gpt-4o-mini") == Price(1, 2)
    set_prices({})
    assert price_of("openai-compatible:llama3") is None
    assert price_of("openai:gpt-4o-mini") == Price(0.15, 0.6)


def test_negative_price_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"'openai:x' is negative.*\[0.15, 0.6\]"):
        set_prices({"openai:x": (-1, 2)})


def test_call_cost() -> None:
    assert call_cost_usd("openai:gpt-4o", input_tokens=1_000_000, output_tokens=100_000) == 3.5
    assert call_cost_usd("openai:gpt-4o", input_tokens=None, output_tokens=5) is None
    assert call_cost_usd("openai-compatible:x", input_tokens=5, output_tokens=5) is None
    assert call_cost_usd("ollama:llama3", input_tokens=None, output_tokens=None) == 0
    assert call_cost_usd("openai-compatible:x", input_tokens=0, output_tokens=0) == 0


class _TokenModel:
    """Answers `{}` and reports 1,000 input and 100 output tokens per call."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
    ) -> Completion:
        return Completion(text="{}", input_tokens=1000, output_tokens=100)

    async def aclose(self) -> None:
        pass


async def test_complete_json_adds_cost_of_priced_calls_and_counts_unpriced_ones() -> None:
    set_prices({"priced:m": (2.0, 8.0)})
    usage = Usage()
    for name in ("priced:m", "unpriced:m"):
        await complete_json(
            _TokenModel(name),
            [{"role": "user", "content": "hi"}],
            schema={"type": "object"},
            validate=dict,
            temperature=0,
            usage=usage,
        )
    assert usage == Usage(
        model_calls=2,
        input_tokens=2000,
        output_tokens=200,
        cost_usd=(1000 * 2.0 + 100 * 8.0) / 1_000_000,
        unpriced_calls=1,
    )


def test_prices_from_pyproject_and_their_errors(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.sparring.prices]\n"openai-compatible:llama3" = [0.2, 0.6]\n'
    )
    settings = load_settings({}, cwd=tmp_path, env={"SPARRING_PRICES": "ignored"})
    assert settings.prices == {"openai-compatible:llama3": (0.2, 0.6)}
    (tmp_path / "pyproject.toml").write_text('[tool.sparring.prices]\n"x:y" = [-1, 2]\n')
    with pytest.raises(
        ConfigError,
        match=r"prices \(from .*pyproject.toml\): price of 'x:y' "
        r"is \[-1, 2\], not two non-negative numbers \[input, output\]",
    ):
        load_settings({}, cwd=tmp_path, env={})


def test_a_cli_run_prices_calls_with_the_configured_prices(tmp_path: Path) -> None:
    with DemoServer(port=0) as demo, ScriptedOpenAIServer([valid_answer] * 4) as llm:
        demo.start()
        (tmp_path / "suite.yaml").write_text(SUITE.format(url=demo.url))
        (tmp_path / "sparring.toml").write_text('[prices]\n"openai-compatible:t" = [1, 2]\n')
        done = sparring(
            "run",
            "suite.yaml",
            "--model",
            "openai-compatible:t",
            "--base-url",
            llm.base_url,
            "--output",
            "r.json",
            cwd=tmp_path,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    totals = json.loads((tmp_path / "r.json").read_text())["usage_totals"]
    assert totals["model_calls"] == 4 and totals["unpriced_calls"] == 0
    assert totals["input_tokens"] > 0
    assert totals["cost_usd"] == pytest.approx(
        (totals["input_tokens"] * 1 + totals["output_tokens"] * 2) / 1_000_000
    )
    assert "usage: 4 model calls" in done.stdout
