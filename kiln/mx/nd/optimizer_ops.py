"""MXNet 1.x's optimizer update operators (`nd.sgd_update`, `nd.adam_update`, ...), which
hand-written 1.x optimizers call: each updates its state arrays in place and returns the
new weight (written into `out=` when given, usually the weight itself).

The formulas are MXNet's kernels (weight decay and gradient clipping where MXNet puts
them; adam's bias correction left to the caller's learning rate, as in MXNet), written
with kiln.np on whole arrays. `mp_*` keep a float32 master copy; `multi_*` take the arrays
interleaved as MXNet does.
"""
import numpy as _np

from ... import np as knp


def _rescaled(grad, rescale_grad, clip_gradient, extra=None):
    g = grad * float(rescale_grad)
    if extra is not None:
        g = g + extra
    if clip_gradient is not None and clip_gradient >= 0:
        g = knp.clip(g, -float(clip_gradient), float(clip_gradient))
    return g


def _store(state, value):
    state[...] = value.astype(state.dtype)


def _result(weight, new, out):
    new = new.astype(weight.dtype)
    if out is None:
        return new
    if isinstance(out, (list, tuple)):
        out = out[0]
    out[...] = new
    return out


def sgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
               lazy_update=True, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient)
    return _result(weight, weight * (1 - lr * wd) - lr * g, out)


def sgd_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, lazy_update=True, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient)
    _store(mom, mom * momentum - lr * wd * weight - lr * g)
    return _result(weight, weight + mom, out)


def nag_mom_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient) + wd * weight
    _store(mom, mom * momentum - lr * g)
    return _result(weight, weight + momentum * mom - lr * g, out)


def adam_update(weight, grad, mean, var, lr, beta1=0.9, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_gradient=-1.0, lazy_update=True, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient, wd * weight)
    _store(mean, mean * beta1 + (1 - beta1) * g)
    _store(var, var * beta2 + (1 - beta2) * g * g)
    return _result(weight, weight - lr * mean / (knp.sqrt(var) + epsilon), out)


def _clip_weight(w, clip_weights):
    if clip_weights is not None and clip_weights >= 0:
        return knp.clip(w, -float(clip_weights), float(clip_weights))
    return w


def rmsprop_update(weight, grad, n, lr, gamma1=0.95, epsilon=1e-8, wd=0.0, rescale_grad=1.0,
                   clip_gradient=-1.0, clip_weights=-1.0, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient, wd * weight)
    _store(n, (1 - gamma1) * g * g + gamma1 * n)
    new = weight - lr * g / knp.sqrt(n + epsilon)
    return _result(weight, _clip_weight(new, clip_weights), out)


def rmspropalex_update(weight, grad, n, g, delta, lr, gamma1=0.95, gamma2=0.9, epsilon=1e-8,
                       wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, clip_weights=-1.0,
                       out=None, **_):
    r = _rescaled(grad, rescale_grad, clip_gradient, wd * weight)
    _store(n, (1 - gamma1) * r * r + gamma1 * n)
    _store(g, (1 - gamma1) * r + gamma1 * g)
    _store(delta, gamma2 * delta - lr * r / knp.sqrt(n - g * g + epsilon))
    return _result(weight, _clip_weight(weight + delta, clip_weights), out)


def signsgd_update(weight, grad, lr, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0, out=None,
                   **_):
    return _result(weight, weight * (1 - lr * wd) - lr * knp.sign(grad), out)


def signum_update(weight, grad, mom, lr, momentum=0.0, wd=0.0, rescale_grad=1.0,
                  clip_gradient=-1.0, wd_lh=0.0, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient)
    _store(mom, mom * momentum - (1 - momentum) * (wd * weight + g))
    return _result(weight, weight * (1 - lr * wd_lh) + lr * knp.sign(mom), out)


