"""MXNet's `mx.test_utils`: array comparisons, random test inputs and symbol checks.

Tolerances follow MXNet 1.9.1: when none is given, each array's dtype picks one from
`default_rtols()`/`default_atols()` and the looser of the two arrays' is used.
"""
import contextlib
import os

import numpy as _np

from .._core.base import KilnError
from .._core.context import cpu, Context

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


def assert_almost_equal(a, b, rtol=None, atol=None, names=("a", "b"), equal_nan=False,
                        use_broadcast=True, mismatches=(10, 10)):
    """Raise AssertionError naming the worst elements when |a-b| > atol + rtol*|b|."""
    a, b = _host(a), _host(b)
    _check_shapes(a, b, use_broadcast)
    rtol = _tolerance([a, b], rtol, _RTOLS)
    atol = _tolerance([a, b], atol, _ATOLS)
    af, bf = _np.broadcast_arrays(a.astype(_np.float64), b.astype(_np.float64))
    close = _np.isclose(af, bf, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if close.all():
        return
    err = _np.abs(af - bf) - (atol + rtol * _np.abs(bf))
    err = _np.where(_np.isnan(err), _np.inf, err)
    worst = _np.argsort(-err, axis=None)[:max(mismatches)]
    lines = [f"  at {tuple(int(i) for i in _np.unravel_index(k, af.shape))}: "
             f"{names[0]}={af.flat[k]!r} {names[1]}={bf.flat[k]!r}" for k in worst]
    raise AssertionError(
        f"Items are not equal (rtol={rtol}, atol={atol}): {int((~close).sum())} of "
        f"{close.size} elements differ; the worst:\n" + "\n".join(lines))


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


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of `num_dim` axes, each in [1, dim] ([0, dim] with allow_zero_size)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in _np.random.randint(low, dim + 1, size=num_dim))


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-D shape, each dimension from 1 (0 with `allow_zero_size`) to `dim0` and `dim1`."""
    low = 0 if allow_zero_size else 1
    return (int(_np.random.randint(low, dim0 + 1)), int(_np.random.randint(low, dim1 + 1)))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-D shape, each dimension from 1 (0 with `allow_zero_size`) to `dim0`, `dim1` and
    `dim2`."""
    return rand_shape_2d(dim0, dim1, allow_zero_size) + rand_shape_nd(1, dim2,
                                                                     allow_zero_size)


def random_arrays(*shapes):
    """NumPy float32 arrays of standard normals, one per shape (a scalar for shape ())."""
    out = [_np.array(_np.random.randn(*s), dtype=_np.float32) for s in shapes]
    return out[0] if len(out) == 1 else out


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A dense kiln array of uniform [0, 1) values (MXNet's default-storage case)."""
    if stype != "default":
        raise KilnError(f"rand_ndarray: kiln has only dense arrays, got stype={stype!r}")
    from .._core.ndarray import ndarray
    values = _np.random.uniform(0, 1, size=shape).astype(dtype or _np.float32)
    if modifier_func is not None:
        values = _np.asarray(modifier_func(values), dtype=values.dtype)
    return ndarray._wrap(values)


def _bind(sym, location, aux_states, grad_req="write"):
    from .._core.ndarray import ndarray
    names = sym.list_arguments()
    if isinstance(location, (list, tuple)):
        location = dict(zip(names, location))
    args = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32)) for k, v in
            location.items()}
    aux = None
    if aux_states is not None:
        aux_names = sym.list_auxiliary_states()
        if isinstance(aux_states, (list, tuple)):
            aux_states = dict(zip(aux_names, aux_states))
        aux = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32))
               for k, v in aux_states.items()}
    grads = {k: ndarray._wrap(_np.zeros_like(v._data)) for k, v in args.items()}
    return sym.bind(cpu(), args=args, args_grad=grads, grad_req=grad_req, aux_states=aux)


