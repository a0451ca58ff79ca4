"""MXNet 1.9.1's other optimizers: Adamax, Nadam, Ftrl, FTML, LAMB, LARS, Signum, SGLD and
DCASGD, each with MXNet's arithmetic and order of operations (some rescale, add weight
decay, then clip; others clip before weight decay), checked against MXNet 1.9.1's updates
on fixed inputs (tests/test_mxnet_optimizers.py).

They update NumPy buffers in place, eagerly. A compiled training step (kiln.hybridize of a
step that calls Trainer.step) needs the operator-only `apply` form that sgd/adam have; these
raise a clear error there.
"""
import math

import numpy as _np

from .._core.base import KilnError
from .._core import aligned
from .base import Optimizer, register
from .sgd import SGD


def _clip(g, bound):
    return g if bound is None or bound < 0 else _np.clip(g, -bound, bound)


def _zeros(weight, n):
    return tuple(aligned.zeros(weight.shape, weight.dtype) for _ in range(n))


class _Eager(Optimizer):
    """update() hands each family the raw gradient; it applies rescale, clip and weight
    decay in MXNet's order for that family (`mx_update`)."""

    def _update_one(self, index, weight, grad, state, t):
        self.mx_update(index, weight, grad.astype(weight.dtype, copy=False), state,
                       self._get_lr(index), self._get_wd(index), t)

    def scalars(self, lr, wd, t):
        raise KilnError(f"optimizer {type(self).__name__} runs eagerly only: a compiled "
                        "training step needs sgd, nag, adam, adamw, adagrad, rmsprop or "
                        "adadelta")

    def _rescaled(self, grad):
        return grad * self.rescale_grad


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


@register
class Ftrl(_Eager):
    """Follow the regularized leader (McMahan et al. 2013) with L1 strength lamda1."""

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
        from ..np.random import normal
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


@register
class ccSGD(SGD):
    """MXNet's deprecated name for SGD."""


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


@register
class Test(_Eager):
    """MXNet's test optimizer: w += rescale_grad * g; the state holds the new weight."""

    def create_state(self, index, weight):
        return _zeros(weight, 1)[0]

    def mx_update(self, index, weight, grad, state, lr, wd, t):
        weight += self._rescaled(grad)
        state[...] = weight