def ftrl_update(weight, grad, z, n, lr, lamda1=0.01, beta=1.0, wd=0.0, rescale_grad=1.0,
                clip_gradient=-1.0, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient)
    _store(z, z + g - (knp.sqrt(n + g * g) - knp.sqrt(n)) * weight / lr)
    _store(n, n + g * g)
    new = (knp.sign(z) * lamda1 - z) / ((beta + knp.sqrt(n)) / lr + wd) * (knp.abs(z) > lamda1)
    return _result(weight, new, out)


def ftml_update(weight, grad, d, v, z, lr, t, beta1=0.6, beta2=0.999, epsilon=1e-8, wd=0.0,
                rescale_grad=1.0, clip_grad=-1.0, out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_grad, wd * weight)
    _store(v, beta2 * v + (1 - beta2) * g * g)
    d_t = (1 - beta1 ** t) / lr * (knp.sqrt(v / (1 - beta2 ** t)) + epsilon)
    sigma = d_t - beta1 * d
    _store(z, beta1 * z + (1 - beta1) * g - sigma * weight)    # MXNet: (1 - beta1), not ^t
    _store(d, d_t)
    return _result(weight, -z / d_t, out)


def lamb_update_phase1(weight, grad, mean, var, t, beta1=0.9, beta2=0.999, epsilon=1e-6,
                       bias_correction=True, wd=0.0, rescale_grad=1.0, clip_gradient=-1.0,
                       out=None, **_):
    g = _rescaled(grad, rescale_grad, clip_gradient)
    _store(mean, beta1 * mean + (1 - beta1) * g)
    _store(var, beta2 * var + (1 - beta2) * g * g)
    m, s = mean, var
    if bias_correction:
        m, s = mean / (1 - beta1 ** t), var / (1 - beta2 ** t)
    return _result(weight, m / (knp.sqrt(s) + epsilon) + wd * weight, out)


def lamb_update_phase2(weight, g, r1, r2, lr, lower_bound=-1.0, upper_bound=-1.0, out=None,
                       **_):
    r1 = knp.asarray(r1)
    if lower_bound >= 0:
        r1 = knp.maximum(r1, float(lower_bound))
    if upper_bound >= 0:
        r1 = knp.minimum(r1, float(upper_bound))
    r2 = knp.asarray(r2)
    ratio = knp.where((r1 > 0) & (r2 > 0), r1 / knp.where(r2 > 0, r2, 1.0), 1.0)
    return _result(weight, weight - lr * ratio * g, out)


def _mixed(update):
    """mp_X: update the float32 master copy (the last positional array), then the weight."""
    def mp(weight, grad, *states, out=None, **kwargs):
        *states, weight32 = states
        new32 = update(weight32, grad.astype(_np.float32), *states, **kwargs)
        _store(weight32, new32)
        return _result(weight, new32, out)
    mp.__name__ = "mp_" + update.__name__
    mp.__doc__ = f"{update.__name__} on a float32 master copy of the weight."
    return mp


mp_sgd_update = _mixed(sgd_update)
mp_sgd_mom_update = _mixed(sgd_mom_update)
mp_nag_mom_update = _mixed(nag_mom_update)


def _multi(update, per_weight):
    """multi_X: `per_weight` arrays per weight, interleaved; lrs and wds per weight."""
    def multi(*data, lrs=(), wds=(), num_weights=1, out=None, **kwargs):
        results = []
        for k in range(int(num_weights)):
            group = data[k * per_weight:(k + 1) * per_weight]
            target = out[k] if isinstance(out, (list, tuple)) else None
            results.append(update(*group, lr=float(lrs[k]), wd=float(wds[k]), out=target,
                                  **kwargs))
        return results
    multi.__name__ = "multi_" + update.__name__
    multi.__doc__ = f"{update.__name__} on several weights at once (MXNet's layout)."
    return multi


