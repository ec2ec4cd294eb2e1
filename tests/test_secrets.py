"""Secrets: loading (env beats file), lookup errors, scrubbing and header masking."""

from pathlib import Path

import pytest

from sparring.errors import ConfigError, UserError
from sparring.secrets import Secrets, read_secrets_file


def test_file_is_parsed_and_env_wins(tmp_path: Path) -> None:
    path = tmp_path / ".secrets"
    path.write_text(
        "# bot credentials\n\nexport BOT_KEY=from-file\nQUOTED = \"a # b\"\n"
        "SINGLE='x y'\nTRAILING=value # note\n", encoding="utf-8")
    secrets = Secrets.load(env={"BOT_KEY": "from-env"}, file=path)
    assert secrets.get("BOT_KEY") == "from-env"
    assert secrets.get("QUOTED") == "a # b"
    assert secrets.get("SINGLE") == "x y"
    assert secrets.get("TRAILING") == "value"
    assert "SINGLE" in secrets and "NOPE" not in secrets


def test_load_reads_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARRING_TEST_SECRET", "s3cr3t-value")
    assert Secrets.load().get("SPARRING_TEST_SECRET") == "s3cr3t-value"


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "secrets.env"
    path.write_text("GOOD=1\nnot a pair\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_secrets_file(path)
    assert info.value.line == 2
    assert f"{path}:2" in str(info.value)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the secrets file"):
        Secrets.load(env={}, file=tmp_path / "absent.env")


def test_missing_secret_says_how_to_set_it(tmp_path: Path) -> None:
    path = tmp_path / "s.env"
    path.write_text("", encoding="utf-8")
    with pytest.raises(UserError) as info:
        Secrets.load(env={}, file=path).get("BOT_API_KEY")
    message = str(info.value)
    assert "BOT_API_KEY" in message and "export BOT_API_KEY=" in message and str(path) in message
    with pytest.raises(UserError, match="secrets file"):
        Secrets({}).get("BOT_API_KEY")


def test_scrub_masks_looked_up_and_file_values_only() -> None:
    secrets = Secrets({"USED": "tok-123", "UNUSED": "true"}, file_values={"FILE": "file-999"})
    assert secrets.scrub("tok-123 file-999 true") == "tok-123 *** true"
    secrets.get("USED")
    assert secrets.scrub("a tok-123 b file-999 true") == "a *** b *** true"
    assert secrets.scrub("") == ""


def test_scrub_masks_encoded_forms_and_overlapping_values() -> None:
    secrets = Secrets({"A": 'p&ss "word"', "B": "p&ss"})
    secrets.get("A")
    secrets.get("B")
    text = 'url?k=p%26ss%20%22word%22 json "p&ss \\"word\\"" plus p%26ss+%22word%22'
    assert secrets.scrub(text) == 'url?k=*** json "***" plus ***'
    assert secrets.scrub("just p&ss here") == "just *** here"


@pytest.mark.parametrize(("value", "shown"), [
    ("Hunter2@prod!", "http://bot:Hunter2%40prod!@host/"),  # userinfo: '@' encoded, '!' not
    ("ab c", "http://host/ab%20c/x"),                        # path: space encoded
    ("p/q r?s", "http://host/x?k=p/q%20r?s"),                # query: '/' and '?' kept
    ("a:b;c", "http://a%3Ab%3Bc@host/"),                     # username: ':' and ';' encoded
])
def test_scrub_masks_partially_url_encoded_forms(value: str, shown: str) -> None:
    secrets = Secrets({"T": value})
    secrets.get("T")
    assert "***" in secrets.scrub(shown)
    assert all(part not in secrets.scrub(shown) for part in ("Hunter2", "ab%20c", "r?s", "a%3A"))


def test_mask_headers() -> None:
    secrets = Secrets({"KEY": "abc123"})
    secrets.get("KEY")
    masked = secrets.mask_headers({
        "Authorization": "Bearer abc123", "X-API-Key": "abc123", "Cookie": "sid=1",
        "X-Session-Id": "s", "Accept": "application/json", "X-Trace": "id abc123",
        "Proxy-Authorization": "opaque",
    })
    assert masked == {
        "Authorization": "Bearer ***", "X-API-Key": "***", "Cookie": "***",
        "X-Session-Id": "***", "Accept": "application/json", "X-Trace": "id ***",
        "Proxy-Authorization": "***",
    }
