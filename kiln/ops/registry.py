"""The op registry: `@register` defines a primitive once, with its rules (the Primitive
class and the REGISTRY table it fills are kiln/_core/primitive.py).

ops/ imports only kiln._core. What only a floor above can provide, that floor registers
into the primitive when kiln is imported: `prim.lowerings["eager"]` is the module of a
primitive's faster eager kernels (oneDNN's: kiln/backend/dnnl/eager.py; the C runtime's
gemm: kiln/backend/c/eager_gemm.py; MPI's allreduce: kiln/distributed/__init__.py). The
primitive's impl or gradient rule calls them by name on NumPy arrays and runs kiln's own
kernel where nothing is registered or a kernel returns None. (Subgraph evaluation has its
own hook: ops/subgraph.py's set_runner.)"""
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
