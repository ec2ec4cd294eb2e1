"""Test files (YAML/JSON) -> scenarios, with errors at file:line:column; their JSON Schema.

from sparring.loaders import load_paths
scenarios = load_paths(["tests/conversations"], pattern="refund")
"""

from sparring.loaders.files import TEST_FILE_SUFFIXES, discover_files
from sparring.loaders.schema import test_file_json_schema
from sparring.loaders.yaml import load_paths, load_text

__all__ = [
    "TEST_FILE_SUFFIXES",
    "discover_files",
    "load_paths",
    "load_text",
    "test_file_json_schema",
]
