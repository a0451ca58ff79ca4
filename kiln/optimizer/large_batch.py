"""Optimizers for large batches, which scale each layer's step by a ratio of norms or by a
warm-up: LAMB (Adam steps scaled by ||w|| / ||step||), LARS (SGD scaled by
eta * ||w|| / ||g||) and LBSGD (gradients accumulated over `batch_scale` updates, then one
step with a warmed-up or LARS learning rate). MXNet 1.9.1's, with its arithmetic; they run
eagerly only (eager.py).
"""
import math

import numpy as _np

from .._core.base import KilnError
from .base import register
from .eager import _Eager, _clip, _zeros


@register
class LAMB(_Eager):
    """Layer-wise adaptive moments (You et al. 2019): an Adam step scaled by
    ||w|| / ||step|| (the weight norm optionally bounded)."""

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 lower_bound=None, upper_bound=None, bias_correction=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lower_bound, self.upper_bound = lower_bound, upper_bound
        self.bias_correction = bias_correction

    def create_state(self, index, weight):
        return _zeros(weight, 2)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        g = _clip(self._rescaled(grad), self.clip_gradient)
        mean, var = state
        mean *= self.beta1
        mean += (1.0 - self.beta1) * g
        var *= self.beta2
        var += (1.0 - self.beta2) * g * g
        m_hat, v_hat = mean, var
        if self.bias_correction:
            m_hat = mean / (1.0 - self.beta1 ** t)
            v_hat = var / (1.0 - self.beta2 ** t)
        step = m_hat / (_np.sqrt(v_hat) + self.epsilon) + wd * weight
        r1 = float(_np.linalg.norm(weight))
        r2 = float(_np.linalg.norm(step))
        if self.lower_bound:
            r1 = max(r1, self.lower_bound)
        if self.upper_bound:
            r1 = min(r1, self.upper_bound)
        ratio = r1 / r2 if r1 > 0 and r2 > 0 else 1.0
        weight -= lr * ratio * step


@register
class LARS(_Eager):
    """SGD (with momentum) whose learning rate per layer is scaled by
    eta * ||w|| / (||g|| + wd * ||w|| + eps); biases, gammas and betas (by parameter name)
    are not scaled."""

    master_copy_first = False       # MXNet 1.x's LARS: (state, float32 master copy)

    def __init__(self, momentum=0.0, lazy_update=True, eta=0.001, eps=0,
                 momentum_correction=True, **kwargs):
        super().__init__(**kwargs)
        self.momentum, self.eta, self.eps = momentum, eta, eps
        self.momentum_correction = momentum_correction
        self.lazy_update = lazy_update
        self.last_lr = self.cur_lr = None

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else _zeros(weight, 1)[0]

    def _layer_lr(self, index, weight, grad, lr, wd):
        name = str(self.idx2name.get(index, index))
        if name.endswith(("gamma", "beta", "bias")):
            return lr
        w_norm = float(_np.linalg.norm(weight.astype(_np.float32)))
        g_norm = float(_np.linalg.norm(grad.astype(_np.float32) * self.rescale_grad))
        if w_norm > 0.0 and g_norm > 0.0:
            return lr * self.eta * w_norm / (g_norm + wd * w_norm + self.eps)
        return lr

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        base_lr = self.learning_rate
        self.last_lr = base_lr if self.cur_lr is None else self.cur_lr
        self.cur_lr = base_lr
        momentum = self.momentum
        if momentum > 0 and self.momentum_correction and self.last_lr != 0:
            momentum *= self.cur_lr / self.last_lr
        lr = self._layer_lr(index, weight, grad, lr, wd)
        g = _clip(self._rescaled(grad), self.clip_gradient) + wd * weight
        if state is None:
            weight -= lr * g
        else:
            state *= momentum
            state -= lr * g
            weight += state


@register
class LBSGD(_Eager):
    """Large-batch SGD: gradients are summed over `batch_scale` updates, then one SGD
    (momentum) step is taken with the mean and a learning rate scaled by a warm-up
    ('linear', 'power2', 'sqrt' up to batch_scale over warmup_epochs) or by LARS ('lars');
    the updates in between leave the weight alone. MXNet 1.9.1's rules."""

    def __init__(self, momentum=0.0, multi_precision=False, warmup_strategy="linear",
                 warmup_epochs=5, batch_scale=1, updates_per_epoch=32, begin_epoch=0,
                 num_epochs=60, **kwargs):
        super().__init__(multi_precision=multi_precision, **kwargs)
        if warmup_strategy not in ("linear", "power2", "sqrt", "lars"):
            raise KilnError(f"LBSGD: warmup_strategy must be 'linear', 'power2', 'sqrt' or "
                            f"'lars', got {warmup_strategy!r}")
        self.momentum, self.warmup_strategy = momentum, warmup_strategy
        self.warmup_epochs, self.batch_scale = warmup_epochs, batch_scale
        self.updates_per_epoch, self.num_epochs = updates_per_epoch, num_epochs
        self.init_updates = begin_epoch * updates_per_epoch
        self.cumgrads = {}

    def create_state(self, index, weight):
        return None if self.momentum == 0.0 else _zeros(weight, 1)[0]

    def _warmup_mult(self, done):
        warm = self.warmup_epochs * self.updates_per_epoch
        top = float(self.batch_scale)
        if done >= warm:
            return top
        if warm <= 1:
            return 1.0
        frac = done / warm
        return 1.0 + (top - 1) * {"linear": frac, "power2": frac * frac,
                                  "sqrt": math.sqrt(frac)}[self.warmup_strategy]

    def _lars_mult(self, weight, grad, wd):
        w2, g2 = float((weight * weight).sum()), float((grad * grad).sum())
        return min(max(math.sqrt(w2 / (g2 + wd * w2 + 1e-18)), 0.01), 100.0)

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        cum = self.cumgrads.get(index)
        if cum and cum["num_cums"] > 0:
            cum = {"cum_grad": cum["cum_grad"] + grad, "num_cums": cum["num_cums"] + 1}
        else:
            cum = {"cum_grad": grad.copy(), "num_cums": self.init_updates + 1}
        self.cumgrads[index] = cum
        if cum["num_cums"] % self.batch_scale:
            return                          # mid macro-batch: MXNet steps with lr 0
        mean = cum["cum_grad"] / self.batch_scale
        lr *= (self._lars_mult(weight, mean, wd) if self.warmup_strategy == "lars"
               else self._warmup_mult(cum["num_cums"]))
        g = _clip(self._rescaled(mean), self.clip_gradient)
        if state is None:
            weight[...] = (1.0 - lr * wd) * weight - lr * g
        else:
            state *= self.momentum
            state -= lr * (wd * weight + g)
            weight += state
        cum["cum_grad"] = 0
