"""Where each point's name goes on the report page's scatter charts, so no two names overlap.

vega-lite draws a text mark where it is told and never moves one out of another's way: on the
example's cost chart eight config names ran into one smear. So the page's scatter charts have
fixed scales (:class:`Axis`: the domain is set in the spec, not left to vega), which makes every
point's pixel position known here, and :func:`place_labels` puts each name, most important point
first, at the first of a few spots around its point (:data:`SPOTS`) where its box (estimated
from its length, :data:`CHAR_WIDTH`, :data:`LINE_HEIGHT`) stays inside the plot and overlaps
no name already placed and no point. A name that fits nowhere is not drawn: its point still
shows it on hover (the chart's tooltip). The result is in data units, so the spec draws each
name left-aligned at ``label_x``, ``label_y``.

Deterministic: the same points give the same places.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

CHAR_WIDTH = 6.0
"""Pixels per character of a 10 px sans-serif label, rounded up (most glyphs are narrower)."""

LINE_HEIGHT = 12.0
"""A label's height in pixels."""

POINT_RADIUS = 5.0
"""The half-width of a point's mark (size 60: about 8.7 px across), with a pixel to spare."""

SPOTS = ((7.0, 0.0), (-7.0, 0.0), (4.0, -11.0), (4.0, 11.0), (-4.0, -11.0), (-4.0, 11.0), (7.0, -20.0),
         (7.0, 20.0))
"""Where a label may go, tried in order, as (dx, dy) from its point in pixels: dx > 0 puts the
label's left edge there (right of the point), dx < 0 its right edge (left of the point); dy is
the label's vertical middle (negative: above)."""


@dataclass(frozen=True)
class Axis:
    """A fixed axis: ``low`` to ``high`` in data units over ``pixels``; ``log`` for a log scale.
    ``flip``: pixels grow downward (a y axis)."""

    low: float
    high: float
    pixels: float
    log: bool = False
    flip: bool = False

    def _t(self, value: float) -> float:
        if self.log:
            return (math.log10(value) - math.log10(self.low)) / (math.log10(self.high) - math.log10(self.low))
        return (value - self.low) / (self.high - self.low)

    def to_pixel(self, value: float) -> float:
        """The pixel of ``value`` (0 at the left, or at the top for a flipped axis)."""
        t = self._t(value)
        return self.pixels * (1 - t if self.flip else t)

    def to_value(self, pixel: float) -> float:
        """The data value at ``pixel`` (the inverse of :meth:`to_pixel`)."""
        t = pixel / self.pixels
        t = 1 - t if self.flip else t
        if self.log:
            return 10 ** (math.log10(self.low) + t * (math.log10(self.high) - math.log10(self.low)))
        return self.low + t * (self.high - self.low)

    def scale(self) -> dict[str, Any]:
        """The vega-lite ``scale`` of this axis: its domain fixed, never widened to nice numbers."""
        out: dict[str, Any] = {"domain": [self.low, self.high], "nice": False, "zero": False}
        if self.log:
            out["type"] = "log"
        return out


def log_axis(values: Sequence[float], pixels: float) -> Axis:
    """A log axis from the power of ten at or below the smallest value to the one at or above the
    largest (one decade at least), so its ticks are round numbers. Values must be positive."""
    low = 10 ** math.floor(math.log10(min(values)))
    high = 10 ** math.ceil(math.log10(max(values)))
    return Axis(low, high if high > low else low * 10, pixels, log=True)


def zero_axis(values: Sequence[float], pixels: float, *, flip: bool = False) -> Axis:
    """A linear axis from 0 to the smallest of 1, 2, 5 times a power of ten at or above the
    largest value (and above 0): a quantity read from zero."""
    top = max([*values, 0.0])
    if top <= 0:
        return Axis(0.0, 1.0, pixels, flip=flip)
    power = 10 ** math.floor(math.log10(top))
    high = next(m * power for m in (1, 2, 5, 10) if m * power >= top)
    return Axis(0.0, float(high), pixels, flip=flip)


Box = tuple[float, float, float, float]


def _overlaps(a: Box, b: Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def label_box(px: float, py: float, text: str, spot: tuple[float, float]) -> Box:
    """The box (left, top, right, bottom, pixels) of ``text`` placed at ``spot`` of the point
    (``px``, ``py``)."""
    width = CHAR_WIDTH * len(text)
    dx, dy = spot
    left = px + dx if dx >= 0 else px + dx - width
    return (left, py + dy - LINE_HEIGHT / 2, left + width, py + dy + LINE_HEIGHT / 2)


def _short(value: float) -> float:
    """``value`` to 6 significant digits (a label's place needs no more; the page stays small)."""
    return float(f"{value:.6g}")


def place_labels(points: Sequence[Mapping[str, Any]], *, x: str, y: str, name: str, x_axis: Axis,
                 y_axis: Axis) -> list[dict[str, Any]]:
    """``points`` (in the order of importance: earlier ones are placed first) each with
    ``label_x`` and ``label_y`` (data units: where its name's left edge and vertical middle go),
    both None when the name fits nowhere (module docstring)."""
    pixels = [(x_axis.to_pixel(float(p[x])), y_axis.to_pixel(float(p[y]))) for p in points]
    marks = [(px - POINT_RADIUS, py - POINT_RADIUS, px + POINT_RADIUS, py + POINT_RADIUS) for px, py in pixels]
    placed: list[Box] = []
    out = []
    for p, (px, py) in zip(points, pixels):
        spot_box = None
        for spot in SPOTS:
            box = label_box(px, py, str(p[name]), spot)
            inside = box[0] >= 0 and box[1] >= 0 and box[2] <= x_axis.pixels and box[3] <= y_axis.pixels
            if inside and not any(_overlaps(box, b) for b in placed) and not any(_overlaps(box, m) for m in marks):
                spot_box = box
                break
        if spot_box is None:
            out.append({**p, "label_x": None, "label_y": None})
            continue
        placed.append(spot_box)
        out.append({**p, "label_x": _short(x_axis.to_value(spot_box[0])),
                    "label_y": _short(y_axis.to_value((spot_box[1] + spot_box[3]) / 2))})
    return out
