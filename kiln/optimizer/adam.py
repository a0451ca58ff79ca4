"""Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay).

Both follow PyTorch's arithmetic exactly, which is the Adam paper's:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
MXNet folds the bias correction into the learning rate instead and so adds eps to the
uncorrected sqrt(v); the two differ only by eps * sqrt(1-b2^t), far below float32 noise for
the default eps.  AdamW decays first, as torch.optim.AdamW does: w -= lr * wd * w.
"""
import math

import numpy as _np

from .base import Optimizer, register


def adam_update(weight, grad, mean, var, lr, wd, t, beta1, beta2, epsilon,
                decoupled_wd=False):
    """One Adam/AdamW step at step number t >= 1, in place on weight, mean and var."""
    dt = weight.dtype.type
    if wd and decoupled_wd:
        weight *= dt(1.0 - lr * wd)
    elif wd:
        grad = grad + weight * dt(wd)
    mean *= dt(beta1)
    mean += dt(1.0 - beta1) * grad
    var *= dt(beta2)
    var += dt(1.0 - beta2) * (grad * grad)
    bias1 = 1.0 - beta1 ** t
    bias2 = 1.0 - beta2 ** t
    denom = _np.sqrt(var) / dt(math.sqrt(bias2))
    denom += dt(epsilon)
    weight -= dt(lr / bias1) * (mean / denom)


@register
class Adam(Optimizer):
    """Adam: adaptive moment estimation with bias correction."""

    decoupled_wd = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = lazy_update  # accepted; kiln has no sparse gradients

    def create_state(self, index, weight):
        return (_np.zeros(weight.shape, dtype=weight.dtype),
                _np.zeros(weight.shape, dtype=weight.dtype))

    def step_one(self, weight, grad, state, lr, wd, t):
        mean, var = state
        adam_update(weight, grad, mean, var, lr, wd, t, self.beta1, self.beta2, self.epsilon,
                    decoupled_wd=self.decoupled_wd)


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW."""

    decoupled_wd = True
