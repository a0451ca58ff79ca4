"""mx.test_utils.assert_almost_equal compares large arrays block by block: its float64
temporaries stay small whatever the size, and the report is the one of a whole comparison."""
import tracemalloc

import numpy as np
import pytest

from kiln.mx.test_utils import assert_almost_equal
from kiln.mx.test_utils import comparison


def test_temporary_memory_is_bounded():
    a = np.random.rand(4 << 20).astype(np.float32)          # 16 MB
    b = a.copy()
    tracemalloc.start()
    try:
        assert_almost_equal(a, b, rtol=1e-5, atol=1e-6)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < a.nbytes           # the whole-array way needed about 5 float64 copies


def test_blocks_report_the_worst_elements_of_the_whole(monkeypatch):
    monkeypatch.setattr(comparison, "_BLOCK", 5)
    a = np.arange(24.0).reshape(2, 3, 4)
    b = a.copy()
    b[0, 0, 1] += 1.0
    b[1, 2, 3] += 3.0
    b[1, 0, 0] = np.nan
    with pytest.raises(AssertionError) as err:
        assert_almost_equal(a, b, rtol=1e-5, atol=1e-6, mismatches=(2, 2))
    text = str(err.value)
    assert "3 of 24 elements differ" in text
    lines = text.splitlines()[1:]
    assert lines[0].startswith("  at (1, 0, 0)") and lines[1].startswith("  at (1, 2, 3)")


def test_broadcast_operands_compare_in_blocks(monkeypatch):
    monkeypatch.setattr(comparison, "_BLOCK", 3)
    assert_almost_equal(np.ones((4, 1)), np.ones(5))
    with pytest.raises(AssertionError, match="5 of 20 elements differ"):
        assert_almost_equal(np.array([[1.0], [1.0], [1.0], [2.0]]), np.ones(5))
