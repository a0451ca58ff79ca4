"""The statement forms the fuzzer draws from: each returns Python source using the
program's variables (or None when no variable fits), plus module-level set-up lines.

Forms know only the shapes and dtypes of the variables; whether a statement is valid is
decided by running it eagerly (generate._probe), so a form may well propose nonsense.
"""
import math

from . import alias_forms, fused_forms

UNARY = ("np.abs({x})", "np.exp({x})", "np.log({x})", "np.sqrt({x})", "np.sin({x})",
         "np.cos({x})", "np.tanh({x})", "np.floor({x})", "np.ceil({x})", "np.round({x})",
         "np.sign({x})", "-{x}", "npx.sigmoid({x})", "npx.relu({x})", "np.square({x})",
         "np.log1p(np.abs({x}))", "np.expm1({x})", "npx.gelu({x})", "npx.softmax({x})",
         "npx.log_softmax({x})", "np.clip({x}, -1, 1)", "np.reciprocal({x})",
         "np.logical_not({x})", "npx.leaky_relu({x})", "np.isnan({x})", "np.isfinite({x})",
         "np.log2(np.abs({x}) + 1)", "np.log10(np.abs({x}) + 1)", "np.tan({x})",
         "np.sinh({x})", "np.cosh({x})", "np.rint({x})", "np.sort({x})", "np.argsort({x})",
         "npx.softplus({x})", "npx.softsign({x})", "npx.silu({x})", "npx.elu({x})",
         "npx.selu({x})", "npx.smooth_l1({x})", "npx.stop_gradient({x})", "np.tril({x})",
         "np.triu({x})", "np.atleast_2d({x})", "np.count_nonzero({x})", "np.average({x})",
         "np.isinf({x})", "np.fliplr({x})", "npx.topk({x}, k=1)", "np.remainder({x}, 1.5)",
         "np.arcsin(np.clip({x}, -0.9, 0.9))", "np.arccos(np.clip({x}, -0.9, 0.9))",
         "np.arctan({x})")
BINARY = ("{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / {y}", "{x} ** {y}", "{x} % {y}",
          "{x} // {y}", "np.maximum({x}, {y})", "np.minimum({x}, {y})", "{x} == {y}",
          "{x} != {y}", "{x} < {y}", "{x} <= {y}", "{x} > {y}", "{x} >= {y}",
          "np.logical_and({x}, {y})", "np.logical_or({x}, {y})", "np.logical_xor({x}, {y})",
          "np.where({x} > 0, {x}, {y})", "np.power(np.abs({x}), {y})")
# powers of two: x / 3 makes thirds, whose float32 sums round differently in NumPy
# (pairwise) and C (a double accumulator); a loop condition exactly at such a tie then
# takes another turn, a difference the README's rules explain, not a bug worth a report
SCALARS = ("2", "0.5", "-2.0", "4", "0", "True")
REDUCE = ("{x}.sum({ax})", "{x}.mean({ax})", "{x}.max({ax})", "{x}.min({ax})",
          "{x}.prod({ax})", "np.std({x}{c_ax})", "np.var({x}{c_ax})", "np.argmax({x}{c_ax})",
          "np.argmin({x}{c_ax})", "np.sum({x}, axis={axis}, keepdims=True)",
          "np.any({x} > 0{c_ax})", "np.all({x} > 0{c_ax})", "np.cumsum({x}{c_ax})",
          "np.linalg.norm({x})")
CASTS = ("float32", "float64", "int32", "int64", "bool")
# factors with zeros in them (one or several per run): prod's gradient must not divide
ZERO_FACTORS = ("{x} * ({x} > 0)", "np.where(np.abs({x}) < 1, 0, {x})", "np.floor({x} / 2)",
                "np.minimum({x}, 0)", "np.round({x})")
# 0-d operands (and the activations and npx ops that take them) keep their shape
ZERO_D = ("{x}.sum() * 0.5", "np.max({x})", "{x}.mean()", "1.0 / (np.abs(np.all({x} > -1)) + 1)",
          "np.linalg.norm({x})", "{x}.reshape(-1)[0]")
