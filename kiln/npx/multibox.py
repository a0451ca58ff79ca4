"""SSD's training targets and detection decoding: MXNet's MultiBoxTarget / MultiBoxDetection
(`npx.multibox_target`, `npx.multibox_detection`; `contrib.MultiBoxTarget` in MXNet 1.x).

Both are sequential, data-dependent algorithms (greedy matching, sorting, non-maximum
suppression), so they run in NumPy on concrete values, in float32 as MXNet's CPU kernels do.
Their outputs carry no gradient: MXNet's backward writes zeros to the class predictions and
nothing else. Inside a hybridized block they need concrete values, so hybridize runs that
block eagerly (and says so), as for `npx.topk`.

Where kiln differs from MXNet 1.9.1 (documented in the README):
- MXNet's CPU MultiBoxDetection accepts `background_id` and ignores it (class 0 is always
  the background). kiln honours it: that class is skipped and the classes after it are
  numbered one lower, which is the same as MXNet for the default 0.
- Where MXNet aborts on a CHECK (a padding row that is not all -1, fewer candidates than
  negative mining needs) kiln raises a KilnError naming the op and the values.
"""
import numpy as _np

from .._core.base import op_error
from .._core.ndarray import ndarray
from .nn import _arr

_F32 = _np.float32


def _values(x, op, name, ndim):
    arr = _np.asarray(_arr(x)._concrete(op), dtype=_F32)
    if arr.ndim != ndim:
        raise op_error(op, f"{name} must have {ndim} dimensions, got shape {arr.shape}")
    return arr


def _variances(op, variances):
    v = tuple(float(x) for x in variances)
    if len(v) != 4:
        raise op_error(op, f"variances takes 4 numbers (x, y, w, h), got {variances!r}")
    return tuple(_F32(x) for x in v)


def _anchors(op, anchor, num_anchors=None):
    arr = _np.asarray(_arr(anchor)._concrete(op), dtype=_F32)
    if arr.ndim != 3 or arr.shape[0] != 1 or arr.shape[2] != 4:
        raise op_error(op, f"anchor must be (1, num_anchors, 4), shared by the batch, got "
                       f"shape {arr.shape}")
    if num_anchors is not None and arr.shape[1] != num_anchors:
        raise op_error(op, f"{arr.shape[1]} anchors for {num_anchors} predictions")
    return arr[0]


def _iou_matrix(boxes_a, boxes_b):
    """IoU of every a (rows) with every b (columns), in float32; 0 where the union is 0."""
    a, b = boxes_a[:, None, :], boxes_b[None, :, :]
    inter = (_np.maximum(_F32(0), _np.minimum(a[..., 2], b[..., 2]) -
                         _np.maximum(a[..., 0], b[..., 0])) *
             _np.maximum(_F32(0), _np.minimum(a[..., 3], b[..., 3]) -
                         _np.maximum(a[..., 1], b[..., 1])))
    union = ((a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1]) +
             (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1]) - inter)
    with _np.errstate(divide="ignore", invalid="ignore"):
        return _np.where(union == 0, _F32(0), inter / union).astype(_F32)


def _num_valid_labels(op, labels):
    """Labels are padded with all -1 rows; the first row of class -1 ends the list."""
    for i, row in enumerate(labels):
        if row[0] == -1:
            if not _np.all(row[1:5] == -1):
                raise op_error(op, f"label row {i} has class -1 (padding) but box "
                               f"{row[1:5].tolist()}; padding rows must be all -1")
            return i
    return len(labels)


def _match(overlaps, overlap_threshold):
    """Greedy bipartite matching, then threshold matching. Returns (flags, best_iou, best_gt):
    flags 1 = positive, -1 = undecided; best_iou is -1 where not yet computed."""
    num_anchors, num_gt = overlaps.shape
    flags = _np.full(num_anchors, -1, _np.int8)
    best_iou = _np.full(num_anchors, -1.0, _F32)
    best_gt = _np.full(num_anchors, -1, _np.int64)
    free = overlaps.copy()
    for _ in range(num_gt):
        flat = int(_np.argmax(free))  # first in anchor-major order, as MXNet scans
        j, k = divmod(flat, num_gt)
        if not free[j, k] > _F32(1e-6):
            break
        flags[j], best_iou[j], best_gt[j] = 1, free[j, k], k
        free[j, :] = -1
        free[:, k] = -1
    if overlap_threshold > 0:
        rest = flags != 1
        best_gt[rest] = _np.argmax(overlaps[rest], axis=1)
        best_iou[rest] = _np.max(overlaps[rest], axis=1)
        flags[rest & (best_iou > _F32(overlap_threshold))] = 1
    return flags, best_iou, best_gt


