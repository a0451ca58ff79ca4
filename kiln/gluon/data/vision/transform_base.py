"""What every transform of gluon.data.vision.transforms builds on: the `Transform` base
class, NumPy in and kiln arrays out (to_numpy, wrap), kiln's generator for random choices
(rng), and the checks and per-image loop of image transforms."""
import numpy as _np

from ...._core.base import KilnError
from ...._core.ndarray import ndarray
from ....ops.creation import _RandomState


def to_numpy(x, what):
    """`x` as a NumPy array (a kiln array's values; inside a trace, an error naming `what`)."""
    if isinstance(x, ndarray):
        return x._concrete(what)
    return _np.asarray(x)


def wrap(arr):
    """A NumPy array as a (C-contiguous) kiln array."""
    return ndarray._wrap(_np.ascontiguousarray(arr))


def rng():
    """The NumPy random Generator that kiln's random functions share (seeded by `np.random.seed`).
    """
    return _RandomState.generator


class Transform:
    """Base of the transforms: `t(x)` runs `t.forward(x)`; hybridize is accepted, a no-op."""

    def __call__(self, x, *args):
        """t(x) is the transformed x; t(x, label, ...) is (transformed x, label, ...), as
        MXNet 2's transforms pass the other items of a sample through."""
        out = self.forward(x)
        return (out,) + args if args else out

    def hybridize(self, *args, **kwargs):
        pass

    def __repr__(self):
        fields = ", ".join(f"{k.lstrip('_')}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


def _check_image(arr, what, batch_ok=True):
    if arr.ndim == 3 or (batch_ok and arr.ndim == 4):
        return
    raise KilnError(f"transforms.{what}: expected an image (H, W, C)"
                    f"{' or a batch (N, H, W, C)' if batch_ok else ''}, got shape {arr.shape}")


def _size_pair(size, what):
    if isinstance(size, int):
        return size, size
    if isinstance(size, (tuple, list)) and len(size) == 2:
        return int(size[0]), int(size[1])
    raise KilnError(f"transforms.{what}: size must be an int or (width, height), got {size!r}")


def _per_image(arr, fn):
    """Apply fn to one (H, W, C) image or to each image of an (N, H, W, C) batch."""
    if arr.ndim == 4:
        return _np.stack([fn(a) for a in arr])
    return fn(arr)
