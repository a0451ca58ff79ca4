"""The op registry: `@register` defines a primitive once, with its rules (the Primitive
class and the REGISTRY table it fills are kiln/_core/primitive.py)."""
from .._core.primitive import Primitive, REGISTRY, get  # noqa: F401


def register(name, shape, grad=None, **hints):
    """Decorator: register `impl` as the eager kernel of a new primitive."""
    def wrap(impl):
        if name in REGISTRY:
            raise ValueError(f"primitive {name!r} registered twice")
        prim = Primitive(name, impl, shape, grad, **hints)
        REGISTRY[name] = prim
        return prim
    return wrap
