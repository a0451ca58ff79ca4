"""MXNet 1.x names added to nd (Sequence*, SliceChannel, Pad, LRN, broadcast comparisons,
nd.linalg, ...), npx's gather_nd/slice/nonzero/shape_array/cast and np.linalg's
matrix_power/multi_dot/slogdet/...: values against NumPy (or outputs of MXNet 1.9.1
where NumPy has no counterpart), gradients against finite differences, hybridized against
eager."""
import numpy as onp
import pytest

import kiln
from kiln import autograd
from kiln import nd, np, npx
from kiln.fuzz.compare import compare
from conftest import assert_close, numeric_grad, to_np, wrap

R = onp.random.default_rng(9)


def u(*s):
    return R.uniform(-1.0, 1.0, s)


def check_grad(fn, *inputs, which=None):
    """autograd of sum(fn(*inputs) * proj) against central finite differences (float64)."""
    which = range(len(inputs)) if which is None else which
    proj = onp.random.default_rng(2).standard_normal(to_np(fn(*map(wrap, inputs))).shape)
    xs = [wrap(v) for v in inputs]
    for i in which:
        xs[i].attach_grad()
    with autograd.record():
        loss = (fn(*xs) * wrap(proj)).sum()
    loss.backward()

    def f(*vals):
        return float((to_np(fn(*map(wrap, vals))) * proj).sum())
    for i in which:
        num = numeric_grad(f, [onp.asarray(v) for v in inputs], i)
        assert_close(xs[i].grad, num, rtol=1e-5, atol=1e-7, msg=f"input {i}")


def same_compiled(fn, *inputs, grad=True):
    args = [np.array(onp.asarray(v, dtype=onp.float32)) if onp.asarray(v).dtype.kind == "f"
            else np.array(v) for v in inputs]
    findings = compare(fn, args, grad=grad, strict=True)
    assert not findings, "\n".join(map(repr, findings))


# ---- sequences --------------------------------------------------------------------------

LENS = onp.array([1.0, 3.0, 2.0])


def seq_mask(x, lens, axis=0, value=0.0):
    out = x.copy()
    for b, n in enumerate(lens.astype(int)):
        if axis == 0:
            out[n:, b] = value
        else:
            out[b, n:] = value
    return out


def seq_last(x, lens):
    return onp.stack([x[int(n) - 1, b] for b, n in enumerate(lens)])


def seq_reverse(x, lens):
    out = x.copy()
    for b, n in enumerate(lens.astype(int)):
        out[:n, b] = x[:n, b][::-1]
    return out


SEQ = {
    "SequenceMask": (lambda x, n: nd.SequenceMask(x, n, use_sequence_length=True, value=-2.0),
                     lambda x, n: seq_mask(x, n, value=-2.0), (4, 3, 2)),
    "SequenceMask_axis1": (lambda x, n: nd.SequenceMask(x, n, use_sequence_length=True, axis=1),
                           lambda x, n: seq_mask(x, n, axis=1), (3, 4)),
    "SequenceLast": (lambda x, n: nd.SequenceLast(x, n, use_sequence_length=True), seq_last,
                     (4, 3, 2)),
    "SequenceReverse": (lambda x, n: nd.SequenceReverse(x, n, use_sequence_length=True),
                        seq_reverse, (4, 3)),
}


@pytest.mark.parametrize("name", sorted(SEQ))
def test_sequence_ops(name):
    fn, ref, shape = SEQ[name]
    x = u(*shape)
    assert_close(fn(wrap(x), wrap(LENS)), ref(x, LENS), msg=name)
    check_grad(fn, x, LENS, which=[0])
    same_compiled(fn, x, LENS)


def test_sequence_ops_without_lengths():
    x = u(3, 2, 2)
    assert_close(nd.SequenceMask(wrap(x)), x)
    assert_close(nd.SequenceLast(wrap(x)), x[-1])
    assert_close(nd.SequenceReverse(wrap(x)), x[::-1])


