"""Test files of other tools, read as sparring scenarios: recognised by their shape.

- pytest-agent-eval YAML transcripts (`sparring.loaders.dialects.agent_eval`)
- Plainwright conversation-test JSON files (`sparring.loaders.dialects.plainwright`)

`to_native` turns such a document into the native test-file data the loader validates, with
the positions of what the author wrote, so every error still names the file's own line.
"""

from __future__ import annotations

from sparring.loaders._parse import Document, is_mapping
from sparring.loaders.dialects import agent_eval, plainwright
from sparring.loaders.errors import Problem

__all__ = ["dialect_of", "to_native"]


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
