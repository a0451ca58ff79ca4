"""`nd.image` and `sym.image` (MXNet 1.x): the `_image_*` operators of kiln/mx/ops/image.py
with MXNet's signatures; given Symbols they build nodes, given arrays they compute."""
from .functions import mx_function


def to_tensor(data, **kwargs):
    """(H, W, C) pixels as float32 (C, H, W) values in [0, 1]."""
    return mx_function("_image_to_tensor")(data, **kwargs)


def normalize(data, mean=(0.0, 0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0, 1.0), **kwargs):
    """(x - mean) / std per channel of a (C, H, W) image or (N, C, H, W) batch."""
    return mx_function("_image_normalize")(data, mean=mean, std=std, **kwargs)


def flip_left_right(data, **kwargs):
    return mx_function("_image_flip_left_right")(data, **kwargs)


def flip_top_bottom(data, **kwargs):
    return mx_function("_image_flip_top_bottom")(data, **kwargs)


def random_flip_left_right(data, p=0.5, **kwargs):
    return mx_function("_image_random_flip_left_right")(data, p=p, **kwargs)


def random_flip_top_bottom(data, p=0.5, **kwargs):
    return mx_function("_image_random_flip_top_bottom")(data, p=p, **kwargs)


def crop(data, x, y, width, height, **kwargs):
    """The (height, width) region whose top-left pixel is (x, y)."""
    return mx_function("_image_crop")(data, x=x, y=y, width=width, height=height, **kwargs)
