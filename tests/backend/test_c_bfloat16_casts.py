"""bfloat16 casts in generated C: the same bits as eager code (round to nearest even, NaN
kept a NaN, infinities and overflow to infinity), and a graph computing on bfloat16 beyond
casts is refused by the C backend (the NumPy executor runs it)."""
import numpy as onp
import pytest

from kiln import np
from kiln.backend.c import steps
from kiln.backend.c.lowering import NotLowerable
from kiln.hybrid.cached import hybridize

ml_dtypes = pytest.importorskip("ml_dtypes")
BF16 = onp.dtype(ml_dtypes.bfloat16)


def _edge_values(dtype):
    r = onp.random.default_rng(3)
    special = [0.0, -0.0, 1.0, 1.00390625, 1.01171875, -2.5, 3.0e38, -3.4e38, 1e-40,
               onp.inf, -onp.inf, onp.nan, 65504.0, 1 / 3]
    return onp.concatenate([onp.array(special), r.standard_normal(200) * 100]).astype(dtype)


def _bits(a):
    return a.view(onp.uint16)


@pytest.mark.parametrize("src", ["float32", "float64", "float16"])
def test_narrowing_cast_in_c_gives_eager_bits(src):
    x = np.array(_edge_values(src))
    f = hybridize(lambda a: a.astype("bfloat16"), backend="c", strict=True)
    got, want = f(x).asnumpy(), x.astype("bfloat16").asnumpy()
    assert got.dtype == BF16
    nan = onp.isnan(want.astype(onp.float32))
    assert (onp.isnan(got.astype(onp.float32)) == nan).all()
    # float64 too: ml_dtypes narrows through float32 (two roundings), as the C cast does
    assert (_bits(got)[~nan] == _bits(want)[~nan]).all()
    if src != "float16":    # C has no float16: the NumPy executor runs that one
        assert [e.program.backend for e in f._cached.entries.values()] == ["c"]


@pytest.mark.parametrize("dst", ["float32", "float64", "int32", "bool"])
def test_widening_cast_in_c_is_exact(dst):
    x = np.array(_edge_values("float32")[:-200 if dst in ("int32", "bool") else None]
                 .astype(BF16))
    if dst == "int32":
        x = np.array(onp.array([0, 1.5, -2.5, 100.0, -7.0], dtype=BF16))
    f = hybridize(lambda a: a.astype(dst) * 1, backend="c", strict=True)
    got, want = f(x).asnumpy(), (x.astype(dst) * 1).asnumpy()
    assert got.dtype == want.dtype
    onp.testing.assert_array_equal(got, want)
    assert [e.program.backend for e in f._cached.entries.values()] == ["c"]


def test_a_bfloat16_computation_is_not_lowered_to_c():
    x = np.array(onp.ones(4, BF16))
    f = hybridize(lambda a: a + a, backend="c", strict=True)
    assert (f(x).asnumpy() == onp.full(4, 2, BF16)).all()
    (entry,) = f._cached.entries.values()
    assert entry.program.backend == "numpy"
    with pytest.raises(NotLowerable, match="bfloat16"):
        steps.build_steps(entry.cap.graph)
