"""`ReplayModel`: a Model (sparring.models.base) answered from a cassette, or recorded into
one, or both (`sparring.runner.replay`).

The request key is the masked chat messages with the call's parameters: temperature, JSON
schema and its name. The seed is kept with the request but is not part of the key: it is
the same for every judge call where the provider takes one, and a replayed role's model,
never built, cannot say whether it does. A replayed answer made no request and is counted
with no tokens, so a replayed run costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from sparring.errors import ModelError
from sparring.models.base import ChatMessage, Completion, Model, sends_seed
from sparring.runner.replay_cassettes import Tape, TrialKey, request_key
from sparring.transcript import valid_text

ModelSource = Model | Callable[[], Model] | None
"""The live model: built already, built on first use (so a replayed role needs no API key
until something misses), or none configured."""


class ReplayModel:
    """`tape`'s role played from its cassette, else by the live model (see the module).

    Args:
        tape: The role's cassettes and whether a miss is an error.
        live: The model that answers misses (see `ModelSource`); its owner closes it.
        name: The spec shown in reports (the live model's, else the recorded one's).
        scrub: Masks secrets in requests and answers.
    """

    def __init__(
        self, tape: Tape, live: ModelSource, *, name: str, scrub: Callable[[str], str]
    ) -> None:
        self.tape, self.name, self._scrub = tape, name, scrub
        self._live, self._built = (live, None) if callable(live) else (None, live)
        self.sends_seed = self._built is None or sends_seed(self._built)
        self.max_tokens: Any = getattr(self._built, "max_tokens", None)

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """The recorded answer to this request, else the live model's (recorded when
        recording).

        Raises:
            ModelError: the recorded call failed (as recorded), a miss under `strict` or
                with no live model (naming the role and the request), or the live call failed.
        """
        request = {
            "messages": [
                {"role": m["role"], "content": self._scrub(valid_text(m["content"]))}
                for m in messages
            ],
            "temperature": temperature,
            "json_schema": json_schema,
            "schema_name": schema_name,
        }
        key = request_key(request)  # the seed is the provider's (`sends_seed`), not the ask's
        request["seed"] = seed
        at, seq, entry = self.tape.ask(key)
        if entry is not None:
            self.tape.keep_replayed(at, seq, entry)
            return _replayed(entry)
        live = self._model(key, at, messages)
        try:
            completion = await live.complete(
                messages,
                temperature=temperature,
                json_schema=json_schema,
                schema_name=schema_name,
                seed=seed,
            )
        except ModelError as e:
            self.tape.keep(key, at, seq, {"model": self.name, "request": request, "error": str(e)})
            raise
        answer = {
            "text": self._scrub(valid_text(completion.text)),
            "input_tokens": completion.input_tokens,
            "output_tokens": completion.output_tokens,
        }
        self.tape.keep(key, at, seq, {"model": self.name, "request": request, "answer": answer})
        return completion

    def _model(self, key: str, at: TrialKey | None, messages: Sequence[ChatMessage]) -> Model:
        """The live model for a request the cassette does not answer.

        Raises:
            ModelError: `strict`, or no model is configured for the role.
        """
        if self.tape.source is not None and self.tape.strict:
            raise ModelError(self.tape.miss(key, at, _asked(messages, self._scrub)), requests=0)
        if self._built is None and self._live is not None:
            self._built = self._live()
        if self._built is None:
            why = self.tape.miss(key, at, _asked(messages, self._scrub))
            raise ModelError(f"{why}; no {self.tape.role} model is configured", requests=0)
        return self._built

    async def aclose(self) -> None:
        """Nothing to release: the live model's owner closes it."""


def _asked(messages: Sequence[ChatMessage], scrub: Callable[[str], str]) -> str:
    """What was asked, for a miss: the end of the last prompt message."""
    last = scrub(messages[-1]["content"]) if messages else ""
    tail = " ".join(last.split())[-160:]
    return f"the prompt ending {tail!r}"


def _replayed(entry: dict[str, Any]) -> Completion:
    """The recorded answer as a Completion that sent no request and used no tokens.

    Raises:
        ModelError: the recorded call failed, or the entry holds no answer.
    """
    if "error" in entry:
        raise ModelError(str(entry["error"]), requests=0)
    answer: Any = entry.get("answer")
    text: Any = cast(dict[str, Any], answer).get("text") if isinstance(answer, dict) else None
    if not isinstance(text, str):
        raise ModelError(
            f"replay: the recorded answer for request {str(entry.get('key'))[:12]} has no "
            "`answer.text`; the cassette is damaged, record it again",
            requests=0,
        )
    return Completion(text=text, input_tokens=0, output_tokens=0, requests=0)
