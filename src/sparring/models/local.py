"""`LocalModel`: a GGUF model file run in this process by llama-cpp-python (`local:PATH`).

A leaf provider: only `sparring.models.registry` imports it, and llama-cpp-python (extra
`local`) is imported only when a local model is made. The model is loaded when the first
`LocalModel` of its file is made (before a run starts: llama silences the process's stdout
and stderr while it loads, which would swallow the lines of a live view), once per process
per file and options, and shared by every `LocalModel` of that file.

llama runs one completion at a time: each loaded model has one daemon thread that runs its
completions in the order they were asked for. A caller that is cancelled (a conversation
timeout, Ctrl-C, SIGTERM) leaves the queue at once; if its completion is already running,
the caller stops waiting for it and its answer is dropped, and since the thread is a daemon
a running completion never keeps the process alive.

The prompt is formatted with the chat template stored in the GGUF file. A JSON schema
becomes a llama grammar (`response_format = json_object` with the schema), so the answer
can only be JSON of that shape (llama falls back to any JSON for schemas its grammar
converter does not support).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from importlib import import_module
from pathlib import Path
from typing import Any, cast

from sparring.errors import ModelError, UserError
from sparring.models._llama_worker import LlamaWorker
from sparring.models.base import ChatMessage, Completion

DEFAULT_CONTEXT_TOKENS = 8192
DEFAULT_MAX_TOKENS = 2048
_GET_ONE = (
    "download one, e.g. `huggingface-cli download Qwen/Qwen2.5-0.5B-Instruct-GGUF "
    "qwen2.5-0.5b-instruct-q4_k_m.gguf --local-dir models` and use "
    "'local:models/qwen2.5-0.5b-instruct-q4_k_m.gguf'"
)


_LOADED: dict[tuple[str, tuple[tuple[str, Any], ...]], LlamaWorker] = {}
"""The loaded models, each behind the one thread that runs its completions."""
_LOADING = threading.Lock()


class LocalModel:
    """A GGUF model file as sparring's model, run locally by llama-cpp-python.

    Args:
        name: The spec shown in reports, e.g. `local:models/qwen2.5-0.5b.gguf`.
        path: The `.gguf` file; `~` is expanded, relative paths are from the current
            directory.
        context_tokens: llama's context window (`n_ctx`) in tokens; prompt and answer must
            fit in it.
        max_tokens: Most tokens one answer may have.
        llama_options: More keyword arguments for `llama_cpp.Llama` (e.g. `n_gpu_layers`,
            `n_threads`); models with other options are loaded separately.

    Raises:
        UserError: the file is missing or not a GGUF file (says how to get one),
            llama-cpp-python is not installed (says how to install it), or llama could not
            load the file.
    """

    def __init__(
        self,
        *,
        name: str,
        path: str,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        llama_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.name, self.max_tokens = name, max_tokens
        self.path = _checked_gguf(name, Path(path).expanduser())
        options = {"n_ctx": context_tokens, "verbose": False, **(llama_options or {})}
        self._key = (str(self.path.resolve()), tuple(sorted(options.items())))
        self._worker = self._load()

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        json_schema: dict[str, Any] | None = None,
        schema_name: str = "answer",
        seed: int | None = None,
    ) -> Completion:
        """One chat completion with the GGUF's chat template, on the model's thread after
        the calls queued before it; `seed` is llama's sampling seed.

        Cancelling the caller leaves the queue at once (a completion already running is
        not waited for).

        Returns:
            The answer's text and llama's token counts.

        Raises:
            ModelError: the completion failed (e.g. the prompt does not fit in
                `context_tokens`); the message says what to do.
        """
        request: dict[str, Any] = {
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
            "max_tokens": self.max_tokens,
        }
        if json_schema is not None:
            request["response_format"] = {"type": "json_object", "schema": json_schema}
        if seed is not None:
            request["seed"] = seed
        try:
            answer: Any = await self._worker.run(request)
        except (ValueError, RuntimeError) as e:
            raise ModelError(
                f"{self.name}: the completion failed: {e}. If the prompt is too "
                "long for the context window, give a larger context_tokens or "
                "lower the judge/user character limits"
            ) from e
        message: dict[str, Any] = answer["choices"][0]["message"]
        usage: dict[str, Any] = answer.get("usage") or {}
        return Completion(
            text=cast(str, message.get("content") or ""),
            input_tokens=usage.get("prompt_tokens"),
            output_tokens=usage.get("completion_tokens"),
        )

    def _load(self) -> LlamaWorker:
        with _LOADING:
            worker = _LOADED.get(self._key)
            if worker is None:
                llama_cpp = _import_llama(self.name)
                try:
                    llama = llama_cpp.Llama(model_path=self._key[0], **dict(self._key[1]))
                except (ValueError, RuntimeError) as e:
                    raise UserError(
                        f"model {self.name!r}: llama could not load {self.path} ({e}); "
                        "check that the file is complete and that this "
                        "llama-cpp-python supports its architecture"
                    ) from e
                worker = _LOADED[self._key] = LlamaWorker(
                    lambda request: llama.create_chat_completion(**request),
                    name=f"sparring llama {self.path.name}",
                )
        return worker

    async def aclose(self) -> None:
        """Nothing to release: the loaded model stays in memory for the process, shared
        by every `LocalModel` of the same file."""


def _checked_gguf(name: str, path: Path) -> Path:
    """`path` if it is a GGUF file (magic bytes `GGUF`).

    Raises:
        UserError: no such file, not a file, unreadable, or not a GGUF file.
    """
    if not path.is_file():
        what = "is a directory" if path.is_dir() else "does not exist"
        raise UserError(
            f"model {name!r}: {str(path)!r} {what}; 'local:PATH' needs a .gguf "
            f"model file: {_GET_ONE}"
        )
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise UserError(f"model {name!r}: cannot read {str(path)!r} ({e.strerror})") from None
    if magic != b"GGUF":
        raise UserError(
            f"model {name!r}: {str(path)!r} is not a GGUF file (it starts with "
            f"{magic!r}, not b'GGUF'); convert it with llama.cpp's "
            f"convert_hf_to_gguf.py, or {_GET_ONE}"
        )
    return path


def _import_llama(name: str) -> Any:
    """The `llama_cpp` module.

    Raises:
        UserError: llama-cpp-python is not installed; says how to install it.
    """
    try:
        return import_module("llama_cpp")
    except ImportError as e:
        raise UserError(
            f"model {name!r} runs on llama-cpp-python, which is not installed "
            f'({e}): pip install "sparring[local]" (it builds llama.cpp from '
            "source, which takes a few minutes)"
        ) from e
