"""Gluon layers against PyTorch, with the same weights copied over."""
import numpy as onp
import pytest

from kiln import autograd
from kiln import np
from kiln.gluon import nn

torch = pytest.importorskip("torch")
F = torch.nn.functional


def _t(a):
    return torch.tensor(a.asnumpy() if hasattr(a, "asnumpy") else a)


def _close(kiln_out, torch_out, atol=1e-5):
    assert kiln_out.shape == tuple(torch_out.shape)
    onp.testing.assert_allclose(kiln_out.asnumpy(), torch_out.detach().numpy(), atol=atol,
                                rtol=1e-4)


def _x(*shape, seed=0):
    return onp.random.RandomState(seed).randn(*shape).astype(onp.float32)


@pytest.mark.parametrize("flatten", [True, False])
def test_dense_forward_and_grads(flatten):
    x = _x(4, 3, 5)
    layer = nn.Dense(6, activation="tanh", flatten=flatten)
    layer.initialize()
    X = np.array(x)
    X.attach_grad()
    with autograd.record():
        y = layer(X)
    y.backward()
    w, b = _t(layer.weight.data()).requires_grad_(), _t(layer.bias.data()).requires_grad_()
    tx = torch.tensor(x, requires_grad=True)
    ty = torch.tanh(F.linear(tx.reshape(4, -1) if flatten else tx, w, b))
    ty.sum().backward()
    _close(y, ty)
    _close(layer.weight.grad(), w.grad, 1e-4)
    _close(layer.bias.grad(), b.grad, 1e-4)
    _close(X.grad, tx.grad, 1e-4)


@pytest.mark.parametrize("kwargs", [dict(), dict(strides=2, padding=1),
                                    dict(padding=2, dilation=2), dict(groups=2)])
