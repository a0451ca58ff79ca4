"""gluon.loss against closed-form NumPy references and, where installed, PyTorch."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np, npx
from kiln.gluon import loss as gloss


def _rng():
    return onp.random.default_rng(0)


def _logsoftmax(x, axis=-1):
    s = x - x.max(axis=axis, keepdims=True)
    return s - onp.log(onp.exp(s).sum(axis=axis, keepdims=True))


def test_l2_l1_shapes_and_values():
    r = _rng()
    p, l = r.normal(size=(5, 3, 2)).astype("f4"), r.normal(size=(5, 3, 2)).astype("f4")
    out = gloss.L2Loss()(np.array(p), np.array(l))
    assert out.shape == (5,)
    onp.testing.assert_allclose(out.asnumpy(), (0.5 * (p - l) ** 2).mean(axis=(1, 2)), rtol=1e-5)
    out = gloss.L1Loss(weight=2.0)(np.array(p), np.array(l))
    onp.testing.assert_allclose(out.asnumpy(), 2 * onp.abs(p - l).mean(axis=(1, 2)), rtol=1e-5)


def test_label_is_reshaped_like_pred():
    pred = np.array([[1.0], [2.0], [4.0]])
    out = gloss.L2Loss()(pred, np.array([0.0, 0.0, 0.0]))
    onp.testing.assert_allclose(out.asnumpy(), [0.5, 2.0, 8.0])


def test_sample_weight_broadcasts():
    p = np.ones((4, 3))
    sw = np.array([[1.0], [0.0], [2.0], [1.0]])
    out = gloss.L1Loss()(p, np.zeros((4, 3)), sw)
    onp.testing.assert_allclose(out.asnumpy(), [1, 0, 2, 1])


def test_softmax_ce_sparse_and_dense_agree_with_reference():
    r = _rng()
    x = r.normal(size=(6, 5)).astype("f4") * 3
    y = r.integers(0, 5, size=6)
    ref = -_logsoftmax(x)[onp.arange(6), y]
    ce = gloss.SoftmaxCrossEntropyLoss()
    onp.testing.assert_allclose(ce(np.array(x), np.array(y, dtype="int32")).asnumpy(), ref,
                                rtol=1e-5)
    dense = gloss.SoftmaxCrossEntropyLoss(sparse_label=False)
    onp.testing.assert_allclose(dense(np.array(x), np.array(onp.eye(5)[y])).asnumpy(), ref,
                                rtol=1e-5)
    logits = gloss.SoftmaxCrossEntropyLoss(from_logits=True)
    onp.testing.assert_allclose(logits(np.array(_logsoftmax(x)), np.array(y)).asnumpy(), ref,
                                rtol=1e-5)


def test_softmax_ce_axis_1_on_nchw_like_input():
    r = _rng()
    x = r.normal(size=(2, 4, 3)).astype("f4")
    y = r.integers(0, 4, size=(2, 3))
    ref = -onp.take_along_axis(_logsoftmax(x, 1), y[:, None, :], 1)[:, 0, :].mean(axis=1)
    out = gloss.SoftmaxCrossEntropyLoss(axis=1)(np.array(x), np.array(y))
    onp.testing.assert_allclose(out.asnumpy(), ref, rtol=1e-5)


def test_sigmoid_bce_is_stable_for_huge_logits():
    x = np.array([[1000.0, -1000.0, 0.0]])
    z = np.array([[0.0, 1.0, 1.0]])
    out = gloss.SigmoidBinaryCrossEntropyLoss()(x, z).asnumpy()
    assert onp.isfinite(out).all()
    onp.testing.assert_allclose(out, [(1000 + 1000 + onp.log(2)) / 3], rtol=1e-5)


def test_loss_gradient_flows_to_prediction():
    r = _rng()
    x = np.array(r.normal(size=(4, 3)).astype("f4"))
    y = np.array([0, 2, 1, 1])
    x.attach_grad()
    with autograd.record():
        loss = gloss.SoftmaxCrossEntropyLoss()(x, y)
    loss.backward()
    e = onp.exp(_logsoftmax(x.asnumpy()))
    e[onp.arange(4), y.asnumpy().astype(int)] -= 1  # float32 labels, as MXNet makes them
    onp.testing.assert_allclose(x.grad.asnumpy(), e, rtol=1e-5, atol=1e-6)


def test_huber_and_hinge_reference():
    p = onp.array([[0.2, -3.0], [1.5, 0.1]], "f4")
    l = onp.array([[0.0, 0.0], [1.0, -1.0]], "f4")
    err = onp.abs(p - l)
    hub = onp.where(err > 1, err - 0.5, 0.5 * err ** 2).mean(axis=1)
    onp.testing.assert_allclose(gloss.HuberLoss()(np.array(p), np.array(l)).asnumpy(), hub,
                                rtol=1e-6)
    hinge = onp.maximum(0, 1 - p * l).mean(axis=1)
    onp.testing.assert_allclose(gloss.HingeLoss()(np.array(p), np.array(l)).asnumpy(), hinge,
                                rtol=1e-6)


def test_loss_is_a_hybrid_block():
    from kiln.gluon.block import HybridBlock
    assert isinstance(gloss.L2Loss(), HybridBlock)
    assert gloss.SoftmaxCELoss is gloss.SoftmaxCrossEntropyLoss


# ---- PyTorch as the oracle ---------------------------------------------------------------------

torch_cases = [
    ("l2", lambda: gloss.L2Loss(),
     lambda t, p, l: 0.5 * t.nn.functional.mse_loss(p, l, reduction="none").mean(1)),
    ("l1", lambda: gloss.L1Loss(),
     lambda t, p, l: t.nn.functional.l1_loss(p, l, reduction="none").mean(1)),
    ("huber", lambda: gloss.HuberLoss(rho=0.7),
     lambda t, p, l: t.nn.functional.huber_loss(p, l, reduction="none", delta=0.7).mean(1) / 0.7),
    ("bce", lambda: gloss.SigmoidBCELoss(),
     lambda t, p, l: t.nn.functional.binary_cross_entropy_with_logits(
         p, l, reduction="none").mean(1)),
    ("bce_sigmoid", lambda: gloss.SigmoidBCELoss(from_sigmoid=True),
     lambda t, p, l: t.nn.functional.binary_cross_entropy(p, l, reduction="none").mean(1)),
    # MXNet 1.9.1's KLDivLoss sums over the classes (its code; the docstring says averaged)
    ("kl", lambda: gloss.KLDivLoss(from_logits=False),
     lambda t, p, l: t.nn.functional.kl_div(t.log_softmax(p, -1), l,
                                            reduction="none").sum(1)),
]


@pytest.mark.parametrize("name,make,ref", torch_cases, ids=[c[0] for c in torch_cases])
def test_against_torch_value_and_grad(name, make, ref):
    torch = pytest.importorskip("torch")
    r = _rng()
    p = r.normal(size=(8, 5)).astype("f4") * 2
    if name == "bce_sigmoid":
        p = 1 / (1 + onp.exp(-p))
    if name.startswith("bce"):
        l = (r.random(size=(8, 5)) > 0.5).astype("f4")
    elif name == "kl":
        l = onp.exp(_logsoftmax(r.normal(size=(8, 5)))).astype("f4")
    else:
        l = r.normal(size=(8, 5)).astype("f4")
    kp = np.array(p)
    kp.attach_grad()
    with autograd.record():
        out = make()(kp, np.array(l))
    out.backward()
    tp = torch.tensor(p, requires_grad=True)
    tout = ref(torch, tp, torch.tensor(l))
    tout.sum().backward()
    onp.testing.assert_allclose(out.asnumpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(kp.grad.asnumpy(), tp.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_softmax_ce_against_torch_with_sample_weight():
    torch = pytest.importorskip("torch")
    r = _rng()
    x = r.normal(size=(7, 4)).astype("f4")
    y = r.integers(0, 4, size=7)
    w = r.random(size=(7, 1)).astype("f4")
    out = gloss.SoftmaxCrossEntropyLoss(weight=0.5)(np.array(x), np.array(y), np.array(w))
    ref = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(y), reduction="none")
    onp.testing.assert_allclose(out.asnumpy(), 0.5 * w[:, 0] * ref.numpy(), rtol=1e-5)


def test_bce_pos_weight_against_torch():
    torch = pytest.importorskip("torch")
    r = _rng()
    x = r.normal(size=(6, 3)).astype("f4") * 4
    z = (r.random(size=(6, 3)) > 0.5).astype("f4")
    pw = onp.array([0.5, 2.0, 3.0], "f4")
    out = gloss.SigmoidBCELoss()(np.array(x), np.array(z), None, np.array(pw))
    ref = torch.nn.functional.binary_cross_entropy_with_logits(
        torch.tensor(x), torch.tensor(z), pos_weight=torch.tensor(pw), reduction="none").mean(1)
    onp.testing.assert_allclose(out.asnumpy(), ref.numpy(), rtol=1e-5)


@pytest.mark.parametrize("make", [gloss.SoftmaxCrossEntropyLoss, gloss.L2Loss,
                                  gloss.SigmoidBCELoss, gloss.HuberLoss,
                                  lambda: gloss.KLDivLoss(from_logits=False)])
def test_hybridized_loss_equals_eager_and_differentiates(make):
    import warnings
    r = _rng()
    x = np.array(r.normal(size=(6, 5)).astype("f4"))
    lab = np.array(r.integers(0, 5, 6)) if make is gloss.SoftmaxCrossEntropyLoss else \
        np.array(r.random(size=(6, 5)).astype("f4"))
    loss_fn = make()
    eager = loss_fn(x, lab).asnumpy()
    x.attach_grad()
    with autograd.record():
        loss_fn(x, lab).backward()
    eager_grad = x.grad.asnumpy()
    loss_fn.hybridize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the once-per-trace note about Python side effects
        onp.testing.assert_allclose(loss_fn(x, lab).asnumpy(), eager, rtol=1e-6)
        with autograd.record():
            loss_fn(x, lab).backward()
    onp.testing.assert_allclose(x.grad.asnumpy(), eager_grad, rtol=1e-5, atol=1e-7)


def test_kl_div_equals_mxnet_1_9_1():
    # MXNet 1.9.1's gluon.loss.KLDivLoss()(log_softmax(pred), label), run in /tmp/mxvenv
    pred = npx.log_softmax(np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]))
    label = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    onp.testing.assert_allclose(gloss.KLDivLoss()(pred, label).asnumpy(),
                                [0.07795081, 0.45957822], rtol=1e-4)  # float32 logs


def test_ctc_label_may_hold_the_blank_id_as_mxnet_takes_it():
    """MXNet 1.9.1 takes a label id equal to the blank's (the last class) inside the label
    as a symbol scored with the blank's probability; a path cannot skip into it (warp-ctc's
    rule compares ids). The losses were printed by MXNet 1.9.1 on the same inputs."""
    import numpy as onp
    from kiln import nd
    from kiln.gluon.loss import CTCLoss
    pred = nd.array(onp.random.RandomState(0).randn(3, 6, 4).astype("float32"))
    label = nd.array([[3, 2, 2, -1], [2, 3, 3, 1], [3, 3, -1, -1]])
    onp.testing.assert_allclose(CTCLoss()(pred, label).asnumpy(),
                                [5.032672882080078, 9.479299545288086, 4.1484222412109375],
                                rtol=1e-5)
    given = CTCLoss()(pred, nd.array([[3, 2, 0, 1], [2, 3, 3, 1], [3, 3, 1, 1]]), None,
                      nd.array([2, 4, 1]))
    onp.testing.assert_allclose(given.asnumpy(), [4.342015266418457, 9.479299545288086,
                                                  4.659247875213623], rtol=1e-5)
