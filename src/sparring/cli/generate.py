"""`sparring generate`: write a test file of scenarios from requirements, an agent's
configuration or existing tests (the model writes them; `sparring.generate`).

Every generated scenario is loaded back with the test-file loader before anything is
written; one that does not load, or that nearly repeats another (or a scenario of a
`--from` test file), is dropped with a note. The file is never overwritten without
`--force`. Imports only click at start-up.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from sparring.generate.scenarios import GenerateKind
    from sparring.generate.sources import Source

_NO_MODEL = (
    "sparring generate needs a model to write scenarios; give --model SPEC (e.g. "
    "openai:gpt-4o-mini, with OPENAI_API_KEY set) or set `user_model` in sparring.toml"
)
_KINDS = ("simulated", "scripted", "single_turn")
_EXISTS = "{output} exists; give --force to overwrite it, or another -o FILE"


@click.command(epilog="Exit codes: 0 written, 1 no usable scenario, 2 usage error.")
@click.option(
    "--from",
    "sources",
    multiple=True,
    required=True,
    type=click.Path(),
    metavar="FILE",
    help="Requirements (.md/.txt), a system prompt, Parlant guidelines/journeys or "
    "tools (.json/.yaml), or a test file to vary. Repeat for several.",
)
@click.option("--kind", type=click.Choice(_KINDS), default="simulated", show_default=True)
@click.option("--count", "-n", type=click.IntRange(1, 50), default=5, show_default=True)
@click.option("--model", "-m", metavar="SPEC", help="Model that writes the scenarios.")
@click.option("--base-url", metavar="URL", help="Endpoint of an openai-compatible: model.")
@click.option(
    "--target",
    metavar="URL|FILE",
    help="The agent the tests talk to: a URL (http target) or a YAML file with `target:` "
    "(default: the target of a --from test file).",
)
@click.option("--output", "-o", required=True, type=click.Path(), help="The YAML file to write.")
@click.option("--force", is_flag=True, help="Overwrite the output file.")
def generate(**options: Any) -> None:
    """Write test scenarios with a model from requirements, agent config or tests.

    Example: sparring generate --from docs/refunds.md --kind scripted -n 8 -o tests/gen.yaml
    """
    sys.exit(generate_command(**options))


def generate_command(
    *,
    sources: tuple[str, ...],
    kind: GenerateKind,
    count: int,
    model: str | None,
    base_url: str | None,
    target: str | None,
    output: str,
    force: bool,
) -> int:
    """Body of `sparring generate`; returns the exit code.

    Raises:
        UserError: output exists without `force`, a source cannot be read, no target, no
            model (says how to configure one).
        ModelError / ModelOutputError: the model call failed or answered twice unusably.
    """
    import anyio

    from sparring.errors import UserError
    from sparring.generate.sources import read_sources

    out = Path(output)
    if out.exists() and not force:
        raise UserError(_EXISTS.format(output=output))
    read = read_sources(list(sources))
    target_spec = _target(target, read)
    answers = anyio.run(_ask, {"user_model": model, "base_url": base_url}, read, kind, count)
    text, notes = _written(answers, read, kind=kind, count=count, target=target_spec, out=out)
    for note in notes:
        click.secho(f"note: {note}", fg="yellow", err=True)
    if text is None:
        click.echo("No usable scenario was generated; nothing written.", err=True)
        return 1
    out.parent.mkdir(parents=True, exist_ok=True)
    try:  # exclusive when not forcing: a file made meanwhile is not overwritten either
        with out.open("w" if force else "x", encoding="utf-8") as file:
            file.write(text)
    except FileExistsError:
        raise UserError(_EXISTS.format(output=output)) from None
    click.echo(f"Wrote {output}. Review it, then: sparring run {output}")
    return 0


async def _ask(
    options: dict[str, str | None], sources: list[Source], kind: GenerateKind, count: int
) -> list[dict[str, Any]]:
    from sparring.config import load_settings
    from sparring.errors import UserError
    from sparring.generate.scenarios import generate_scenarios
    from sparring.models.registry import model_from_settings

    settings = load_settings({k: v for k, v in options.items() if v})
    chosen = settings.resolved_user_model
    if not chosen:
        raise UserError(_NO_MODEL)
    writer = model_from_settings(chosen, settings)
    try:
        return await generate_scenarios(writer, sources, kind=kind, count=count)
    finally:
        await writer.aclose()


def _target(given: str | None, sources: list[Source]) -> dict[str, Any]:
    """The `target:` mapping of the written file."""
    from sparring.errors import UserError

    if given and "://" in given:
        return {"url": given}
    if given:
        from sparring.generate.sources import target_mapping
        from sparring.loaders.target_file import load_target

        spec, _ = load_target(given, scenario_id=None)
        return target_mapping(spec)
    for source in sources:
        if source.target is not None:
            return source.target
    raise UserError(
        "the generated tests need a target: give --target URL (e.g. "
        "http://127.0.0.1:8787/chat) or --target FILE (a YAML file with `target:`)"
    )


def _written(
    answers: list[dict[str, Any]],
    sources: list[Source],
    *,
    kind: GenerateKind,
    count: int,
    target: dict[str, Any],
    out: Path,
) -> tuple[str | None, list[str]]:
    """The file's text (None when nothing is usable) and a note per dropped scenario.

    Each kept scenario is tagged `source:FILE` with the `--from` file it came from (every
    one when the model named none of them), so the tag is in the results and reports."""
    from sparring.cli.convert import dump_yaml
    from sparring.generate.scenarios import key_words, native, near_duplicate

    seen = [
        (f"{example.get('id', '?')!r} of {s.path}", key_words(example))
        for s in sources
        for example in s.examples
    ]
    known = [s.path for s in sources]
    taken: set[str] = set()
    kept: list[dict[str, Any]] = []
    notes: list[str] = []
    for answer in answers:
        if len(kept) == count:
            break
        scenario = native(answer, kind, taken)
        words = key_words(scenario)
        label = _label(scenario)
        same = next((name for name, other in seen if near_duplicate(words, [other])), None)
        if same is not None:
            notes.append(f"dropped {label}: nearly the same as {same}")
            continue
        problem = _load_problem(target, scenario, out)
        if problem:
            notes.append(f"dropped {label}: it would not load: {problem}")
            continue
        seen.append((f"{scenario['id']!r}", words))
        origin = str(answer.get("source") or "")
        scenario["tags"] = [f"source:{p}" for p in ([origin] if origin in known else known)]
        kept.append(scenario)
    if not kept:
        return None, notes
    head = f"# Generated by `sparring generate` from {', '.join(known)}\n"
    return head + dump_yaml({"target": target, "scenarios": kept}), notes


def _label(scenario: dict[str, Any]) -> str:
    """`'late-refund' ("Late refund")`: a generated scenario's id and name, for notes."""
    name = scenario.get("name")
    return f"{scenario['id']!r}" + (f" ({name!r})" if name and name != scenario["id"] else "")


def _load_problem(target: dict[str, Any], scenario: dict[str, Any], out: Path) -> str | None:
    """Why `scenario` would not load (the loader's first problem, about the scenario rather
    than a place in a file), or None."""
    from sparring.cli.convert import dump_yaml
    from sparring.errors import ConfigError
    from sparring.loaders.yaml import load_text

    text = dump_yaml({"target": target, "scenarios": [scenario]})
    try:
        load_text(text, path=str(out))
    except ConfigError as e:
        first = e.message.splitlines()[0].strip()
        first = re.sub(r"^scenarios\[0\](?: \([^)]*\))?: ", "", first)
        return first.replace("scenarios[0].", "").replace("scenarios[0]", "the scenario")
    return None
