"""Where the cost charts' names go (rag_ablation.evaluation.report.chart_labels): inside the
plot, never over another name or a point, the most important first; a name that fits nowhere is
left to the hover. Pixel positions are the fixed axes' formulas."""
from __future__ import annotations

import math
from itertools import combinations

import pytest

from rag_ablation.evaluation.report.chart_labels import (CHAR_WIDTH, LINE_HEIGHT, Axis, label_box, log_axis,
                                                         place_labels, zero_axis)


def test_fixed_axes_map_values_to_pixels_and_back():
    x = Axis(1.0, 100.0, 400.0, log=True)
    assert x.to_pixel(10.0) == pytest.approx(200.0) and x.to_value(300.0) == pytest.approx(10 ** 1.5)
    y = Axis(0.0, 1.0, 300.0, flip=True)
    assert y.to_pixel(0.75) == pytest.approx(75.0) and y.to_value(75.0) == pytest.approx(0.75)
    assert log_axis([0.15, 43.8], 100).low == 0.1 and log_axis([0.15, 43.8], 100).high == 100
    assert (log_axis([3.0, 8.0], 100).low, log_axis([3.0, 8.0], 100).high) == (1, 10)
    assert (log_axis([10.0], 100).low, log_axis([10.0], 100).high) == (10, 100)  # one decade at least
    assert zero_axis([4.79, 4.812], 100).high == 5.0 and zero_axis([4.79], 100).low == 0.0
    assert zero_axis([12.0], 100).high == 20.0 and zero_axis([], 100).high == 1.0


def boxes(points, x_axis, y_axis):
    out = []
    for p in points:
        if p["label_x"] is None:
            continue
        left, middle = x_axis.to_pixel(p["label_x"]), y_axis.to_pixel(p["label_y"])
        width = CHAR_WIDTH * len(p["config"])
        out.append((left, middle - LINE_HEIGHT / 2, left + width, middle + LINE_HEIGHT / 2))
    return out


def test_eight_configs_at_one_cost_and_quality_get_names_that_never_overlap():
    """The example's smear: eight dense configs at about 0.15 ms and recall 0.80 to 0.83."""
    x_axis, y_axis = Axis(0.1, 10.0, 460.0, log=True), Axis(0.0, 1.0, 320.0, flip=True)
    points = [{"config": f"dense_chunking{i}", "p95_ms": 0.14 + 0.005 * i, "value": 0.80 + 0.004 * i}
              for i in range(8)] + [{"config": "bm25", "p95_ms": 3.6, "value": 0.7}]
    placed = place_labels(points, x="p95_ms", y="value", name="config", x_axis=x_axis, y_axis=y_axis)
    drawn = boxes(placed, x_axis, y_axis)
    assert 2 <= len(drawn) < len(points), "some names fit, the rest are left to the hover"
    assert placed[0]["label_x"] is not None, "the first (most important) point always gets its name when it fits"
    for a, b in combinations(drawn, 2):
        assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    for left, top, right, bottom in drawn:
        assert 0 <= left and right <= 460 and 0 <= top and bottom <= 320
        for p in points:  # no name over a point
            px, py = x_axis.to_pixel(p["p95_ms"]), y_axis.to_pixel(p["value"])
            assert not (left < px + 5 and px - 5 < right and top < py + 5 and py - 5 < bottom)


def test_a_lone_point_gets_its_name_right_of_it_and_one_at_the_right_edge_left_of_it():
    x_axis, y_axis = Axis(1.0, 100.0, 460.0, log=True), Axis(0.0, 1.0, 320.0, flip=True)
    placed = place_labels([{"config": "dense", "p95_ms": 10.0, "value": 0.5},
                           {"config": "bm25", "p95_ms": 99.0, "value": 0.2}],
                          x="p95_ms", y="value", name="config", x_axis=x_axis, y_axis=y_axis)
    assert x_axis.to_pixel(placed[0]["label_x"]) == pytest.approx(230.0 + 7.0, abs=1e-3)
    assert placed[0]["label_y"] == pytest.approx(0.5, abs=1e-5)
    right = x_axis.to_pixel(99.0)
    assert x_axis.to_pixel(placed[1]["label_x"]) == pytest.approx(right - 7.0 - CHAR_WIDTH * 4, abs=1e-2)
    assert label_box(0, 0, "ab", (7.0, 0.0)) == (7.0, -6.0, 7.0 + 2 * CHAR_WIDTH, 6.0)
    assert not math.isnan(placed[1]["label_y"])
