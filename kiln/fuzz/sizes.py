"""The fuzzer's size stage: one hybridized function with every size symbolic
(`dynamic=True`) on each backend that runs symbolic programs (the NumPy executor, and
generated C, which reads its sizes at run time) is called with the arguments, then with
their sizes changed between calls of that same function: the shared leading axis resized
(1, 0, and larger), and every axis resized at once (axes of one size keep one size, so
operands that must agree still do). Each call must equal eager on the same arguments, or
raise where eager raises. A guard that fails retraces; a guard that is missing, or a
symbolic size evaluated wrongly, is a finding."""
import numpy as onp

from .._core.ndarray import ndarray
from ..hybrid.cached import hybridize

SIZES = (1, 0, 3, 7)
REGROUPED = 2       # calls with every axis resized, after the leading-axis ones


def resized(args, size, rng):
    """args with the leading axis their arrays share resized to `size` (rows drawn from
    the originals), or None when the arrays share no leading axis."""
    arrays = [a for a in args if isinstance(a, ndarray) and a.ndim]
    lead = {a.shape[0] for a in arrays}
    if len(lead) != 1 or 0 in lead:
        return None
    (n,) = lead
    rows = rng.integers(0, n, size)
    return [ndarray._wrap(onp.array(a.asnumpy()[rows]))
            if isinstance(a, ndarray) and a.ndim else a for a in args]


def regrouped(args, rng):
    """args with every axis of size n > 1 resized to one new size drawn for n (0 to 8);
    elements are taken from the originals cyclically, so indices keep their values. None
    when no array has such an axis."""
    arrays = [a for a in args if isinstance(a, ndarray) and a.size]
    sizes = sorted({n for a in arrays for n in a.shape if n > 1})
    if not sizes:
        return None
    new = {n: int(rng.integers(0, 9)) for n in sizes}
    out = []
    for a in args:
        if not (isinstance(a, ndarray) and a.size):
            out.append(a)
            continue
        index = onp.ix_(*[onp.arange(new.get(n, n)) % n for n in a.shape])
        out.append(ndarray._wrap(onp.array(a.asnumpy()[index])))
    return out


def compare_sizes(fn, args, run, same_error, same_values, finding, strict=False, seed=29,
                  backends=("numpy",)):
    """Findings of the size stage (`run`, `same_error`, `same_values` and `finding` are
    compare.py's, passed in so both stages judge alike)."""
    rng = onp.random.default_rng(seed)
    variants = [args] + [v for v in (resized(args, s, rng) for s in SIZES) if v is not None]
    variants += [v for v in (regrouped(args, rng) for _ in range(REGROUPED)) if v is not None]
    findings = []
    for backend in backends:
        compiled = hybridize(fn, backend=backend, strict=strict, dynamic=True)
        for values in variants:
            shapes = [tuple(a.shape) for a in values if isinstance(a, ndarray)]
            expected = run(fn, _copies(values))
            got = run(compiled, _copies(values))
            msg = same_error(expected[1], got[1])
            if not msg and expected[1] is None:
                msg = same_values(expected[0], got[0]) or same_values(expected[2], got[2])
            if msg:
                findings.append(finding(f"sizes {shapes}", backend, msg))
    return findings


def _copies(values):
    return [ndarray._wrap(onp.array(a.asnumpy())) if isinstance(a, ndarray) else a
            for a in values]
