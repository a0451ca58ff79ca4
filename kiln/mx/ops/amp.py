"""MXNet 1.x's mixed-precision bookkeeping operators by name: amp_cast, all_finite,
multi_all_finite and multi_sum_sq."""
from ... import np as knp
from .table import _op


@_op("amp_cast cast_storage")
def amp_cast(data, dtype=None, stype=None, **_):
    return data.astype(dtype) if dtype is not None else data + 0


@_op("all_finite")
def all_finite(data, init_output=True, **_):
    return knp.reshape(knp.all(knp.isfinite(data)).astype("float32"), (1,))


@_op("multi_all_finite", variadic=True)
def multi_all_finite(*arrays, num_arrays=1, init_output=True, **_):
    ok = [knp.all(knp.isfinite(a)) for a in arrays]
    return knp.reshape(knp.all(knp.stack(ok)).astype("float32"), (1,))


@_op("multi_sum_sq", variadic=True)
def multi_sum_sq(*arrays, num_arrays=1, **_):
    return knp.stack([knp.sum(a.astype("float32") ** 2) for a in arrays])
