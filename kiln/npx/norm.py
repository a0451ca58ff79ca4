"""Normalization layers' functions of npx: batch_norm (training statistics and running
averages, an eager inference shortcut), layer_norm and group_norm."""
from .._core import autograd
from .. import np as knp
from .._core.base import normalize_axis
from .._core.dispatch import to_operands
from .._core.ndarray import ndarray
from ..ops import REGISTRY as _R
from . import fused_softmax


def _arr(x):
    return x if isinstance(x, ndarray) else to_operands([x])[0]


def batch_norm(x, gamma, beta, running_mean, running_var, eps=1e-3, momentum=0.9,
               fix_gamma=True, use_global_stats=False, output_mean_var=False, axis=1, **kwargs):
    """Batch normalization; in training it also updates running_mean/var in place."""
    x = _arr(x)
    axis = normalize_axis("batch_norm", axis, x.ndim)
    shape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
    g = knp.ones_like(gamma) if fix_gamma else gamma
    if autograd.is_training() and not use_global_stats:
        g, b = (_arr(v) for v in (g, beta))
        g, b = (v if v.dtype == x.dtype else v.astype(x.dtype) for v in (g, b))
        y = _R["batch_norm_train"](x, g, b, eps=float(eps), axis=axis)
        stats = None
        if not output_mean_var and x._node is None:   # eager: the kernel's own statistics
            from ..ops.batchnorm import stats_of_last_train
            stats = stats_of_last_train(x._data)
        if stats is None:
            # in a traced graph CSE shares these statistics with the backward pass's
            stats = _R["batch_norm_stats"](x, axis=axis)
        else:
            stats = ndarray._wrap(stats)
        mean, var = stats[0], stats[1]
        with autograd.pause():
            running_mean[:] = running_mean * momentum + mean.detach() * (1 - momentum)
            running_var[:] = running_var * momentum + var.detach() * (1 - momentum)
        if output_mean_var:
            return y, mean, var
        return y
    if not autograd.is_recording() and fused_softmax.concrete_float(x) and all(
            isinstance(v, ndarray) and v._node is None and v.dtype == x.dtype
            and v.shape == (x.shape[axis],) for v in (g, beta, running_mean, running_var)):
        return _batch_norm_infer_eager(x, g, beta, running_mean, running_var, eps, axis,
                                       output_mean_var)
    mean = knp.reshape(running_mean, shape)
    var = knp.reshape(running_var, shape)
    y = (x - mean) / knp.sqrt(var + eps) * knp.reshape(g, shape) + knp.reshape(beta, shape)
    if output_mean_var:
        return y, knp.reshape(mean, (-1,)), knp.reshape(var, (-1,))
    return y


def _batch_norm_infer_eager(x, gamma, beta, mean, var, eps, axis, output_mean_var):
    """Inference with the running statistics on concrete arrays no tape or trace sees: the
    composite's four full-size passes as one pass of in-place kernels over cache-sized
    blocks (eager ResNet features ran 4 NumPy passes per BatchNorm)."""
    from ..ops.batchnorm import normalize_values
    y = ndarray._wrap(normalize_values(x._data, mean._data, var._data, gamma._data,
                                       beta._data, float(eps), axis))
    if output_mean_var:
        return y, knp.reshape(mean, (-1,)), knp.reshape(var, (-1,))
    return y


def layer_norm(data, gamma=None, beta=None, axis=-1, eps=1e-5, output_mean_var=False):
    """Layer normalization: `data` normalized to zero mean and unit variance along `axis`, then
    scaled by `gamma` and shifted by `beta`."""
    x = _arr(data)
    axis = normalize_axis("layer_norm", axis, x.ndim)
    mean = knp.mean(x, axis=axis, keepdims=True)
    d = x - mean
    var = knp.mean(d * d, axis=axis, keepdims=True)
    y = d / knp.sqrt(var + eps)
    shape = tuple(x.shape[axis] if i == axis else 1 for i in range(x.ndim))
    if gamma is not None:
        y = y * knp.reshape(gamma, shape)
    if beta is not None:
        y = y + knp.reshape(beta, shape)
    return y


def group_norm(data, gamma, beta, num_groups=1, eps=1e-5):
    """Group normalization: the channels of `data` (N, C, ...) split into `num_groups` groups, each
    normalized over its channels and positions, then scaled by `gamma` and shifted by `beta` per
    channel."""
    x = _arr(data)
    n, c = x.shape[:2]
    g = knp.reshape(x, (n, num_groups, -1))
    # the layer_norm primitive over each group, which the normalization pass makes of the
    # mean/variance composite in compiled code: eager and hybridized results then agree
    # to the bit (the composite's gradient left 1-ulp residues where the primitive's is 0)
    one, zero = knp.array(1, dtype=x.dtype), knp.array(0, dtype=x.dtype)
    y = knp.reshape(_R["layer_norm"](g, one, zero, eps=float(eps)), x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    return y * knp.reshape(gamma, shape) + knp.reshape(beta, shape)
