"""Parameter files of Module: MXNet's binary format ('arg:'/'aux:' names), or kiln's npz."""
from ..._core.base import KilnError
from ..._core.ndarray import ndarray


def split_prefixed(entries, aux_names, source):
    """({arg name: array}, {aux name: array}) from 'arg:'/'aux:' names, or from plain names
    (kiln's export, nd.save of a dict), sorted by whether the symbol calls them aux."""
    args, aux = {}, {}
    for name, value in entries.items():
        kind, sep, rest = name.partition(":")
        if sep and kind in ("arg", "aux"):
            (aux if kind == "aux" else args)[rest] = value
        elif sep:
            raise KilnError(f"{source}: entry {name[:80]!r} has an unknown prefix "
                            f"{kind[:20]!r} (expected 'arg:' or 'aux:')")
        else:
            (aux if name in aux_names else args)[name] = value
    return args, aux


def read_entries(fname):
    """name -> ndarray of a params file in MXNet's binary format or kiln's npz format."""
    from ...export.mxnet_params import read_any
    return {k: ndarray._wrap(v) for k, v in read_any(fname, "load_params").items()}


def load_param_file(fname, aux_names):
    return split_prefixed(read_entries(fname), aux_names, str(fname))


def save_param_file(fname, arg_params, aux_params):
    """Write `arg_params` and `aux_params` to `fname` in MXNet's .params format, named 'arg:NAME'
    and 'aux:NAME'."""
    from ...export import mxnet_params
    names = [f"arg:{k}" for k in arg_params] + [f"aux:{k}" for k in aux_params]
    arrays = [v.asnumpy() for v in list(arg_params.values()) + list(aux_params.values())]
    mxnet_params.write(fname, arrays, names)
