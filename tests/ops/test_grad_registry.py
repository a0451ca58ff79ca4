"""One generated test over the whole op registry.

CASES has an entry for every primitive in kiln.ops.REGISTRY (a missing one fails the suite,
so a new op cannot skip its checks). For each case we check
  (a) the eager output against the primitive's own shape/dtype rule,
  (b) autograd gradients of float64 inputs against central finite differences,
  (c) forward values and gradients against PyTorch where a direct counterpart exists,
and, for a representative set, (d) second-order gradients against finite differences.
Random primitives get shape/dtype and statistics checks only.
"""
import math

import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.ops import REGISTRY
from kiln.ops.collective import HANDLE_SLOTS
from kiln.ops.rules import is_float
from conftest import assert_close, numeric_grad, to_np, wrap
from control_flow_cases import control_cases
from heavy_cases import heavy_cases
from batchnorm_cases import batchnorm_cases
from special_cases import special_cases
from lowp_cases import conv_bf16_cases, int8_cases, lowp_cases
from attention_cases import attention_cases
from normalization_cases import normalization_cases

R = onp.random.default_rng(0)


def u(*s, lo=-1.0, hi=1.0):
    return R.uniform(lo, hi, s)


def pos(*s):
    return R.uniform(0.5, 2.0, s)


def away0(*s):
    return R.uniform(0.3, 1.0, s) * R.choice([-1.0, 1.0], s)


def distinct(*s):
    """Values at least 0.1 apart: no ties, so max/min are differentiable everywhere."""
    n = math.prod(s)
    return (R.permutation(n) * 0.1 - n * 0.05 + R.uniform(0, 0.01, n)).reshape(s)


def ints(*s, hi=3, dtype=onp.int64):
    return R.integers(0, hi, s).astype(dtype)


def bools(*s):
    return R.integers(0, 2, s).astype(bool)


class C:
    """One example: NumPy inputs, attrs, an optional torch counterpart and tolerances."""

    def __init__(self, *inputs, torch=None, fd=True, tol=1e-6, **attrs):
        self.inputs, self.attrs, self.torch, self.fd, self.tol = inputs, attrs, torch, fd, tol


def _t():
    return pytest.importorskip("torch")


def _dims(axis, ndim):
    return tuple(range(ndim)) if axis is None else tuple(axis)


def t_reduce(name):
    def fn(x, axis=None, keepdims=False):
        torch = _t()
        dims = _dims(axis, x.ndim)
        if name == "sum":
            return x.sum(dim=dims, keepdim=keepdims)
        if name == "prod":
            out = x
            for d in sorted(dims, reverse=True):
                out = out.prod(dim=d, keepdim=keepdims)
            return out
        return getattr(torch, name)(x, dim=dims, keepdim=keepdims)
    return fn


def t_arg(name):
    def fn(x, axis=None, keepdims=False):
        return getattr(_t(), name)(x if axis is not None else x.reshape(-1),
                                   dim=axis if axis is not None else 0)
    return fn


def t_windows(x, kernel, stride, dilation, pad, pad_value=0.0):
    F = _t().nn.functional
    xp = F.pad(x, (pad[2], pad[3], pad[0], pad[1]), value=pad_value)
    cols = F.unfold(xp, kernel, dilation=dilation, stride=stride)
    n, c = x.shape[:2]
    oh = (xp.shape[2] - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (xp.shape[3] - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    return cols.reshape(n, c, kernel[0], kernel[1], oh, ow).permute(0, 4, 5, 1, 2, 3)


def t_unwindows(g, in_shape, kernel, stride, dilation, pad):
    F = _t().nn.functional
    n, oh, ow, c = g.shape[:4]
    cols = g.permute(0, 3, 4, 5, 1, 2).reshape(n, c * kernel[0] * kernel[1], oh * ow)
    size = (in_shape[0] + pad[0] + pad[1], in_shape[1] + pad[2] + pad[3])
    full = F.fold(cols, size, kernel, dilation=dilation, stride=stride)
    return full[:, :, pad[0]:pad[0] + in_shape[0], pad[2]:pad[2] + in_shape[1]]


def t_take(x, idx, axis, mode="clip"):
    torch = _t()
    moved = torch.movedim(x, axis, 0)[idx.clamp(0, x.shape[axis] - 1)]
    return torch.movedim(moved, tuple(range(idx.ndim)), tuple(range(axis, axis + idx.ndim)))


def t_scatter(g, idx, axis, size, mode="clip"):
    torch = _t()
    flat = idx.clamp(0, size - 1).reshape(-1)
    src = g.reshape(g.shape[:axis] + (flat.numel(),) + g.shape[axis + idx.ndim:])
    out = torch.zeros(g.shape[:axis] + (size,) + g.shape[axis + idx.ndim:], dtype=g.dtype)
    return out.index_add(axis, flat, src)


def t_slice(x, begin, end, step):
    return x[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))]