multi_sgd_update = _multi(sgd_update, 2)
multi_sgd_mom_update = _multi(sgd_mom_update, 3)
multi_mp_sgd_update = _multi(mp_sgd_update, 3)
multi_mp_sgd_mom_update = _multi(mp_sgd_mom_update, 4)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0.0, clip_gradient=-1.0, out=None, **_):
    """contrib.adamw_update: decoupled weight decay; skipped when rescale_grad is not finite."""
    scale = float(knp.asarray(rescale_grad).reshape(-1)[0])
    if not _np.isfinite(scale):
        return _result(weight, weight, out)
    g = _rescaled(grad, scale, clip_gradient)
    _store(mean, beta1 * mean + (1 - beta1) * g)
    _store(var, beta2 * var + (1 - beta2) * g * g)
    new = weight - eta * (lr * mean / (knp.sqrt(var) + epsilon) + wd * weight)
    return _result(weight, new, out)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, out=None, **kwargs):
    """MXNet's multi-precision AdamW step: the float32 master weight `weight32` is updated in place
    and `weight` receives it in its own dtype."""
    new32 = adamw_update(weight32, grad.astype(_np.float32), mean, var, rescale_grad, **kwargs)
    _store(weight32, new32)
    return _result(weight, new32, out)




def _preloaded(update, per_weight):
    """preloaded_multi_X: like multi_X, the learning rates and weight decays given as the
    two last arrays."""
    def preloaded(*data, num_weights=1, out=None, **kwargs):
        lrs = knp.asarray(data[-2])._concrete("preloaded update").tolist()
        wds = knp.asarray(data[-1])._concrete("preloaded update").tolist()
        return _multi(update, per_weight)(*data[:-2], lrs=lrs, wds=wds,
                                          num_weights=num_weights, out=out, **kwargs)
    preloaded.__name__ = "preloaded_multi_" + update.__name__
    preloaded.__doc__ = f"{update.__name__} on several weights, rates and decays as arrays."
    return preloaded


preloaded_multi_sgd_update = _preloaded(sgd_update, 2)
preloaded_multi_sgd_mom_update = _preloaded(sgd_mom_update, 3)
preloaded_multi_mp_sgd_update = _preloaded(mp_sgd_update, 3)
preloaded_multi_mp_sgd_mom_update = _preloaded(mp_sgd_mom_update, 4)


def mp_lamb_update_phase1(weight, grad, mean, var, weight32, out=None, **kwargs):
    return lamb_update_phase1(weight32, grad.astype(_np.float32), mean, var, out=out,
                              **kwargs)


def mp_lamb_update_phase2(weight, g, r1, r2, weight32, lr, out=None, **kwargs):
    new32 = lamb_update_phase2(weight32, g, r1, r2, lr, **kwargs)
    _store(weight32, new32)
    return _result(weight, new32, out)


def multi_lars(lrs, weights_sum_sq, grads_sum_sq, wds, eta, eps, rescale_grad=1.0, out=None,
               **_):
    """LARS learning rates: lr * eta * |w| / (|g| + wd |w| + eps), or lr where a norm is 0."""
    w = knp.sqrt(knp.asarray(weights_sum_sq))
    g = knp.sqrt(knp.asarray(grads_sum_sq)) * float(rescale_grad)
    lrs = knp.asarray(lrs)
    scaled = lrs * float(eta) * w / (g + knp.asarray(wds) * w + float(eps))
    return _result(lrs, knp.where((w > 0) & (g > 0), scaled, lrs), out)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       **kwargs):
    """contrib.multi_adamw_update: adamw_update per weight (lists of arrays)."""
    return [adamw_update(w, g, m, v, rescale_grad, lr=float(lr), wd=float(wd), eta=float(eta),
                         out=w if out is None else out[k], **kwargs)
            for k, (w, g, m, v, lr, wd, eta) in enumerate(zip(weights, grads, mean, var, lrs,
                                                                wds, etas))]


NAMES = [n for n in list(globals()) if ("_update" in n or n == "multi_lars")
         and not n.startswith("_")]
CONTRIB = ("adamw_update", "mp_adamw_update", "multi_adamw_update")
