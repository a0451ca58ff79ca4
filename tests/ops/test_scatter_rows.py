"""scatter_add along axis 0 (an embedding's gradient) takes a flat-index path: it must add
exactly what a loop over the rows adds, repeated, clipped and wrapped indices included."""
import numpy as np
import pytest

from kiln.ops.shape import scatter_add


@pytest.mark.parametrize("mode", ["clip", "wrap"])
@pytest.mark.parametrize("rest", [(), (3,), (2, 3)])
def test_scatter_add_rows_matches_a_loop(mode, rest):
    rng = np.random.default_rng(0)
    idx = np.array([[1, 4, 1], [-2, 9, 1]])
    g = rng.normal(size=idx.shape + rest).astype("float32")
    got = scatter_add(g, idx, axis=0, size=5, mode=mode)
    want = np.zeros((5,) + rest, "float32")
    for i, row in zip(idx.reshape(-1), g.reshape((-1,) + rest)):
        want[min(max(i, 0), 4) if mode == "clip" else i % 5] += row
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)


def test_scatter_add_rows_of_a_strided_gradient():
    g = np.arange(24, dtype="float64").reshape(4, 6)[:, ::2]      # not contiguous
    got = scatter_add(g, np.array([2, 0, 2, 1]), axis=0, size=3)
    assert np.array_equal(got, [[6, 8, 10], [18, 20, 22], [0 + 12, 2 + 14, 4 + 16]])
