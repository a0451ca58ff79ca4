"""C for the batch-norm primitives (kiln/ops/batchnorm.py) as fused loops, registered as
their C lowerings (lowering.Kernel; each takes scratch buffers of its own).

x is viewed as (outer, C, inner) around the channel axis and walked in memory order, so
channels-first and channels-last both stream through memory once per pass:
  batch_norm_stats       one pass (sums of x - shift and its square, in double)
  batch_norm_train       one pass for the statistics, one for the output
  batch_norm_param_grad  one pass over g and x
  batch_norm_data_grad   one pass over g and x
The statistics are shifted by each channel's first element, so the one-pass variance does
not cancel catastrophically when the mean is large against the spread. Per-channel sums go
into LANES independent accumulators, which the compiler vectorizes without reassociating.
"""
from .kernels import c_literal
from .loops import ctype
from .lowering import register_kernels

LANES = 8


def _view(x, axis):
    outer = 1
    for d in x.shape[:axis]:
        outer *= d
    inner = 1
    for d in x.shape[axis + 1:]:
        inner *= d
    return outer, x.shape[axis], inner


def _channel_sums(xp, terms, inner):
    """C that sums, for one (o, c) row of `inner` elements at i, each expression of
    `terms` (in d, the element's value as a double less the shift `sh`) into acc0, acc1..."""
    n = len(terms)
    decl = " ".join(f"double a{t}[{LANES}] = {{0}};" for t in range(n))
    body = " ".join(f"a{t}[l] += {e};" for t, e in enumerate(terms))
    tail = " ".join(f"a{t}[0] += {e};" for t, e in enumerate(terms))
    fold = " ".join(f"acc{t} += a{t}[l];" for t in range(n))
    return f"""
        {decl}
        int64_t i = 0;
        for (; i + {LANES} <= {inner}; i += {LANES})
          for (int l = 0; l < {LANES}; l++) {{ const double d = (double){xp}[i + l] - sh; {body} }}
        for (; i < {inner}; i++) {{
          const int l = 0; const double d = (double){xp}[i] - sh; {tail} (void)l;
        }}
        for (int l = 0; l < {LANES}; l++) {{ {fold} }}"""


def _stats_loop(x, xname, axis, mean, var):
    """C filling the double arrays `mean` and `var` (C each) with x's batch statistics."""
    outer, c, inner = _view(x, axis)
    m = outer * inner
    if inner == 1:      # channels last: one accumulator per channel, vectorized across
        sums = f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{
        const double d = (double){xname}[o * {c} + c] - (double){xname}[c];
        {mean}[c] += d; {var}[c] += d * d;
      }}"""
    else:
        sums = f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{
        const double sh = (double){xname}[c * {inner}];
        const {ctype(x.dtype)} *xp = {xname} + (o * {c} + c) * {inner};
        double acc0 = 0, acc1 = 0;{_channel_sums("xp", ["d", "d * d"], inner)}
        {mean}[c] += acc0; {var}[c] += acc1;
      }}"""
    return f"""
    for (int64_t c = 0; c < {c}; c++) {{ {mean}[c] = 0; {var}[c] = 0; }}{sums}
    for (int64_t c = 0; c < {c}; c++) {{
      const double s = {mean}[c] / {m}, sh = (double){xname}[c * {inner}];
      const double v = {var}[c] / {m} - s * s;
      {mean}[c] = sh + s; {var}[c] = v > 0 ? v : 0;
    }}"""


def _scratch(em, doubles):
    return em.new_buffer(max(8 * doubles, 64))


def stats(node, ptr, em):
    x = node.inputs[0]
    axis = node.attrs["axis"]
    c = x.shape[axis]
    buf = _scratch(em, 2 * c)
    T = ctype(node.dtype)
    return f"""  {{
    const {T} *x = {ptr(x)}; {T} *out = {ptr(node)};
    double *mean = (double *)P[{buf}], *var = mean + {c};{_stats_loop(x, "x", axis, "mean", "var")}
    for (int64_t c = 0; c < {c}; c++) {{ out[c] = ({T})mean[c]; out[{c} + c] = ({T})var[c]; }}
  }}"""


