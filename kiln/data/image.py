"""MXNet's `mx.image` functions on images as HWC arrays (decode, resize, crop), built on
Pillow; kiln.image (kiln/mx/image) adds MXNet's iterators and augmenters on top.

Pillow is the optional `image` extra (`pip install 'kiln[image]'`); kiln imports without
it and each function names the extra when it is called without it.
Interpolation codes follow MXNet/OpenCV: 0 nearest, 1 bilinear, 2 bicubic, 3 area, 4 Lanczos.
"""
import io
import os
import random as _pyrandom

import numpy as _np

from .._core.base import KilnError


def _pil_image():
    try:
        from PIL import Image
    except ImportError:
        raise KilnError("kiln.image needs Pillow, which is not installed; install it with: "
                        "pip install 'kiln[image]' (or: pip install Pillow)") from None
    return Image


def _to_numpy(src, what):
    from .._core.ndarray import ndarray
    if isinstance(src, ndarray):
        src = src._concrete(what)
    src = _np.asarray(src)
    if src.ndim not in (2, 3) or (src.ndim == 3 and src.shape[2] not in (1, 3, 4)):
        raise KilnError(f"image.{what}: expected an image of shape (H, W) or (H, W, C) with "
                        f"C in 1, 3, 4; got shape {src.shape}")
    return src


def _wrap(arr):
    from .._core.ndarray import ndarray
    return ndarray._wrap(_np.ascontiguousarray(arr))


def _resample(interp, Image):
    table = {0: Image.NEAREST, 1: Image.BILINEAR, 2: Image.BICUBIC, 3: Image.BOX,
             4: Image.LANCZOS}
    if interp in (9, 10):  # MXNet: 9 picks by size, 10 at random; bilinear is the usual pick
        interp = 1
    if interp not in table:
        raise KilnError(f"image: interp must be one of 0-4, 9, 10 (MXNet's codes), got {interp}")
    return table[interp]


def _resize_numpy(img, w, h, interp):
    """Resize an (H, W[, C]) array to (h, w[, C]), keeping its dtype."""
    Image = _pil_image()
    if w <= 0 or h <= 0:
        raise KilnError(f"image.imresize: size must be positive, got w={w}, h={h}")
    if img.shape[:2] == (h, w):
        return img  # every interpolation maps a grid onto itself unchanged
    resample = _resample(interp, Image)
    squeeze = img.ndim == 2
    planes = img[:, :, None] if squeeze else img
    if planes.dtype == _np.uint8 and planes.shape[2] in (1, 3):
        mode_img = planes[:, :, 0] if planes.shape[2] == 1 else planes
        out = _np.asarray(Image.fromarray(mode_img).resize((w, h), resample))
        out = out.reshape(h, w, planes.shape[2])
    else:  # any dtype, any channel count: one float32 plane at a time
        chans = [_np.asarray(Image.fromarray(planes[:, :, c].astype(_np.float32), mode="F")
                             .resize((w, h), resample)) for c in range(planes.shape[2])]
        out = _np.stack(chans, axis=2)
        if planes.dtype.kind in "iu":
            info = _np.iinfo(planes.dtype)
            out = _np.clip(_np.rint(out), info.min, info.max)
        out = out.astype(planes.dtype)
    return out[:, :, 0] if squeeze else out


def imdecode(buf, flag=1, to_rgb=True, out=None):
    """Decode an image file's bytes to an (H, W, 3) uint8 array (flag=0: (H, W, 1) gray)."""
    Image = _pil_image()
    if hasattr(buf, "asnumpy"):
        buf = buf.asnumpy()
    data = bytes(_np.asarray(buf, dtype=_np.uint8).tobytes()) if not isinstance(
        buf, (bytes, bytearray)) else bytes(buf)
    try:
        with Image.open(io.BytesIO(data)) as img:
            img = img.convert("L" if flag == 0 else "RGB")
            arr = _np.asarray(img)
    except Exception as exc:  # Pillow raises several types for bad data
        raise KilnError(f"image.imdecode: cannot decode {len(data)} bytes as an image "
                        f"({type(exc).__name__}: {exc})") from None
    if flag == 0:
        arr = arr[:, :, None]
    elif not to_rgb:
        arr = arr[:, :, ::-1]  # MXNet's to_rgb=False gives OpenCV's BGR order
    return _wrap(arr)


