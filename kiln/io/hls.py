"""8-bit RGB <-> HLS as OpenCV converts it (hue in degrees / 2, 0-180; lightness and
saturation scaled to 0-255), for ImageRecordIter's random_h / random_l / random_s."""
import numpy as _np

# which of (p2, p1, falling, rising) gives b, g and r in each 60-degree sector of the hue
_SECTORS = _np.array([[1, 3, 0], [1, 0, 2], [3, 0, 1], [0, 2, 1], [0, 1, 3], [2, 1, 0]])


def _byte(x):
    return _np.clip(_np.floor(x + 0.5), 0, 255).astype(_np.uint8)


def rgb_to_hls(img):
    """(H, W, 3) uint8 RGB -> uint8 (hue / 2, lightness, saturation)."""
    r, g, b = (img[..., k].astype(_np.float32) / 255 for k in range(3))
    vmax, vmin = _np.maximum(_np.maximum(r, g), b), _np.minimum(_np.minimum(r, g), b)
    diff, total = vmax - vmin, vmax + vmin
    light = total * 0.5
    grey = diff <= _np.finfo(_np.float32).eps
    safe = _np.where(grey, 1.0, diff)
    sat = _np.where(light < 0.5, diff / _np.where(grey, 1.0, total),
                    diff / _np.where(grey, 1.0, 2.0 - total))
    hue = _np.where(vmax == r, (g - b) * 60 / safe,
                    _np.where(vmax == g, (b - r) * 60 / safe + 120, (r - g) * 60 / safe + 240))
    hue = _np.where(hue < 0, hue + 360, hue)
    hue, sat = _np.where(grey, 0.0, hue), _np.where(grey, 0.0, sat)
    return _np.stack([_byte(hue / 2), _byte(light * 255), _byte(sat * 255)], -1)


def hls_to_rgb(hls):
    """uint8 (hue / 2, lightness, saturation) -> (H, W, 3) uint8 RGB."""
    hue = hls[..., 0].astype(_np.float32) * 2 / 60
    light = hls[..., 1].astype(_np.float32) / 255
    sat = hls[..., 2].astype(_np.float32) / 255
    p2 = _np.where(light <= 0.5, light * (1 + sat), light + sat - light * sat)
    p1 = 2 * light - p2
    hue = _np.where(hue < 0, hue + 6, hue)
    hue = _np.where(hue >= 6, hue - 6, hue)
    sector = _np.floor(hue).astype(_np.int64)
    frac = hue - sector
    table = _np.stack([p2, p1, p1 + (p2 - p1) * (1 - frac), p1 + (p2 - p1) * frac], -1)
    pick = _SECTORS[sector]                                  # (H, W, 3): b, g, r
    bgr = _np.take_along_axis(table, pick, -1)
    rgb = bgr[..., ::-1]
    rgb = _np.where((sat == 0)[..., None], light[..., None], rgb)
    return _byte(rgb * 255)
