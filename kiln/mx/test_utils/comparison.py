"""mx.test_utils' comparisons: tolerances by dtype, the default context, assert_almost_equal
and the helpers built on it (optimizers, tuples of arrays).

Tolerances follow MXNet 1.9.1: when none is given, each array's dtype picks one from
`default_rtols()`/`default_atols()` and the looser of the two arrays' is used.
"""
import numbers

import numpy as _np
from numpy.testing import assert_allclose  # noqa: F401  (MXNet re-exports it)

from ..._core.base import KilnError
from ..._core.context import cpu, Context

_RTOLS = {"float16": 1e-2, "float32": 1e-4, "float64": 1e-5}
_ATOLS = {"float16": 1e-1, "float32": 1e-3, "float64": 1e-20}
_default_ctx = [None]


def default_rtols():
    """MXNet's default relative tolerances of the test helpers, as a dict from dtype to rtol."""
    return {_np.dtype(k): v for k, v in _RTOLS.items()}


def default_atols():
    """MXNet's default absolute tolerances of the test helpers, as a dict from dtype to atol."""
    return {_np.dtype(k): v for k, v in _ATOLS.items()}


def default_context():
    """The context tests run on: cpu() unless set_default_context changed it."""
    return _default_ctx[0] or cpu()


def set_default_context(ctx):
    """Set the Context `default_context()` returns; `set_default_device` is the same."""
    if not isinstance(ctx, Context):
        raise KilnError(f"set_default_context: expected a Context, got {type(ctx).__name__}")
    _default_ctx[0] = ctx


default_device = default_context
set_default_device = set_default_context


def default_dtype():
    """The dtype the test helpers create arrays in: float32."""
    return _np.float32


def _host(x):
    if hasattr(x, "asnumpy"):
        return x.asnumpy()
    return _np.asarray(x)


def _tolerance(arrays, tol, table):
    if tol is not None and not isinstance(tol, dict):
        return float(tol)
    tol = tol or {}
    found = []
    for a in arrays:
        dt = _np.dtype(a.dtype)
        found.append(tol.get(dt, table.get(dt.name, 0.0)))
    return max(found)


def get_rtol(rtol=None, dtype=_np.float64):
    """`rtol` when given, else the default relative tolerance of `dtype`."""
    return _tolerance([_np.zeros(0, dtype)], rtol, _RTOLS)


def get_atol(atol=None, dtype=_np.float64):
    """`atol` when given, else the default absolute tolerance of `dtype`."""
    return _tolerance([_np.zeros(0, dtype)], atol, _ATOLS)


def same(a, b):
    """True when a and b have equal shapes and exactly equal elements."""
    return _np.array_equal(_host(a), _host(b))


def _check_shapes(a, b, use_broadcast):
    if not use_broadcast and a.shape != b.shape:
        raise AssertionError(f"shapes differ: {a.shape} vs {b.shape}")


def almost_equal(a, b, rtol=None, atol=None, equal_nan=False, use_broadcast=True):
    """np.allclose with MXNet's default tolerances (rtol 1e-5, atol 1e-20 unless given)."""
    a, b = _host(a), _host(b)
    _check_shapes(a, b, use_broadcast)
    return bool(_np.allclose(a, b, rtol=get_rtol(rtol), atol=get_atol(atol),
                             equal_nan=equal_nan))


# elements compared at a time: the float64 temporaries of one block stay a few MB whatever
# the arrays' size (two 512 MB float32 arrays compared at once needed ~5 GB of them)
_BLOCK = 1 << 18