def test_sequence_ops_as_symbols():
    from kiln import sym
    data, lens = sym.var("data"), sym.var("lens")
    s = sym.SequenceMask(data, lens, use_sequence_length=True, value=-1.0)
    assert s.list_arguments() == ["data", "lens"]
    (out,) = s.eval(data=nd.array(onp.ones((3, 2))), lens=nd.array([1.0, 2.0]))
    assert out.asnumpy().tolist() == [[1, 1], [-1, 1], [-1, -1]]
    assert sym.SequenceLast(data).list_arguments() == ["data"]


# ---- layout and 1.x elementwise ---------------------------------------------------------

def test_values_as_mxnet_1_9_1_gives_them():
    x = nd.array([[1, 2, 3], [4, 5, 6]])
    y = nd.array([[1], [5]])
    eq = nd.broadcast_equal(x, y)
    assert eq.dtype == onp.float32 and eq.asnumpy().tolist() == [[1, 0, 0], [0, 1, 0]]
    assert nd.lesser(x, 2.5).asnumpy().tolist() == [[1, 1, 0], [0, 0, 0]]
    assert nd.broadcast_mod(x, y).asnumpy().tolist() == [[0, 0, 0], [4, 0, 1]]
    assert_close(nd.norm(x), [9.539392])
    assert nd.norm(x).shape == (1,)
    assert nd.argmax_channel(x).asnumpy().tolist() == [2, 2]
    assert nd.batch_take(x, nd.array([2, 0], dtype="int32")).asnumpy().tolist() == [3, 4]
    parts = nd.SliceChannel(nd.arange(12).reshape(2, 6), num_outputs=3)
    assert isinstance(parts, list) and parts[0].asnumpy().tolist() == [[0, 1], [6, 7]]
    assert nd.split(nd.arange(6).reshape(3, 2), num_outputs=3, axis=0,
                    squeeze_axis=True)[1].asnumpy().tolist() == [2, 3]
    pad = nd.Pad(nd.arange(8).reshape(1, 1, 2, 4), mode="reflect",
                 pad_width=(0, 0, 0, 0, 1, 1, 2, 2))
    assert pad.asnumpy()[0, 0, 0].tolist() == [6, 5, 4, 5, 6, 7, 6, 5]
    lrn = nd.LRN(nd.arange(1, 13).reshape(1, 3, 2, 2), nsize=3, alpha=0.1)
    assert_close(lrn.asnumpy()[0, :, 0, 0], [0.45390722, 1.3796649, 2.4946084])
    assert_close(nd.khatri_rao(nd.array([[1, 2], [3, 4]]), nd.array([[1, 2], [3, 4], [5, 6]])),
                 [[1, 4], [3, 8], [5, 12], [3, 8], [9, 16], [15, 24]])
    assert nd.broadcast_axes(nd.ones((1, 3, 1)), axis=(0, 2), size=(2, 4)).shape == (2, 3, 4)
    assert nd.size_array(x).asnumpy().tolist() == [6]


@pytest.mark.parametrize("mode", ["constant", "edge", "reflect"])
def test_pad_equals_numpy(mode):
    x = u(1, 2, 3, 4)
    widths = (0, 0, 0, 0, 2, 1, 1, 3)
    kw = {"constant_value": 0.5} if mode == "constant" else {}
    out = nd.Pad(wrap(x), mode=mode, pad_width=widths, **kw)
    ref_kw = {"constant_values": 0.5} if mode == "constant" else {}
    assert_close(out, onp.pad(x, [(0, 0), (0, 0), (2, 1), (1, 3)], mode=mode, **ref_kw))
    check_grad(lambda t: nd.Pad(t, mode=mode, pad_width=widths, **kw), x)


def test_depth_space_round_trip_and_gradients():
    x = u(2, 8, 2, 3)
    y = nd.depth_to_space(wrap(x), 2)
    assert y.shape == (2, 2, 4, 6)
    assert_close(nd.space_to_depth(y, 2), x)
    same_compiled(lambda t: nd.space_to_depth(nd.depth_to_space(t, 2) * 2.0, 2), x)


def test_moments_gradient():
    check_grad(lambda t: nd.moments(t, axes=(1,))[0] + nd.moments(t, axes=(1,))[1] * 3.0,
               u(3, 4))


