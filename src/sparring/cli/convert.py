"""`sparring convert`: pytest-agent-eval transcripts and Plainwright conversation tests
rewritten as native sparring YAML test files.

Each FILE becomes `DIR/<FILE's stem>.yaml`; the written text is loaded back before the
command ends, so what it writes passes the loader. Settings the source took from
`[tool.agent_eval]` (`threshold`, `runs`, `target`) are written into the scenario.
"""

from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import click

from sparring.errors import UserError

HEADER = "# Converted by `sparring convert` from {source}\n"


def convert_command(*, files: tuple[str, ...], out_dir: str, force: bool) -> int:
    """Convert every file, then write them all (none when any fails to convert).

    Returns:
        0 when every file was written.

    Raises:
        UserError: a file is missing or unreadable, two files would be written to the same
            name, a target file exists without `force`.
        ConfigError: a file is not another tool's test, or has a problem (at file:line).
    """
    from sparring.loaders.yaml import load_text

    directory = Path(out_dir)
    planned: dict[Path, tuple[str, str]] = {}
    for file in files:
        target = directory / f"{Path(file).stem}.yaml"
        if target in planned:
            raise UserError(
                f"{file} and {planned[target][0]} would both be written to {target}; "
                "convert them into different directories"
            )
        if target.exists() and not force:
            raise UserError(f"{target} exists; give --force to overwrite it")
        text = HEADER.format(source=file) + _converted(file)
        load_text(text, path=str(target))  # what is written must load
        planned[target] = (file, text)
    directory.mkdir(parents=True, exist_ok=True)
    for target, (file, text) in planned.items():
        target.write_text(text, encoding="utf-8")
        click.echo(f"{file} -> {target}")
    return 0


def _converted(file: str) -> str:
    """`file` (another tool's test) as native sparring YAML."""
    from sparring.loaders.dialects import native_documents

    path = Path(file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read {file!r}: {e}; give a YAML or JSON test file") from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        documents = native_documents(text, path=file)
    for w in caught:  # e.g. the [tool.agent_eval] note
        click.secho(f"note: {w.filename}:{w.lineno}: {w.message}", fg="yellow", err=True)
    return "---\n".join(dump_yaml(document) for document in documents)


def dump_yaml(document: Any) -> str:
    """`document` as block-style YAML (keys in their given order, lines up to 100 wide)."""
    from ruamel.yaml import YAML

    yaml = YAML(typ="safe", pure=True)
    yaml.default_flow_style = False
    yaml.sort_base_mapping_type_on_output = False  # pyright: ignore[reportAttributeAccessIssue]
    yaml.width = 100
    buffer = io.StringIO()
    yaml.dump(document, buffer)  # pyright: ignore[reportUnknownMemberType]
    return buffer.getvalue()
