"""A bad argument of `@suite.scenario(...)` is reported at the decorator's file:line with
the name of the function it decorates."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from sparring import Suite
from sparring.errors import UserError
from sparring.loaders.python import load_suites

TEST_FILE = """\
from sparring import Suite

suite = Suite(target=lambda messages: "hi")


@suite.before_all
def hook():
    pass


@suite.scenario(
    {options}
)
async def test_booking(conversation):
    pass
"""


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ('trials={"min": 3, "max": "lots"}', "suite.scenario: trials {'min': 3, 'max': 'lots'}"),
        ("repetitions=3, trials=2", "suite.scenario: give trials= or repetitions=, not both"),
        ('tool_args_judge="x"', "suite.scenario: tool_args_judge must be a rubric"),
        ("explain_failures=1", "suite.scenario: explain_failures must be True or False"),
        ("threshold=8", "suite.scenario: threshold: threshold 8 is ambiguous"),
    ],
)
def test_a_bad_scenario_argument_names_the_function_at_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("test_s.py").write_text(TEST_FILE.format(options=options))
    with pytest.raises(UserError) as caught:
        load_suites([Path("test_s.py")])
    assert str(caught.value).startswith(f"test_s.py:11: test_booking: {message}")


def test_called_on_its_own_the_error_names_the_calling_line() -> None:
    line = inspect.currentframe().f_lineno + 2  # type: ignore[union-attr]
    with pytest.raises(UserError) as caught:
        Suite().scenario(threshold=8)
    assert str(caught.value).startswith(f"{__file__}:{line}: suite.scenario: threshold")
