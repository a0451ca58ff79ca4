"""MXNet's bounding-box contrib ops: `box_iou` (composed, differentiable), and `box_nms`
and `bipartite_matching`, which select by value and so compute eagerly in NumPy (as
multibox_detection's NMS does), returning MXNet's layouts: suppressed rows of -1 after
the kept ones, sorted by score; -1 for an unmatched row."""
import numpy as _np

from .... import np as knp
from ...._core.base import KilnError
from ...._core.ndarray import ndarray


def _corners(boxes, fmt):
    """(xmin, ymin, xmax, ymax) slices of the last axis, from 'corner' or 'center'."""
    parts = [boxes[..., k] for k in range(4)]
    if fmt == "corner":
        return parts
    if fmt != "center":
        raise KilnError(f"box format must be 'corner' or 'center', got {fmt!r}")
    x, y, w, h = parts
    return [x - w / 2, y - h / 2, x + w / 2, y + h / 2]


def box_iou(lhs, rhs, format="corner", **_):
    """Intersection over union of every lhs box (..., 4) with every rhs box: shape
    lhs.shape[:-1] + rhs.shape[:-1]."""
    lhs, rhs = knp.asarray(lhs), knp.asarray(rhs)
    lead_l, lead_r = lhs.shape[:-1], rhs.shape[:-1]
    a = _corners(knp.reshape(lhs, (-1, 1, 4)), format)
    b = _corners(knp.reshape(rhs, (1, -1, 4)), format)
    zero = knp.zeros((), dtype=lhs.dtype)
    iw = knp.maximum(knp.minimum(a[2], b[2]) - knp.maximum(a[0], b[0]), zero)
    ih = knp.maximum(knp.minimum(a[3], b[3]) - knp.maximum(a[1], b[1]), zero)
    inter = iw * ih
    area_a = (a[2] - a[0]) * (a[3] - a[1])
    area_b = (b[2] - b[0]) * (b[3] - b[1])
    union = area_a + area_b - inter
    iou = knp.where(union > 0, inter / knp.where(union > 0, union, 1.0), zero)
    return knp.reshape(iou, lead_l + lead_r)


def _iou_np(box, others):
    iw = _np.clip(_np.minimum(box[2], others[:, 2]) - _np.maximum(box[0], others[:, 0]), 0, None)
    ih = _np.clip(_np.minimum(box[3], others[:, 3]) - _np.maximum(box[1], others[:, 1]), 0, None)
    inter = iw * ih
    union = ((box[2] - box[0]) * (box[3] - box[1])
             + (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1]) - inter)
    return _np.where(union > 0, inter / _np.where(union > 0, union, 1), 0)


def _to_corner_np(b):
    x, y, w, h = b.T
    return _np.stack([x - w / 2, y - h / 2, x + w / 2, y + h / 2], axis=1)


def _to_center_np(b):
    x0, y0, x1, y1 = b.T
    return _np.stack([(x0 + x1) / 2, (y0 + y1) / 2, x1 - x0, y1 - y0], axis=1)


def _nms_batch(rows, overlap, valid, topk, cs, si, ii, bg, force, in_fmt, out_fmt):
    out = _np.full_like(rows, -1)
    scores = rows[:, si]
    keep = scores > valid
    if ii >= 0 and bg >= 0:
        keep &= rows[:, ii] != bg
    order = [i for i in _np.argsort(-scores, kind="stable") if keep[i]]
    if topk > 0:
        order = order[:topk]
    boxes = rows[:, cs:cs + 4].astype(_np.float64)
    if in_fmt == "center":
        boxes = _to_corner_np(boxes)
    kept = []
    for i in order:
        if kept:
            prior = _np.array(kept)
            if not force and ii >= 0:
                prior = prior[rows[prior, ii] == rows[i, ii]]
            if len(prior) and (_iou_np(boxes[i], boxes[prior]) > overlap).any():
                continue
        kept.append(i)
    for slot, i in enumerate(kept):
        out[slot] = rows[i]
        if out_fmt != in_fmt:
            b = boxes[i:i + 1] if out_fmt == "corner" else _to_center_np(boxes[i:i + 1])
            out[slot, cs:cs + 4] = b[0]
    return out