def t_slice_assign(x, v, begin, end, step):
    out = x.clone()
    out[tuple(slice(b, e, s) for b, e, s in zip(begin, end, step))] = v
    return out


def T(name):
    """The torch function of the same name (looked up lazily, so no torch import here)."""
    return lambda *a, **k: getattr(_t(), name)(*a, **k)


_SL = dict(begin=(1, 0), end=(4, 5), step=(2, 2))
# the handle table of a process not launched under MPI (kiln/distributed/lowering.py)
_ONE_PROCESS = onp.array([1] + [0] * (HANDLE_SLOTS - 1))
_WIN = dict(kernel=(2, 3), stride=(1, 2), dilation=(2, 1), pad=(1, 0, 0, 1))
_UNWIN_ARGS = dict(in_shape=(5, 6), kernel=(2, 3), stride=(1, 2), dilation=(2, 1),
                   pad=(1, 0, 0, 1))

CASES = {
    "negative": [C(u(2, 3), torch=T("neg")), C(ints(3))],
    "exp": [C(u(3, 4), torch=T("exp")), C(ints(3))],
    "log": [C(pos(3, 4), torch=T("log"))],
    "sqrt": [C(pos(3, 4), torch=T("sqrt"))],
    "abs": [C(away0(3, 4), torch=T("abs")), C(ints(3) - 1)],
    "sign": [C(away0(3, 4), torch=T("sign"))],
    "sin": [C(u(3, 4), torch=T("sin"))],
    "cos": [C(u(3, 4), torch=T("cos"))],
    "tanh": [C(u(3, 4), torch=T("tanh"))],
    "arcsin": [C(u(3, 4, lo=-0.9, hi=0.9), torch=T("asin"))],
    "arccos": [C(u(3, 4, lo=-0.9, hi=0.9), torch=T("acos"))],
    "arctan": [C(u(3, 4, lo=-3, hi=3), torch=T("atan"))],
    "sigmoid": [C(u(3, 4, lo=-30, hi=30), torch=T("sigmoid"))],
    "relu": [C(away0(3, 4), torch=T("relu")), C(ints(3) - 1)],
    "erf": [C(u(3, 4, lo=-3, hi=3), torch=T("erf"), tol=2e-7)],
    "floor": [C(u(3, 4, lo=-3, hi=3), torch=T("floor"))],
    "ceil": [C(u(3, 4, lo=-3, hi=3), torch=T("ceil"))],
    "round": [C(onp.array([-2.4, -0.6, 0.2, 1.7, 3.1]), torch=T("round"))],
    "logical_not": [C(bools(3, 4), torch=T("logical_not"))],
    "add": [C(u(2, 3), u(3), torch=T("add")), C(u(2, 1), u(1, 3), torch=T("add")),
            C(ints(2, 3), ints(3))],
    "subtract": [C(u(2, 3), u(2, 1), torch=T("sub")), C(ints(2), ints(2))],
    "multiply": [C(u(2, 3), u(3), torch=T("mul")), C(u(4, 1, 3), u(2, 1), torch=T("mul")),
                 C(bools(3), u(3))],
    "divide": [C(u(2, 3), away0(3), torch=T("div")), C(ints(3), ints(3) + 1)],
    "power": [C(pos(2, 3), u(2, 3), torch=T("pow")), C(pos(2, 3), u(1), torch=T("pow")),
              C(ints(3) + 1, ints(3))],
    "maximum": [C(u(2, 3), u(3), torch=T("maximum"))],
    "minimum": [C(u(2, 3), u(2, 1), torch=T("minimum"))],
    "mod": [C(pos(2, 3) * 3, pos(3), torch=T("remainder"))],
    "equal": [C(ints(2, 3) * 1.0, ints(3) * 1.0, torch=T("eq"))],
    "not_equal": [C(ints(2, 3) * 1.0, ints(3) * 1.0, torch=T("ne"))],
    "less": [C(ints(2, 3), ints(3), torch=T("lt"))],
    "less_equal": [C(ints(2, 3), ints(3), torch=T("le"))],
    "greater": [C(u(2, 3), u(3), torch=T("gt"))],
    "greater_equal": [C(ints(2, 3), ints(3), torch=T("ge"))],
    "logical_and": [C(bools(2, 3), bools(3), torch=T("logical_and"))],
    "logical_or": [C(bools(2, 3), bools(3), torch=T("logical_or"))],
    "logical_xor": [C(bools(2, 3), bools(3), torch=T("logical_xor"))],
    "where": [C(bools(2, 3), u(2, 3), u(3), torch=T("where"))],
    "cast": [C(u(2, 3), dtype=onp.float64), C(u(2, 3), dtype=onp.float32, tol=1e-3),
             C(ints(4), dtype=onp.float32), C(u(3), dtype=onp.int64)],
    "sum": [C(u(2, 3, 4), torch=t_reduce("sum")),
            C(u(2, 3, 4), axis=(1,), keepdims=True, torch=t_reduce("sum")),
            C(u(2, 3, 4), axis=(0, 2), torch=t_reduce("sum")), C(ints(2, 3), axis=(0,))],
    "max": [C(distinct(2, 3, 4), torch=t_reduce("amax")),
            C(distinct(2, 3, 4), axis=(1,), keepdims=True, torch=t_reduce("amax")),
            C(onp.array([[1.0, 1.0, 0.0]]), axis=(1,), torch=t_reduce("amax"), fd=False)],
    "min": [C(distinct(3, 4), axis=(0,), torch=t_reduce("amin")),
            C(distinct(2, 3, 4), axis=(0, 2), torch=t_reduce("amin"))],
    "prod": [C(pos(2, 3), axis=(1,), torch=t_reduce("prod")),
             C(pos(2, 3), torch=t_reduce("prod")),
             # runs with no zero, one zero and two zeros (issue 24: no division by 0)
             C(onp.array([[2.0, -0.5, 3.0], [1.5, 0.0, 4.0], [0.0, 0.0, 5.0]]), axis=(1,),
               torch=t_reduce("prod")),
             C(onp.array([[0.0, 1.5], [2.0, -0.75]]), axis=(0,), keepdims=True,
               torch=t_reduce("prod")),
             C(onp.array([[0.0, 1.5], [2.0, 0.0]]), torch=t_reduce("prod"))],
    "argmax": [C(distinct(3, 4), axis=1, torch=t_arg("argmax")),
               C(distinct(3, 4), torch=t_arg("argmax"))],
    "argmin": [C(distinct(3, 4), axis=0, torch=t_arg("argmin")),
               C(distinct(3, 4), axis=1, keepdims=True)],
    "reshape": [C(u(2, 6), shape=(3, 4), torch=lambda x, shape: x.reshape(shape))],
    "transpose": [C(u(2, 3, 4), axes=(2, 0, 1), torch=lambda x, axes: x.permute(axes))],
    "broadcast_to": [C(u(3, 1), shape=(2, 3, 4),
                       torch=lambda x, shape: x.broadcast_to(shape))],
    "slice": [C(u(4, 5), **_SL, torch=t_slice),
              C(u(4), begin=(3,), end=(-1,), step=(-1,)),
              C(u(4, 5), begin=(0, 4), end=(4, 0), step=(1, -2))],
    "slice_assign": [C(u(4, 5), u(2, 3), **_SL, torch=t_slice_assign),
                     C(u(4, 5), u(1, 3), **_SL, torch=t_slice_assign)],
    "concatenate": [C(u(2, 3), u(1, 3), u(4, 3), axis=0,
                      torch=lambda *xs, axis: _t().cat(xs, dim=axis)),
                    C(u(2, 3), u(2, 1), axis=1)],
    "allreduce": [C(u(3, 4), _ONE_PROCESS, op="mean", torch=lambda x, h, op: x),
                  C(u(5), _ONE_PROCESS, op="sum")],
    "allreduce_start": [C(u(3, 4), _ONE_PROCESS, op="mean",
                          torch=lambda x, h, op: x)],
    # its third input only orders the schedule
    "allreduce_wait": [C(u(3, 4), _ONE_PROCESS, ints(2), op="sum",
                         torch=lambda x, h, a, op: x)],
    "take": [C(u(4, 3), ints(2, 2, hi=4), axis=0, mode="clip", torch=t_take),
             C(u(2, 5, 3), ints(3, hi=5), axis=1, mode="clip", torch=t_take),
             C(u(4, 3), onp.array([-1, 5, 2]), axis=0, mode="wrap"),
             C(u(4, 3), onp.array([-1, 7, 2]), axis=0, mode="clip")],
    "scatter_add": [C(u(2, 3), onp.array([1, 1]), axis=0, size=4, torch=t_scatter),
                    C(u(2, 2, 2, 3), ints(2, 2, hi=4), axis=1, size=4, torch=t_scatter)],
    "matmul": [C(u(2, 3), u(3, 4), torch=T("matmul")),
               C(u(2, 1, 2, 3), u(3, 3, 2), torch=T("matmul")),
               # a matrix applied to a batch (eager: one gemm over all rows)
               C(u(2, 3, 4), u(4, 2), torch=T("matmul")),
               C(u(3, 4), u(2, 4, 2), torch=T("matmul"))],
    "full": [C(shape=(2, 3), value=1.5, dtype=onp.float32,
               torch=lambda shape, value, dtype: _t().full(shape, value)),
             C(shape=(), value=7, dtype=onp.int64)],
    "random_uniform": [C(shape=(2000,), dtype=onp.float32, low=2.0, high=4.0)],
    "random_normal": [C(shape=(50, 40), dtype=onp.float64, loc=1.0, scale=2.0)],
    "random_randint": [C(shape=(2000,), dtype=onp.int32, low=-2, high=3)],
    "random_gamma": [C(shape=(4000,), dtype=onp.float64, alpha=2.5, scale=0.5)],
    "random_poisson": [C(shape=(4000,), dtype=onp.int64, lam=3.0)],
    "windows": [C(u(2, 3, 5, 6), **_WIN, torch=t_windows),
                C(u(1, 2, 4, 4), kernel=(2, 2), stride=(2, 2), dilation=(1, 1),
                  pad=(0, 1, 1, 0), pad_value=0.0, torch=t_windows),
                C(u(2, 2, 7), kernel=(3,), stride=(2,), dilation=(1,), pad=(1, 1)),
                C(u(1, 1, 3, 3), kernel=(2, 2), stride=(1, 1), dilation=(1, 1),
                  pad=(1, 1, 1, 1), pad_value=-onp.inf, fd=False)],
    "unwindows": [C(u(2, 4, 3, 3, 2, 3), **_UNWIN_ARGS, torch=t_unwindows),
                  C(u(2, 4, 2, 3), in_shape=(7,), kernel=(3,), stride=(2,), dilation=(1,),
                    pad=(1, 1))],
}

