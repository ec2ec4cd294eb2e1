"""Files the loader is pointed at that would hang it or fill its memory are refused before
they are read: `cases_from:` a pipe, a device or a file over `MAX_ROWS_FILE_BYTES` (at the
test file's line), and a YAML/JSON test file over `MAX_TEST_FILE_BYTES`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sparring.errors import ConfigError, UserError
from sparring.loaders import load_paths
from sparring.loaders.case_files import MAX_ROWS_FILE_BYTES
from sparring.loaders.files import MAX_TEST_FILE_BYTES
from tests.test_cli import sparring

SUITE = """target: {url: 'http://127.0.0.1:9/chat'}
scenarios:
  - id: r
    prompt: 'order {{vars.order}}'
    should: answer
    cases_from: rows.csv
"""


def _suite(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "suite.yaml").write_text(SUITE)
    return tmp_path / "suite.yaml"


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_cases_from_a_pipe_or_a_device_is_an_error_at_its_line_even_with_list(
    tmp_path: Path, kind: str
) -> None:
    suite = _suite(tmp_path)
    if kind == "fifo":
        os.mkfifo(tmp_path / "rows.csv")  # reading it would wait for a writer forever
    else:
        (tmp_path / "rows.csv").symlink_to("/dev/zero")  # reading it would never end
    listed = sparring("run", "suite.yaml", "--list", cwd=tmp_path)  # subprocess: cannot hang
    assert listed.returncode == 2, listed.stdout + listed.stderr
    assert f"{suite}:6:" in listed.stderr or "suite.yaml:6:" in listed.stderr
    assert "rows.csv" in listed.stderr and "is not a file; name a file (a .csv" in listed.stderr


def test_a_rows_file_over_the_limit_is_an_error_naming_the_limit(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    with (tmp_path / "rows.csv").open("wb") as rows:
        rows.truncate(MAX_ROWS_FILE_BYTES + 1)  # sparse: nothing on disk
    with pytest.raises(ConfigError) as caught:
        load_paths([suite])
    message = str(caught.value)
    assert f"{suite}:6:" in message
    assert f"over the {MAX_ROWS_FILE_BYTES:,}-byte limit for a rows file" in message


def test_a_test_file_over_the_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    with big.open("wb") as file:
        file.truncate(MAX_TEST_FILE_BYTES + 1)  # sparse NULs: parsing them took minutes
    with pytest.raises(UserError) as caught:
        load_paths([big])
    message = str(caught.value)
    assert str(big) in message and f"{MAX_TEST_FILE_BYTES + 1:,} bytes" in message
    assert f"over the {MAX_TEST_FILE_BYTES:,}-byte limit for a test file" in message


def test_a_test_file_that_is_a_device_is_refused(tmp_path: Path) -> None:
    zero = tmp_path / "zero.yaml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(UserError, match="is not a file; name a file"):
        load_paths([zero])