def box_nms(data, overlap_thresh=0.5, valid_thresh=0.0, topk=-1, coord_start=2,
            score_index=1, id_index=-1, background_id=-1, force_suppress=False,
            in_format="corner", out_format="corner", **_):
    """Non-maximum suppression on (..., N, K) rows: kept rows first by descending score,
    the rest -1."""
    for fmt in (in_format, out_format):
        if fmt not in ("corner", "center"):
            raise KilnError(f"box_nms: format must be 'corner' or 'center', got {fmt!r}")
    values = knp.asarray(data)._concrete("contrib.box_nms()")
    batches = values.reshape((-1,) + values.shape[-2:])
    out = _np.stack([_nms_batch(b, float(overlap_thresh), float(valid_thresh), int(topk),
                                int(coord_start), int(score_index), int(id_index),
                                int(background_id), bool(force_suppress), in_format,
                                out_format) for b in batches])
    return ndarray._wrap(out.reshape(values.shape))


box_non_maximum_suppression = box_nms


def bipartite_matching(data, threshold, is_ascend=False, topk=-1, **_):
    """Greedy matching on a (..., N, M) score matrix, best pair first: (row -> column or -1,
    column -> row or -1)."""
    values = knp.asarray(data)._concrete("contrib.bipartite_matching()")
    mats = values.reshape((-1,) + values.shape[-2:])
    rows_out, cols_out = [], []
    for m in mats:
        n_rows, n_cols = m.shape
        row_of = _np.full(n_rows, -1.0)
        col_of = _np.full(n_cols, -1.0)
        flat = m.reshape(-1)
        order = _np.argsort(flat if is_ascend else -flat, kind="stable")
        matched = 0
        for k in order:
            s = flat[k]
            if (s >= threshold) if is_ascend else (s <= threshold):
                break
            r, c = divmod(int(k), n_cols)
            if row_of[r] < 0 and col_of[c] < 0:
                row_of[r], col_of[c] = c, r
                matched += 1
                if 0 < topk <= matched:
                    break
        rows_out.append(row_of)
        cols_out.append(col_of)
    dt = values.dtype
    return [ndarray._wrap(_np.stack(rows_out).reshape(values.shape[:-1]).astype(dt)),
            ndarray._wrap(_np.stack(cols_out).reshape(values.shape[:-2] + (values.shape[-1],))
                          .astype(dt))]


def _centres(boxes):
    x0, y0, x1, y1 = (boxes[..., k] for k in range(4))
    return (x0 + x1) * 0.5, (y0 + y1) * 0.5, x1 - x0, y1 - y0


def box_encode(samples, matches, anchors, refs, means, stds, **_):
    """Training targets of matched boxes as normalized centre offsets (corner inputs):
    (targets (B, N, 4), masks (B, N, 4)); rows whose sample is not positive are 0."""
    samples, anchors, refs = (knp.asarray(v) for v in (samples, anchors, refs))
    idx = knp.asarray(matches).astype("int64")
    b, n = idx.shape
    m = refs.shape[1]
    flat = idx + knp.reshape(knp.arange(b, dtype="int64") * m, (b, 1))
    matched = knp.reshape(knp.take(knp.reshape(refs, (b * m, 4)), knp.reshape(flat, (-1,)),
                                   axis=0), (b, n, 4))
    ax, ay, aw, ah = _centres(anchors)
    gx, gy, gw, gh = _centres(matched)
    t = knp.stack([(gx - ax) / aw, (gy - ay) / ah, knp.log(gw / aw), knp.log(gh / ah)], -1)
    t = (t - knp.asarray(means)) / knp.asarray(stds)
    mask = knp.expand_dims((samples > 0.5).astype(t.dtype), -1) * knp.ones((1, 1, 4), t.dtype)
    return [t * mask, mask]


def box_decode(data, anchors, std0=1.0, std1=1.0, std2=1.0, std3=1.0, clip=-1.0,
               format="center", **_):
    """Boxes (corner format) from predicted offsets against anchors (corner or center)."""
    data, anchors = knp.asarray(data), knp.asarray(anchors)
    if format == "corner":
        ax, ay, aw, ah = _centres(anchors)
    else:
        ax, ay, aw, ah = (anchors[..., k] for k in range(4))
    dw, dh = data[..., 2] * float(std2), data[..., 3] * float(std3)
    if clip > 0:
        dw, dh = knp.minimum(dw, float(clip)), knp.minimum(dh, float(clip))
    x = data[..., 0] * float(std0) * aw + ax
    y = data[..., 1] * float(std1) * ah + ay
    hw, hh = knp.exp(dw) * aw * 0.5, knp.exp(dh) * ah * 0.5
    return knp.stack([x - hw, y - hh, x + hw, y + hh], axis=-1)