CASES.update(control_cases(C))   # cond / while_loop: attributes are subgraphs
CASES.update(heavy_cases(C))     # conv, pool and their gradients
CASES.update(batchnorm_cases(C))  # batch norm and its gradients
CASES.update(special_cases(C))   # gammaln, digamma, gamma, erfinv, bitwise ops
CASES.update(lowp_cases(C))      # matmul_bf16
CASES.update(int8_cases(C))      # quantize_int8, dense_int8, conv_int8
CASES.update(conv_bf16_cases(C))  # conv_bf16
CASES.update(attention_cases(C))  # scaled dot-product attention
CASES.update(normalization_cases(C))  # layer_norm, softmax over the last axis

IDS = [(name, i) for name in sorted(REGISTRY) for i in range(len(CASES.get(name, [None])))]


def test_every_primitive_has_cases():
    missing = sorted(set(REGISTRY) - set(CASES))
    assert not missing, f"primitives without test cases in CASES: {missing}"
    assert not set(CASES) - set(REGISTRY), "CASES names unknown primitives"


def _run(prim, case, values=None):
    values = case.inputs if values is None else values
    return prim(*[wrap(v) for v in values], **case.attrs)


def _float_inputs(case):
    return [i for i, v in enumerate(case.inputs) if is_float(onp.asarray(v).dtype)]


