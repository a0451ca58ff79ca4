"""SGD with momentum and Nesterov's accelerated gradient, in MXNet's momentum convention.

MXNet keeps the momentum buffer already scaled by the learning rate:
    mom = momentum * mom - lr * (grad + wd * w);   w += mom
PyTorch keeps it unscaled (buf = momentum * buf + g;  w -= lr * buf).  With a constant
learning rate mom == -lr * buf, so the two give the same weights step for step; they differ
only in how a learning-rate change acts on momentum already accumulated.  We follow MXNet,
since code written for MXNet must behave as it did there.
"""
import numpy as _np

from .base import Optimizer, register


def sgd_update(weight, grad, mom, lr, wd, momentum):
    """One SGD step, in place on `weight` (and `mom` when momentum is used)."""
    if wd:
        grad = grad + weight * weight.dtype.type(wd)
    if mom is None:
        weight -= weight.dtype.type(lr) * grad
        return
    mom *= mom.dtype.type(momentum)
    mom -= mom.dtype.type(lr) * grad
    weight += mom


def nag_update(weight, grad, mom, lr, wd, momentum):
    """One Nesterov step (MXNet's NAG, equal to torch SGD(nesterov=True) at constant lr)."""
    if wd:
        grad = grad + weight * weight.dtype.type(wd)
    if mom is None:
        weight -= weight.dtype.type(lr) * grad
        return
    mom *= mom.dtype.type(momentum)
    mom -= mom.dtype.type(lr) * grad
    weight += mom.dtype.type(momentum) * mom - mom.dtype.type(lr) * grad


@register
class SGD(Optimizer):
    """Stochastic gradient descent, optionally with momentum."""

    def __init__(self, learning_rate=0.1, momentum=0.0, lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = float(momentum)
        self.lazy_update = lazy_update  # accepted; kiln has no sparse gradients

    def create_state(self, index, weight):
        if self.momentum == 0.0:
            return None
        return _np.zeros(weight.shape, dtype=weight.dtype)

    def step_one(self, weight, grad, state, lr, wd, t):
        sgd_update(weight, grad, state, lr, wd, self.momentum)


@register
class NAG(SGD):
    """Nesterov accelerated gradient."""

    def __init__(self, learning_rate=0.1, momentum=0.9, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=momentum, **kwargs)

    def step_one(self, weight, grad, state, lr, wd, t):
        nag_update(weight, grad, state, lr, wd, self.momentum)
