"""`sparring doctor` on a website chat whose page does not load, or shows no chat it can
find, says so (not "the chat input was already showing")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from sparring.cli.main import cli
from sparring.demo.server import DemoServer

CHROMIUM = Path("/usr/bin/chromium")
Doctor = Callable[[str], tuple[int, str]]
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(), reason="needs Debian's chromium (apt-get install chromium)"
)


@pytest.fixture
def doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Doctor]:
    with DemoServer(port=0) as demo:
        monkeypatch.setenv("SPARRING_SITE_URL", demo.url)
        monkeypatch.setenv("SPARRING_ARTIFACTS_DIR", str(tmp_path / "art"))
        monkeypatch.chdir(tmp_path)

        def run(chat_url: str) -> tuple[int, str]:
            test = tmp_path / "chat.yaml"
            test.write_text(f"target: {{chat_url: {chat_url}, settle_s: 0.3, timeout_s: 3}}\n")
            done = CliRunner().invoke(cli, ["doctor", str(test)])
            return done.exit_code, done.output

        yield run


def test_a_page_answering_404_is_said_to_and_no_elements_are_listed(doctor: Doctor) -> None:
    code, output = doctor("/no-such-page")
    assert code == 3
    assert "/no-such-page (answered HTTP 404)" in output
    assert "Chat: not looked for: the page did not load" in output
    assert "already showing" not in output and "Input:" not in output
    assert "answered HTTP 404; check chat_url" in output


def test_a_page_without_a_chat_it_can_find_says_nothing_opened_one(doctor: Doctor) -> None:
    code, output = doctor("/shop/custom")
    assert code == 3
    assert "Opened with: nothing: no chat input showed" in output
    assert "Input: not found (the error below says what to do)" in output
    assert "already showing" not in output and "Send:" not in output
    assert "`chat_hint`" in output
