from __future__ import annotations

import numpy as np
import pytest

from rag_ablation.support.timing import percentiles_ms


def test_percentiles_in_ms():
    p = percentiles_ms([0.001 * i for i in range(1, 101)])
    assert p["p50_ms"] == pytest.approx(np.percentile(np.arange(1, 101), 50))
    assert p["p99_ms"] == pytest.approx(np.percentile(np.arange(1, 101), 99))
    assert percentiles_ms([]) == {}