# ---- nd.linalg --------------------------------------------------------------------------

A, B, C = u(2, 3, 3), u(2, 3, 4), u(2, 3, 4)
SPD = onp.eye(3) * 3 + A[0] @ A[0].T

LINALG = {
    "gemm": (lambda a, b, c: nd.linalg.gemm(a, b, c, transpose_a=True, alpha=2.0, beta=0.5),
             lambda a, b, c: 2 * onp.swapaxes(a, -1, -2) @ b + 0.5 * c, (A, B, C)),
    "gemm2": (lambda a, b: nd.linalg.gemm2(a, b, transpose_b=True),
              lambda a, b: a @ onp.swapaxes(b, -1, -2), (B, C)),
    "trmm": (lambda a, b: nd.linalg.trmm(a, b, lower=False, alpha=1.5),
             lambda a, b: 1.5 * onp.triu(a) @ b, (A, B)),
    "trmm_right_t": (lambda a, b: nd.linalg.trmm(a, b, transpose=True, rightside=True),
                     lambda a, b: b @ onp.swapaxes(onp.tril(a), -1, -2),
                     (A, onp.swapaxes(B, -1, -2).copy())),
    "syrk": (lambda a: nd.linalg.syrk(a, transpose=True, alpha=0.5),
             lambda a: 0.5 * onp.swapaxes(a, -1, -2) @ a, (B,)),
    "sumlogdiag": (nd.linalg.sumlogdiag,
                   lambda a: onp.log(onp.diagonal(a, 0, -2, -1)).sum(-1), (onp.abs(A) + 1,)),
    "extractdiag": (lambda a: nd.linalg.extractdiag(a, 1),
                    lambda a: onp.diagonal(a, 1, -2, -1), (A,)),
    "makediag": (lambda a: nd.linalg.makediag(a, -1),
                 lambda a: onp.stack([onp.diag(r, -1) for r in a]), (B[:, 0],)),
    "extracttrian": (nd.linalg.extracttrian, lambda a: a[:, onp.tril_indices(3)[0],
                                                           onp.tril_indices(3)[1]], (A,)),
    "maketrian_upper": (lambda a: nd.linalg.maketrian(a, offset=1),
                        lambda a: _maketrian_upper1(a), (u(2, 3),)),
}


def _maketrian_upper1(a):
    out = onp.zeros((a.shape[0], 3, 3))
    r, c = onp.triu_indices(3, 1)
    out[:, r, c] = a
    return out


@pytest.mark.parametrize("name", sorted(LINALG))
def test_nd_linalg_composed(name):
    fn, ref, inputs = LINALG[name]
    assert_close(fn(*map(wrap, inputs)), ref(*inputs), msg=name)
    check_grad(fn, *inputs)
    same_compiled(fn, *inputs)


def test_nd_linalg_eager_ops():
    L = onp.linalg.cholesky(SPD)
    assert_close(nd.linalg.potrf(wrap(SPD)), L)
    assert_close(nd.linalg.potri(wrap(L)), onp.linalg.inv(SPD))
    assert_close(nd.linalg.inverse(wrap(SPD)), onp.linalg.inv(SPD))
    assert_close(nd.linalg.det(wrap(SPD)), [onp.linalg.det(SPD)])
    sign, logdet = nd.linalg.slogdet(wrap(SPD))
    assert sign.shape == (1,) and logdet.shape == (1,)
    assert_close(logdet, [onp.linalg.slogdet(SPD)[1]])
    x = nd.linalg.trsm(wrap(L), wrap(B[0]), alpha=2.0)
    assert_close(L @ to_np(x), 2 * B[0])
    x = nd.linalg.trsm(wrap(L), wrap(B[0].T), rightside=True, transpose=True)
    assert_close(to_np(x) @ L.T, B[0].T)
    q, low = nd.linalg.gelqf(wrap(B[0]))
    assert_close(to_np(low) @ to_np(q), B[0])
    assert_close(to_np(q) @ to_np(q).T, onp.eye(3), atol=1e-12)
    vecs, vals = nd.linalg.syevd(wrap(SPD))
    assert_close(to_np(vecs).T @ onp.diag(to_np(vals)) @ to_np(vecs), SPD)
    assert nd.linalg_gemm2 is nd.linalg.gemm2
    with pytest.raises(kiln.KilnError, match="not positive definite"):
        nd.linalg.potrf(nd.array(-onp.eye(2)))


