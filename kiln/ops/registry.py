"""The op registry: each primitive is defined once, with every rule kiln needs.

A primitive carries
  impl    -- the eager NumPy kernel: impl(*numpy_arrays, **attrs) -> numpy array
  shape   -- the shape/dtype rule: shape(*avals, **attrs) -> (shape, dtype); an aval is
             anything with .shape and .dtype (a NumPy array or a graph node)
  grad    -- the gradient rule, written with kiln ops so it can itself be traced:
             grad(g, out, *inputs, **attrs) -> one gradient (or None) per input
  hints   -- elementwise, random, differentiable inputs, C lowering (added by backends)
"""


class Primitive:
    __slots__ = ("name", "impl", "shape", "grad", "elementwise", "random",
                 "impl_out", "lowerings", "inplace", "doc", "check_grad")

    def __init__(self, name, impl, shape, grad=None, *, elementwise=False, random=False,
                 impl_out=None, inplace=False, check_grad=True):
        self.name = name
        self.impl = impl
        self.shape = shape
        self.grad = grad
        self.elementwise = elementwise
        self.random = random
        self.impl_out = impl_out
        self.inplace = inplace
        self.lowerings = {}
        self.doc = impl.__doc__
        self.check_grad = check_grad

    def __repr__(self):
        return f"<primitive {self.name}>"

    def __call__(self, *args, **attrs):
        return _apply()(self, args, attrs)


REGISTRY = {}

_dispatch = []


def _apply():
    # dispatch imports the array type, which imports this module: bind on first use
    if not _dispatch:
        from .._core.dispatch import apply
        _dispatch.append(apply)
    return _dispatch[0]


def register(name, shape, grad=None, **hints):
    """Decorator: register `impl` as the eager kernel of a new primitive."""
    def wrap(impl):
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} registered twice")
        prim = Primitive(name, impl, shape, grad, **hints)
        REGISTRY[name] = prim
        return prim
    return wrap


def get(name):
    try:
        return REGISTRY[name]
    except KeyError:
        from .._core.base import KilnError
        raise KilnError(f"unknown op {name!r}; kiln knows: {', '.join(sorted(REGISTRY))}") from None
