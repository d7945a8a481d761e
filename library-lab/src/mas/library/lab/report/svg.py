"""Small SVG charts written by hand: lines, scatter with error bars, grouped bars.

No plotting dependency. Each data series is one ``<g class="series" data-series="…">``
element (reference lines such as a context window are ``class="reference"``, a Pareto front
``class="pareto"``), so a test or a script can count and read them. A degraded flavour's
series carries ``data-degraded="true"``, is drawn dashed and hollow, and says so in the
legend. Charts scale to the width of the page (``width="100%"`` over a fixed viewBox).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from html import escape

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")
WIDTH, HEIGHT = 960, 400
LEFT, RIGHT, TOP, BOTTOM = 72, 170, 36, 66


@dataclass
class Series:
    """One named series.

    :ivar points: (x, y) in data units, drawn as a line (``line_chart``) or dots (``scatter``).
    :ivar markers: points highlighted with a ring (e.g. compactions).
    :ivar errors: (x, low, high) vertical error bars.
    :ivar x_errors: (y, low, high) horizontal error bars.
    :ivar segments: more lines of the same series (one per session), drawn thin.
    :ivar band: (x, low, high) a shaded band around the line (e.g. the interquartile range).
    :ivar degraded: the flavour had degraded sessions: drawn dashed and hollow, named so.
    """

    name: str
    points: list[tuple[float, float]]
    markers: list[tuple[float, float]] = field(default_factory=list)
    errors: list[tuple[float, float, float]] = field(default_factory=list)
    x_errors: list[tuple[float, float, float]] = field(default_factory=list)
    segments: list[list[tuple[float, float]]] = field(default_factory=list)
    band: list[tuple[float, float, float]] = field(default_factory=list)
    degraded: bool = False


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """About ``count`` round tick values covering [low, high]."""
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    start, end = math.floor(low / step) * step, math.ceil(high / step) * step
    ticks = []
    value = start
    while value <= end + step * 1e-9:
        ticks.append(round(value, 10))
        value += step
    return ticks


def _label(value: float) -> str:
    if abs(value) >= 1000:
        return f"{value / 1000:g}k"
    return f"{value:g}"


class _Frame:
    """Maps data to pixels and draws the axes."""

    def __init__(self, xs: Sequence[float], ys: Sequence[float], *, y_zero: bool = True,
                 x_zero: bool = False, y_range: tuple[float, float] | None = None) -> None:
        x_low, x_high = (min(xs), max(xs)) if xs else (0.0, 1.0)
        y_low, y_high = (min(ys), max(ys)) if ys else (0.0, 1.0)
        if y_zero:
            y_low = min(0.0, y_low)
        if x_zero:
            x_low = min(0.0, x_low)
        if x_high == x_low:
            x_low, x_high = x_low - 1, x_high + 1
        self.x_ticks = nice_ticks(x_low, x_high)
        # A fixed range (a share: 0 to 1) is drawn as it is, never padded past its ends.
        self.y_ticks = nice_ticks(*y_range) if y_range else \
            nice_ticks(y_low, y_high * 1.05 if y_high > 0 else y_high + 1)
        self.x0, self.x1 = self.x_ticks[0], self.x_ticks[-1]
        self.y0, self.y1 = self.y_ticks[0], self.y_ticks[-1]

    def x(self, value: float) -> float:
        """Pixel x of a data x."""
        span = (self.x1 - self.x0) or 1
        return LEFT + (value - self.x0) / span * (WIDTH - LEFT - RIGHT)

    def y(self, value: float) -> float:
        """Pixel y of a data y."""
        span = (self.y1 - self.y0) or 1
        return HEIGHT - BOTTOM - (value - self.y0) / span * (HEIGHT - TOP - BOTTOM)

    def axes(self, x_label: str, y_label: str, *, x_ticks: bool = True) -> list[str]:
        """Axes, grid lines, tick labels and axis titles."""
        base, right = HEIGHT - BOTTOM, WIDTH - RIGHT
        parts = [f'<line x1="{LEFT}" y1="{base}" x2="{right}" y2="{base}" stroke="#333"/>',
                 f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{base}" stroke="#333"/>']
        for tick in self.y_ticks:
            y = self.y(tick)
            parts.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{right}" y2="{y:.1f}" '
                         'stroke="#eee"/>')
            parts.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                         f'{_label(tick)}</text>')
        if x_ticks:
            for tick in self.x_ticks:
                x = self.x(tick)
                parts.append(f'<text x="{x:.1f}" y="{base + 16}" text-anchor="middle">'
                             f'{_label(tick)}</text>')
        parts.append(f'<text x="{(LEFT + right) / 2}" y="{HEIGHT - 6}" text-anchor="middle">'
                     f'{escape(x_label)}</text>')
        parts.append(f'<text transform="translate(16 {(TOP + base) / 2}) rotate(-90)" '
                     f'text-anchor="middle">{escape(y_label)}</text>')
        return parts


def _group(name: str, degraded: bool) -> str:
    """The opening tag of one series' group."""
    flag = ' data-degraded="true"' if degraded else ""
    return f'<g class="series" data-series="{escape(name)}"{flag}>'