# ---- npx --------------------------------------------------------------------------------

def test_gather_nd():
    data = u(3, 4, 2)
    idx = onp.array([[2, 0, -1], [1, 3, 0]])
    out = npx.gather_nd(wrap(data), wrap(idx))
    assert_close(out, data[idx[0], idx[1]])
    check_grad(lambda d: npx.gather_nd(d, wrap(idx)), data)
    same_compiled(lambda d, i: npx.gather_nd(d, i), data, idx)
    with pytest.raises(kiln.KilnError, match="gather_nd"):
        npx.gather_nd(wrap(data), wrap(onp.zeros((4, 2), dtype=onp.int64)))


def test_npx_small_functions():
    x = np.array([[0, 1, 2], [3, 0, 5]])
    assert npx.nonzero(x).asnumpy().tolist() == [[0, 1], [0, 2], [1, 0], [1, 2]]
    assert npx.shape_array(x).asnumpy().tolist() == [2, 3]
    assert npx.cast(x, "int32").dtype == onp.int32
    sl = npx.slice(np.arange(10).reshape(2, 5), begin=(None, 1), end=(None, 4), step=(None, 2))
    assert sl.asnumpy().tolist() == [[1, 3], [6, 8]]
    assert_close(npx.gamma(np.array([0.5, -1.5])), [1.7724538, 2.3632717])
    assert_close(npx.gammaln(np.array([0.5, -1.5])), [0.5723649, 0.86004704])
    assert_close(npx.erfinv(np.array([0.5])), [0.47693628])


# ---- np.linalg --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [0, 1, 2, 5, -2])
def test_matrix_power(n):
    a = u(3, 3) + onp.eye(3) * 2
    assert_close(np.linalg.matrix_power(wrap(a), n), onp.linalg.matrix_power(a, n))
    if n >= 1:
        check_grad(lambda t: np.linalg.matrix_power(t, n), a)
        same_compiled(lambda t: np.linalg.matrix_power(t, n), a)


def test_multi_dot():
    mats = [u(4), u(4, 3), u(3, 6), u(6, 2), u(2, 5)]
    assert_close(np.linalg.multi_dot([wrap(m) for m in mats]), onp.linalg.multi_dot(mats))
    check_grad(lambda *ms: np.linalg.multi_dot(list(ms)), *mats)
    same_compiled(lambda *ms: np.linalg.multi_dot(list(ms)), *mats)


def test_eager_linalg_functions_equal_numpy():
    a = SPD
    sign, logdet = np.linalg.slogdet(wrap(a))
    assert_close(sign, 1.0)
    assert_close(logdet, onp.linalg.slogdet(a)[1])
    assert_close(np.linalg.cond(wrap(a)), onp.linalg.cond(a))
    assert_close(np.linalg.eigvalsh(wrap(a)), onp.linalg.eigvalsh(a))
    assert_close(onp.sort(to_np(np.linalg.eigvals(wrap(a)))), onp.linalg.eigvalsh(a))
    x, res, rank, sv = np.linalg.lstsq(wrap(B[0]), wrap(C[0][:, 0]))
    assert_close(x, onp.linalg.lstsq(B[0], C[0][:, 0], rcond=None)[0])
    assert rank == 3
    t = onp.eye(6).reshape(6, 2, 3) + 0.1 * u(6, 2, 3)
    assert_close(np.linalg.tensorinv(wrap(t), ind=1), onp.linalg.tensorinv(t, ind=1))
    assert_close(np.linalg.tensorsolve(wrap(t), wrap(B[0, :2, 0].repeat(3))),
                 onp.linalg.tensorsolve(t, B[0, :2, 0].repeat(3)))


# ---- further 1.x operators (kiln/mx/ops) ------------------------------------

