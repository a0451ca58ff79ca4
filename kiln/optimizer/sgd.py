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
"""
from .._core import aligned
from .base import Optimizer, register


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

    def __init__(self, learning_rate=0.1, momentum=0.0, lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.momentum = float(momentum)
        self.lazy_update = lazy_update  # accepted; kiln has no sparse gradients

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

    def __init__(self, learning_rate=0.1, momentum=0.9, **kwargs):
        super().__init__(learning_rate=learning_rate, momentum=momentum, **kwargs)
