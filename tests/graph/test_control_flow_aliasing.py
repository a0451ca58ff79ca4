"""After an `if` or `while` on an array, a name may be the array it was before on one path
and a new array on another (_core/alias_paths.py). An in-place write then changes the
caller's array on one path only: hybridize compiles such code (strict mode too) and must
give eager's results on every path, through other names and views included."""
import warnings

import numpy as onp
import pytest

import kiln
from kiln import np
from kiln.hybrid.fallback import HybridizeFallbackWarning

pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")


def rebound_then_written(x):
    if np.abs(x).max() < 1.5:
        x = -x
    x += 1
    return x * 1


def view_rebound_then_written(a):
    v = a[1:]
    if np.abs(v).max() < 1.5:
        v = -v
    v += 1
    return a * 1


def reshape_of_a_transposed_view_written(a):      # fuzz seed 54, program 868
    v = np.swapaxes(a, 0, 1)
    if np.abs(v).max() < 1.5:
        v = -v
    flat = v.reshape(-1)        # a copy of the transposed view, a view of the new array
    flat -= flat
    return np.var(v, axis=0)


def loop_rebound_then_written(x):
    while x.sum() < 10:
        x = x * 2
    x += 1
    return x * 1


def original_written_after(x):
    y = x
    if np.abs(x).max() < 1.5:
        x = -x
    y += 1
    return x * 1


CASES = [rebound_then_written, view_rebound_then_written,
         reshape_of_a_transposed_view_written, loop_rebound_then_written,
         original_written_after]


@pytest.mark.parametrize("backend", ["numpy", "c"])
@pytest.mark.parametrize("fn", CASES, ids=lambda f: f.__name__)
def test_every_path_gives_eager_results(fn, backend):
    for scale in (1.0, 0.1, 10.0):      # the test true and false, the loop run or not
        start = (onp.arange(6, dtype="float32").reshape(2, 3) - 2) * scale
        eager_arg, compiled_arg = np.array(start), np.array(start)
        want = fn(eager_arg).asnumpy()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            got = kiln.hybridize(fn, backend=backend)(compiled_arg).asnumpy()
        onp.testing.assert_array_equal(got, want)
        onp.testing.assert_array_equal(compiled_arg.asnumpy(), eager_arg.asnumpy())
        fallbacks = [str(w.message) for w in caught
                     if issubclass(w.category, HybridizeFallbackWarning)]
        assert not fallbacks, fallbacks


@pytest.mark.parametrize("backend", ["numpy", "c"])
def test_no_write_afterwards_still_compiles(backend):
    def f(x):
        if np.abs(x).max() < 1.5:
            x = -x
        y = x + 1
        y += 1          # a new array of its own: no path-dependent aliasing
        return y
    for scale in (1.0, 0.1):
        start = onp.arange(6, dtype="float32") * scale
        with warnings.catch_warnings():
            warnings.simplefilter("error", HybridizeFallbackWarning)
            got = kiln.hybridize(f, backend=backend)(np.array(start)).asnumpy()
        onp.testing.assert_array_equal(got, f(np.array(start)).asnumpy())
