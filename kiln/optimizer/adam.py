"""Adam (L2 weight decay folded into the gradient) and AdamW (decoupled weight decay).

Both follow PyTorch's arithmetic exactly, which is the Adam paper's:
    m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g^2
    w -= lr * (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps)
MXNet folds the bias correction into the learning rate instead and so adds eps to the
uncorrected sqrt(v); the two differ only by eps * sqrt(1-b2^t), far below float32 noise for
the default eps.  AdamW decays first, as torch.optim.AdamW does: w -= lr * wd * w.

The per-step scalars (bias corrections, step size) are computed in Python by `scalars`; the
array arithmetic in `adam_update` uses only operators, so it runs on NumPy buffers eagerly
and on kiln symbols inside a compiled training step.

Adamax (Adam with the infinity norm) and Nadam (Adam with Nesterov momentum) are MXNet
1.9.1's, with its arithmetic, and run eagerly only (eager.py).
"""
import math

import numpy as _np

from .._core import aligned
from .base import Optimizer, register
from .eager import _Eager, _clip, _zeros


def adam_scalars(lr, wd, t, beta1, beta2, decoupled_wd):
    return {"step": lr / (1.0 - beta1 ** t),
            "inv_bias2": 1.0 / math.sqrt(1.0 - beta2 ** t),
            "wd": wd,
            "decay": 1.0 - lr * wd if decoupled_wd else 1.0}


def adam_update(weight, grad, mean, var, s, beta1, beta2, epsilon, use_wd, decoupled_wd):
    """One Adam/AdamW step, in place on weight, mean and var; `s` from adam_scalars."""
    if use_wd and decoupled_wd:
        weight *= s["decay"]
    elif use_wd:
        grad = grad + weight * s["wd"]
    mean *= beta1
    mean += (1.0 - beta1) * grad
    var *= beta2
    var += (1.0 - beta2) * (grad * grad)
    denom = var ** 0.5 * s["inv_bias2"]
    denom += epsilon
    weight -= s["step"] * (mean / denom)


@register
class Adam(Optimizer):
    """Adam: adaptive moment estimation with bias correction."""

    decoupled_wd = False

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 lazy_update=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.lazy_update = lazy_update  # row_sparse gradients: their rows only

    def create_state(self, index, weight):
        return (aligned.zeros(weight.shape, weight.dtype),
                aligned.zeros(weight.shape, weight.dtype))

    def scalars(self, lr, wd, t):
        return adam_scalars(lr, wd, t, self.beta1, self.beta2, self.decoupled_wd)

    def apply(self, weight, grad, state, s):
        mean, var = state
        adam_update(weight, grad, mean, var, s, self.beta1, self.beta2, self.epsilon,
                    use_wd=bool(self.wd), decoupled_wd=self.decoupled_wd)


@register
class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), as torch.optim.AdamW."""

    decoupled_wd = True


@register
class Adamax(_Eager):
    """Adam with the infinity norm: u = max(beta2*u, |g|); w -= lr/(1-beta1^t) * m/u."""

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2 = beta1, beta2

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        lr /= 1.0 - self.beta1 ** t
        g = _clip(self._rescaled(grad) + wd * weight, self.clip_gradient)
        m, u = state
        m *= self.beta1
        m += (1.0 - self.beta1) * g
        _np.maximum(self.beta2 * u, _np.abs(g), out=u)
        weight -= lr * m / u


@register
class Nadam(_Eager):
    """Adam with Nesterov momentum and the momentum schedule of Dozat (2016)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8,
                 schedule_decay=0.004, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.schedule_decay = schedule_decay
        self.m_schedule = 1.0      # shared by all parameters, as in MXNet

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad) + wd * weight, self.clip_gradient)
        mom_t = self.beta1 * (1.0 - 0.5 * 0.96 ** (t * self.schedule_decay))
        mom_next = self.beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * self.schedule_decay))
        self.m_schedule *= mom_t
        schedule_next = self.m_schedule * mom_next
        m, v = state
        m *= self.beta1
        m += (1.0 - self.beta1) * g
        v *= self.beta2
        v += (1.0 - self.beta2) * g * g
        m_bar = ((1.0 - mom_t) * (g / (1.0 - self.m_schedule))
                 + mom_next * (m / (1.0 - schedule_next)))
        v_hat = v / (1.0 - self.beta2 ** t)
        weight -= lr * m_bar / (_np.sqrt(v_hat) + self.epsilon)
