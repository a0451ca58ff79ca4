"""The params file (`PATH-0000.params`): parameters and constants in NumPy's npz format.

Parameters are keyed by structural names ('features.2.bias'), so the file also loads into
a new instance of the original model class with Block.load_parameters. Constants of the
graph sit beside them under reserved names ('__const__.7'), which load_parameters skips.

Reading is npx.io.read_npz, which looks at every member's .npy header first (dtype and
shape) and refuses object dtypes and oversized arrays before NumPy allocates or unpickles
anything.
"""
from .._core.base import KilnError
from ..npx.io import write_npz_atomic
from .symbol import CONST_PREFIX


def params_path(prefix, epoch):
    return f"{prefix}-{int(epoch):04d}.params"


def write_params(path, params, consts):
    entries = dict(params)
    entries.update(consts)
    write_npz_atomic(path, entries)


def match_params(symbol, entries, source, allow_missing=False, ignore_extra=False):
    """Check a params file against a symbol: names, shapes and dtypes must agree.

    Returns (params by name, consts by node index)."""
    wanted = {}
    for k, spec in symbol.params:
        wanted[spec.name] = spec
    for k, spec in symbol.consts:
        wanted[spec.name] = spec
    missing = [n for n in wanted if n not in entries
               and not (allow_missing and not n.startswith(CONST_PREFIX))]
    extra = [n for n in entries if n not in wanted and not ignore_extra]
    problems = []
    if missing:
        problems.append(f"missing: {', '.join(repr(n) for n in missing[:10])}")
    if extra:
        problems.append(f"unexpected: {', '.join(repr(n[:80]) for n in extra[:10])}")
    if problems:
        raise KilnError(f"{source} does not match the symbol file: " + "; ".join(problems))
    params, consts = {}, {}
    for name, spec in wanted.items():
        if name not in entries:
            continue
        value = entries[name]
        if tuple(value.shape) != spec.shape or value.dtype != spec.dtype:
            raise KilnError(f"{source}: entry {name!r} is {value.dtype}{list(value.shape)} "
                            f"but the symbol file declares {spec.dtype}{list(spec.shape)}")
        if name.startswith(CONST_PREFIX):
            consts[int(name[len(CONST_PREFIX):])] = value
        else:
            params[name] = value
    return params, consts