def _document(title: str, body: list[str], legend: list[tuple[str, str, bool]]) -> str:
    items = []
    for i, (name, color, degraded) in enumerate(legend):
        # a degraded entry takes a second line for its "(degraded)"
        y = TOP + 8 + i * 18 + 14 * sum(1 for _, _, d in legend[:i] if d)
        fill = f'fill="none" stroke="{color}" stroke-dasharray="3 2"' if degraded \
            else f'fill="{color}"'
        note = (f'<text x="{WIDTH - RIGHT + 32}" y="{y + 13}" fill="#b42318">(degraded)</text>'
                if degraded else "")
        items.append(f'<rect x="{WIDTH - RIGHT + 14}" y="{y - 9}" width="12" height="12" '
                     f'{fill}/><text x="{WIDTH - RIGHT + 32}" y="{y + 1}">'
                     f'{escape(name)}</text>{note}')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="100%" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">'
            f'<title>{escape(title)}</title>'
            f'<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{escape(title)}</text>'
            + "".join(body) + "".join(items) + "</svg>\n")


def line_chart(title: str, x_label: str, y_label: str, series: list[Series], *,
               references: Sequence[tuple[str, float]] = (), scatter: bool = False,
               y_range: tuple[float, float] | None = None, x_zero: bool = False,
               labels: bool = False, front: Sequence[tuple[float, float]] = ()) -> str:
    """Lines (or dots, with ``scatter``) per series, ringed markers, error bars, bands,
    reference lines.

    :param y_range: fixed y axis (e.g. ``(0, 1)`` for a share) instead of one fitted to the data.
    :param x_zero: start the x axis at 0 (a cost axis), not at the smallest value.
    :param labels: write each scatter dot's series name beside it.
    :param front: points of a Pareto front, joined by a dashed step line (``class="pareto"``).
    """
    lines = [p for s in series for p in [s.points, *s.segments]]
    xs = [x for points in lines for x, _ in points]
    xs += [v for s in series for _, low, high in s.x_errors for v in (low, high)]
    ys = [y for points in lines for _, y in points] + [v for _, v in references]
    ys += [v for s in series for _, low, high in s.errors for v in (low, high)]
    ys += [v for s in series for _, low, high in s.band for v in (low, high)]
    if labels and xs:
        xs.append(max(xs) * 1.15)  # room for the name written right of the last dot
    frame = _Frame(xs, ys, y_range=y_range, x_zero=x_zero)
    body = frame.axes(x_label, y_label)
    for name, value in references:
        y = frame.y(value)
        body.append(f'<g class="reference" data-reference="{escape(name)}">'
                    f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" '
                    f'stroke="#999" stroke-dasharray="6 4"/>'
                    f'<text x="{WIDTH - RIGHT - 4}" y="{y - 4:.1f}" text-anchor="end" fill="#666">'
                    f'{escape(name)}</text></g>')
    if len(front) > 1:
        steps = [front[0]]
        for x, y in front[1:]:
            steps.extend([(x, steps[-1][1]), (x, y)])
        path = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in steps)
        body.append(f'<g class="pareto"><polyline fill="none" stroke="#222" '
                    f'stroke-dasharray="5 3" stroke-width="2" points="{path}"/></g>')
    legend = []
    for i, s in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        legend.append((s.name, color, s.degraded))
        dash = ' stroke-dasharray="5 3"' if s.degraded else ""
        parts = [_group(s.name, s.degraded)]
        if s.band:
            edge = [*((x, high) for x, _, high in s.band), *((x, low) for x, low, _ in
                                                            reversed(s.band))]
            path = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in edge)
            parts.append(f'<polygon class="band" fill="{color}" fill-opacity="0.16" '
                         f'stroke="none" points="{path}"/>')
        for segment in s.segments:
            path = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in segment)
            parts.append(f'<polyline class="segment" fill="none" stroke="{color}" '
                         f'stroke-width="1" stroke-opacity="0.55" points="{path}"/>')
        if not scatter and len(s.points) > 1:
            path = " ".join(f"{frame.x(x):.1f},{frame.y(y):.1f}" for x, y in s.points)
            parts.append(f'<polyline class="median" fill="none" stroke="{color}" '
                         f'stroke-width="2"{dash} points="{path}"/>')
        for x, low, high in s.errors:
            px = frame.x(x)
            parts.append(f'<line class="error" x1="{px:.1f}" y1="{frame.y(low):.1f}" '
                         f'x2="{px:.1f}" y2="{frame.y(high):.1f}" stroke="{color}" '
                         f'stroke-width="1.5"{dash}/>')
        for y, low, high in s.x_errors:
            py = frame.y(y)
            parts.append(f'<line class="x-error" x1="{frame.x(low):.1f}" y1="{py:.1f}" '
                         f'x2="{frame.x(high):.1f}" y2="{py:.1f}" stroke="{color}" '
                         f'stroke-width="1.5"{dash}/>')
        radius = 5 if scatter else 1.8
        fill = f'fill="#fff" stroke="{color}" stroke-width="1.5"' if s.degraded \
            else f'fill="{color}"'
        for x, y in s.points:
            parts.append(f'<circle cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" r="{radius}" '
                         f'{fill}/>')
        # Many sessions' markers (a band's) stay small and faint, so the median reads.
        ring = 'r="2.5" stroke-opacity="0.55"' if s.segments or s.band else 'r="5"'
        for x, y in s.markers:
            parts.append(f'<circle class="marker" cx="{frame.x(x):.1f}" cy="{frame.y(y):.1f}" '
                         f'{ring} fill="none" stroke="{color}" stroke-width="1.2"/>')
        if scatter and labels:
            for x, y in s.points:
                parts.append(f'<text x="{frame.x(x) + 8:.1f}" y="{frame.y(y) - 6:.1f}" '
                             f'fill="{color}">{escape(s.name)}</text>')
        parts.append("</g>")
        body.extend(parts)
    return _document(title, body, legend)