def _mine_negatives(op, flags, best_iou, overlaps, cls_pred, ratio, thresh):
    """Mark as negative (0) the undecided anchors whose background probability is lowest."""
    num_anchors = len(flags)
    num_pos = int(_np.count_nonzero(flags == 1))
    num_neg = min(int(_F32(num_pos) * _F32(ratio)), num_anchors - num_pos)
    if num_neg <= 0:
        return
    iou = _np.where(best_iou < 0, overlaps.max(axis=1), best_iou)
    candidates = _np.nonzero((flags == -1) & (iou < _F32(thresh)))[0]
    if len(candidates) < num_neg:
        raise op_error(op, f"negative mining wants {num_neg} negatives but only "
                       f"{len(candidates)} anchors overlap less than negative_mining_thresh="
                       f"{thresh}")
    logits = cls_pred[:, candidates]
    shifted = _np.exp(logits - logits.max(axis=0))
    background = shifted[0] / shifted.sum(axis=0, dtype=_F32)
    order = _np.argsort(background, kind="stable")
    flags[candidates[order[:num_neg]]] = 0


def _centre_form(boxes):
    """(width, height, centre x, centre y) of (N, 4) corner boxes, in float32."""
    half = _F32(0.5)
    return (boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1],
            (boxes[:, 0] + boxes[:, 2]) * half, (boxes[:, 1] + boxes[:, 3]) * half)


def _encode(anchors, boxes, variances):
    """Box regression targets of `boxes` relative to `anchors` (both corner form)."""
    vx, vy, vw, vh = variances
    aw, ah, ax, ay = _centre_form(anchors)
    gw, gh, gx, gy = _centre_form(boxes)
    with _np.errstate(divide="ignore", invalid="ignore"):
        return _np.stack([(gx - ax) / aw / vx, (gy - ay) / ah / vy,
                          _np.log(gw / aw) / vw, _np.log(gh / ah) / vh], axis=1)


def multibox_target(anchor, label, cls_pred, overlap_threshold=0.5, ignore_label=-1,
                    negative_mining_ratio=-1, negative_mining_thresh=0.5,
                    minimum_negative_samples=0, variances=(0.1, 0.1, 0.2, 0.2)):
    """Training targets for SSD: [loc_target (B, N*4), loc_mask (B, N*4), cls_target (B, N)].

    anchor (1, N, 4) corners; label (B, M, >=5) rows [class, xmin, ymin, xmax, ymax], padded
    with -1 rows; cls_pred (B, num_classes + 1, N) logits, read only for negative mining.
    Each ground truth first takes its best anchor, then every other anchor whose best IoU
    exceeds overlap_threshold is positive (class + 1, its box encoded with `variances`).
    The rest are background (0), or with negative_mining_ratio > 0 only the hardest
    ratio * positives of them are, and the others get ignore_label.
    (minimum_negative_samples is accepted and unused, as in MXNet's CPU kernel.)"""
    op = "multibox_target"
    anchors = _anchors(op, anchor)
    labels = _values(label, op, "label", 3)
    preds = _values(cls_pred, op, "cls_pred", 3)
    var = _variances(op, variances)
    batch, num_anchors = labels.shape[0], anchors.shape[0]
    if labels.shape[1] == 0 or labels.shape[2] < 5:
        raise op_error(op, f"label must be (batch, num_labels >= 1, width >= 5), got shape "
                       f"{labels.shape}")
    if preds.shape[0] != batch or preds.shape[2] != num_anchors:
        raise op_error(op, f"cls_pred must be (batch={batch}, num_classes, "
                       f"num_anchors={num_anchors}), got shape {preds.shape}")
    loc_target = _np.zeros((batch, num_anchors, 4), _F32)
    loc_mask = _np.zeros((batch, num_anchors, 4), _F32)
    cls_target = _np.full((batch, num_anchors), _F32(ignore_label), _F32)
    for b in range(batch):
        gt = labels[b, :_num_valid_labels(op, labels[b])]
        if len(gt) == 0:
            continue
        overlaps = _iou_matrix(anchors, gt[:, 1:5])
        flags, best_iou, best_gt = _match(overlaps, overlap_threshold)
        if negative_mining_ratio > 0:
            if not negative_mining_thresh > 0:
                raise op_error(op, f"negative_mining_thresh must be > 0, got "
                               f"{negative_mining_thresh}")
            _mine_negatives(op, flags, best_iou, overlaps, preds[b], negative_mining_ratio,
                            negative_mining_thresh)
        else:
            flags[flags != 1] = 0
        pos = _np.nonzero(flags == 1)[0]
        matched = gt[best_gt[pos]]
        cls_target[b, pos] = matched[:, 0] + _F32(1)
        cls_target[b, flags == 0] = 0
        loc_mask[b, pos] = 1
        loc_target[b, pos] = _encode(anchors[pos], matched[:, 1:5], var)
    return [ndarray._wrap(loc_target.reshape(batch, -1)),
            ndarray._wrap(loc_mask.reshape(batch, -1)), ndarray._wrap(cls_target)]