def _float64_blocks(a, b):
    """(start, a block, b block) over the broadcast, flattened arrays, each block as float64."""
    a, b = _np.broadcast_arrays(a, b)
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    for start in range(0, max(flat_a.size, 1), _BLOCK):
        yield (start, flat_a[start:start + _BLOCK].astype(_np.float64),
               flat_b[start:start + _BLOCK].astype(_np.float64))


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise AssertionError naming the worst elements when |a-b| > atol + rtol*|b|."""
    a, b = _host(a), _host(b)
    _check_shapes(a, b, use_broadcast)
    rtol = _tolerance([a, b], rtol, _RTOLS)
    atol = _tolerance([a, b], atol, _ATOLS)
    shape = _np.broadcast_shapes(a.shape, b.shape)
    keep = max(mismatches)
    differ, worst = 0, []           # worst: (err, flat index, a value, b value), `keep` largest
    for start, af, bf in _float64_blocks(a, b):
        close = _np.isclose(af, bf, rtol=rtol, atol=atol, equal_nan=equal_nan)
        if close.all():
            continue
        differ += int((~close).sum())
        err = _np.abs(af - bf) - (atol + rtol * _np.abs(bf))
        err = _np.where(_np.isnan(err), _np.inf, err)
        for k in _np.argsort(-err, kind="stable")[:keep]:
            worst.append((-err[k], start + int(k), af[k], bf[k]))
        worst = sorted(worst, key=lambda item: (item[0], item[1]))[:keep]
    if not differ:
        return
    lines = [f"  at {tuple(int(i) for i in _np.unravel_index(k, shape))}: "
             f"{names[0]}={x!r} {names[1]}={y!r}" for _, k, x, y in worst]
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): {differ} of "
        f"{int(_np.prod(shape, dtype=_np.int64))} elements differ; the worst:\n"
        + "\n".join(lines))


def assert_almost_equal_ignore_nan(a, b, rtol=None, atol=None, names=("a", "b")):
    """`assert_almost_equal(a, b)` with every position where either holds NaN left out."""
    a, b = _np.copy(_host(a)), _np.copy(_host(b))
    nan = _np.logical_or(_np.isnan(a), _np.isnan(b))
    a[nan] = 0
    b[nan] = 0
    assert_almost_equal(a, b, rtol, atol, names)


def assert_exception(f, exception_type, *args, **kwargs):
    """f(*args, **kwargs) must raise exception_type."""
    try:
        f(*args, **kwargs)
    except exception_type:
        return
    raise AssertionError(f"{getattr(f, '__name__', f)} did not raise "
                         f"{exception_type.__name__}")


def effective_dtype(dat):
    """The dtype whose tolerance applies (MXNet lowers float32 on TF32 GPUs; kiln has none)."""
    return _np.dtype(dat.dtype)


def get_tolerance(dat, tol, default_tol):
    """`tol` when it is a number, else the tolerance for the dtype of `dat` from the dict `tol` or
    `default_tol`."""
    if tol is not None and not isinstance(tol, dict):
        return tol
    dtype = effective_dtype(dat)
    return (tol or {}).get(dtype, default_tol[dtype])


def default_numeric_eps():
    """Finite-difference steps by dtype: powers of two, as MXNet's."""
    return {_np.dtype(_np.float16): 1.0 / 2 ** 6, _np.dtype(_np.float32): 1.0 / 2 ** 9,
            _np.dtype(_np.float64): 1.0 / 2 ** 14}


def same_array(array1, array2):
    """Whether two kiln arrays share their memory (a write to one shows in the other)."""
    a = getattr(array1, "_data", array1)
    b = getattr(array2, "_data", array2)
    return bool(_np.shares_memory(a, b))


def get_tols(x, y, rtol, atol):
    """(rtol, atol) for comparing `x` with `y`: the given ones, else the looser of the two
    dtypes' defaults."""
    x = _np.array(x) if isinstance(x, numbers.Number) else x
    y = _np.array(y) if isinstance(y, numbers.Number) else y
    return (max(get_tolerance(x, rtol, default_rtols()), get_tolerance(y, rtol, default_rtols())),
            max(get_tolerance(x, atol, default_atols()), get_tolerance(y, atol, default_atols())))


def get_etol(etol=None):
    """The fraction of elements allowed to differ: `etol`, else 0."""
    return 0 if etol is None else etol


