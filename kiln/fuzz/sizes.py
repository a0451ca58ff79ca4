"""The fuzzer's size stage: one hybridized function with every size symbolic
(`dynamic=True`, on the NumPy executor, which runs symbolic programs) is called with the
arguments, then with their shared leading axis resized (1, 0, and larger): each call must
equal eager on the same arguments, or raise where eager raises. A guard that fails
retraces; a guard that is missing, or a symbolic size evaluated wrongly, is a finding."""
import numpy as onp

from .._core.ndarray import ndarray
from ..hybrid.cached import hybridize

SIZES = (1, 0, 3, 7)


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


def compare_sizes(fn, args, run, same_error, same_values, finding, strict=False, seed=29):
    """Findings of the size stage (`run`, `same_error`, `same_values` and `finding` are
    compare.py's, passed in so both stages judge alike)."""
    compiled = hybridize(fn, backend="numpy", strict=strict, dynamic=True)
    rng = onp.random.default_rng(seed)
    variants = [args] + [v for v in (resized(args, s, rng) for s in SIZES) if v is not None]
    findings = []
    for values in variants:
        shapes = [tuple(a.shape) for a in values if isinstance(a, ndarray)]
        copy = [ndarray._wrap(onp.array(a.asnumpy())) if isinstance(a, ndarray) else a
                for a in values]
        expected = run(fn, copy)
        copy = [ndarray._wrap(onp.array(a.asnumpy())) if isinstance(a, ndarray) else a
                for a in values]
        got = run(compiled, copy)
        msg = same_error(expected[1], got[1])
        if not msg and expected[1] is None:
            msg = same_values(expected[0], got[0]) or same_values(expected[2], got[2])
        if msg:
            findings.append(finding(f"sizes {shapes}", "numpy", msg))
    return findings
