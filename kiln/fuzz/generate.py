"""Random programs over kiln's np/npx namespaces and the op registry.

A program is Python source: a function `f` of a few arrays, 3-15 statements long, its
arguments written out as literals (so a failing program is its own reproducer). The
generator grows it one statement at a time and runs each candidate eagerly to learn the
shapes and dtypes of its variables; a candidate that raises is dropped, except now and
then one is kept as the last statement, so that exception parity is tested too.

The statement forms (FORMS) cover elementwise math and comparisons with mixed dtypes and
broadcasting, casts, reductions, shape ops and views, slicing and integer-array indexing,
slice and index assignment, in-place updates of arguments, temporaries and views, copies,
matmuls, creation functions, random draws (multiplied by zero, so values compare), array
`if`/`while`, windowed ops (pooling, convolution), small Gluon blocks, products over runs
with zeros, 0-d values into activations and npx ops, and variables that are the caller's
array (or another name's, or a view's base) on some paths of an `if`/`while` only, written
in place afterwards (alias_forms.py).
"""
import numpy as onp

from . import forms
from .._core.base import normalize_dtype
from .._core.bfloat16 import is_bfloat16

DTYPES = ("float32", "float32", "float32", "float64", "int32", "int64", "bool")
# the stream with bfloat16 operands (`python -m kiln fuzz --bfloat16`); a stream of its own,
# so the programs of the default stream (and the seeds tests name) stay what they were
BFLOAT16_DTYPES = DTYPES + ("bfloat16", "bfloat16")
SHAPES = ((3,), (4,), (2, 3), (3, 4), (4, 4), (2, 3, 4), (1, 3), (3, 1), (2, 1, 4), ())


class Program:
    """Arguments, module-level set-up (Gluon blocks), body statements and returned names."""

    def __init__(self, args, new_args, prelude, body, returns, title=""):
        self.args, self.new_args = args, new_args
        self.prelude, self.body, self.returns = list(prelude), list(body), list(returns)
        self.title = title

    def source(self, main=True):
        lines = [f"# kiln fuzz program {self.title}".rstrip(), "import numpy as onp",
                 "import kiln", "import kiln.distributed.lowering",
                 "from kiln import np, npx, init", "from kiln.gluon import nn, rnn",
                 "", f"ARGS = [{', '.join(_literal(a) for a in self.args)}]",
                 f"NEW_ARGS = [{', '.join(_literal(a) for a in self.new_args)}]", ""]
        lines += self.prelude
        params = ", ".join(f"a{k}" for k in range(len(self.args)))
        lines += ["", f"def f({params}):"]
        for stmt in self.body:
            lines += ["    " + line for line in stmt.split("\n")]
        lines.append(f"    return {', '.join(self.returns) or 'a0'}")
        if main:
            lines += ["", "", 'if __name__ == "__main__":',
                      "    from kiln.fuzz.compare import compare",
                      "    for finding in compare(f, ARGS, NEW_ARGS):",
                      "        print(finding)"]
        return "\n".join(lines) + "\n"


def _literal(value):
    if is_bfloat16(value.dtype):    # bfloat16 scalars print as bfloat16(...): as floats
        return f"np.array({value.astype(onp.float32).tolist()!r}, dtype='bfloat16')"
    return f"np.array({value.tolist()!r}, dtype={str(value.dtype)!r})"


def random_value(rng, shape, dtype):
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    # quarters in [-2, 2]: exact in every float type, so sums agree exactly
    return (rng.integers(-8, 9, shape) / 4.0).astype(normalize_dtype(dtype))


def _probe(prelude, body, args):
    """Run the statements eagerly: ({name: (shape, dtype)}, None) or (None, exception)."""
    from kiln import np
    src = "\n".join(prelude) + "\ndef _probe(" + ", ".join(
        f"a{k}" for k in range(len(args))) + "):\n"
    for stmt in body:
        src += "".join("    " + line + "\n" for line in stmt.split("\n"))
    src += "    return {k: v for k, v in locals().items() if hasattr(v, 'shape')}\n"
    ns = forms.namespace()
    try:
        exec(compile(src, "<kiln-fuzz-probe>", "exec"), ns)    # noqa: S102 -- our own source
        found = ns["_probe"](*[np.array(a.copy(), dtype=a.dtype) for a in args])
    except Exception as exc:    # noqa: BLE001 -- a program that raises is data here
        return None, exc
    return {k: (tuple(v.shape), str(v.dtype)) for k, v in found.items()}, None


def generate(seed, index, max_statements=15, bfloat16=False):
    """Program number `index` of the stream `seed` (the same pair gives the same program);
    bfloat16=True draws from the stream whose operands may be bfloat16."""
    rng = onp.random.default_rng([seed, index])
    n_args = int(rng.integers(1, 4))
    shapes = [SHAPES[int(rng.integers(len(SHAPES)))] for _ in range(n_args)]
    if n_args > 1 and rng.random() < 0.6:       # related shapes broadcast against each other
        shapes[1] = shapes[0][int(rng.integers(0, len(shapes[0]) + 1)):]
    table = BFLOAT16_DTYPES if bfloat16 else DTYPES
    dtypes = [table[int(rng.integers(len(table)))] for _ in range(n_args)]
    dtypes[0] = "float32" if rng.random() < 0.7 else dtypes[0]
    args = [random_value(rng, s, d) for s, d in zip(shapes, dtypes)]
    new_args = [random_value(rng, s, d) for s, d in zip(shapes, dtypes)]
    state = forms.State(rng, {f"a{k}": (a.shape, str(a.dtype)) for k, a in enumerate(args)})
    prelude, body = [], []
    target = int(rng.integers(3, max_statements + 1))
    attempts = 0
    while len(body) < target and attempts < target * 8:
        attempts += 1
        made = forms.draw(state)
        if made is None:
            continue
        stmt, extra_prelude = made
        found, exc = _probe(prelude + extra_prelude, body + [stmt], args)
        if exc is not None:
            if rng.random() < 0.04 and body:       # keep it: eager raises, compiled must too
                body.append(stmt)
                prelude += extra_prelude
                state.used(stmt)
                break
            continue
        body.append(stmt)
        prelude += extra_prelude
        state.used(stmt)
        state.variables = found
    returns = state.pick_returns()
    return Program(args, new_args, prelude, body, returns, f"(seed {seed}, #{index})")
