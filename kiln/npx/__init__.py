"""kiln.npx: MXNet's numpy extensions (neural-network ops, devices, save/load)."""
from .nn import (relu, sigmoid, softplus, softsign, gelu, elu, selu, silu, swish,  # noqa: F401
                 activation, leaky_relu, one_hot, pick, batch_dot, fully_connected,
                 convolution, deconvolution, pooling, dropout, batch_norm, layer_norm,
                 group_norm, embedding, sequence_mask, topk, smooth_l1, reshape_like,
                 arange_like, stop_gradient, batch_flatten)
from .softmax import softmax, log_softmax, masked_softmax, attention  # noqa: F401
from .detection import multibox_prior, roi_pooling  # noqa: F401
from .multibox import multibox_target, multibox_detection  # noqa: F401
from .io import save, load  # noqa: F401
from .control_flow import cond, while_loop, foreach  # noqa: F401
from . import random  # noqa: F401
from .indexing import gather_nd, slice, nonzero  # noqa: F401
from .conversion import shape_array, cast  # noqa: F401
from ..np.special import erf, erfinv, gamma, gammaln  # noqa: F401
from .._core.context import cpu, gpu, cpu_pinned, num_gpus, current_context  # noqa: F401
from .._core.context import current_context as current_device  # noqa: F401
from ..np import reshape  # noqa: F401


# MXNet 1.x's legacy shape mode is kiln.mx's (kiln/mx/util.py registers its switch here):
# npx.set_np() turns NumPy shape semantics on there too; kiln.np always has them
SHAPE_MODE_HOOKS = []


def set_np(shape=True, array=True, dtype=False):
    """For MXNet compatibility: kiln.np always uses NumPy semantics; `shape` switches kiln.mx's
    shape mode (MXNet 1.x's legacy mode when False)."""
    for hook in SHAPE_MODE_HOOKS:
        hook(bool(shape))


def reset_np():
    """For MXNet compatibility: kiln.mx back to MXNet 1.x's legacy shape mode."""
    for hook in SHAPE_MODE_HOOKS:
        hook(False)


def is_np_array():
    """True: kiln's arrays are always NumPy-style (MXNet's `npx.is_np_array`)."""
    return True


def is_np_shape():
    """True: zero-size dimensions and 0-d arrays are always allowed (MXNet's `npx.is_np_shape`)."""
    return True


def waitall():
    """kiln runs synchronously; nothing to wait for."""


def seed(value):
    """Seed kiln's random number generator (the same as `np.random.seed`)."""
    from ..np.random import seed as _seed
    _seed(value)
