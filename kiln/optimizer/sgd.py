"""SGD with momentum and Nesterov's accelerated gradient, in MXNet's momentum convention.

MXNet keeps the momentum buffer already scaled by the learning rate:
    mom = momentum * mom - lr * (grad + wd * w);   w += mom
PyTorch keeps it unscaled (buf = momentum * buf + g;  w -= lr * buf).  With a constant
learning rate mom == -lr * buf, so the two give the same weights step for step; they differ
only in how a learning-rate change acts on momentum already accumulated.  We follow MXNet,
since code written for MXNet must behave as it did there.

The update functions use only arithmetic operators and in-place operators, so the same code
updates NumPy buffers eagerly and kiln symbols inside a compiled training step. `lr` and `wd`
may be Python floats or 0-d arrays; whether weight decay or momentum is used at all is
decided by the optimizer's configuration.

MXNet 1.9.1's SGD variants Signum (sign of the momentum), SGLD (Langevin noise) and DCASGD
(delay-compensated) keep its arithmetic and run eagerly only (eager.py); ccSGD is MXNet's
old name for SGD.
"""
import math

import numpy as _np

from .._core import aligned
from ..np.random import normal
from .base import Optimizer, register
from .eager import _Eager, _clip, _zeros


def sgd_update(weight, grad, mom, lr, wd, momentum, use_wd=True):
    """One SGD step, in place on `weight` (and `mom` when momentum is used)."""
    if use_wd:
        grad = grad + weight * wd
    if mom is None:
        weight -= lr * grad
        return
    mom *= momentum
    mom -= lr * grad
    weight += mom


def nag_update(weight, grad, mom, lr, wd, momentum, use_wd=True):
    """One Nesterov step (MXNet's NAG, equal to torch SGD(nesterov=True) at constant lr)."""
    if use_wd:
        grad = grad + weight * wd
    if mom is None:
        weight -= lr * grad
        return
    mom *= momentum
    mom -= lr * grad
    weight += momentum * mom - lr * grad


@register
class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum."""

    update_fn = staticmethod(sgd_update)
    master_copy_first = False

    def __init__(self, learning_rate=0.01, momentum=0.0, lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = float(momentum)
        self.lazy_update = lazy_update  # row_sparse gradients: their rows only

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return aligned.zeros(weight.shape, weight.dtype)

    def scalars(self, lr, wd, t):
        return {"lr": lr, "wd": wd}

    def apply(self, weight, grad, state, s):
        self.update_fn(weight, grad, state, s["lr"], s["wd"], self.momentum,
                       use_wd=bool(self.wd))


@register
class NAG(SGD):
    """Nesterov accelerated gradient."""

    update_fn = staticmethod(nag_update)

    def __init__(self, learning_rate=0.01, momentum=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=momentum, **kwargs)


@register
class ccSGD(SGD):
    """MXNet's deprecated name for SGD."""


@register
class Signum(_Eager):
    """signSGD with momentum (Bernstein et al. 2018): w += lr * sign(momentum)."""

    def __init__(self, learning_rate=0.01, momentum=0.9, wd_lh=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum, self.wd_lh = momentum, wd_lh

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else _zeros(weight, 1)[0]

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad), self.clip_gradient)
        if state is None:
            weight[...] = (1.0 - lr * wd) * weight - lr * _np.sign(g)
            return
        state *= self.momentum
        state -= (1.0 - self.momentum) * (wd * weight + g)
        weight[...] = (1.0 - lr * self.wd_lh) * weight + lr * _np.sign(state)


@register
class SGLD(_Eager):
    """Stochastic gradient Langevin dynamics: a half SGD step plus N(0, lr) noise (drawn
    from kiln's global random state, so kiln.random.seed makes it repeatable)."""

    def create_state(self, index, weight):
        return None

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad), self.clip_gradient)
        weight -= lr / 2 * (g + wd * weight)
        noise = normal(0.0, math.sqrt(lr), size=weight.shape)
        weight += noise.asnumpy().astype(weight.dtype)


@register
class DCASGD(_Eager):
    """Delay-compensated asynchronous SGD (Zheng et al. 2016); with one process the delay
    compensation uses the weight of the previous update."""

    def __init__(self, momentum=0.0, lamda=0.04, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.lamda = momentum, lamda

    def create_state(self, index, weight):
        # the momentum buffer exists (unused) without momentum, so states save uniformly
        return (_zeros(weight, 1)[0], aligned.copy_of(weight))

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad), self.clip_gradient)
        mom, previous = state
        step = -lr * (g + wd * weight + self.lamda * g * g * (weight - previous))
        if self.momentum != 0.0:
            mom *= self.momentum
            mom += step
            step = mom
        previous[...] = weight
        weight += step