def imread(filename, flag=1, to_rgb=True, out=None):
    """Read an image file to an (H, W, 3) uint8 array (flag=0: (H, W, 1) gray)."""
    try:
        with open(os.fspath(filename), "rb") as f:
            data = f.read()
    except OSError as exc:
        raise KilnError(f"image.imread: cannot read {filename}: {exc.strerror}") from None
    try:
        return imdecode(data, flag, to_rgb)
    except KilnError as exc:
        raise KilnError(f"image.imread: {filename}: {exc}") from None


def imresize(src, w, h, interp=1):
    """`src` (an HWC image) resized to width `w` and height `h` with interpolation `interp`
    (MXNet's image.imresize)."""
    return _wrap(_resize_numpy(_to_numpy(src, "imresize"), int(w), int(h), interp))


def resize_short(src, size, interp=2):
    """Resize so the shorter edge is `size`, keeping the aspect ratio."""
    img = _to_numpy(src, "resize_short")
    h, w = img.shape[:2]
    if h > w:
        new_w, new_h = size, size * h // w
    else:
        new_w, new_h = size * w // h, size
    return _wrap(_resize_numpy(img, new_w, new_h, interp))


def fixed_crop(src, x0, y0, w, h, size=None, interp=2):
    """Crop the w x h box at (x0, y0); resize it to size=(w, h) when given."""
    img = _to_numpy(src, "fixed_crop")
    H, W = img.shape[:2]
    if x0 < 0 or y0 < 0 or w <= 0 or h <= 0 or x0 + w > W or y0 + h > H:
        raise KilnError(f"image.fixed_crop: box x0={x0}, y0={y0}, w={w}, h={h} is not inside "
                        f"the {W}x{H} image")
    out = img[y0:y0 + h, x0:x0 + w]
    if size is not None and (w, h) != tuple(size):
        out = _resize_numpy(out, int(size[0]), int(size[1]), interp)
    return _wrap(out)


def scale_down(src_size, size):
    """Shrink the crop size (w, h) to fit in src_size (w, h), keeping its aspect ratio."""
    w, h = size
    sw, sh = src_size
    if sh < h:
        w, h = float(w * sh) / h, sh
    if sw < w:
        w, h = sw, float(h * sw) / w
    return int(w), int(h)


def _crop_size(img, size):
    if isinstance(size, int):
        size = (size, size)
    h, w = img.shape[:2]
    return size, scale_down((w, h), size), (w, h)


def center_crop(src, size, interp=2):
    """Crop the centre (scaled down to fit) and resize it to size=(w, h).
    Returns (image, (x0, y0, w, h)) as MXNet does."""
    img = _to_numpy(src, "center_crop")
    size, (new_w, new_h), (w, h) = _crop_size(img, size)
    x0, y0 = (w - new_w) // 2, (h - new_h) // 2
    return fixed_crop(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def random_crop(src, size, interp=2):
    """Crop a random box (scaled down to fit) and resize it to size=(w, h).
    Returns (image, (x0, y0, w, h)); Python's `random` picks the corner, as in MXNet."""
    img = _to_numpy(src, "random_crop")
    size, (new_w, new_h), (w, h) = _crop_size(img, size)
    x0 = _pyrandom.randint(0, w - new_w)
    y0 = _pyrandom.randint(0, h - new_h)
    return fixed_crop(img, x0, y0, new_w, new_h, size, interp), (x0, y0, new_w, new_h)


def color_normalize(src, mean, std=None):
    """(src - mean) / std, broadcasting over the channel axis."""
    from .._core.ndarray import as_array
    out = as_array(src) - as_array(mean)
    if std is not None:
        out = out / as_array(std)
    return out