def _differentiable(prim, out):
    return prim.grad is not None and prim.check_grad and not prim.random and is_float(out.dtype)


def _kiln_grads(prim, case, proj, which):
    xs = [wrap(v) for v in case.inputs]
    for i in which:
        xs[i].attach_grad()
    with autograd.record():
        out = prim(*xs, **case.attrs)
        loss = (out * wrap(proj.astype(out.dtype))).sum()
    loss.backward()
    return [to_np(xs[i].grad) for i in which]


@pytest.mark.parametrize("name,idx", IDS, ids=[f"{n}-{i}" for n, i in IDS])
def test_primitive(name, idx):
    if name not in CASES:
        pytest.fail(f"no test case for primitive {name!r}")
    prim, case = REGISTRY[name], CASES[name][idx]
    out = _run(prim, case)
    # (a) eager result agrees with the shape/dtype rule
    shape, dtype = prim.shape(*[onp.asarray(v) for v in case.inputs], **case.attrs)
    assert out.shape == tuple(shape) and out.dtype == onp.dtype(dtype), (out.shape, out.dtype)
    assert isinstance(to_np(out), onp.ndarray)
    if prim.random:
        _check_random(name, to_np(out), case.attrs)
        return
    which = _float_inputs(case)
    proj = onp.random.default_rng(7).standard_normal(out.shape)
    # (b) gradients against finite differences
    if _differentiable(prim, out) and which and case.fd:
        grads = _kiln_grads(prim, case, proj, which)
        eps = 1e-6 if out.dtype == onp.float64 else 1e-3
        tol = 1e-6 if out.dtype == onp.float64 else 2e-3

        def f(*vals):
            return float((prim.impl(*vals, **case.attrs) * proj).sum())
        for i, g in zip(which, grads):
            assert g.shape == onp.shape(case.inputs[i])
            num = numeric_grad(f, [onp.asarray(v) for v in case.inputs], i, eps)
            assert_close(g, num, rtol=1e-4, atol=tol, msg=f"{name}: input {i}")
    # (c) PyTorch oracle
    if case.torch is not None:
        _check_torch(prim, case, out, proj, which)


