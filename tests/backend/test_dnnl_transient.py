"""The shim's per-call memory (kiln/backend/dnnl/shim.c): an op keeps only the reordered
copies of its stamped inputs (weights) between calls; its other reordered arguments and
its scratchpad come out of one buffer per calling thread, shared by every op, so a program
of many convolutions holds one op's worth of them rather than the sum."""
import ctypes
import threading
import time

import numpy as onp
import pytest

from kiln.backend import dnnl

pytestmark = pytest.mark.skipif(not dnnl.available(), reason="oneDNN not installed")


def _lib():
    from kiln.backend.dnnl.library import shim
    lib = shim()
    lib.kd_held_bytes.restype = ctypes.c_int64
    lib.kd_held_bytes.argtypes = []
    return lib


def _conv(lib, n, c, f, size):
    """An NCHW 3x3 convolution op (oneDNN reorders NCHW activations to a blocked layout)."""
    from kiln.backend.dnnl import ops
    x, w, y = (n, c, size, size), (f, c, 3, 3), (n, f, size, size)
    op = ops.make_conv(lib, 0, x, w, y, stride=(1, 1), dilation=(1, 1), pad=(1, 1, 1, 1),
                       groups=1)
    assert op, lib.kd_error().decode()
    return op, x, w, y


def _run(lib, op, arrays, stamps=None):
    ptrs = (ctypes.c_void_p * len(arrays))(*[a.ctypes.data for a in arrays])
    st = None if stamps is None else (ctypes.c_int64 * len(stamps))(*stamps)
    assert lib.kd_run(op, ptrs, st) == 0, lib.kd_error().decode()


def _reference(x, w):
    """3x3 convolution, padding 1, stride 1, in NumPy."""
    p = onp.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = onp.lib.stride_tricks.sliding_window_view(p, (3, 3), axis=(2, 3))
    return onp.einsum("nchwij,fcij->nfhw", win, w, optimize=True)


def _data(rng, x, w):
    return (rng.standard_normal(x).astype("float32"), rng.standard_normal(w).astype("float32"))


def _in_thread(fn):
    """Run fn on a fresh thread (its transient buffer starts empty; it is freed when the
    thread ends) and return what it returned."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()))
    t.start()
    t.join()
    return out[0]


def test_ops_share_one_transient_buffer_per_thread():
    lib = _lib()
    ops = [_conv(lib, 4, 16, 16, 32) for _ in range(6)]
    rng = onp.random.default_rng(0)
    _, xs, ws, ys = ops[0]
    x, w = _data(rng, xs, ws)
    y = onp.empty(ys, onp.float32)
    one_op = 4 * (x.size + w.size + y.size)     # every argument reordered, at most

    def run_all():
        before = lib.kd_held_bytes()
        for op, *_ in ops:
            _run(lib, op, (x, w, y))
        return lib.kd_held_bytes() - before

    held = _in_thread(run_all)
    # the six ops held at most one op's copies plus a scratchpad; each kept its own before
    assert held <= one_op + (1 << 20), (held, one_op)
    onp.testing.assert_allclose(y, _reference(x, w), rtol=1e-4, atol=1e-4)
    for op, *_ in ops:
        lib.kd_free(op)


def test_sharing_gives_the_same_results_and_kept_weights_survive_other_ops():
    """Op A, a larger op B (which grows the buffer A's copies came from), then A again:
    A gives the same result, with its weight passed unstamped (reordered per call) or
    stamped (reordered once and kept outside the shared buffer)."""
    lib = _lib()
    rng = onp.random.default_rng(1)
    a, xa_s, wa_s, ya_s = _conv(lib, 2, 16, 32, 8)
    b, xb_s, wb_s, yb_s = _conv(lib, 4, 32, 16, 40)
    xa, wa = _data(rng, xa_s, wa_s)
    xb, wb = _data(rng, xb_s, wb_s)
    ya1, ya2, yb = (onp.empty(s, onp.float32) for s in (ya_s, ya_s, yb_s))
    for stamps in (None, (0, 5, 0)):
        ya1[...] = ya2[...] = onp.nan
        _run(lib, a, (xa, wa, ya1), stamps)
        _run(lib, b, (xb, wb, yb))
        _run(lib, a, (xa, wa, ya2), stamps)
        onp.testing.assert_array_equal(ya2, ya1)
        onp.testing.assert_allclose(ya1, _reference(xa, wa), rtol=1e-4, atol=1e-4)
        onp.testing.assert_allclose(yb, _reference(xb, wb), rtol=1e-4, atol=1e-4)
    lib.kd_free(a)
    lib.kd_free(b)


def test_a_thread_gives_its_transient_buffer_back_when_it_ends():
    lib = _lib()
    op, xs, ws, ys = _conv(lib, 4, 16, 16, 32)
    rng = onp.random.default_rng(2)
    x, w = _data(rng, xs, ws)
    y = onp.empty(ys, onp.float32)
    before = lib.kd_held_bytes()
    _in_thread(lambda: _run(lib, op, (x, w, y)))
    # join() returns once Python is done with the thread; the C library frees a thread's
    # buffer a moment later, as the thread exits
    deadline = time.monotonic() + 5
    while lib.kd_held_bytes() != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert lib.kd_held_bytes() == before
    lib.kd_free(op)