def _affine_pass(x, axis, out, expr):
    """C writing out[j] = expr (in j, the element, and c, its channel) in one pass over
    (outer, C, inner)."""
    outer, c, inner = _view(x, axis)
    if inner == 1:
        return f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{ const int64_t j = o * {c} + c; {out}[j] = {expr}; }}"""
    return f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{
        const int64_t base = (o * {c} + c) * {inner};
        for (int64_t j = base; j < base + {inner}; j++) {out}[j] = {expr};
      }}"""


def train(node, ptr, em):
    x, gamma, beta = node.inputs
    axis = node.attrs["axis"]
    c = x.shape[axis]
    T = ctype(node.dtype)
    buf = _scratch(em, 2 * c)
    coef = _scratch(em, 2 * c)
    eps = c_literal(node.attrs["eps"], "float64")
    return f"""  {{
    const {T} *x = {ptr(x)}; const {T} *gamma = {ptr(gamma)}, *beta = {ptr(beta)};
    {T} *y = {ptr(node)};
    double *mean = (double *)P[{buf}], *var = mean + {c};
    {T} *m = ({T} *)P[{coef}], *scale = m + {c};{_stats_loop(x, "x", axis, "mean", "var")}
    for (int64_t c = 0; c < {c}; c++) {{
      m[c] = ({T})mean[c]; scale[c] = ({T})((double)gamma[c] / sqrt(var[c] + {eps}));
    }}{_affine_pass(x, axis, "y", "(x[j] - m[c]) * scale[c] + beta[c]")}
  }}"""


def param_grad(node, ptr, em):
    g, x, st = node.inputs
    axis = node.attrs["axis"]
    outer, c, inner = _view(x, axis)
    T = ctype(node.dtype)
    buf = _scratch(em, 2 * c)
    # d is g (shift 0); the second sum weighs it by x's deviation, read alongside
    sums = _channel_sums("gp", ["d", "d * ((double)xp[i + l] - m)"], inner)
    if inner == 1:      # channels last: vectorized across the channels
        loop = f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{
        const int64_t j = o * {c} + c;
        const double d = (double)g[j];
        sum[c] += d; sum[{c} + c] += d * ((double)x[j] - (double)st[c]);
      }}"""
    else:
        loop = f"""
    for (int64_t o = 0; o < {outer}; o++)
      for (int64_t c = 0; c < {c}; c++) {{
        const double sh = 0, m = (double)st[c];
        const int64_t base = (o * {c} + c) * {inner};
        const {T} *gp = g + base, *xp = x + base;
        double acc0 = 0, acc1 = 0;{sums}
        sum[c] += acc0; sum[{c} + c] += acc1;
      }}"""
    return f"""  {{
    const {T} *g = {ptr(g)}, *x = {ptr(x)}, *st = {ptr(st)}; {T} *out = {ptr(node)};
    double *sum = (double *)P[{buf}];
    for (int64_t c = 0; c < {2 * c}; c++) sum[c] = 0;{loop}
    for (int64_t c = 0; c < {2 * c}; c++) out[c] = ({T})sum[c];
  }}"""


def data_grad(node, ptr, em):
    g, x, st, pg, gamma = node.inputs
    axis = node.attrs["axis"]
    outer, c, inner = _view(x, axis)
    T = ctype(node.dtype)
    coef = _scratch(em, 3 * c)
    eps = c_literal(node.attrs["eps"], "float64")
    m = outer * inner
    return f"""  {{
    const {T} *g = {ptr(g)}, *x = {ptr(x)}, *st = {ptr(st)}, *pg = {ptr(pg)};
    const {T} *gamma = {ptr(gamma)}; {T} *dx = {ptr(node)};
    {T} *k = ({T} *)P[{coef}], *a = k + {c}, *b = a + {c};
    for (int64_t c = 0; c < {c}; c++) {{
      const double r = 1.0 / sqrt((double)st[{c} + c] + {eps}), kc = (double)gamma[c] * r;
      const double ac = -kc * r * r * (double)pg[{c} + c] / {m};
      k[c] = ({T})kc; a[c] = ({T})ac; b[c] = ({T})(-kc * (double)pg[c] / {m});
    }}{_affine_pass(x, axis, "dx", "g[j] * k[c] + (x[j] - st[c]) * a[c] + b[c]")}
  }}"""


register_kernels({"batch_norm_stats": stats, "batch_norm_train": train,
                  "batch_norm_param_grad": param_grad, "batch_norm_data_grad": data_grad},
                 with_emitter=True)
