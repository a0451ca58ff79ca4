"""A primitive: an op defined once, with every rule kiln needs, and the table of them.

A primitive carries
  impl    -- the eager NumPy kernel: impl(*numpy_arrays, **attrs) -> numpy array
  shape   -- the shape/dtype rule: shape(*avals, **attrs) -> (shape, dtype); an aval is
             anything with .shape and .dtype (a NumPy array or a graph node)
  grad    -- the gradient rule, written with primitives so it can itself be traced:
             grad(g, out, *inputs, **attrs) -> one gradient (or None) per input
  hints   -- elementwise, random, in-place safe, gradient checked
  lowerings -- what backends register for it: "c" (its C code), "eager" (a faster eager
             kernel), keyed by backend
The primitives themselves are defined in kiln/ops (`@register`); the core applies them
(dispatch.py) and calls the few it needs by name from REGISTRY, so it imports nothing above.
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
    # dispatch imports the array type, which calls primitives: bind on first use
    if not _dispatch:
        from .dispatch import apply
        _dispatch.append(apply)
    return _dispatch[0]


def get(name):
    try:
        return REGISTRY[name]
    except KeyError:
        from .base import KilnError
        raise KilnError(f"unknown op {name!r}; kiln knows: {', '.join(sorted(REGISTRY))}") from None