def check_symbolic_forward(sym, location, expected, rtol=None, atol=None, aux_states=None,
                           ctx=None, equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward in predict mode and assert that its
    outputs are close to `expected`."""
    exe = _bind(sym, location, aux_states)
    outputs = [o.asnumpy() for o in exe.forward(is_train=False)]
    if isinstance(expected, dict):
        expected = [expected[k] for k in sym.list_outputs()]
    for name, out, exp in zip(sym.list_outputs(), outputs, expected):
        assert_almost_equal(out, exp, rtol, atol, ("forward", name), equal_nan=equal_nan)
    return outputs


def check_symbolic_backward(sym, location, out_grads, expected, rtol=None, atol=None,
                            aux_states=None, grad_req="write", ctx=None, grad_stypes=None,
                            equal_nan=False, dtype=_np.float32):
    """Bind `sym` to the arrays of `location`, run it forward and backward with `out_grads`, and
    assert that the arguments' gradients are close to `expected`."""
    from .._core.ndarray import ndarray
    exe = _bind(sym, location, aux_states, grad_req)
    exe.forward(is_train=True)
    if isinstance(out_grads, dict):
        out_grads = [out_grads[k] for k in sym.list_outputs()]
    exe.backward([ndarray._wrap(_np.asarray(_host(g), dtype=_np.float32))
                  for g in out_grads])
    grads = dict(zip(sym.list_arguments(), (g.asnumpy() for g in exe.grad_arrays)))
    if isinstance(expected, (list, tuple)):
        expected = dict(zip(sym.list_arguments(), expected))
    for name, exp in expected.items():
        assert_almost_equal(grads[name], exp, rtol, atol, ("backward", name),
                            equal_nan=equal_nan)
    return grads


def check_numeric_gradient(sym, location, aux_states=None, numeric_eps=None, rtol=None,
                           atol=None, grad_nodes=None, use_forward_train=True, ctx=None,
                           grad_stype_dict=None, dtype=_np.float32):
    """Backward of sum(output * random projection) against central finite differences,
    computed in float64 on the same symbol."""
    names = sym.list_arguments()
    if isinstance(location, (list, tuple)):
        location = dict(zip(names, location))
    location = {k: _np.asarray(_host(v), dtype=_np.float64) for k, v in location.items()}
    grad_nodes = list(grad_nodes or names)
    eps = numeric_eps or 1e-3
    exe = _bind(sym, location, aux_states)
    out = exe.forward(is_train=use_forward_train)[0].asnumpy()
    proj = _np.random.RandomState(0).normal(0, 1, out.shape).astype(_np.float32)
    from .._core.ndarray import ndarray
    exe.backward([ndarray._wrap(proj)])
    symbolic = dict(zip(names, (g.asnumpy() for g in exe.grad_arrays)))

    def objective(values):
        e = _bind(sym, values, aux_states)
        return float((e.forward(is_train=use_forward_train)[0].asnumpy() * proj).sum())

    for name in grad_nodes:
        base = location[name]
        numeric = _np.zeros_like(base)
        for k in range(base.size):
            hi, lo = base.copy(), base.copy()
            hi.flat[k] += eps / 2
            lo.flat[k] -= eps / 2
            numeric.flat[k] = (objective({**location, name: hi})
                               - objective({**location, name: lo})) / eps
        assert_almost_equal(symbolic[name], numeric, rtol or 1e-2, atol or 1e-3,
                            (f"symbolic grad of {name}", "numeric grad"))


# ---- the rest of MXNet 1.9.1's helpers that tests of Gluon code call ----------------------
from numpy.testing import assert_allclose  # noqa: F401,E402  (MXNet re-exports it)
from .util import use_np, getenv, setenv  # noqa: F401,E402


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


def list_gpus():
    """The ids of the GPUs: none (an empty range), as kiln runs on the CPU."""
    return range(0)


def same_array(array1, array2):
    """Whether two kiln arrays share their memory (a write to one shows in the other)."""
    a = getattr(array1, "_data", array1)
    b = getattr(array2, "_data", array2)
    return bool(_np.shares_memory(a, b))


@contextlib.contextmanager
def environment(*args):
    """`with environment('NAME', 'value'):` or `environment({'A': '1', 'B': None})`: set
    (None: unset) environment variables for the block, then restore them."""
    changes = args[0] if len(args) == 1 and isinstance(args[0], dict) else {args[0]: args[1]}
    saved = {k: os.environ.get(k) for k in changes}
    try:
        for k, v in changes.items():
            setenv(k, v)
        yield
    finally:
        for k, v in saved.items():
            setenv(k, v)


def simple_forward(sym, ctx=None, is_train=False, **inputs):
    """The outputs (NumPy) of a symbol bound to the given input arrays."""
    from .._core.ndarray import ndarray
    args = {k: ndarray._wrap(_np.asarray(_host(v), dtype=_np.float32)) for k, v in
            inputs.items()}
    exe = sym.bind(ctx or default_context(), args=args)
    outputs = [o.asnumpy() for o in exe.forward(is_train=is_train)]
    return outputs[0] if len(outputs) == 1 else outputs


def check_gluon_hybridize_consistency(net_builder, data_l, numpy_func=None, test_grad=True,
                                      rtol=1e-4, atol=1e-4):
    """Build the net four ways (eager/hybridized, with/without autograd), give them the same
    parameters, and check their outputs, input gradients, and numpy_func's result agree."""
    from .._core import autograd
    saved = out_ref = grads_ref = None
    for hybridize in (False, True):
        for record in ((False, True) if test_grad else (False,)):
            net = net_builder()
            net.initialize()
            inputs = [x.copy() for x in data_l]
            net(*inputs)                      # deferred shapes become known
            params = net.collect_params()
            if saved is None:
                saved = {k: p.data().asnumpy() for k, p in params.items()}
            else:
                for k, p in params.items():
                    p.set_data(saved[k])
            if hybridize:
                net.hybridize()
            if record:
                for x in inputs:
                    x.attach_grad()
                with autograd.record():
                    out = net(*inputs)
                out.backward(out)
            else:
                out = net(*inputs)
            if out_ref is None:
                out_ref = out.asnumpy()
                if numpy_func is not None:
                    assert_almost_equal(out_ref, numpy_func(*[x.asnumpy() for x in data_l]),
                                        rtol, atol)
            else:
                assert_almost_equal(out.asnumpy(), out_ref, rtol, atol)
            if record:
                grads = [x.grad.asnumpy() for x in inputs]
                if grads_ref is None:
                    grads_ref = grads
                for g, ref in zip(grads, grads_ref):
                    assert_almost_equal(g, ref, rtol, atol)
