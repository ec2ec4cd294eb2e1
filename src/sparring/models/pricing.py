"""What a model call costs: USD per million input / output tokens, by model spec.

`price_of("openai:gpt-4o-mini")` looks the spec up in this order:

1. prices the user set (`[tool.sparring.prices]` or `[prices]` in sparring.toml, keyed by
   the exact spec, e.g. `"openai-compatible:llama3" = [0.2, 0.6]`), registered for the
   process with `set_prices`;
2. `ollama:` and `local:` models run on your own machine: free;
3. the built-in table of common OpenAI and Anthropic models (list prices, standard tier,
   no caching or batch discounts), matched exactly or with a date / `-latest` suffix
   (`gpt-4o-mini-2024-07-18`, `claude-3-5-haiku-latest`);
4. anything else (other providers, new model versions) has no known price: `None`. A
   stale table must not guess, so `claude-opus-4-9` is not priced as `claude-opus-4`.

Prices change; check them against the provider's price page and set your own where they
differ.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sparring.errors import UserError


@dataclass(frozen=True, slots=True)
class Price:
    """USD per million tokens, for input (prompt) and output (completion) tokens."""

    input_usd_per_mtok: float
    output_usd_per_mtok: float

    def cost_usd(self, *, input_tokens: int, output_tokens: int) -> float:
        """The cost in USD of one call with these token counts."""
        return (
            input_tokens * self.input_usd_per_mtok + output_tokens * self.output_usd_per_mtok
        ) / 1_000_000


FREE = Price(0, 0)
FREE_PROVIDERS = frozenset({"ollama", "local"})
"""Providers whose models run on your own hardware; their calls cost nothing."""

BUILTIN_PRICES: dict[str, dict[str, Price]] = {
    "openai": {
        "gpt-5": Price(1.25, 10),
        "gpt-5-mini": Price(0.25, 2),
        "gpt-5-nano": Price(0.05, 0.4),
        "gpt-4.1": Price(2, 8),
        "gpt-4.1-mini": Price(0.4, 1.6),
        "gpt-4.1-nano": Price(0.1, 0.4),
        "gpt-4o": Price(2.5, 10),
        "gpt-4o-mini": Price(0.15, 0.6),
        "gpt-4-turbo": Price(10, 30),
        "gpt-4": Price(30, 60),
        "gpt-3.5-turbo": Price(0.5, 1.5),
        "o1": Price(15, 60),
        "o1-mini": Price(1.1, 4.4),
        "o3": Price(2, 8),
        "o3-mini": Price(1.1, 4.4),
        "o4-mini": Price(1.1, 4.4),
    },
    "anthropic": {
        "claude-opus-4-5": Price(5, 25),
        "claude-opus-4-1": Price(15, 75),
        "claude-opus-4": Price(15, 75),
        "claude-sonnet-4-5": Price(3, 15),
        "claude-sonnet-4": Price(3, 15),
        "claude-haiku-4-5": Price(1, 5),
        "claude-3-7-sonnet": Price(3, 15),
        "claude-3-5-sonnet": Price(3, 15),
        "claude-3-5-haiku": Price(0.8, 4),
        "claude-3-opus": Price(15, 75),
        "claude-3-haiku": Price(0.25, 1.25),
    },
}
"""List prices in USD per million tokens, by provider and model name."""

_DATED = re.compile(r"(.+?)-(?:\d{8}|\d{4}-\d{2}-\d{2}|latest)")
"""A table name followed by a date or `-latest`: still that model."""

_user_prices: dict[str, Price] = {}


def set_prices(prices: Mapping[str, Price | tuple[float, float]]) -> None:
    """Use these prices (spec -> price, or `[input, output]` USD per million tokens) for the
    rest of the process, in place of any set before. They win over the built-in table.

    Raises:
        UserError: a price is negative.
    """
    parsed = {
        spec.strip(): price if isinstance(price, Price) else Price(*price)
        for spec, price in prices.items()
    }
    for spec, price in parsed.items():
        if price.input_usd_per_mtok < 0 or price.output_usd_per_mtok < 0:
            raise UserError(
                f"price of {spec!r} is negative; give [input, output] in USD per "
                "million tokens, e.g. [0.15, 0.6]"
            )
    _user_prices.clear()
    _user_prices.update(parsed)


def price_of(spec: str) -> Price | None:
    """The price of the model `spec` (`provider:name`), or `None` when it is unknown (see the
    module docstring for the order of lookups)."""
    spec = spec.strip()
    if spec in _user_prices:
        return _user_prices[spec]
    provider, _, name = spec.partition(":")
    if provider in FREE_PROVIDERS:
        return FREE
    table = BUILTIN_PRICES.get(provider, {})
    if name in table:
        return table[name]
    dated = _DATED.fullmatch(name)
    return table.get(dated.group(1)) if dated else None


def call_cost_usd(
    spec: str, *, input_tokens: int | None, output_tokens: int | None
) -> float | None:
    """The cost in USD of one call of model `spec`; `None` when the model's price is unknown,
    or when a token count the price needs was not reported. A call that used no tokens costs
    0 whatever the model."""
    if input_tokens == 0 and output_tokens == 0:
        return 0.0
    price = price_of(spec)
    if price is None:
        return None
    if price == FREE:
        return 0.0
    if input_tokens is None or output_tokens is None:
        return None
    return price.cost_usd(input_tokens=input_tokens, output_tokens=output_tokens)
