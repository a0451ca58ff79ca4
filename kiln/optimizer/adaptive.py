"""AdaGrad, RMSProp (plain and centered) and AdaDelta, with MXNet 1.x's arithmetic (the
version the d2l book runs on) and both its 1.x and 2.x parameter names.

As everywhere in kiln, the gradient is rescaled, then clipped, then weight decay is added to
it (MXNet 2.x's order; with wd=0, as in the book, 1.x and 2.x agree). The updates use only
operators (`** 0.5` for the square root), so they run on NumPy buffers eagerly and on kiln
symbols inside a compiled training step.

Ftrl (follow the regularized leader) and FTML (follow the moving leader), also per-coordinate
adaptive, are MXNet 1.9.1's, with its arithmetic and order of operations, and run eagerly
only (eager.py).
"""
import numpy as _np

from .._core import aligned
from .base import Optimizer, register
from .eager import _Eager, _clip, _zeros


def _with_wd(weight, grad, s, use_wd):
    return grad + weight * s["wd"] if use_wd else grad


@register
class AdaGrad(Optimizer):
    """history += g^2;  w -= lr * g / sqrt(history + eps)."""

    lazy_update = True      # a row_sparse gradient updates its rows only (MXNet's kernel)

    def __init__(self, learning_rate=0.01, eps=1e-7, epsilon=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.epsilon = float(eps if epsilon is None else epsilon)

    def create_state(self, index, weight):
        return aligned.zeros(weight.shape, weight.dtype)

    def scalars(self, lr, wd, t):
        return {"lr": lr, "wd": wd}

    def apply(self, weight, grad, history, s):
        grad = _with_wd(weight, grad, s, bool(self.wd))
        history += grad * grad
        weight -= s["lr"] * (grad / (history + self.epsilon) ** 0.5)


@register
class RMSProp(Optimizer):
    """n = g1*n + (1-g1)*g^2;  w -= lr * g / sqrt(n + eps). With centered=True (Graves):
    also m = g1*m + (1-g1)*g and delta = g2*delta - lr * g / sqrt(n - m^2 + eps); w += delta.
    gamma1/gamma2 are MXNet 1.x's names for 2.x's rho/momentum."""

    def __init__(self, learning_rate=0.001, gamma1=0.9, gamma2=0.9, epsilon=1e-8,
                 centered=False, clip_weights=None, rho=None, momentum=None, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.gamma1 = float(gamma1 if rho is None else rho)
        self.gamma2 = float(gamma2 if momentum is None else momentum)
        self.epsilon = float(epsilon)
        self.centered = bool(centered)
        self.clip_weights = None if clip_weights is None else float(clip_weights)

    def create_state(self, index, weight):
        n = aligned.zeros(weight.shape, weight.dtype)
        if not self.centered:
            return (n,)             # a tuple of one, as MXNet's state is
        return (n, aligned.zeros(weight.shape, weight.dtype),
                aligned.zeros(weight.shape, weight.dtype))

    def scalars(self, lr, wd, t):
        return {"lr": lr, "wd": wd}

    def apply(self, weight, grad, state, s):
        grad = _with_wd(weight, grad, s, bool(self.wd))
        g1 = self.gamma1
        if not self.centered:
            (n,) = state
            n *= g1
            n += (1.0 - g1) * (grad * grad)
            weight -= s["lr"] * (grad / (n + self.epsilon) ** 0.5)
        else:
            n, mean, delta = state
            n *= g1
            n += (1.0 - g1) * (grad * grad)
            mean *= g1
            mean += (1.0 - g1) * grad
            delta *= self.gamma2
            delta -= s["lr"] * (grad / (n - mean * mean + self.epsilon) ** 0.5)
            weight += delta
        if self.clip_weights is not None:
            weight[...] = weight.clip(-self.clip_weights, self.clip_weights)


@register
class AdaDelta(Optimizer):
    """acc_g = rho*acc_g + (1-rho)*g^2;  d = sqrt(acc_d + eps) / sqrt(acc_g + eps) * g;
    acc_d = rho*acc_d + (1-rho)*d^2;  w -= lr * d  (lr defaults to 1, as in MXNet)."""

    def __init__(self, learning_rate=1.0, rho=0.9, epsilon=1e-5, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho, self.epsilon = float(rho), float(epsilon)

    def create_state(self, index, weight):
        return (aligned.zeros(weight.shape, weight.dtype),
                aligned.zeros(weight.shape, weight.dtype))

    def scalars(self, lr, wd, t):
        return {"lr": lr, "wd": wd}

    def apply(self, weight, grad, state, s):
        acc_g, acc_delta = state
        grad = _with_wd(weight, grad, s, bool(self.wd))
        rho, eps = self.rho, self.epsilon
        acc_g *= rho
        acc_g += (1.0 - rho) * (grad * grad)
        delta = (acc_delta + eps) ** 0.5 / (acc_g + eps) ** 0.5 * grad
        acc_delta *= rho
        acc_delta += (1.0 - rho) * (delta * delta)
        weight -= s["lr"] * delta


@register
class Ftrl(_Eager):
    """Follow the regularized leader (McMahan et al. 2013) with L1 strength lamda1."""

    lazy_update = True      # a row_sparse gradient updates its rows only (MXNet's kernel)

    def __init__(self, lamda1=0.01, learning_rate=0.1, beta=1, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.lamda1, self.beta = lamda1, beta

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad), self.clip_gradient)
        z, n = state
        z += g - (_np.sqrt(n + g * g) - _np.sqrt(n)) * weight / lr
        n += g * g
        weight[...] = ((_np.sign(z) * self.lamda1 - z) / ((self.beta + _np.sqrt(n)) / lr + wd)
                       * (_np.abs(z) > self.lamda1))


@register
class FTML(_Eager):
    """Follow the moving leader (Zheng & Kwok 2017)."""

    def __init__(self, beta1=0.6, beta2=0.999, epsilon=1e-8, **kwargs):
        super().__init__(**kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon

    def create_state(self, index, weight):
        return _zeros(weight, 3)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad) + wd * weight, self.clip_gradient)
        d, v, z = state
        v *= self.beta2
        v += (1.0 - self.beta2) * g * g
        d_t = (1.0 - self.beta1 ** t) / lr * (_np.sqrt(v / (1.0 - self.beta2 ** t))
                                              + self.epsilon)
        z *= self.beta1
        z += (1.0 - self.beta1) * g - (d_t - self.beta1 * d) * weight
        d[...] = d_t
        weight[...] = -z / d_t
