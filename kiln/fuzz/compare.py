"""Eager against compiled on one function: the differential check the fuzzer and the
regression tests share.

`compare(fn, args)` runs `fn` eagerly and hybridized on each backend, on copies of the same
arguments, and reports every difference as a `Finding`:
  forward   -- the outputs of the tracing call, of a second call, and of a call with new
               values of the same shapes (`new_args`);
  arguments -- the caller's arguments afterwards (in-place updates, writes through views);
  gradient  -- inside autograd.record(), the gradients of every float argument of a
               weighted sum of the float outputs;
  raises    -- when one side raises, the other must raise the same error class;
  strict    -- a variable that is the caller's array on some paths of an if/while only
               must be compiled: hybridize(strict=True) must not refuse it (a fallback of
               kind 'path-aliasing' is reported; other documented fallbacks are counted).
  sizes     -- (sizes=True) one function with symbolic sizes per backend, called as the
               arguments' leading axis, then all their sizes, change (sizes.py).
Values compare with a tolerance for floats, exactly otherwise, NaN and Inf positions
included (kiln's semantics; see the README's "Compiled equals eager"). A float value that
cancels to rounding noise (a LayerNorm's input gradient of a plain sum is 0, computed as
1e-5 noise) is judged against the same program run eagerly in float64 (`_reference`):
compiled passes where it is no farther from that than eager's own float32 result is.
"""
import warnings

import numpy as onp

from .._core import autograd
from .._core.bfloat16 import is_floating
from .._core.ndarray import ndarray
from ..graph.tree import flatten
from ..hybrid.cached import hybridize
from .sizes import compare_sizes

BACKENDS = ("numpy", "c")


class Finding:
    """One difference: what was compared (`stage`), on which backend, and how."""

    def __init__(self, stage, backend, detail):
        self.stage, self.backend, self.detail = stage, backend, detail

    @property
    def kind(self):
        return (self.stage, self.backend)

    def __repr__(self):
        return f"[{self.backend}] {self.stage}: {self.detail}"


def _copy_args(args):
    return [ndarray._wrap(onp.array(a.asnumpy() if isinstance(a, ndarray) else a, copy=True))
            if isinstance(a, (ndarray, onp.ndarray)) else a for a in args]


def _values(result):
    arrays, _ = flatten(result)
    return [a.asnumpy() for a in arrays]


