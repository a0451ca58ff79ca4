"""The table of MXNet 1.x operator names (OPS), the entry each name maps to (MXOp), and
the parser of MXNet's attribute strings. The topic modules of this package fill the table
with `@_op(...)`; see __init__.py.
"""
import threading

from ..._core.base import KilnError

_DTYPE_FLAGS = {"0": "float32", "1": "float64", "2": "float16", "3": "uint8", "4": "int32",
                "5": "int8", "6": "int64", "7": "bool"}


class MXOp:
    """An entry of the MXNet operator table: the operator's name, the kiln function computing it,
    its input and auxiliary-state names, and its number of outputs."""
    __slots__ = ("name", "fn", "inputs", "aux", "variadic", "num_outputs", "param_shapes",
                 "output_names", "same_shape", "partial_shape")

    def __init__(self, name, fn, inputs=("data",), aux=(), variadic=False, num_outputs=1,
                 param_shapes=None, output_names=None, same_shape=False):
        self.name, self.fn, self.inputs, self.aux = name, fn, tuple(inputs), tuple(aux)
        self.variadic = variadic              # takes any number of data inputs (Concat)
        self.num_outputs = num_outputs       # an int, or attrs -> int (SliceChannel, topk)
        # (attrs, data shape) -> {input name: shape} for the weights MXNet infers
        self.param_shapes = param_shapes
        # attrs -> MXNet's output names when they are not output0, output1, ... (RNN's
        # output, state_output, statecell_output)
        self.output_names = output_names
        # all inputs and outputs have one shape (elemwise_add, add_n, relu, cast): an
        # unknown one takes a known one's, as MXNet's ElemwiseShape gives it
        self.same_shape = same_shape
        # (attrs, input shapes, output shapes) -> both, filled in where this op's MXNet
        # shape rule can with sizes partly unknown (partial_shapes.py sets them)
        self.partial_shape = None

    def outputs(self, attrs):
        """How many outputs a node with these attributes has."""
        n = self.num_outputs
        return int(n(attrs)) if callable(n) else n

    def aux_names(self, attrs):
        """The names of the inputs that are auxiliary states."""
        return self.aux

    def input_names(self, attrs):
        names = list(self.inputs)
        # Deconvolution has no bias unless asked (its no_bias defaults to True)
        if attrs.get("no_bias", self.name.startswith("Deconvolution")) and "bias" in names:
            names.remove("bias")
        if self.name in ("softmax", "log_softmax") and not attrs.get("use_length"):
            names.remove("length")
        if self.name in ("_histogram", "histogram") and (
                attrs.get("bins") is None or isinstance(attrs["bins"], (int, float))):
            names.remove("bins")        # bins: a count (attribute) or the edges (input)
        for flag, name in (("use_data_lengths", "data_lengths"),
                           ("use_label_lengths", "label_lengths")):
            if name in names and not attrs.get(flag):      # CTCLoss's optional inputs
                names.remove(name)
        if self.name == "_contrib_BilinearResize2D" and attrs.get("mode") != "like":
            names.remove("like")
        if self.name == "UpSampling" and attrs.get("sample_type", "nearest") != "bilinear":
            names.remove("weight")
        if self.name == "LeakyReLU" and attrs.get("act_type", "leaky") != "prelu":
            names.remove("gamma")
        if self.name.startswith("Sequence") and not attrs.get("use_sequence_length"):
            names.remove("sequence_length")
        if self.name == "RNN":
            if attrs.get("mode", "lstm") != "lstm":
                names.remove("state_cell")
            if not attrs.get("use_sequence_length"):
                names.remove("sequence_length")
        return names + list(self.aux)


OPS = {}


def _op(names, inputs=("data",), **kw):
    def register(fn):
        for n in names.split():
            OPS[n] = MXOp(n, fn, inputs, **kw)
        return fn
    return register


def binary(names, fn):
    """Two-operand ops: MXNet's elementwise names (elemwise_add, _plus, _mod) take operands of
    one shape; its broadcast_*, _npi_* and long names (modulo) broadcast."""
    def compute(lhs, rhs, **_):
        return fn(lhs, rhs)
    for name in names.split():
        same = name.startswith("_") and not name.startswith("_npi_") or \
            name.startswith("elemwise_")
        _op(name, ("lhs", "rhs"), same_shape=same)(compute)


# MXNet ops whose kiln function lives outside this table (nd.linalg.gemm2 as
# "_linalg_gemm2", nd.contrib.X as "_contrib_X", ...): a resolver (registered by
# kiln/mx/nd) maps the op name to that function, and the entry is derived from its
# signature once: the parameters without a default are the inputs, the rest attributes.
RESOLVERS = []
DERIVED = {}


def derive(name, fn):
    """The table entry of an MXNet op computed by an ordinary function over arrays."""
    import inspect
    op = DERIVED.get(name)
    if op is not None:
        return op
    params = list(inspect.signature(fn).parameters.values())
    variadic = any(p.kind is p.VAR_POSITIONAL for p in params)
    inputs = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
              and p.default is p.empty]
    op = DERIVED[name] = MXOp(name, fn, inputs, variadic=variadic,
                              num_outputs=_derived_outputs(name))
    return op


def _derived_outputs(name):
    """Derived ops with several outputs, by MXNet's rule for them."""
    if name.endswith(("linalg_gelqf", "linalg_syevd", "linalg_slogdet")):
        return 2
    if name.endswith("contrib_quantize"):
        return 3
    return 1


def find(name):
    """The table entry of MXNet op `name`, or None."""
    op = OPS.get(name) or DERIVED.get(name)
    if op is not None or not isinstance(name, str):
        return op
    for resolve in RESOLVERS:
        fn = resolve(name)
        if fn is not None:
            return derive(name, fn)
    return None


def lookup(name, where=""):
    op = find(name)
    if op is None:
        raise KilnError(f"{where}MXNet op {name!r} has no kiln mapping (kiln maps "
                        f"{len(OPS)} MXNet ops; see kiln/mx/ops)")
    return op


class _ShapeRun(threading.local):
    active = False


# Set while a symbol runs on zeros only to learn its shapes (an eager-only op met shape
# inference, kiln/mx/sym/evaluation.py): an eager op whose computation fails on values (a
# Cholesky factor of zeros) then gives zeros of its output shapes, as MXNet infers shapes
# without computing.
SHAPE_RUN = _ShapeRun()


# ---- attribute strings ('(3, 3)', 'False', '1e-05') -------------------------------------------

def parse_attr(text, depth=0):
    """An MXNet attribute string as a Python value, by a small grammar (never eval)."""
    if not isinstance(text, str):
        return text
    if depth > 8:
        raise KilnError(f"attribute value nests tuples too deeply: {text[:60]!r}")
    s = text.strip()
    if s in ("True", "true"):
        return True
    if s in ("False", "false"):
        return False
    if s in ("None", "none"):
        return None
    if s[:1] in "([" and s[-1:] in ")]":
        inner = s[1:-1].strip().rstrip(",")
        if not inner:
            return ()
        return tuple(parse_attr(p, depth + 1) for p in _top_level_split(inner))
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def _top_level_split(text):
    parts, level, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "([":
            level += 1
        elif c in ")]":
            level -= 1
        elif c == "," and level == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


def tuple_or_none(v):
    if v is None or v == ():
        return None
    return tuple(int(d) for d in v) if isinstance(v, (tuple, list)) else (int(v),)