def _check_torch(prim, case, out, proj, which):
    torch = pytest.importorskip("torch")
    tin = [torch.tensor(onp.asarray(v)) for v in case.inputs]
    diff = _differentiable(prim, out)
    for i in which:
        tin[i].requires_grad_(diff)
    ref = case.torch(*tin, **case.attrs)
    expected = ref.detach().numpy()
    assert_close(out.astype(onp.float64) if out.dtype != onp.bool_ else out,
                 expected, rtol=1e-6, atol=max(case.tol, 1e-6), msg=prim.name)
    if diff and which and out.dtype == onp.float64:
        (ref * torch.tensor(proj)).sum().backward()
        grads = _kiln_grads(prim, case, proj, which)
        for i, g in zip(which, grads):
            assert_close(g, tin[i].grad.numpy(), rtol=1e-6, atol=1e-6,
                         msg=f"{prim.name}: torch grad of input {i}")


def _check_random(name, data, attrs):
    if name == "random_uniform":
        assert data.min() >= attrs["low"] and data.max() < attrs["high"]
        assert abs(data.mean() - 3.0) < 0.1 and abs(data.std() - 2 / math.sqrt(12)) < 0.05
    elif name == "random_normal":
        assert abs(data.mean() - 1.0) < 0.2 and abs(data.std() - 2.0) < 0.2
    elif name == "random_gamma":    # mean alpha * scale, variance alpha * scale^2
        assert data.min() > 0 and abs(data.mean() - 1.25) < 0.05
        assert abs(data.var() - 0.625) < 0.06
    elif name == "random_poisson":  # mean and variance lam
        assert data.min() >= 0 and abs(data.mean() - 3.0) < 0.1 and abs(data.var() - 3.0) < 0.3
    else:
        assert set(onp.unique(data)) == {-2, -1, 0, 1, 2}


