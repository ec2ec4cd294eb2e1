"""Secrets: loading (env beats file), lookup errors, scrubbing and header masking."""

from pathlib import Path

import pytest

from sparring.errors import ConfigError, UserError
from sparring.secrets import (
    MIN_SCRUB_CHARS,
    Scrubber,
    Secrets,
    mask_url,
    read_secrets_file,
    url_credentials,
)


def test_file_is_parsed_and_env_wins(tmp_path: Path) -> None:
    path = tmp_path / ".secrets"
    path.write_text(
        '# bot credentials\n\nexport BOT_KEY=from-file\nQUOTED = "a # b"\n'
        "SINGLE='x y'\nTRAILING=value # note\n",
        encoding="utf-8",
    )
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
    with pytest.raises(UserError, match="--secrets-file"):
        Secrets({}).get("BOT_API_KEY")


def test_only_values_looked_up_with_get_are_scrubbed(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("DEBUG=false\nSHOP=Northwind\nBOT_KEY=file-9999\n", encoding="utf-8")
    secrets = Secrets.load(env={"USED": "tok-123", "UNUSED": "true"}, file=path)
    report = '{"ok": false, "shop": "Northwind", "key": "file-9999", "t": "tok-123 true"}'
    assert secrets.scrub(report) == report  # nothing looked up yet: nothing masked
    secrets.get("USED")
    secrets.get("BOT_KEY")
    assert secrets.scrub(report) == (
        '{"ok": false, "shop": "Northwind", "key": "***", "t": "*** true"}'
    )
    assert secrets.scrub("") == ""


def test_values_shorter_than_four_characters_are_not_scrubbed() -> None:
    secrets = Secrets({"PIN": "123", "REGION": "eu", "CODE": "abcd"})
    assert (secrets.get("PIN"), secrets.get("REGION"), secrets.get("CODE")) == ("123", "eu", "abcd")
    assert MIN_SCRUB_CHARS == 4
    assert secrets.scrub("order 123 ships to eu, code abcd") == "order 123 ships to eu, code ***"


def test_excerpt_scrubs_before_cutting() -> None:
    secret = "sk-" + "x" * 30
    secrets = Secrets({"KEY": secret})
    secrets.get("KEY")
    text = "a" * 290 + secret + " tail"  # the secret straddles the 300-character cut
    excerpt = secrets.excerpt(text, 300)
    assert excerpt == "a" * 290 + "*** tail"
    assert secrets.scrub(text[:300]).endswith("sk-xxxxxxx")  # what cutting first would leak


@pytest.mark.parametrize("cut", [1, 5, 12, 20])
def test_truncated_excerpt_masks_a_secret_cut_off_at_the_end(cut: int) -> None:
    secrets = Secrets({"SHORT": "tok1", "LONG": "tok1-long-secret"})
    secrets.get("SHORT")
    secrets.get("LONG")
    start = ("x tok1 y tok1-long-secret " + "tok1-long-secret")[: 26 + cut]
    excerpt = secrets.excerpt(start, 300, truncated=True)
    assert excerpt.startswith("x *** y *** ") and "long" not in excerpt
    assert excerpt.endswith("***")
    assert secrets.excerpt("plain text", 4, truncated=True) == "plai"


def test_scrubber_with_extra_values_masks_them_with_the_secrets_in_one_pass() -> None:
    secrets = Secrets({"K": "sk-abc-extra"})
    scrubber = secrets.scrubber_with(["sk-abc", "ok"])
    assert scrubber.scrub("sk-abc-extra and sk-abc, ok") == "***-extra and ***, ok"
    secrets.get("K")  # looked up later: still covered, and the longer value masked whole
    assert scrubber.scrub("sk-abc-extra and sk-abc") == "*** and ***"
    assert secrets.scrub("sk-abc") == "sk-abc"  # the extra values stay out of `scrub`
    assert Scrubber(["pass%word"]).scrub("u=pass%25word") == "u=***"


@pytest.mark.parametrize(
    ("url", "shown", "found"),
    [
        (
            "http://admin:hunter2@127.0.0.1:8999/v1?api-key=TOPSECRET",
            "http://***@127.0.0.1:8999/v1?***",
            ["admin", "hunter2", "TOPSECRET"],
        ),
        ("https://api.example.com/v1", "https://api.example.com/v1", []),
        ("http://u:p%40ss@h/v1#frag", "http://***@h/v1#***", ["u", "p@ss", "frag"]),
        ("http://u:pa/ss@h/v1", "http://***@h/v1", ["u", "pa/ss"]),  # raw '/' in the password
    ],
)
def test_mask_url_and_url_credentials(url: str, shown: str, found: list[str]) -> None:
    assert mask_url(url) == shown
    assert url_credentials(url) == found


def test_scrub_masks_encoded_forms_and_overlapping_values() -> None:
    secrets = Secrets({"A": 'p&ss "word"', "B": "p&ss"})
    secrets.get("A")
    secrets.get("B")
    text = 'url?k=p%26ss%20%22word%22 json "p&ss \\"word\\"" plus p%26ss+%22word%22'
    assert secrets.scrub(text) == 'url?k=*** json "***" plus ***'
    assert secrets.scrub("just p&ss here") == "just *** here"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("Hunter2@prod!", "http://bot:Hunter2%40prod!@host/"),  # userinfo: '@' encoded, '!' not
        ("ab c", "http://host/ab%20c/x"),  # path: space encoded
        ("p/q r?s", "http://host/x?k=p/q%20r?s"),  # query: '/' and '?' kept
        ("a:b;c", "http://a%3Ab%3Bc@host/"),  # username: ':' and ';' encoded
    ],
)
def test_scrub_masks_partially_url_encoded_forms(value: str, shown: str) -> None:
    secrets = Secrets({"T": value})
    secrets.get("T")
    assert "***" in secrets.scrub(shown)
    assert all(part not in secrets.scrub(shown) for part in ("Hunter2", "ab%20c", "r?s", "a%3A"))
