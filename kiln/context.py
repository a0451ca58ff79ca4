"""Devices. kiln computes on the CPU; contexts exist so Gluon code that names them runs."""


class Context:
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


Device = Context


def cpu(device_id=0):
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """kiln has no GPU support; asking for one is an error with a clear way out."""
    from .base import KilnError
    raise KilnError(f"gpu({device_id}): kiln runs on the CPU only; use kiln.cpu(), or "
                    "npx.num_gpus() to check first (it returns 0)")


def num_gpus():
    return 0


def current_context():
    return cpu()


current_device = current_context