def _run(fn, args):
    """(values or None, exception or None, the arguments afterwards)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
        return _values(out), None, [a.asnumpy() for a in args if isinstance(a, ndarray)]
    except Exception as exc:    # noqa: BLE001 -- the exception is what is compared
        return None, exc, [a.asnumpy() for a in args if isinstance(a, ndarray)]


def _grads(fn, args, weights):
    """(gradients of the float arguments, exception or None) under autograd.record()."""
    try:
        float_args = [a for a in args if isinstance(a, ndarray) and is_floating(a.dtype)]
        for a in float_args:
            a.attach_grad()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with autograd.record():
                outs, _ = flatten(fn(*args))
                heads = [o for o in outs if is_floating(o.dtype)]
                if not heads:
                    return None, None
                loss = None
                for k, o in enumerate(heads):
                    term = (o * float(weights[k % len(weights)])).sum()
                    loss = term if loss is None else loss + term
            loss.backward()
        return [a.grad.asnumpy() for a in float_args], None
    except Exception as exc:    # noqa: BLE001
        return None, exc


def same_values(expected, actual, rtol=2e-4, atol=1e-5):
    """'' when equal (NaN and Inf positions included), else what differs."""
    if len(expected) != len(actual):
        return f"{len(expected)} values against {len(actual)}"
    for k, (e, a) in enumerate(zip(expected, actual)):
        e, a = onp.asarray(e), onp.asarray(a)
        if e.shape != a.shape or e.dtype != a.dtype:
            return f"value {k}: {e.dtype}{list(e.shape)} against {a.dtype}{list(a.shape)}"
        if is_floating(e.dtype) and e.dtype.kind != "f":     # bfloat16: 8 significant bits
            e, a = e.astype(onp.float32), a.astype(onp.float32)
            rtol, atol = max(rtol, 1e-2), max(atol, 1e-2)
        if e.dtype.kind in "fc":
            bad = ~((onp.isnan(e) & onp.isnan(a)) | (e == a))
            finite = onp.isfinite(e) & onp.isfinite(a)
            tol = atol + rtol * onp.abs(e)
            with onp.errstate(invalid="ignore", over="ignore"):
                close = finite & (onp.abs(e.astype(onp.float64) - a) <= tol)
            bad &= ~close
        else:
            bad = e != a
        if bad.any():
            i = tuple(int(j) for j in onp.argwhere(bad)[0])
            return f"value {k} at {i}: expected {e[i]!r}, got {a[i]!r} " \
                   f"({int(bad.sum())} of {e.size} differ)"
    return ""


def _as_float64(args):
    return [ndarray._wrap(a.asnumpy().astype(onp.float64)) if isinstance(a, ndarray)
            and a.dtype.kind == "f" else a for a in _copy_args(args)]


def _reference(fn, args, weights, eager_out):
    """The float64 run of `fn` (the float arguments widened): (outputs, gradients), or None
    when it raises or takes another path (its outputs are not eager's within tolerance)."""
    if eager_out is None:
        return None
    out, exc, _ = _run(fn, _as_float64(args))
    if exc is not None or len(out) != len(eager_out):
        return None
    out = [onp.asarray(r).astype(onp.asarray(e).dtype) for r, e in zip(out, eager_out)]
    if same_values(eager_out, out):
        return None
    grads, exc = _grads(fn, _as_float64(args), weights)
    return out, grads if exc is None else None


def _within_eager_rounding(expected, got, reference, rtol=2e-4, atol=1e-5):
    """Do `got`'s floats differ from `expected` only where eager's own float32 rounding
    error (against the float64 `reference`) is as large, and that error is noise (at most
    1e-3 of the value's scale: not a tie decided the other way)?"""
    if reference is None or len(reference) != len(expected) or len(got) != len(expected):
        return False
    for e, g, r in zip(expected, got, reference):
        e, g = onp.asarray(e), onp.asarray(g)
        r = onp.asarray(r, dtype=onp.float64)
        if e.shape != g.shape or e.dtype != g.dtype or e.shape != r.shape:
            return False
        if e.dtype.kind not in "fc":
            if (e != g).any():
                return False
            continue
        with onp.errstate(invalid="ignore", over="ignore"):
            e64, g64 = e.astype(onp.float64), g.astype(onp.float64)
            eager_error = onp.abs(e64 - r)
            noise = eager_error <= 1e-3 * onp.maximum(1.0, onp.abs(r))
            close = onp.abs(g64 - r) <= atol + rtol * onp.abs(e64) + 2 * eager_error
        same = (e64 == g64) | (onp.isnan(e64) & onp.isnan(g64))
        if not (same | (noise & close)).all():
            return False
    return True


def _same_error(e_exc, c_exc):
    if e_exc is None and c_exc is None:
        return ""
    if e_exc is None:
        return f"eager ran, compiled raised {type(c_exc).__name__}: {str(c_exc)[:300]}"
    if c_exc is None:
        return f"eager raised {type(e_exc).__name__}: {str(e_exc)[:300]}, compiled ran"
    if not isinstance(c_exc, type(e_exc)):
        return f"eager raised {type(e_exc).__name__}, compiled {type(c_exc).__name__}: " \
               f"{str(c_exc)[:300]}"
    return ""


def traced_ops(compiled, into):
    """Add the op names of every graph `compiled` traced (forward and backward, control-flow
    subgraphs included), and of the optimized graph its program runs (passes make ops of
    their own, such as conv_bias), to the set `into`; returns the number of eager
    fallbacks."""
    fallbacks = 0
    for entry in compiled._cached.entries.values():
        if entry.eager:
            fallbacks += 1
            continue
        _graph_ops(entry.cap.graph, into)
        optimized = getattr(entry.program, "graph", None)
        if optimized is not None:
            _graph_ops(optimized, into)
    return fallbacks


def _graph_ops(graph, into):
    for node in graph.nodes:
        if not node.is_source:
            into.add(node.op)
        for value in node.attrs.values():
            if hasattr(value, "nodes"):
                _graph_ops(value, into)


def _explained_by_control_flow(expected, got, compiled):
    """The documented difference (README, "Compiled equals eager"): whether an output of an
    array if/while has a gradient path is decided from the code of every branch when
    compiled, from the branch taken when eager; so eager may raise "cannot differentiate"
    where compiled gives zero gradients."""
    exc = expected[1]
    if exc is None or got[1] is not None or got[0] is None:
        return False
    if "cannot differentiate" not in str(exc):
        return False
    ops = set()
    traced_ops(compiled, ops)
    return bool(ops & {"cond", "while_loop"}) and all(not onp.any(g) for g in got[0])


def compare(fn, args, new_args=None, backends=BACKENDS, grad=True, weights=(1.0, -0.5, 2.0),
            strict=False, observe=None, sizes=False):
    """Every difference between eager `fn` and hybridized `fn` (a list of Findings).
    observe: a dict that gets 'ops' (the traced op names) and 'fallbacks'."""
    findings = []
    if observe is not None:
        observe.setdefault("ops", set())
        observe.setdefault("fallbacks", 0)
    e_out, e_exc, e_after = _run(fn, _copy_args(args))
    if observe is not None:
        observe["eager_raised"] = type(e_exc).__name__ if e_exc is not None else None
    e_new = _run(fn, _copy_args(new_args)) if new_args is not None else None
    e_grad = _grads(fn, _copy_args(args), weights) if grad else None
    references = {}

    def reference(stage):
        """The float64 values of this stage (forward outputs or gradients), once."""
        key = "new values" if stage == "new values" else "args"
        if key not in references:
            given, out = (new_args, e_new[0]) if key == "new values" else (args, e_out)
            references[key] = _reference(fn, given, weights, out)
        found = references[key]
        return None if found is None else found[1 if stage == "gradient" else 0]

    for backend in backends:
        compiled = hybridize(fn, backend=backend, strict=strict)

        def check(stage, expected, got):
            msg = _same_error(expected[1], got[1])
            if not msg and expected[1] is None and expected[0] is not None:
                msg = same_values(expected[0], got[0])
                if msg and _within_eager_rounding(expected[0], got[0], reference(stage)):
                    msg = ""
            if msg:
                findings.append(Finding(stage, backend, msg))

        calls = [("forward", (e_out, e_exc)), ("second call", (e_out, e_exc))]
        for stage, expected in calls:
            got_out, got_exc, got_after = _run(compiled, _copy_args(args))
            check(stage, expected, (got_out, got_exc))
            if e_exc is None and got_exc is None:
                msg = same_values(e_after, got_after)
                if msg:
                    findings.append(Finding("arguments", backend, msg))
        if e_new is not None:
            got = _run(compiled, _copy_args(new_args))
            check("new values", e_new[:2], got[:2])
        if grad:
            got = _grads(compiled, _copy_args(args), weights)
            if _explained_by_control_flow(e_grad, got, compiled):
                if observe is not None:
                    observe["explained"] = observe.get("explained", 0) + 1
            else:
                check("gradient", e_grad, got)
        for brk in _breaks(compiled):
            if brk.kind == "path-aliasing":
                findings.append(Finding("strict", backend, f"not compiled: {brk}"))
        if observe is not None:
            observe["fallbacks"] += traced_ops(compiled, observe["ops"])
    if sizes:
        findings += compare_sizes(fn, args, _run, _same_error, same_values, Finding, strict,
                                  backends=backends)
    return findings


def _breaks(compiled):
    """Why each signature of `compiled` that fell back to eager code did."""
    return [brk for entry in compiled._cached.entries.values() if entry.eager
            for brk in entry.breaks]
