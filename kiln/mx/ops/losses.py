"""MXNet 1.x's output layers and losses by name: SoftmaxOutput, the regression heads
(Linear, Logistic, MAE), MakeLoss, SVMOutput and softmax_cross_entropy. An output layer's
forward is its input (or softmax) and its backward follows MXNet's rule, whatever head
gradient comes."""
import numpy as _np

from ... import np as knp, npx as knpx
from .table import _op


@_op("SoftmaxOutput Softmax", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data[:-1])})
def SoftmaxOutput(data, label, grad_scale=1.0, normalization="null", **_):
    """Forward: softmax. Backward (MXNet's rule): grad_scale * (softmax - one_hot(label)),
    whatever head gradient comes; built from ordinary ops so it traces and compiles."""
    prob = knpx.softmax(data, axis=-1)
    onehot = knpx.one_hot(label.astype("int32"), data.shape[-1], dtype=data.dtype)
    loss = -knp.sum(onehot * knpx.log_softmax(data, axis=-1), axis=-1, keepdims=True)
    scale = float(grad_scale) / data.shape[-1]
    if normalization == "batch":
        scale /= data.shape[0]
    surrogate = loss * scale
    # value: prob; gradient: d(surrogate)/d(data) for each head element
    return knpx.stop_gradient(prob) + (surrogate - knpx.stop_gradient(surrogate))


@_op("LinearRegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def LinearRegressionOutput(data, label, grad_scale=1.0, **_):
    """Forward: identity. Backward: (data - label) * grad_scale per output."""
    label = knp.reshape(label, data.shape)
    delta = knpx.stop_gradient(data - label) * _per_sample(data, grad_scale)
    return _head(data, data, (data - knpx.stop_gradient(data)) * delta)


def _head(value, data, surrogate):
    """Forward `value`; backward d(surrogate)/d(data), whatever head gradient comes (the
    rule of MXNet's output layers)."""
    return knpx.stop_gradient(value) + (surrogate - knpx.stop_gradient(surrogate))


@_op("MakeLoss make_loss")
def MakeLoss(data, grad_scale=1.0, valid_thresh=0.0, normalization="null", **_):
    scale = float(grad_scale)
    if normalization == "batch":
        scale /= data.shape[0]
    elif normalization == "valid":
        valid = float(knp.sum(data > float(valid_thresh)))
        scale /= max(valid, 1.0)
    return _head(data, data, data * scale)


def _per_sample(data, grad_scale):
    return float(grad_scale) / max(1, data.size // data.shape[0])


@_op("LogisticRegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def LogisticRegressionOutput(data, label, grad_scale=1.0, **_):
    """Forward: sigmoid. Backward: (sigmoid(data) - label) * grad_scale per output."""
    prob = knpx.sigmoid(data)
    label = knp.reshape(label, data.shape)
    delta = knpx.stop_gradient(prob - label) * _per_sample(data, grad_scale)
    return _head(prob, data, (data - knpx.stop_gradient(data)) * delta)


@_op("MAERegressionOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data)})
def MAERegressionOutput(data, label, grad_scale=1.0, **_):
    """Forward: identity. Backward: sign(data - label) * grad_scale per output."""
    label = knp.reshape(label, data.shape)
    delta = knpx.stop_gradient(knp.sign(data - label)) * _per_sample(data, grad_scale)
    return _head(data, data, (data - knpx.stop_gradient(data)) * delta)


@_op("softmax_cross_entropy", ("data", "label"))
def softmax_cross_entropy(data, label, **_):
    """The summed cross-entropy of softmax(data) against integer labels: shape (1,)."""
    logp = knpx.log_softmax(data, axis=-1)
    picked = knpx.pick(logp, label, axis=-1)
    return knp.reshape(-knp.sum(picked), (1,))


@_op("SVMOutput", ("data", "label"),
     param_shapes=lambda attrs, data: {"label": tuple(data[:-1])})
def SVMOutput(data, label, margin=1.0, regularization_coefficient=1.0, use_linear=False, **_):
    """Forward: identity. Backward (MXNet's one-vs-all hinge rule, per class j with t = +1
    for the label and -1 otherwise): -reg * t * [margin > t x] (L1) or
    -2 reg * t * max(0, margin - t x) (L2)."""
    sign = knpx.one_hot(knp.asarray(label).astype(_np.int64), data.shape[-1],
                        dtype=data.dtype) * 2 - 1
    slack = float(margin) - sign * knpx.stop_gradient(data)
    reg = float(regularization_coefficient)
    if use_linear:
        delta = -reg * sign * (slack > 0).astype(data.dtype)
    else:
        delta = -2 * reg * sign * knp.maximum(slack, 0.0)
    return _head(data, data, (data - knpx.stop_gradient(data)) * knpx.stop_gradient(delta))
