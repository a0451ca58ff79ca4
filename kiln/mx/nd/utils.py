"""MXNet 1.x nd functions outside the operator table: onehot_encode,
reset_arrays, from_numpy, load_frombuffer and DLPack exchange (to_dlpack_for_read/write,
from_dlpack)."""
import numpy as _np

from ... import np as knp
from ..._core.ndarray import ndarray


def onehot_encode(indices, out):
    """Writes one_hot(indices) into `out` (whose last axis is the depth) and returns it."""
    from ...npx import one_hot
    out[...] = one_hot(knp.asarray(indices).astype(_np.int64), out.shape[-1], dtype=out.dtype)
    return out


def reset_arrays(*arrays, num_arrays=None, **_):
    """Sets every array to zero, in place."""
    for a in arrays:
        a[...] = 0


def from_numpy(ndarray_, zero_copy=True):
    """An array over NumPy array `ndarray_`'s memory (zero_copy, as in MXNet: it must be
    C-contiguous, and the NumPy array becomes read-only while the array writes it), or over a
    copy (`zero_copy=False`)."""
    if not zero_copy:
        return ndarray._wrap(_np.array(ndarray_))
    if not ndarray_.flags["C_CONTIGUOUS"]:
        raise ValueError("Only c-contiguous arrays are supported for zero-copy")
    if not ndarray_.flags["WRITEABLE"]:
        try:        # read-only from an earlier from_numpy: MXNet shares the memory anyway
            ndarray_.flags["WRITEABLE"] = True
        except ValueError:
            pass
    shared = ndarray_.view()            # made before: it stays writeable
    ndarray_.flags["WRITEABLE"] = False
    return ndarray._wrap(shared)


def load_frombuffer(buf):
    """nd.load from bytes of MXNet's binary format: a list, or a dict for named arrays."""
    from ...export import mxnet_params
    arrays, names = mxnet_params.parse(bytes(buf), "buffer")
    arrays = [ndarray._wrap(a) for a in arrays]
    return dict(zip(names, arrays)) if names is not None else arrays


class _Capsule:
    """A DLPack capsule as the object NumPy's from_dlpack takes."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **_):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)       # kDLCPU


def to_dlpack_for_read(data):
    return knp.asarray(data)._concrete("to_dlpack").__dlpack__()


to_dlpack_for_write = to_dlpack_for_read


def from_dlpack(dlpack):
    source = dlpack if hasattr(dlpack, "__dlpack__") else _Capsule(dlpack)
    return ndarray._wrap(_np.from_dlpack(source))


def amp_multicast(*data, num_outputs=1, cast_narrow=False, **_):
    """The arrays cast to their widest float type (the narrowest with cast_narrow)."""
    arrays = [knp.asarray(a) for a in data]
    sizes = [a.dtype.itemsize for a in arrays if a.dtype.kind == "f"]
    target = (min if cast_narrow else max)(sizes) if sizes else None
    return [a.astype("float%d" % (8 * target)) if target and a.dtype.kind == "f" else a
            for a in arrays]


NAMES = ("amp_multicast onehot_encode reset_arrays from_numpy load_frombuffer "
         "to_dlpack_for_read to_dlpack_for_write from_dlpack").split()
