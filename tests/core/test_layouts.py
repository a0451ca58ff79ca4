"""Memory layouts of traced arrays (kiln/_core/layouts.py): a reshape is a view or a copy as
NumPy makes it eagerly, which depends on the layout NumPy's kernels give their results.

NumPy's ufuncs and reductions keep their operands' memory order: -x.T is F-ordered, so
(-x.T).reshape(-1) is a copy and a write into it leaves -x.T alone. Traced code that took
every op result as C-ordered made that reshape a view and wrote through it."""
import numpy as onp
import pytest

from kiln import np
from kiln.fuzz.compare import compare

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def _check(fn, *shapes):
    rng = onp.random.default_rng(3)
    args = [np.array(rng.uniform(-2, 2, s).astype("float32")) for s in shapes]
    new = [np.array(rng.uniform(-2, 2, s).astype("float32")) for s in shapes]
    findings = compare(fn, args, new, strict=True)
    assert not findings, "\n".join(map(repr, findings))


@pytest.mark.parametrize("make", [
    "-v", "v * 2", "np.exp(v)", "np.where(v > 0, v, 0.5)", "v.astype('float64')",
    "np.clip(v, -1, 1)", "v + np.ones(v.shape, dtype='float32')", "v + v.T.T"])
def test_elementwise_result_of_a_transposed_view(make):
    def f(a):
        v = np.swapaxes(a, 0, 1)     # noqa: F841 -- read by eval(make)
        w = eval(make)
        flat = w.reshape(-1)        # a copy when w is F-ordered, a view when C-ordered
        flat -= flat
        return w * 1, flat
    _check(f, (2, 3))


@pytest.mark.parametrize("reduce", ["w.sum(axis=1)", "w.max(axis=0, keepdims=True)",
                                    "w.prod(axis=2)", "w.min(axis=1, keepdims=True)"])
def test_reduction_of_a_transposed_view(reduce):
    def f(a):
        w = a.transpose(2, 1, 0)     # noqa: F841 -- read by eval(reduce)
        r = eval(reduce)
        flat = r.reshape(-1)
        flat *= -2
        return r * 1, flat
    _check(f, (2, 3, 4))


def test_strided_slice_then_elementwise_then_reshape_write():
    def f(a):
        w = np.abs(a[::2].T)
        flat = w.reshape(-1)
        flat += 1
        return w * 1, a
    _check(f, (4, 3))
