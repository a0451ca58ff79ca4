"""NumPy's einsum over registry primitives: repeated labels of one operand become a
diagonal gather, labels no later step needs are summed early, and each pair of operands is
one batched matmul. So it is differentiable and traces into a compiled graph."""
import builtins as _b
import string

import numpy as _np

from .._core.base import op_error, KilnError
from .._core.dispatch import to_operands
from .manipulation import reshape, transpose, broadcast_to
from .indexing import diagonal
from .products import matmul
from .reductions import sum


def _parse_einsum(subscripts, shapes):
    spec = subscripts.replace(" ", "")
    lhs, arrow, out = spec.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise op_error("einsum", f"{len(terms)} operand subscripts for {len(shapes)} operands",
                       KilnError)
    used = set(spec) - set(".,->")
    spare = [c for c in string.ascii_letters if c not in used]
    ell_nd = _b.max([len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t],
                    default=0)
    ell = "".join(spare[:ell_nd])
    labels = []
    for t, s in zip(terms, shapes):
        if "..." in t:
            k = len(s) - (len(t) - 3)
            t = t.replace("...", ell[ell_nd - k:] if k else "")
        if len(t) != len(s) or not all(c.isalpha() for c in t):
            raise op_error("einsum", f"subscripts {t!r} do not fit an operand of shape "
                           f"{tuple(s)}", KilnError)
        labels.append(t)
    if arrow:
        out = out.replace("...", ell)
        seen = set("".join(labels))
        if len(set(out)) != len(out) or not set(out) <= seen:
            raise op_error("einsum", f"output subscripts {out!r} must name input labels, "
                           f"each once", KilnError)
    else:
        counts = {}
        for t in labels:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = ell + "".join(sorted(c for c, n in counts.items() if n == 1 and c not in ell))
    return labels, out


def _check_sizes(labels, shapes):
    """One size per label (1 broadcasts), as NumPy requires."""
    sizes = {}
    for lab, shape in zip(labels, shapes):
        for c, d in zip(lab, shape):
            if d != 1 and sizes.setdefault(c, d) != d:
                raise op_error("einsum", f"operands could not be broadcast together: label "
                               f"{c!r} has sizes {sizes[c]} and {d} (operand shapes "
                               f"{[tuple(s) for s in shapes]})", KilnError)


def _take_diagonals(x, lab):
    """Repeated labels in one operand (ii -> i): keep the diagonal."""
    while len(set(lab)) < len(lab):
        c = next(c for c in lab if lab.count(c) > 1)
        i, j = lab.index(c), lab.index(c, lab.index(c) + 1)
        x = diagonal(x, 0, i, j)             # the diagonal axis goes last
        lab = "".join(ch for k, ch in enumerate(lab) if k not in (i, j)) + c
    return x, lab


def _sum_labels(x, lab, keep):
    axes = tuple(k for k, c in enumerate(lab) if c not in keep)
    if not axes:
        return x, lab
    return sum(x, axis=axes), "".join(c for c in lab if c in keep)


def _contract(a, la, b, lb, keep):
    """One pairwise product: batch labels (in both, kept), contracted (in both, not kept)."""
    sizes = {}
    for x, lab in ((a, la), (b, lb)):
        for c, d in zip(lab, x.shape):
            sizes[c] = _b.max(sizes.get(c, 1), d)
    batch = [c for c in la if c in lb and c in keep]
    summed = [c for c in la if c in lb and c not in keep]
    free_a = [c for c in la if c not in lb]
    free_b = [c for c in lb if c not in la]

    def arrange(x, lab, order):
        x = transpose(x, [lab.index(c) for c in order])
        return broadcast_to(x, tuple(sizes[c] for c in order))
    n = lambda cs: int(_np.prod([sizes[c] for c in cs], dtype=_np.int64))  # noqa: E731
    at = reshape(arrange(a, la, batch + free_a + summed), (n(batch), n(free_a), n(summed)))
    bt = reshape(arrange(b, lb, batch + summed + free_b), (n(batch), n(summed), n(free_b)))
    r = matmul(at, bt)
    lab = batch + free_a + free_b
    return reshape(r, tuple(sizes[c] for c in lab)), "".join(lab)


def einsum(*operands, optimize=False, out=None, **kwargs):
    """Einstein summation, as a chain of pairwise matmuls (differentiable, traceable)."""
    if not operands or not isinstance(operands[0], str):
        raise op_error("einsum", "the first argument must be a subscripts string", KilnError)
    subscripts, arrays = operands[0], to_operands(list(operands[1:]))
    labels, out_lab = _parse_einsum(subscripts, [x.shape for x in arrays])
    _check_sizes(labels, [x.shape for x in arrays])
    items = [_take_diagonals(x, lab) for x, lab in zip(arrays, labels)]
    for k, (x, lab) in enumerate(items):
        others = set(out_lab).union(*[set(items[j][1]) for j in range(len(items)) if j != k])
        items[k] = _sum_labels(x, lab, others)
    x, lab = items[0]
    for k in range(1, len(items)):
        keep = set(out_lab).union(*[set(items[j][1]) for j in range(k + 1, len(items))])
        x, lab = _contract(x, lab, items[k][0], items[k][1], keep)
        x, lab = _sum_labels(x, lab, keep)
    x, lab = _sum_labels(x, lab, set(out_lab))
    r = transpose(x, [lab.index(c) for c in out_lab]) if lab != out_lab else x
    if out is not None:
        out[...] = r
        return out
    return r + 0 if r is (arrays[0] if arrays else None) else r