def _decode(anchors, loc, variances, clip):
    vx, vy, vw, vh = variances
    aw, ah, ax, ay = _centre_form(anchors)
    ox, oy = loc[:, 0] * vx * aw + ax, loc[:, 1] * vy * ah + ay
    with _np.errstate(over="ignore"):
        ow = _np.exp(loc[:, 2] * vw) * aw / _F32(2)
        oh = _np.exp(loc[:, 3] * vh) * ah / _F32(2)
    boxes = _np.stack([ox - ow, oy - oh, ox + ow, oy + oh], axis=1)
    return _np.clip(boxes, _F32(0), _F32(1)) if clip else boxes


def _best_class(probs, background_id, threshold):
    """(class id without the background, score) per anchor; id -1 below threshold."""
    num_classes = probs.shape[0]
    keep = [c for c in range(num_classes) if c != background_id]
    if not keep:
        return _np.full(probs.shape[1], -1.0, _F32), _np.full(probs.shape[1], -1.0, _F32)
    cand = probs[keep]
    pick = _np.argmax(cand, axis=0)  # first of equal scores wins, as MXNet's strict '>'
    score = _np.maximum(cand[pick, _np.arange(probs.shape[1])], _F32(-1))
    found = cand.max(axis=0) > _F32(-1)
    ids = _np.where(found & (score >= _F32(threshold)), pick, -1).astype(_F32)
    return ids, _np.where(found, score, _F32(-1))


def _nms(rows, nms_threshold, force_suppress):
    """Suppress (id -> -1) each row overlapping a kept, higher-scored row of its class."""
    ious = _iou_matrix(rows[:, 2:], rows[:, 2:])
    for i in range(len(rows)):
        if rows[i, 0] < 0:
            continue
        later = _np.arange(i + 1, len(rows))
        hit = (rows[later, 0] >= 0) & (ious[i, later] >= _F32(nms_threshold))
        if not force_suppress:
            hit &= rows[later, 0] == rows[i, 0]
        rows[later[hit], 0] = -1


def multibox_detection(cls_prob, loc_pred, anchor, clip=True, threshold=0.01, background_id=0,
                       nms_threshold=0.5, force_suppress=False,
                       variances=(0.1, 0.1, 0.2, 0.2), nms_topk=-1):
    """Decode SSD predictions into (B, N, 6) rows [class_id, score, xmin, ymin, xmax, ymax].

    cls_prob (B, num_classes + 1, N) probabilities (background first by default), loc_pred
    (B, N*4) box offsets, anchor (1, N, 4). Each anchor takes its best non-background class;
    those scoring at least `threshold` are kept, sorted by score (the best nms_topk when
    > 0), and non-maximum suppression (IoU >= nms_threshold, within a class unless
    force_suppress) sets the class id of the suppressed rows to -1. Unused rows are all -1.
    With nms_threshold outside (0, 1] the rows stay unsorted, in anchor order."""
    op = "multibox_detection"
    probs = _values(cls_prob, op, "cls_prob", 3)
    batch, num_classes, num_anchors = probs.shape
    anchors = _anchors(op, anchor, num_anchors)
    loc = _np.asarray(_arr(loc_pred)._concrete(op), dtype=_F32)
    if loc.shape != (batch, num_anchors * 4):
        raise op_error(op, f"loc_pred must be (batch={batch}, num_anchors*4="
                       f"{num_anchors * 4}), got shape {loc.shape}")
    var = _variances(op, variances)
    background_id = int(background_id)
    if not 0 <= background_id < num_classes:
        raise op_error(op, f"background_id {background_id} is not a class of cls_prob's "
                       f"{num_classes}")
    out = _np.full((batch, num_anchors, 6), -1.0, _F32)
    for b in range(batch):
        ids, scores = _best_class(probs[b], background_id, threshold)
        boxes = _decode(anchors, loc[b].reshape(-1, 4), var, clip)
        valid = _np.nonzero(ids >= 0)[0]
        rows = _np.concatenate([ids[valid, None], scores[valid, None], boxes[valid]], axis=1)
        if len(rows) == 0 or not 0 < nms_threshold <= 1:
            out[b, :len(rows)] = rows
            continue
        order = _np.argsort(-rows[:, 1], kind="stable")
        keep = len(rows) if not 0 < nms_topk < len(rows) else int(nms_topk)
        out[b, :len(rows)] = rows
        out[b, keep:len(rows), 0] = -1  # beyond the top k: MXNet leaves them unsorted
        kept = rows[order[:keep]]
        _nms(kept, nms_threshold, force_suppress)
        out[b, :keep] = kept
    return ndarray._wrap(out)