ACTIVATIONS = ("npx.leaky_relu({x}, slope=0.1)", "npx.leaky_relu({x})", "npx.relu({x})",
               "npx.sigmoid({x})", "npx.gelu({x})", "npx.gelu({x}, approximation='tanh')",
               "npx.elu({x})", "npx.selu({x})", "npx.softplus({x})", "npx.softsign({x})",
               "npx.silu({x})", "npx.activation({x}, act_type='softrelu')",
               "npx.activation({x}, act_type='tanh')", "npx.smooth_l1({x})",
               "npx.leaky_relu({x}, act_type='elu', slope=0.5)",
               "npx.leaky_relu({x}, act_type='gelu')", "npx.leaky_relu({x}, act_type='selu')")
INPLACE = ("+=", "-=", "*=", "/=")


class State:
    def __init__(self, rng, variables):
        self.rng = rng
        self.variables = dict(variables)     # name -> (shape, dtype)
        self.counter = 0
        self.blocks = 0

    def choice(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def chance(self, p):
        return self.rng.random() < p

    def pick(self, pred=lambda shape, dtype: True):
        names = [n for n, (s, d) in self.variables.items() if pred(s, d)]
        return self.choice(names) if names else None

    def new(self):
        self.counter += 1
        return f"v{self.counter}"

    def shape(self, name):
        return self.variables[name][0]

    def used(self, stmt):
        pass

    def pick_returns(self):
        names = list(self.variables)
        temps = [n for n in names if n.startswith("v")]
        out = []
        for _ in range(int(self.rng.integers(1, 4))):
            pool = temps[-4:] if temps and self.chance(0.8) else names
            name = self.choice(pool)
            if name not in out:
                out.append(name)
        return out


def _float(shape, dtype):
    return dtype.startswith("float")


def _nd(n):
    return lambda shape, dtype: len(shape) >= n


def _axis(s, name):
    nd = len(s.shape(name))
    if nd == 0 or s.chance(0.3):
        return None
    return int(s.rng.integers(-nd, nd))


def unary(s):
    x = s.pick()
    return f"{s.new()} = " + s.choice(UNARY).format(x=x)


def binary(s):
    x = s.pick()
    y = s.choice(SCALARS) if s.chance(0.3) else s.pick()
    if s.chance(0.5):
        x, y = y, x
    if x in SCALARS and y in SCALARS:
        return None
    return f"{s.new()} = " + s.choice(BINARY).format(x=x, y=y)


def zero_product(s):
    x = s.pick(lambda sh, d: _float(sh, d) and len(sh) >= 1)
    if x is None:
        return None
    axis = _axis(s, x)
    ax = "" if axis is None else f", axis={axis}" + (", keepdims=True" if s.chance(0.3) else "")
    return f"{s.new()} = np.prod({s.choice(ZERO_FACTORS).format(x=x)}{ax})"


def activation_0d(s):
    zero_d = s.choice(ZERO_D).format(x=s.pick())
    return f"{s.new()} = " + s.choice(ACTIVATIONS).format(x=zero_d)


def cast(s):
    return f"{s.new()} = {s.pick()}.astype({s.choice(CASTS)!r})"


def reduce_(s):
    x = s.pick()
    axis = _axis(s, x)
    kd = s.chance(0.3)
    ax = "" if axis is None else f"axis={axis}" + (", keepdims=True" if kd else "")
    c_ax = "" if axis is None else f", axis={axis}"
    return f"{s.new()} = " + s.choice(REDUCE).format(x=x, ax=ax, c_ax=c_ax,
                                                     axis=0 if axis is None else axis)


def shape_op(s):
    x = s.pick()
    shape = s.shape(x)
    nd = len(shape)
    size = math.prod(shape)
    options = [f"{x}.reshape(-1)", f"{x}.T", f"np.expand_dims({x}, 0)", f"{x}.flatten()",
               f"np.broadcast_to({x}, (2,) + {x}.shape)", f"np.squeeze({x})",
               f"{x}.reshape(({size},) + (1,))", f"np.flip({x}, 0)" if nd else f"{x} * 1",
               f"np.tile({x}, 2)", f"np.repeat({x}, 2, axis=0)" if nd else f"{x}.reshape(1)"]
    if nd >= 2:
        options += [f"np.swapaxes({x}, 0, 1)", f"{x}.reshape({shape[0]}, -1)",
                    f"np.moveaxis({x}, 0, -1)", f"{x}.transpose()"]
    if nd >= 1 and shape[0] % 2 == 0:
        options.append(f"np.split({x}, 2)[{int(s.rng.integers(2))}]")
    if nd >= 1:
        y = s.pick(lambda sh, d: sh[1:] == shape[1:] and len(sh) == nd)
        options += [f"np.concatenate([{x}, {y}], axis=0)", f"np.stack([{x}, {y}])"]
    return f"{s.new()} = " + s.choice(options)


def index(s):
    x = s.pick(_nd(1))
    if x is None:
        return None
    shape = s.shape(x)
    n = shape[0]
    options = [f"{x}[1:]", f"{x}[::2]", f"{x}[-1]", f"{x}[..., :1]", f"{x}[::-1]",
               f"{x}[[0, {n - 1}]]", f"{x}[None]", f"np.take({x}, [{n - 1}, 0, 0], axis=0)",
               f"{x}[{x} > 0]" if len(shape) == 1 else f"{x}[0]"]
    if len(shape) >= 2:
        options += [f"{x}[:, 1:]", f"{x}[1:, ::2]", f"{x}[:, [0, -1]]", f"{x}[0, 1:]"]
    return f"{s.new()} = " + s.choice(options)


def assign(s):
    x = s.pick(_nd(1))
    if x is None:
        return None
    shape = s.shape(x)
    value = s.choice(SCALARS[:4]) if s.chance(0.4) else s.pick()
    keys = ["1:", "...", "::2", "0", f"[0, {shape[0] - 1}]", "-1", f"[{shape[0] - 1}, 0]"]
    if len(shape) >= 2:
        keys += [":, 0", "1:, ::2", ":, [0, -1]"]
    return f"{x}[{s.choice(keys)}] = {value}"


def inplace(s):
    x = s.pick()
    y = s.choice(SCALARS[:4]) if s.chance(0.4) else s.pick()
    return f"{x} {s.choice(INPLACE)} {y}"


def view_then_write(s):
    x = s.pick(_nd(1))
    if x is None:
        return None
    shape = s.shape(x)
    v = s.new()
    views = [f"{x}.T", f"{x}[1:]", f"{x}.reshape(-1)", f"np.expand_dims({x}, 0)",
             f"{x}[::2]", f"np.squeeze({x})"]
    if len(shape) >= 2:
        views += [f"{x}[:, 1:]", f"np.swapaxes({x}, 0, 1)", f"{x}.T[1:]"]
    if shape[0] % 2 == 0:
        views.append(f"np.split({x}, 2)[0]")
    write = s.choice([f"{v} *= -2", f"{v} += 1", f"{v}[...] = 0.5", f"{v} -= {v}"])
    return f"{v} = {s.choice(views)}\n{write}"


def copy(s):
    x = s.pick()
    c = s.new()
    how = s.choice([f"np.copy({x})", f"{x}.copy()"])
    return f"{c} = {how}\n{x} += 1" if s.chance(0.5) else f"{c} = {how}"


def matmul(s):
    x = s.pick(lambda sh, d: len(sh) in (1, 2, 3) and sh[-1] > 0)
    if x is None:
        return None
    shape = s.shape(x)
    k = shape[-1]
    y = s.pick(lambda sh, d: len(sh) >= 1 and (sh[0] == k if len(sh) <= 2 else sh[-2] == k))
    if y is None or s.chance(0.3):
        y = f"{x}.T" if len(shape) == 2 else x
    options = [f"np.dot({x}, {y})", f"np.matmul({x}, {y})", f"{x} @ {y}",
               f"np.inner({x}, {x})", f"np.outer({x}, {x})", f"np.tensordot({x}, {x}, 1)"]
    if len(shape) == 3:
        options.append(f"npx.batch_dot({x}, {x}, transpose_b=True)")
    tail = s.choice(["", ".astype('float64')", " >= -0.5", ".astype('int32')", " * 2"])
    return f"{s.new()} = {s.choice(options)}{tail}"


def create(s):
    x = s.pick()
    return f"{s.new()} = " + s.choice([
        f"np.ones_like({x}) * -1.0", f"np.zeros_like({x})", f"np.full({x}.shape, 2.5)",
        f"np.ones({x}.shape, dtype='int32')", "np.arange(4) * 0.5", "np.eye(3)",
        f"np.full_like({x}, 3)", f"np.zeros(({x}.size,))"])


def random_draw(s):
    x = s.pick()
    draw = s.choice(["np.random.uniform(0, 1, size={x}.shape)",
                     "np.random.normal(0, 1, size={x}.shape)"]).format(x=x)
    if s.chance(0.3):
        return f"{s.new()} = np.random.randint(2, 3, size={x}.shape) + {x}"
    return f"{s.new()} = {x} + {draw} * 0"


def if_else(s):
    c = s.pick()
    y = s.pick(lambda sh, d: d != "bool")
    if c is None or y is None:
        return None
    a, b = s.choice([(f"{y} * 2", f"{y} - 1"), (f"-{y}", f"{y} + {y}"),
                     (f"np.abs({y})", f"{y} * 0")])
    test = s.choice([f"{c}.sum() > 0", f"np.abs({c}).max() < 1.5", f"({c} > 0).any()"])
    if s.chance(0.2):
        return f"if {test}:\n    {y} += 1\nelse:\n    {y} -= 2"
    return f"if {test}:\n    {y} = {a}\nelse:\n    {y} = {b}"


def while_loop(s):
    x = s.pick(lambda sh, d: _float(sh, d))
    if x is None:
        return None
    t, n = s.new(), s.new()
    return (f"{t} = {x} * 1\n{n} = np.zeros(())\n"
            f"while (np.abs({t}).sum() > 1) * ({n} < 5):\n"
            f"    {t} = {t} / 2\n    {n} = {n} + 1")


def windows(s):
    x = s.pick(lambda sh, d: len(sh) == 2 and min(sh) >= 2 and _float(sh, d))
    if x is None:
        return None
    x4 = f"{x}.reshape((1, 1) + {x}.shape)"
    op = s.choice([f"npx.pooling({x4}, kernel=(2, 2), pool_type='max')",
                   f"npx.pooling({x4}, kernel=(2, 2), pool_type='avg', stride=(1, 1))",
                   f"npx.pooling({x4}, kernel=(2, 2), pool_type='sum')",
                   f"npx.convolution({x4}, {x4}[:, :, :2, :2].astype('float32') * 1, "
                   f"kernel=(2, 2), num_filter=1, no_bias=True)"])
    return f"{s.new()} = {op}"


def gluon(s):
    x = s.pick(lambda sh, d: len(sh) == 2 and d == "float32" and sh[1] > 0)
    if x is None:
        return None
    k = s.shape(x)[1]
    s.blocks += 1
    name = f"blk{s.blocks}"
    block = s.choice([f"nn.Dense(3, in_units={k})",
                      f"nn.Dense(2, activation='relu', in_units={k})",
                      f"nn.LayerNorm(in_channels={k})"])
    prelude = [f"{name} = {block}", f"npx.random.seed({s.blocks})",
               f"{name}.initialize(init.Uniform(0.5))"]
    return f"{s.new()} = {name}({x})", prelude


def convolutional(s):
    """A Conv2D block over a 2-D array as one image, alone or in a conv-pool-conv chain:
    the compiled side folds bias and ReLU into the conv and may run the chain
    channels-last, which eager never does."""
    x = s.pick(lambda sh, d: len(sh) == 2 and d == "float32" and min(sh) >= 3)
    if x is None:
        return None
    s.blocks += 1
    name = f"blk{s.blocks}"
    conv = "nn.Conv2D(2, 3, padding=1, activation='relu', in_channels=1)"
    if s.choice([False, True]):
        prelude = [f"{name} = {conv}"]
    else:
        prelude = [f"{name} = nn.HybridSequential()",
                   f"{name}.add({conv}, nn.MaxPool2D(2, strides=1), "
                   f"nn.Conv2D(1, 2, in_channels=2))"]
    prelude += [f"npx.random.seed({s.blocks})", f"{name}.initialize(init.Uniform(0.5))"]
    return f"{s.new()} = {name}({x}.reshape((1, 1) + {x}.shape))", prelude


def recurrent(s):
    """A recurrent layer over the rows of a 2-D array as time steps (the scan op)."""
    x = s.pick(lambda sh, d: len(sh) == 2 and d == "float32" and min(sh) > 0)
    if x is None:
        return None
    k = s.shape(x)[1]
    s.blocks += 1
    name = f"blk{s.blocks}"
    layer = s.choice(["rnn.RNN", "rnn.GRU", "rnn.LSTM"])
    layers, both = s.choice([1, 2]), s.choice([False, True])
    prelude = [f"{name} = {layer}(2, input_size={k}, num_layers={layers}, "
               f"bidirectional={both})", f"npx.random.seed({s.blocks})",
               f"{name}.initialize(init.Uniform(0.5))"]
    return f"{s.new()} = {name}({x}.reshape(({x}.shape[0], 1, {k})))", prelude


def collective(s):
    """allreduce over the ranks: the identity in one process, but a graph op all the same."""
    x = s.pick(lambda sh, d: d in ("float32", "float64"))
    if x is None:
        return None
    op = s.choice(["'sum'", "'mean'"])
    low = "kiln.distributed.lowering"
    if s.choice([False, True]):      # split in two, as a compiled training step does
        return f"{s.new()} = {low}.wait_op({low}.start_op({x}, op={op}), op={op})"
    return f"{s.new()} = {low}.allreduce_op({x}, op={op})"


def nn_op(s):
    x = s.pick(lambda sh, d: len(sh) >= 1 and min(sh) > 0 and _float(sh, d))
    if x is None:
        return None
    shape = s.shape(x)
    n, last = shape[0], shape[-1]
    idx = s.pick(lambda sh, d: d.startswith("int") and sh == shape[:-1])
    options = [f"npx.one_hot(np.argmax({x}, axis=-1), {last})",
               f"npx.pick({x}, np.argmax({x}, axis=-1), axis=-1)",
               f"npx.masked_softmax({x}, {x} > 0)",
               f"npx.layer_norm({x}, np.ones({last}), np.zeros({last}), axis=-1)",
               f"npx.embedding(np.argmax({x}, axis=-1), {x}.reshape(-1, {last}), "
               f"input_dim={math.prod(shape) // last}, output_dim={last})",
               f"np.pad({x}, 1)", f"np.take_along_axis({x}, np.argsort({x}, axis=-1), -1)",
               f"np.concatenate([{x}, {x} * 2], axis=-1)", f"np.vstack([{x}, {x}])",
               f"npx.reshape_like({x}, {x})", f"np.linalg.norm({x}, axis=-1)",
               f"npx.sequence_mask({x}.reshape({n}, -1), np.array([1.0] * {x}.reshape({n}, "
               f"-1).shape[1]), use_sequence_length=True, axis=0)"]
    if idx is not None:
        options.append(f"npx.pick({x}, {idx} % {last}, axis=-1)")
    if len(shape) >= 2:
        axis = s.choice([1, -1])
        c = shape[axis]
        # batch statistics under autograd.record() (the gradient pass), running ones outside
        options.append(f"npx.batch_norm({x}, np.full({c}, 1.5), np.full({c}, 0.5), "
                       f"np.zeros({c}), np.ones({c}), fix_gamma=False, axis={axis})")
    return f"{s.new()} = " + s.choice(options)


# (form, weight): in-place updates, views and control flow are where bugs were
FORMS = ((unary, 6), (binary, 8), (cast, 3), (reduce_, 4), (shape_op, 4), (index, 4),
         (assign, 4), (inplace, 5), (view_then_write, 4), (copy, 2), (matmul, 3),
         (create, 2), (random_draw, 1), (if_else, 2), (while_loop, 1), (windows, 1),
         (gluon, 1), (convolutional, 1), (nn_op, 2), (recurrent, 1), (collective, 1),
         (zero_product, 1), (activation_0d, 2), (alias_forms.alias_if, 2),
         (alias_forms.alias_while, 1), (fused_forms.attention, 1),
         (fused_forms.normalization, 1), (fused_forms.loop_body, 2))


def draw(state):
    total = sum(w for _, w in FORMS)
    r = state.rng.random() * total
    for form, weight in FORMS:
        r -= weight
        if r < 0:
            break
    made = form(state)
    if made is None:
        return None
    return made if isinstance(made, tuple) else (made, [])


def namespace():
    """The globals a program runs with (the imports of Program.source)."""
    import numpy as onp
    import kiln
    from kiln import np, npx, init
    import kiln.distributed.lowering  # noqa: F401  (the collective form)
    from kiln.gluon import nn, rnn
    return {"onp": onp, "kiln": kiln, "np": np, "npx": npx, "init": init, "nn": nn,
            "rnn": rnn}