def assert_almost_equal_with_err(a, b, rtol=None, atol=None, etol=None, names=("a", "b"),
                                 equal_nan=False, mismatches=(10, 10)):
    """assert_almost_equal, except that up to a fraction `etol` of the elements may differ."""
    etol = get_etol(etol)
    if etol <= 0:
        return assert_almost_equal(a, b, rtol, atol, names, equal_nan, mismatches=mismatches)
    a, b = _host(a), _host(b)
    rtol, atol = get_tols(a, b, rtol, atol)
    close = _np.isclose(a.astype(_np.float64), b.astype(_np.float64), rtol=rtol, atol=atol,
                        equal_nan=equal_nan)
    fraction = 1.0 - close.sum() / max(close.size, 1)
    if fraction > etol:
        raise AssertionError(f"{fraction:.4g} of the elements of {names[0]} and {names[1]} "
                             f"differ (rtol={rtol}, atol={atol}), more than etol={etol}")


def compare_ndarray_tuple(t1, t2, rtol=None, atol=None):
    """assert_almost_equal over nested tuples of arrays (None on either side: nothing)."""
    if t1 is None or t2 is None:
        return
    if isinstance(t1, tuple):
        for s1, s2 in zip(t1, t2):
            compare_ndarray_tuple(s1, s2, rtol, atol)
    else:
        assert_almost_equal(t1, t2, rtol=rtol, atol=atol)


def _optimizer_operands(shape, stype, dtype, density):
    """(array for the optimizer under test, a dense copy for the reference one)."""
    from ..nd import random as nd_random
    from .inputs import rand_ndarray
    if stype == "default":
        arr = nd_random.uniform(shape=shape, dtype=dtype)
        return arr.copy(), arr
    if stype not in ("row_sparse", "csr"):
        raise KilnError(f"compare_optimizer: expected stype 'default', 'row_sparse' or 'csr', "
                        f"got {stype!r}")
    arr = rand_ndarray(shape, stype, density=density, dtype=dtype)
    return arr.tostype("default"), arr


def compare_optimizer(opt1, opt2, shape, dtype, w_stype="default", g_stype="default",
                      rtol=1e-4, atol=1e-5, compare_states=True, ntensors=1):
    """Give two optimizers the same random weight and gradient, update once, and assert that
    states and weights agree. `opt1` gets dense arrays; `opt2` the storage types asked for
    (a sparse weight is fully stored, a sparse gradient has random rows). With a list of
    shapes, `opt2` updates all `ntensors` at once (multi-tensor) and `opt1` one by one."""
    if not isinstance(shape, list):
        if ntensors != 1:
            raise KilnError(f"compare_optimizer: one shape means one tensor, got "
                            f"ntensors={ntensors}")
        w1, w2 = _optimizer_operands(shape, w_stype, dtype, density=1)
        g1, g2 = _optimizer_operands(shape, g_stype, dtype, density=None)
        state1 = opt1.create_state_multi_precision(0, w1)
        state2 = opt2.create_state_multi_precision(0, w2)
        if compare_states:
            compare_ndarray_tuple(state1, state2)
        opt1.update_multi_precision(0, w1, g1, state1)
        opt2.update_multi_precision(0, w2, g2, state2)
        if compare_states:
            compare_ndarray_tuple(state1, state2, rtol=rtol, atol=atol)
        assert_almost_equal(w1, w2, rtol=rtol, atol=atol)
        return
    from ..nd import random as nd_random
    w1 = tuple(nd_random.uniform(shape=s, dtype=dtype) for s in shape)
    g1 = tuple(nd_random.uniform(shape=s, dtype=dtype) for s in shape)
    w2, g2 = tuple(w.copy() for w in w1), tuple(g.copy() for g in g1)
    state2 = [opt2.create_state_multi_precision(0, w2[i]) for i in range(ntensors)]
    opt2.update_multi_precision(list(range(ntensors)), w2, g2, state2)
    for i in range(ntensors):
        state1 = opt1.create_state_multi_precision(i, w1[i])
        opt1.update_multi_precision(i, w1[i], g1[i], state1)
        if compare_states:
            compare_ndarray_tuple(state1, state2[i], rtol, atol)
        compare_ndarray_tuple(w1[i], w2[i], rtol, atol)
