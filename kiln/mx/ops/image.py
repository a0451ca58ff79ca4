"""MXNet 1.x's image operators (`nd.image.*`, `sym.image.*`, registered as `_image_*`):
to_tensor, normalize, flips and crop on (H, W, C) images or (N, H, W, C) batches (to_tensor
makes (C, H, W); normalize takes that layout). Compositions of kiln.np functions, so they
record gradients and trace like every entry of the table."""
from ... import np as knp
from ..._core.base import KilnError, ValueRangeError
from ...np import random as _random
from .table import _op


def _image_ndim(data, what):
    if data.ndim not in (3, 4):
        raise KilnError(f"image.{what}: expected an (H, W, C) image or an (N, H, W, C) batch, "
                        f"got shape {tuple(data.shape)}")


@_op("_image_to_tensor image_to_tensor")
def to_tensor(data, **_):
    """uint8 (or any) (H, W, C) pixels as float32 (C, H, W) values in [0, 1]."""
    _image_ndim(data, "to_tensor")
    out = knp.asarray(data).astype("float32") / 255.0
    return knp.moveaxis(out, -1, -3)


def _per_channel(value, channels, dtype):
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    values = values[:channels] if len(values) >= channels else values * channels
    return knp.array(values[:channels], dtype=dtype).reshape((channels, 1, 1))


@_op("_image_normalize image_normalize")
def normalize(data, mean=(0.0, 0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0, 1.0), **_):
    """(x - mean) / std per channel of a (C, H, W) image or (N, C, H, W) batch."""
    if data.ndim not in (3, 4):
        raise KilnError(f"image.normalize: expected (C, H, W) or (N, C, H, W), got shape "
                        f"{tuple(data.shape)}")
    channels = data.shape[-3]
    return (data - _per_channel(mean, channels, data.dtype)) / _per_channel(std, channels,
                                                                            data.dtype)


@_op("_image_flip_left_right image_flip_left_right")
def flip_left_right(data, **_):
    _image_ndim(data, "flip_left_right")
    return knp.flip(data, axis=-2)


@_op("_image_flip_top_bottom image_flip_top_bottom")
def flip_top_bottom(data, **_):
    _image_ndim(data, "flip_top_bottom")
    return knp.flip(data, axis=-3)


def _maybe(flipped, data, p):
    # a drawn choice, not a Python `if`, so the op also traces into a graph
    return knp.where(_random.uniform(size=()) < float(p), flipped, data)


@_op("_image_random_flip_left_right image_random_flip_left_right")
def random_flip_left_right(data, p=0.5, **_):
    return _maybe(flip_left_right(data), data, p)


@_op("_image_random_flip_top_bottom image_random_flip_top_bottom")
def random_flip_top_bottom(data, p=0.5, **_):
    return _maybe(flip_top_bottom(data), data, p)


@_op("_image_crop image_crop")
def crop(data, x=0, y=0, width=1, height=1, **_):
    """The (height, width) region whose top-left pixel is (x, y), of every image."""
    _image_ndim(data, "crop")
    x, y, width, height = int(x), int(y), int(width), int(height)
    rows, cols = data.shape[-3], data.shape[-2]
    if width <= 0 or height <= 0 or x < 0 or y < 0 or x + width > cols or y + height > rows:
        raise ValueRangeError(f"image.crop: the region x={x}, y={y}, width={width}, "
                        f"height={height} does not fit in an image of {rows}x{cols}")
    return data[..., y:y + height, x:x + width, :]
