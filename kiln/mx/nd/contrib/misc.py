"""Small `nd.contrib` functions of MXNet 1.x: masks and index helpers, straight-through
estimators (round_ste, sign_ste: the forward rounds, the gradient passes unchanged) and
gradientmultiplier (identity forward, scaled gradient). Composed of kiln.np/npx functions."""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray
from ....npx import stop_gradient


def boolean_mask(data, index, axis=0, **_):
    """The slices of data along `axis` where index is non-zero (eager: the size depends on
    the values)."""
    keep = _np.nonzero(knp.asarray(index)._concrete("contrib.boolean_mask()"))[0]
    return knp.take(knp.asarray(data), keep, axis=int(axis))


def index_array(data, axes=None, **_):
    """Each element's index: shape data.shape + (len(axes),), int64."""
    shape = knp.asarray(data).shape
    axes = range(len(shape)) if axes is None else [int(a) % len(shape) for a in axes]
    grids = _np.indices(shape)[list(axes)]     # (len(axes),) + shape; a 0-d data: (0,)
    return ndarray._wrap(_np.moveaxis(grids, 0, -1).astype(_np.int64))


def index_copy(old_tensor, index_vector, new_tensor, **_):
    """old_tensor with rows index_vector[i] replaced by new_tensor[i] (differentiable in
    both tensors)."""
    old, new = knp.asarray(old_tensor), knp.asarray(new_tensor)
    idx = knp.asarray(index_vector)._concrete("contrib.index_copy()").astype(_np.int64)
    if new.shape[0] != len(idx) or new.shape[1:] != old.shape[1:]:
        raise KilnError(f"index_copy: new_tensor of shape {new.shape} does not fit "
                        f"{len(idx)} rows of {old.shape}")
    n = old.shape[0]
    source = _np.arange(n)
    source[idx] = n + _np.arange(len(idx))
    return knp.take(knp.concatenate([old, new.astype(old.dtype)], axis=0), source, axis=0)


def div_sqrt_dim(data, **_):
    """`data / sqrt(data.shape[-1])`."""
    data = knp.asarray(data)
    return data / float(_np.sqrt(data.shape[-1]))


def quadratic(data, a=0.0, b=0.0, c=0.0, **_):
    """Elementwise `a * x**2 + b * x + c`."""
    data = knp.asarray(data)
    return data * data * float(a) + data * float(b) + float(c)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=True, **_):
    """1 (as a 0-d float32 array) when all of a and b are close, else 0."""
    ok = knp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    return ndarray._wrap(_np.array(float(ok), dtype=_np.float32))


def _as_float(fn):
    def test(data, **_):
        data = knp.asarray(data)
        return fn(data).astype(data.dtype if data.dtype.kind == "f" else _np.float32)
    test.__name__ = fn.__name__
    test.__doc__ = (f"MXNet's contrib {fn.__name__}: np.{fn.__name__} of `data` as 1.0 or 0.0, "
                    "in data's float dtype (float32 for other dtypes).")
    return test


isnan, isinf, isfinite = (_as_float(f) for f in (knp.isnan, knp.isinf, knp.isfinite))


def round_ste(data, **_):
    """Elementwise rounding whose gradient passes straight through (the gradient of the identity).
    """
    data = knp.asarray(data)
    return data + stop_gradient(knp.round(data) - data)


def sign_ste(data, **_):
    """Elementwise sign whose gradient passes straight through (the gradient of the identity)."""
    data = knp.asarray(data)
    return data + stop_gradient(knp.sign(data) - data)


def gradientmultiplier(data, scalar=1.0, **_):
    """`data` unchanged forward; backward, its gradient multiplied by `scalar`."""
    data = knp.asarray(data)
    s = float(scalar)
    return data * s + stop_gradient(data * (1.0 - s))


def rand_zipfian(true_classes, num_sampled, range_max):
    """Log-uniform (Zipfian) candidate sampling: (sampled classes (int64), expected counts of
    the true classes, expected counts of the sampled ones), P(c) = log((c+2)/(c+1)) /
    log(range_max + 1)."""
    from ....ops import REGISTRY
    log_range = float(_np.log(range_max + 1))
    u = REGISTRY["random_uniform"](shape=(int(num_sampled),), dtype=_np.dtype("float64"),
                                   low=0.0, high=1.0)
    sampled = (knp.floor(knp.exp(u * log_range)) - 1).astype(_np.int64)     # in [0, range_max)

    def expected(classes):
        c = knp.asarray(classes).astype(_np.float64)
        p = (knp.log(c + 2.0) - knp.log(c + 1.0)) / log_range
        return (p * float(num_sampled)).astype(_np.float32)
    return sampled, expected(true_classes), expected(sampled)
