"""Test files of other tools, read as sparring scenarios: recognised by their shape.

- pytest-agent-eval YAML transcripts (`sparring.loaders.dialects.agent_eval`)
- Plainwright conversation-test JSON files (`sparring.loaders.dialects.plainwright`)

`to_native` turns such a document into the native test-file data the loader validates, with
the positions of what the author wrote, so every error still names the file's own line.
What sparring reads differently from the other tool (a setting taken from elsewhere, a key
not used) is said in a `DialectNote` warning at the file's line.
"""

from __future__ import annotations

from typing import Any

from sparring.loaders._parse import Document, is_mapping, parse_documents
from sparring.loaders.dialects import agent_eval, plainwright
from sparring.loaders.dialects._common import DialectNote
from sparring.loaders.errors import Problem, config_error

__all__ = ["DialectNote", "dialect_of", "native_documents", "to_native"]


def dialect_of(doc: Document) -> str | None:
    """`"pytest-agent-eval"`, `"plainwright"`, or None for a native (or unknown) document."""
    data = doc.data
    if not is_mapping(data):
        return None
    if plainwright.recognises(data):
        return "plainwright"
    if agent_eval.recognises(data):
        return "pytest-agent-eval"
    return None


def to_native(doc: Document, *, path: str) -> tuple[Document, list[Problem]]:
    """`doc` as native sparring test-file data when it is another tool's test, else as is.

    Returns:
        The (possibly rewritten) document and the problems found reading the dialect, each at
        `path:line:column`; when there are problems, the document is `doc` unchanged.
    """
    dialect = dialect_of(doc)
    if dialect == "plainwright":
        return plainwright.to_native(doc, path=path)
    if dialect == "pytest-agent-eval":
        return agent_eval.to_native(doc, path=path)
    return doc, []


def native_documents(text: str, *, path: str) -> list[dict[str, Any]]:
    """Each document of another tool's test file (given as text) as native test-file data.

    Raises:
        ConfigError: the text is not YAML/JSON, a document is not a test of a known dialect
            (a native sparring file is not converted), or a dialect problem; every problem at
            `path:line:column`.
    """
    problems: list[Problem] = []
    out: list[dict[str, Any]] = []
    for doc in parse_documents(text, path=path):
        if doc.data is None:
            continue
        if dialect_of(doc) is None:
            problems.append(
                Problem(
                    path,
                    *doc.position(()),
                    "not a pytest-agent-eval transcript (`turns:` with `expect:`) or a "
                    "Plainwright conversation test (`config:`); a sparring test file needs no "
                    "converting",
                )
            )
            continue
        native, trouble = to_native(doc, path=path)
        problems += trouble
        out.append(native.data)
    if problems or not out:
        raise config_error(problems or [Problem(path, None, None, "the file is empty")])
    return out
