"""save_parameters / load_parameters: a Block's parameters as an .npz file (never pickle).

Keys are structural names ('features.0.weight'), so a file saved from one build of a model
loads into another build of the same architecture, even into one that was never
initialized (the shapes come from the file).
"""
from collections import OrderedDict

from .._core.base import KilnError, where_in_user_code
from .._core.bfloat16 import is_bfloat16
from ..npx.io import write_npz_atomic

_KIND_KEY = "__kiln_kind__"   # written by npx.save; not a parameter
_CONST_PREFIX = "__const__."   # graph constants in an exported params file (kiln.export)


def save_block_parameters(block, filename, deduplicate=False):
    entries, seen = OrderedDict(), set()
    for name, param in block._collect_params_with_prefix().items():
        if deduplicate and id(param) in seen:
            continue
        seen.add(id(param))
        if param._data is None:
            raise KilnError(f"save_parameters: parameter {name!r} has no data yet "
                            f"(shape {param.shape}); initialize the network and run it once "
                            f"before saving{where_in_user_code()}")
        entries[name] = param._data._concrete("save_parameters")
    write_npz_atomic(filename, entries)


def _strip_mxnet_prefix(name):
    # MXNet 1.x files prefix names with 'arg:' / 'aux:'
    for p in ("arg:", "aux:"):
        if name.startswith(p):
            return name[len(p):]
    return name


def _name_list(names, limit=10):
    names = list(names)
    text = ", ".join(repr(n) for n in names[:limit])
    return text + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def read_param_entries(filename, what="load_parameters"):
    """name -> NumPy array of a params file (npz, or MXNet's binary format), without
    'arg:'/'aux:' prefixes and without an exported graph's constants."""
    from ..export.mxnet_params import read_any
    raw = read_any(filename, what)
    raw.pop(_KIND_KEY, None)
    return {_strip_mxnet_prefix(k): v for k, v in raw.items()
            if not k.startswith(_CONST_PREFIX)}


def load_block_parameters(block, filename, allow_missing=False, ignore_extra=False,
                          cast_dtype=False, dtype_source="current"):
    load_into(block._collect_params_with_prefix(), read_param_entries(filename), filename,
              allow_missing, ignore_extra, cast_dtype, dtype_source,
              f"load_parameters: {filename} does not match {type(block).__name__}")


def load_into(params, loaded, filename, allow_missing, ignore_extra, cast_dtype,
              dtype_source, mismatch):
    """Set `params` (name -> Parameter) from `loaded` (name -> NumPy), checking names."""
    # a shared parameter saved under one of its names counts as present under all of them
    found_ids = {id(params[n]) for n in params if n in loaded}
    missing = [n for n, p in params.items() if n not in loaded and id(p) not in found_ids]
    extra = [n for n in loaded if n not in params]
    problems = []
    if missing and not allow_missing:
        problems.append(f"missing from the file: {_name_list(missing)} "
                        "(pass allow_missing=True to keep their current values)")
    if extra and not ignore_extra:
        problems.append(f"in the file but not in the network: {_name_list(extra)} "
                        "(pass ignore_extra=True to skip them)")
    if problems:
        raise KilnError(f"{mismatch}: " + "; ".join(problems) + f"{where_in_user_code()}")
    for name, param in params.items():
        if name not in loaded:
            continue
        if param._path is None:
            param._path = name
        value = loaded[name]
        if value.dtype.kind not in "fiub" and not is_bfloat16(value.dtype):
            raise KilnError(f"load_parameters: entry {name!r} has unsupported dtype "
                            f"{value.dtype}")
        if dtype_source == "saved":
            param._dtype = value.dtype
        param._load_init(value, cast_dtype=cast_dtype, source=str(filename))