# ---- (d) second-order gradients ------------------------------------------------------------

def _conv(x, w):
    return npx.convolution(x, w, kernel=(2, 2), stride=(2, 1), pad=(1, 0), num_filter=2,
                           no_bias=True)


SECOND_ORDER = {
    "exp": (lambda x: np.exp(x), [u(2, 3)]),
    "tanh": (lambda x: np.tanh(x), [u(2, 3)]),
    "sigmoid": (lambda x: npx.sigmoid(x), [u(2, 3, lo=-3, hi=3)]),
    "log": (lambda x: np.log(x), [pos(3)]),
    "multiply": (lambda a, b: a * b * a, [u(2, 3), u(3)]),
    "divide": (lambda a, b: a / b, [u(2, 3), away0(3)]),
    "power": (lambda a, b: a ** b, [pos(3), u(3)]),
    "matmul": (lambda a, b: np.tanh(np.matmul(a, b)), [u(2, 3), u(3, 2)]),
    "convolution": (lambda x, w: np.tanh(_conv(x, w)), [u(1, 2, 4, 3), u(2, 2, 2, 2)]),
    "pooling": (lambda x: npx.pooling(x * x, kernel=(2, 2), pool_type="avg"), [u(1, 1, 3, 3)]),
    "max_pooling": (lambda x: npx.pooling(x * x * x, kernel=(2, 2), stride=(1, 1)),
                    [distinct(1, 1, 3, 3)]),
    "deconvolution": (lambda x, w: np.tanh(npx.deconvolution(x, w, kernel=(2, 2), stride=(2, 1),
                                                             num_filter=2, no_bias=True)),
                      [u(1, 2, 2, 3), u(2, 2, 2, 2)]),
    "sum": (lambda x: np.sum(x * x, axis=1) ** 2, [u(2, 3)]),
    "max": (lambda x: np.max(x * x, axis=0) * x[0], [distinct(3, 2) + 0.4]),
    "take": (lambda x: x[onp.array([0, 2, 2])] ** 3, [u(3, 2)]),
    "attention": (lambda q, k, v: np.tanh(npx.attention(q, k, v, onp.array([[1, 1, 0]], bool))),
                  [u(2, 2, 3), u(2, 3, 3), u(2, 3, 2)]),
    "layer_norm": (lambda x, g, b: np.tanh(REGISTRY["layer_norm"](x, g, b, eps=0.1)),
                   [u(2, 4), u(4), u(4)]),
    "softmax": (lambda x: np.tanh(REGISTRY["softmax"](x * 2, log=False)) +
                REGISTRY["softmax"](x, log=True), [u(2, 4)]),
    "batch_norm": (lambda x, g, b: np.tanh(npx.batch_norm(
        x, g, b, np.zeros(3, dtype="float64"), np.ones(3, dtype="float64"), eps=0.1,
        fix_gamma=False)), [u(2, 3, 2), u(3), u(3)]),
}


def _first_grad(fn, vals, proj):
    xs = [wrap(v) for v in vals]
    for x in xs:
        x.attach_grad()
    with autograd.record():
        loss = (fn(*xs) * wrap(proj)).sum()
    return xs, autograd.grad(loss, xs, create_graph=True)


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_second_order(name):
    fn, vals = SECOND_ORDER[name]
    rng = onp.random.default_rng(3)
    proj = rng.standard_normal(fn(*[wrap(v) for v in vals]).shape)
    vs = [rng.standard_normal(onp.shape(v)) for v in vals]
    with autograd.record():
        xs, grads = _first_grad(fn, vals, proj)
        h = sum((g * wrap(v)).sum() for g, v in zip(grads, vs))
    h.backward()
    second = [to_np(x.grad) for x in xs]

    def first_dot_v(*values):
        with autograd.record():
            _, gs = _first_grad(fn, values, proj)
        return float(sum((to_np(g) * v).sum() for g, v in zip(gs, vs)))
    for i in range(len(vals)):
        num = numeric_grad(first_dot_v, [onp.asarray(v) for v in vals], i)
        assert_close(second[i], num, rtol=1e-4, atol=1e-5, msg=f"{name}: input {i}")
