"""Browser screenshots where people look: the HTML report links each one (relative to the
report) with a thumbnail when the PNG sits next to the report or under `artifacts_dir`, and
`sparring show RUN --scenario X --trial N` lists them with the page URL."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from sparring.reports.html import write_html
from sparring.results import Artifact, RunResult, ScenarioResult, TrialResult
from sparring.transcript import Message, Transcript

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def run_with(*paths: Path) -> RunResult:
    trial = TrialResult(
        scenario_id="web",
        trial=1,
        status="failed",
        end_reason="max_turns",
        transcript=Transcript(
            messages=(Message(role="user", content="Hi"), Message(role="agent", content="Hello"))
        ),
        artifacts=[
            Artifact(kind="screenshot", path=str(p), turn=n, url="https://shop.example/help")
            for n, p in enumerate(paths, start=1)
        ],
        page_url="https://shop.example/help",
    )
    scenario = ScenarioResult(
        scenario_id="web", name="web", kind="scripted", threshold=1.0, trials=[trial]
    )
    return RunResult(
        sparring_version="0",
        run_id="r1",
        started_at="2026-01-01T00:00:00+00:00",
        scenarios=[scenario],
    )


def test_screenshots_are_links_with_thumbnails_only_from_the_report_or_artifacts_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    artifacts, elsewhere = tmp_path / "artifacts", tmp_path / "elsewhere"
    for folder in (tmp_path / "reports" / "shots", artifacts / "screenshots", elsewhere):
        folder.mkdir(parents=True)
    beside = tmp_path / "reports" / "shots" / "01-turn-1.png"
    stored = artifacts / "screenshots" / "02-turn-2.png"
    outside = elsewhere / "03-turn-3.png"
    not_png = artifacts / "screenshots" / "04-turn-4.png"
    for path in (beside, stored, outside):
        path.write_bytes(PNG)
    not_png.write_bytes(b"GIF89a not a png")
    monkeypatch.setenv("SPARRING_ARTIFACTS_DIR", str(artifacts))
    report = tmp_path / "reports" / "r.html"
    write_html(run_with(beside, stored, outside, not_png, tmp_path / "gone.png"), report)
    html = report.read_text(encoding="utf-8")
    links = (
        html.split('<div class="screenshots">')[1].split("</div>")[0].split('<a class="shot"')[1:]
    )
    assert [link.split('href="')[1].split('"')[0] for link in links] == [
        "shots/01-turn-1.png",
        "../artifacts/screenshots/02-turn-2.png",
        "../elsewhere/03-turn-3.png",
        "../artifacts/screenshots/04-turn-4.png",
        "../gone.png",
    ]
    thumbnail = f'<img src="data:image/png;base64,{base64.b64encode(PNG).decode()}"'
    assert [thumbnail in link for link in links] == [True, True, False, False, False]
    assert "screenshot after turn 2" in links[1] and "page https://shop.example/help" in html
    assert "default-src &#39;none&#39;" in html or "default-src 'none'" in html  # CSP kept


def test_show_lists_a_trials_page_url_and_screenshots(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from sparring.cli.main import cli
    from sparring.store.database import open_store
    from sparring.store.writer import RunWriter
    from tests.test_store import _record  # pyright: ignore[reportPrivateUsage]

    shot = tmp_path / "02-turn-2.png"
    finished = run_with(tmp_path / "01-turn-1.png", shot)
    planned = finished.model_copy(deep=True)
    planned.scenarios[0].trials.clear()
    url = f"sqlite:///{tmp_path}/s.db"
    store = open_store(url)
    writer = RunWriter(store)
    writer.start(planned, record=_record())
    writer.add(finished.scenarios[0].trials[0])
    writer.finish(finished, exit_code=1)
    store.close()
    args = ["show", "r1", "--scenario", "web", "--trial", "1", "--store", url]
    shown = CliRunner().invoke(cli, args)
    assert shown.exit_code == 0, shown.output
    assert "Page: https://shop.example/help" in shown.output
    assert f"Screenshot after turn 2: {shot}" in shown.output