def test_extra_ops_as_mxnet_1_9_1_gives_them():
    x = nd.arange(2 * 2 * 4 * 5).reshape(2, 2, 4, 5)
    cols = nd.im2col(x, kernel=(2, 3), stride=(1, 2), dilate=(1, 1), pad=(1, 0))
    assert cols.shape == (2, 12, 10) and float(cols.sum()) == 7584.0
    assert cols[0, :, 0].asnumpy().tolist() == [0, 0, 0, 0, 1, 2, 0, 0, 0, 20, 21, 22]
    back = nd.col2im(cols, output_size=(4, 5), kernel=(2, 3), stride=(1, 2), pad=(1, 0))
    assert back.asnumpy()[0, 0, 0].tolist() == [0, 2, 8, 6, 8]
    assert nd.ravel_multi_index(nd.array([[0, 1], [1, 2]]), shape=(2, 3)).asnumpy().tolist() \
        == [1, 5]
    assert nd.unravel_index(nd.array([1, 5]), shape=(2, 3)).asnumpy().tolist() == \
        [[0, 1], [1, 2]]
    assert nd.Crop(nd.ones((1, 1, 5, 5)), h_w=(2, 3), center_crop=True).shape == (1, 1, 2, 3)
    assert_close(nd.softmax_cross_entropy(nd.array([[1.0, 2], [3, 1]]), nd.array([1, 0])),
                 [0.44018972])
    assert nd.fill_element_0index(nd.zeros((2, 3)), nd.array([5.0, 6]),
                                  nd.array([2, 0])).asnumpy().tolist() == [[0, 0, 5], [6, 0, 0]]
    assert nd.all_finite(nd.array([1.0, onp.inf])).asnumpy().tolist() == [0]
    assert nd.multi_sum_sq(nd.ones(3), nd.ones(2) * 2, num_arrays=2).asnumpy().tolist() == [3, 8]
    gn = nd.GroupNorm(nd.arange(8).reshape(1, 4, 2), nd.array([1.0, 2]), nd.array([0.0, 10]),
                      num_groups=2)
    assert_close(gn[0, 3], [10.8944235, 12.683271])


def test_scatter_nd_and_softmax_cross_entropy_gradients():
    idx = wrap(onp.array([[1, 0, 2], [1, 1, 0]]))
    out = nd.scatter_nd(nd.array([2.0, 3.0, 4.0]), idx, shape=(3, 2))
    assert out.asnumpy().tolist() == [[0, 3], [0, 2], [4, 0]]
    check_grad(lambda d: nd.scatter_nd(d, idx, shape=(3, 2, 2)), u(3, 2))
    labels = wrap(onp.array([2, 0]))
    check_grad(lambda d: nd.softmax_cross_entropy(d, labels), u(2, 3))
    torch = pytest.importorskip("torch")
    logits = u(2, 3)
    ref = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor([2, 0]),
                                            reduction="sum")
    assert_close(nd.softmax_cross_entropy(wrap(logits), labels), [float(ref)])


@pytest.mark.parametrize("name", ["LogisticRegressionOutput", "MAERegressionOutput",
                                  "MakeLoss"])
def test_output_heads_use_mxnets_gradient_rule(name):
    data, label = u(2, 3), u(2, 3)
    x = wrap(data)
    x.attach_grad()
    with autograd.record():
        if name == "MakeLoss":
            out = nd.MakeLoss(x, grad_scale=2.0, normalization="batch")
        else:
            out = getattr(nd, name)(x, wrap(label), grad_scale=3.0)
    out.backward()         # the output is the head, as these layers are used
    if name == "LogisticRegressionOutput":
        prob = 1 / (1 + onp.exp(-data))
        assert_close(out, prob)
        assert_close(x.grad, (prob - label) * 3.0 / 3)
    elif name == "MAERegressionOutput":
        assert_close(out, data)
        assert_close(x.grad, onp.sign(data - label) * 3.0 / 3)
    else:
        assert_close(out, data)
        assert_close(x.grad, onp.full((2, 3), 2.0 / 2))
