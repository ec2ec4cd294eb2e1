"""The run history chart: a suite's pass rate over its runs, drawn on the server as SVG.

`history_chart` gives the geometry (no markup): the page's template draws it, so every
text in it is escaped like the rest of the page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sparring.store.reading import RunSummary

WIDTH = 480
HEIGHT = 140
_PAD = 24


@dataclass(frozen=True)
class ChartPoint:
    """One run on the chart: where (`x`, `y` in SVG units), its id, start and pass rate
    (0-1)."""

    x: float
    y: float
    run_id: str
    started_at: str
    pass_rate: float


@dataclass(frozen=True)
class HistoryChart:
    """The chart: `points` oldest run first (runs without a pass rate left out), `path`
    the polyline through them (`x,y x,y ...`), its size, and the y of 0% and 100%."""

    points: list[ChartPoint]
    path: str
    width: int = WIDTH
    height: int = HEIGHT
    y0: float = HEIGHT - _PAD
    y100: float = _PAD


def history_chart(runs: Sequence[RunSummary]) -> HistoryChart:
    """The pass-rate chart of `runs` (given newest first, as suites keep them)."""
    rated = [(r, r.pass_rate) for r in reversed(runs)]
    rated = [(r, rate) for r, rate in rated if rate is not None]
    span = WIDTH - 2 * _PAD
    step = span / (len(rated) - 1) if len(rated) > 1 else 0.0
    points = [
        ChartPoint(
            x=round(_PAD + (i * step if len(rated) > 1 else span / 2), 1),
            y=round(HEIGHT - _PAD - rate * (HEIGHT - 2 * _PAD), 1),
            run_id=run.id,
            started_at=run.started_at,
            pass_rate=rate,
        )
        for i, (run, rate) in enumerate(rated)
    ]
    return HistoryChart(points=points, path=" ".join(f"{p.x},{p.y}" for p in points))
