"""MXNet 1.x's output layers and losses by name: SoftmaxOutput, the regression heads
(Linear, Logistic, MAE), MakeLoss, SVMOutput and softmax_cross_entropy. An output layer's
forward is its input (or softmax) and its backward follows MXNet's rule, whatever head
gradient comes."""
import numpy as _np

from ... import np as knp, npx as knpx
from .table import _op


def _softmax_label_shape(attrs, data):
    if attrs.get("multi_output"):
        return {"label": (data[0],) + tuple(data[2:])}
    if attrs.get("preserve_shape"):
        return {"label": tuple(data[:-1])}
    return {"label": (data[0],)}


@_op("SoftmaxOutput Softmax", ("data", "label"), param_shapes=_softmax_label_shape)
def SoftmaxOutput(data, label, grad_scale=1.0, ignore_label=-1.0, multi_output=False,
                  use_ignore=False, preserve_shape=False, normalization="null",
                  smooth_alpha=0.0, **_):
    """MXNet's SoftmaxOutput. Forward: softmax over the classes (axis 1 with multi_output,
    the last axis with preserve_shape, else everything after the batch axis). Backward,
    whatever head gradient comes: grad_scale * (softmax - target), where the target is the
    label itself when it has the data's shape (soft labels), else its one-hot (smoothed by
    smooth_alpha); labels equal to ignore_label pass none with use_ignore; divided by the
    batch size ('batch') or the count of valid labels ('valid')."""
    shape = tuple(data.shape)
    if multi_output or preserve_shape:
        x = data
    else:
        x = knp.reshape(data, (shape[0], -1))
    axis = 1 if multi_output else x.ndim - 1
    classes = x.shape[axis]
    prob = knpx.softmax(x, axis=axis)
    if label.size == x.size and label.ndim == x.ndim:              # soft labels
        target = knp.reshape(label, x.shape).astype(x.dtype)
        valid = None
    else:
        lab = knp.reshape(label, tuple(s for i, s in enumerate(x.shape) if i != axis))
        onehot = knpx.one_hot(lab.astype("int64"), classes, dtype=x.dtype)
        if axis != x.ndim - 1:
            onehot = knp.moveaxis(onehot, -1, axis)
        alpha = float(smooth_alpha)
        target = onehot * (1 - alpha) + (1 - onehot) * (alpha / max(classes - 1, 1)) \
            if alpha else onehot
        valid = (lab != float(ignore_label)).astype(x.dtype) if use_ignore else None
    delta = (prob - target) * float(grad_scale)
    if valid is not None:
        delta = delta * knp.expand_dims(valid, axis)
    if normalization == "valid":    # the labels other than ignore_label, use_ignore or not
        count = label.size if valid is None and target is not None and label.size == x.size \
            else float((label != float(ignore_label)).asnumpy().sum())
        delta = delta / max(float(count), 1.0)
    else:
        if normalization == "batch":
            delta = delta / shape[0]
        if multi_output:             # and per position of the spatial axes
            delta = delta / max(int(_np.prod(shape[2:], dtype=_np.int64)), 1)
    out = _head(prob, x, (x - knpx.stop_gradient(x)) * knpx.stop_gradient(delta))
    return knp.reshape(out, shape)


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
