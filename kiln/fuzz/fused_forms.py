"""Statement forms for what the C backend fuses into kernels of its own: attention written
out (graph/passes/attention.py: scores, a softmax with or without a mask or lengths, the
weighted sum of values) and layer norm and the softmax family over the last axis
(graph/passes/normalization.py), with real scales and shifts, and a loop over rows whose
body's elementwise steps the C backend merges into one loop (backend/c/loop_merge.py).
Compiled code runs them as one blocked or row kernel, eager code as the composite: the
comparison checks the two agree on what the fuzzer's values hold (NaN, inf, rows of one,
zeros)."""


def _rows(s):
    """A float32 variable of at least 2 dimensions with elements, or None."""
    return s.pick(lambda sh, d: len(sh) >= 2 and d == "float32" and min(sh) > 0)


def attention(s):
    x = _rows(s)
    if x is None:
        return None
    shape = s.shape(x)
    t, d = shape[-2], shape[-1]
    swap = f"np.swapaxes({x}, -1, -2)"
    scores = s.choice([f"np.matmul({x}, {swap}) / {s.choice(['2.0', '8.0'])}",
                       f"np.matmul({x}, {swap}) * 0.5", f"np.matmul({x} * 0.25, {swap})"])
    lead = ", ".join(str(n) for n in shape[:-1])
    options = [f"np.matmul(npx.softmax({scores}), {x})",
               f"np.matmul(npx.masked_softmax({scores}, {scores} > 0), {x})",
               f"np.matmul(npx.softmax({scores}, length=np.arange({t}, dtype='int32')"
               f".reshape(1, {t}) * np.ones(({lead}), dtype='int32') % {t} + 1, "
               f"use_length=True), {x})",
               f"npx.attention({x}, {x} * 0.5, {x}, {scores} > 0)",
               f"npx.attention({x}, {x}, {x}[..., :{max(1, d // 2)}])"]
    return f"{s.new()} = {s.choice(options)}"


def normalization(s):
    x = _rows(s)
    if x is None:
        return None
    last = s.shape(x)[-1]
    row = f"{x}.reshape(-1, {last})"
    gamma, beta = f"({row}[0] * 0.5 + 1)", f"{row}[-1]"
    options = [f"npx.layer_norm({x}, {gamma}, {beta}, axis=-1)",
               f"npx.layer_norm({x} * 4 - 1, {gamma}, {beta}, axis=-1, eps=1e-3)",
               f"npx.layer_norm({x} + {x}.mean(), np.ones({last}), np.zeros({last}))",
               f"npx.softmax({x} * 3, axis=-1)", f"npx.log_softmax({x} - 2, axis=-1)"]
    return f"{s.new()} = {s.choice(options)}"


def loop_body(s):
    """npx.foreach over the rows of a 2-D array (the scan op), its body elementwise steps
    that compiled code runs as one loop writing where the loop keeps its results: states
    swapped, passed through or returned twice, the row itself as the output, a result read
    through a slice or joined by a concatenation."""
    x = s.pick(lambda sh, d: len(sh) == 2 and d == "float32" and min(sh) > 1)
    if x is None:
        return None
    act = ["np.tanh", "npx.sigmoid", "np.abs", "npx.relu"]
    f, ys, states = s.new(), s.new(), s.new()
    extra = s.choice(["", "q = np.concatenate([q[1:], q[:1]]) * 1\n    ",
                      "r = np.concatenate([p, q])\n    q = q + r[:p.shape[0]] * r[p.shape[0]:]"
                      "\n    "])
    body = (f"def {f}(x_t, st):\n    a, b = st\n    p = {s.choice(act)}(x_t * a + b)\n"
            f"    q = {s.choice(act)}(p - b) * a\n    {extra}"
            f"return {s.choice(['p + q', 'p', 'x_t', 'q * a'])}, "
            f"{s.choice(['[q, p]', '[b, p + q]', '[a, q]', '[p, p]'])}")
    return (f"{body}\n{ys}, {states} = npx.foreach({f}, {x}, [{x}[0] * 0.5, {x}[0] * 0 + 1])")