def test_conv2d(kwargs):
    x = _x(2, 4, 7, 6)
    layer = nn.Conv2D(6, kernel_size=3, activation="relu", **kwargs)
    layer.initialize()
    y = layer(np.array(x))
    assert layer.weight.shape == (6, 4 // kwargs.get("groups", 1), 3, 3)
    ty = F.relu(F.conv2d(torch.tensor(x), _t(layer.weight.data()), _t(layer.bias.data()),
                         stride=kwargs.get("strides", 1), padding=kwargs.get("padding", 0),
                         dilation=kwargs.get("dilation", 1), groups=kwargs.get("groups", 1)))
    _close(y, ty, 1e-4)


def test_conv1d_and_transpose():
    x = _x(2, 3, 9)
    layer = nn.Conv1D(5, kernel_size=3, strides=2)
    layer.initialize()
    _close(layer(np.array(x)), F.conv1d(torch.tensor(x), _t(layer.weight.data()),
                                        _t(layer.bias.data()), stride=2), 1e-4)
    x = _x(2, 3, 5, 4)
    up = nn.Conv2DTranspose(4, kernel_size=3, strides=2, padding=1, output_padding=1)
    up.initialize()
    y = up(np.array(x))
    assert up.weight.shape == (3, 4, 3, 3)
    ty = F.conv_transpose2d(torch.tensor(x), _t(up.weight.data()), _t(up.bias.data()),
                            stride=2, padding=1, output_padding=1)
    _close(y, ty, 1e-4)


def test_pooling_layers():
    x = _x(2, 3, 7, 7)
    X, tx = np.array(x), torch.tensor(x)
    _close(nn.MaxPool2D()(X), F.max_pool2d(tx, 2))
    _close(nn.MaxPool2D(3, strides=2, padding=1)(X), F.max_pool2d(tx, 3, 2, 1))
    _close(nn.MaxPool2D(2, ceil_mode=True)(X), F.max_pool2d(tx, 2, ceil_mode=True))
    _close(nn.AvgPool2D(3, strides=2, padding=1)(X), F.avg_pool2d(tx, 3, 2, 1))
    _close(nn.AvgPool2D(3, strides=2, padding=1, count_include_pad=False)(X),
           F.avg_pool2d(tx, 3, 2, 1, count_include_pad=False))
    _close(nn.GlobalAvgPool2D()(X), F.adaptive_avg_pool2d(tx, 1))
    _close(nn.GlobalMaxPool2D()(X), F.adaptive_max_pool2d(tx, 1))
    x1 = _x(2, 3, 8)
    _close(nn.MaxPool1D(2)(np.array(x1)), F.max_pool1d(torch.tensor(x1), 2))
    _close(nn.AvgPool1D(4, strides=2)(np.array(x1)), F.avg_pool1d(torch.tensor(x1), 4, 2))


def test_batchnorm_train_and_predict():
    x = _x(8, 3, 4, 4)
    bn = nn.BatchNorm(momentum=0.9)
    bn.initialize()
    bn(np.array(x))                              # predict mode: running stats untouched
    assert onp.allclose(bn.running_mean.data().asnumpy(), 0)
    bn.gamma.set_data(onp.array([1.0, 2.0, 0.5], onp.float32))
    bn.beta.set_data(onp.array([0.0, 0.1, -0.2], onp.float32))
    tbn = torch.nn.BatchNorm2d(3, eps=1e-5, momentum=0.1)
    with torch.no_grad():
        tbn.weight.copy_(_t(bn.gamma.data()))
        tbn.bias.copy_(_t(bn.beta.data()))
    X = np.array(x)
    with autograd.record():
        y = bn(X)
    ty = tbn.train()(torch.tensor(x))
    _close(y, ty, 1e-4)
    _close(bn.running_mean.data(), tbn.running_mean)
    batch_var = x.var(axis=(0, 2, 3))              # kiln (like MXNet) keeps the biased variance
    onp.testing.assert_allclose(bn.running_var.data().asnumpy(), 0.9 + 0.1 * batch_var,
                                rtol=1e-5)
    # predict mode uses the running statistics
    x2 = _x(2, 3, 4, 4, seed=1)
    y2 = bn(np.array(x2))
    rm, rv = bn.running_mean.data().asnumpy(), bn.running_var.data().asnumpy()
    g, b = bn.gamma.data().asnumpy(), bn.beta.data().asnumpy()
    ref = (x2 - rm[:, None, None]) / onp.sqrt(rv[:, None, None] + 1e-5) * g[:, None, None] \
        + b[:, None, None]
    onp.testing.assert_allclose(y2.asnumpy(), ref, atol=1e-5)
    assert bn.running_mean.grad_req == "null"


def test_layernorm_groupnorm_instancenorm():
    x = _x(4, 6, 5)
    ln = nn.LayerNorm()
    ln.initialize()
    ln(np.array(x))
    ln.gamma.set_data(_x(5, seed=2))
    ln.beta.set_data(_x(5, seed=3))
    _close(ln(np.array(x)), F.layer_norm(torch.tensor(x), (5,), _t(ln.gamma.data()),
                                         _t(ln.beta.data()), eps=1e-5), 1e-4)
    gn = nn.GroupNorm(num_groups=3)
    gn.initialize()
    _close(gn(np.array(x)), F.group_norm(torch.tensor(x), 3, eps=1e-5), 1e-4)
    inn = nn.InstanceNorm()
    inn.initialize()
    _close(inn(np.array(x)), F.instance_norm(torch.tensor(x), eps=1e-5), 1e-4)


def test_embedding():
    emb = nn.Embedding(10, 4)
    emb.initialize()
    idx = onp.array([[1, 2, 9], [0, 0, 3]])
    y = emb(np.array(idx, dtype="int64"))
    _close(y, F.embedding(torch.tensor(idx), _t(emb.weight.data())))
    with autograd.record():
        out = (emb(np.array(idx, dtype="int64")) * 2).sum()
    out.backward()
    counts = onp.bincount(idx.ravel(), minlength=10)[:, None] * 2.0
    onp.testing.assert_allclose(emb.weight.grad().asnumpy(), onp.broadcast_to(counts, (10, 4)))


@pytest.mark.parametrize("layer,fn", [
    (lambda: nn.ReLU(), F.relu), (lambda: nn.Sigmoid(), torch.sigmoid),
    (lambda: nn.Tanh(), torch.tanh), (lambda: nn.LeakyReLU(0.1), lambda t: F.leaky_relu(t, 0.1)),
    (lambda: nn.ELU(), F.elu), (lambda: nn.SELU(), F.selu), (lambda: nn.SiLU(), F.silu),
    (lambda: nn.Swish(), F.silu), (lambda: nn.GELU(), F.gelu),
    (lambda: nn.GELU("tanh"), lambda t: F.gelu(t, approximate="tanh")),
    (lambda: nn.Activation("softrelu"), F.softplus)])
def test_activations(layer, fn):
    x = _x(3, 7)
    _close(layer()(np.array(x)), fn(torch.tensor(x)), 1e-5)


def test_prelu():
    p = nn.PReLU(in_channels=3)
    p.initialize()
    x = _x(2, 3, 4)
    _close(p(np.array(x)), F.prelu(torch.tensor(x), torch.full((3,), 0.25)))


def test_dropout_train_vs_predict():
    drop = nn.Dropout(0.5)
    x = np.ones((200, 50))
    assert (drop(x) == x).all()
    with autograd.record():
        y = drop(x).asnumpy()
    kept = y != 0
    assert 0.4 < kept.mean() < 0.6
    assert onp.allclose(y[kept], 2.0)
    with autograd.train_mode():
        y = nn.Dropout(0.3, axes=(1,))(x).asnumpy()
    # one mask per row, shared along axis 1
    assert ((y == 0).all(axis=1) | (y != 0).all(axis=1)).all()
