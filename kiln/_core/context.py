"""Devices. kiln computes on the CPU; contexts exist so Gluon code that names them runs."""


class Context:
    """A device (MXNet's Context, also called Device): a type ('cpu', 'cpu_pinned', 'gpu') and an
    id. kiln computes on the CPU; contexts exist so code that names them runs, and data placed
    on a GPU context is an error."""
    __slots__ = ("device_type", "device_id")

    def __init__(self, device_type="cpu", device_id=0):
        if isinstance(device_type, Context):
            device_type, device_id = device_type.device_type, device_type.device_id
        self.device_type = device_type
        self.device_id = device_id

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __eq__(self, other):
        return isinstance(other, Context) and (self.device_type, self.device_id) == (
            other.device_type, other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# MXNet's Context.default_ctx: where arrays go when no context is named (kiln: the CPU)
Context.default_ctx = Context("cpu", 0)

Device = Context
Context.default_ctx = Context("cpu", 0)     # MXNet 1.x's class attribute: the default context


def cpu(device_id=0):
    """The CPU context `cpu(device_id)`, where kiln computes."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """MXNet's pinned-memory CPU context; on kiln the same memory as `cpu()`."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """A GPU context, as MXNet returns one even without a GPU (d2l's try_gpu relies on it);
    putting an array or a parameter on it is the error (see check_usable)."""
    return Context("gpu", device_id)


def check_usable(ctx, what):
    """Raise a clear error when `ctx` (a Context, a list of them or None) is not a CPU."""
    for c in (ctx if isinstance(ctx, (list, tuple)) else [ctx]):
        if c is not None and Context(c).device_type not in ("cpu", "cpu_pinned",
                                                             "cpu_shared"):
            from .base import KilnError, where_in_user_code
            raise KilnError(f"{what}: cannot place data on {c}: kiln runs on the CPU only "
                            f"(npx.num_gpus() is 0); use npx.cpu(){where_in_user_code()}")


def placed(array, ctx):
    """`array` (just made) reporting context `ctx` (None: where it is, the default)."""
    if ctx is not None:
        ctx = Context(ctx)
        if ctx != _DEFAULT:
            array._ctx = ctx
    return array


_DEFAULT = Context("cpu", 0)


class Placement:
    """Mixed into the array class: the context an array was given. kiln keeps every array in
    host memory, but as in MXNet an array reports the context it was put on (cpu(1),
    cpu_pinned(0), ...), and moving it to another context makes a copy there. The slot stays
    unset for arrays on the default `cpu(0)`, so making an array costs nothing more."""
    __slots__ = ("_ctx",)

    @property
    def ctx(self):
        try:
            return self._ctx
        except AttributeError:
            return cpu()

    context = device = ctx

    def as_in_context(self, ctx):
        """This array if it is on `ctx` already, else a copy on `ctx` (recorded by autograd)."""
        check_usable(ctx, "as_in_context")
        if ctx is None or Context(ctx) == self.ctx:
            return self
        return placed(self.copy(), ctx)

    as_in_ctx = to_device = as_in_context


def num_gpus():
    """The number of GPUs kiln can use: always 0 (kiln runs on the CPU)."""
    return 0


def current_context():
    """The context new arrays are created on: always `cpu(0)`; `current_device` is the same."""
    return cpu()


current_device = current_context