def bar_chart(title: str, x_label: str, y_label: str, categories: list[str],
              series: list[tuple[str, list[float]]], *, degraded: Collection[str] = ()) -> str:
    """Grouped bars: one group per category, one bar per series (``degraded``: series names
    drawn hatched-out: hollow bars with a dashed outline)."""
    values = [v for _, vs in series for v in vs]
    frame = _Frame([0.0, float(max(1, len(categories)))], values or [0.0])
    frame.x0, frame.x1 = 0.0, float(max(1, len(categories)))
    body = frame.axes(x_label, y_label, x_ticks=False)
    group = (WIDTH - LEFT - RIGHT) / max(1, len(categories))
    bar = group * 0.8 / max(1, len(series))
    for c, category in enumerate(categories):
        x = LEFT + c * group + group / 2
        y = HEIGHT - BOTTOM + 14
        body.append(f'<text x="{x:.1f}" y="{y}" text-anchor="end" font-size="9" '
                    f'transform="rotate(-30 {x:.1f} {y})">{escape(category)}</text>')
    legend = []
    for i, (name, vs) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        bad = name in degraded
        legend.append((name, color, bad))
        parts = [_group(name, bad)]
        paint = f'fill="#fff" stroke="{color}" stroke-dasharray="3 2"' if bad \
            else f'fill="{color}"'
        for c, value in enumerate(vs):
            x = LEFT + c * group + group * 0.1 + i * bar
            top, base = frame.y(max(value, 0.0)), frame.y(0.0)
            height = max(base - top, 0.5)
            tip = f"{escape(name)} / {escape(categories[c])}: {value:g}"
            parts.append(f'<rect x="{x:.1f}" y="{top:.1f}" width="{bar:.1f}" '
                         f'height="{height:.1f}" {paint}><title>{tip}</title></rect>')
        parts.append("</g>")
        body.extend(parts)
    return _document(title, body, legend)


def strip_chart(title: str, y_label: str, groups: list[tuple[str, list[float]]], *,
                y_range: tuple[float, float] | None = None,
                degraded: Collection[str] = ()) -> str:
    """One column of dots per group (a flavour's per-session values) with its mean as a bar.

    Dots with equal values are spread sideways in a fixed pattern, so the same data always
    draws the same picture and no value hides behind another. ``degraded`` names groups
    drawn hollow and labelled so.
    """
    values = [v for _, vs in groups for v in vs]
    frame = _Frame([0.0, float(max(1, len(groups)))], values or [0.0], y_range=y_range)
    frame.x0, frame.x1 = 0.0, float(max(1, len(groups)))
    body = frame.axes("flavour (one dot per session, bar: mean)", y_label, x_ticks=False)
    width = (WIDTH - LEFT - RIGHT) / max(1, len(groups))
    legend = []
    for i, (name, vs) in enumerate(groups):
        color = PALETTE[i % len(PALETTE)]
        bad = name in degraded
        legend.append((name, color, bad))
        centre = LEFT + width * (i + 0.5)
        label = f"{name} (degraded)" if bad else name
        parts = [_group(name, bad),
                 f'<text x="{centre:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">'
                 f'{escape(label)}</text>']
        paint = f'fill="#fff" stroke="{color}"' if bad else f'fill="{color}" fill-opacity="0.7"'

        seen: dict[float, int] = {}
        for value in vs:
            rank = seen.get(value, 0)
            seen[value] = rank + 1
            offset = (rank + 1) // 2 * 5 * (1 if rank % 2 else -1)
            parts.append(f'<circle cx="{centre + offset:.1f}" cy="{frame.y(value):.1f}" r="3" '
                         f'{paint}><title>{value:g}</title></circle>')
        if vs:
            y = frame.y(sum(vs) / len(vs))
            parts.append(f'<line class="mean" x1="{centre - width * 0.3:.1f}" y1="{y:.1f}" '
                         f'x2="{centre + width * 0.3:.1f}" y2="{y:.1f}" stroke="#222" '
                         'stroke-width="2"/>')
        parts.append("</g>")
        body.extend(parts)
    return _document(title, body, legend)
