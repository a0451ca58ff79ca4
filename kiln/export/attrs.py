"""Typed op attributes <-> JSON, with no Python repr or eval anywhere.

Every attribute value is written as a one-key object naming its type, so reading a file
back gives exactly the Python values the op saw when it was traced:

    {"int": 3}  {"float": 0.5}  {"float": "-inf"}  {"bool": true}  {"none": null}
    {"str": "clip"}  {"dtype": "float32"}  {"tuple": [{"int": 1}, {"int": 2}]}
    {"sym": "(batch * 784)"}      (a symbolic size: symexpr.py, format version 2)

Floats that JSON cannot spell (inf, -inf, nan) are strings inside a float tag. Decoding
accepts only these tags and only the dtypes kiln computes with, so a hostile file can put
nothing else in front of an op.
"""
import math

import numpy as _np

from .._core.base import KilnError, bfloat16_dtype
from .._core.bfloat16 import is_bfloat16
from .._core.symdim import SymInt
from . import symexpr

# the dtypes an exported graph may use; parsing by table, never np.dtype(user string)
DTYPES = {name: _np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64")}

# nesting deeper than this is never produced by kiln ops; refuse it instead of recursing
MAX_DEPTH = 8
_SPECIAL_FLOATS = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def dtype_name(dtype):
    dt = _np.dtype(dtype)
    name = dt.name
    if name not in DTYPES and not is_bfloat16(dt):
        raise KilnError(f"export: dtype {dt} cannot be exported (supported: "
                        f"{', '.join(DTYPES)}, bfloat16)")
    return name


def parse_dtype(value, where):
    if value == "bfloat16":     # ml_dtypes' (optional): looked up only when a file names it
        return bfloat16_dtype()
    if not isinstance(value, str) or value not in DTYPES:
        raise KilnError(f"{where}: unknown dtype {value!r} (expected one of "
                        f"{', '.join(DTYPES)}, bfloat16)")
    return DTYPES[value]


def encode(value, where="attribute", depth=0):
    if depth > MAX_DEPTH:
        raise KilnError(f"export: {where} is nested too deeply")
    if value is None:
        return {"none": None}
    if isinstance(value, SymInt):
        return {"sym": symexpr.to_text(value.expr)}
    if isinstance(value, (bool, _np.bool_)):
        return {"bool": bool(value)}
    if isinstance(value, (int, _np.integer)):
        return {"int": int(value)}
    if isinstance(value, (float, _np.floating)):
        v = float(value)
        if math.isnan(v):
            return {"float": "nan"}
        if math.isinf(v):
            return {"float": "inf" if v > 0 else "-inf"}
        return {"float": v}
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, _np.dtype) or (isinstance(value, type)
                                        and issubclass(value, _np.generic)):
        return {"dtype": dtype_name(value)}
    if isinstance(value, (tuple, list)):
        kind = "tuple" if isinstance(value, tuple) else "list"
        return {kind: [encode(v, where, depth + 1) for v in value]}
    raise KilnError(f"export: {where} has a value of type {type(value).__name__} "
                    f"({value!r}) that the symbol format cannot store")


def decode(obj, where, depth=0, symbols=None):
    """The value of a typed JSON value; `symbols` ({name: example size}) are the size
    symbols a {"sym": ...} value may use (None: the file declares none)."""
    if depth > MAX_DEPTH:
        raise KilnError(f"{where}: attribute nested too deeply")
    if not isinstance(obj, dict) or len(obj) != 1:
        raise KilnError(f"{where}: expected a one-key typed value such as {{\"int\": 3}}, "
                        f"got {_short(obj)}")
    (tag, v), = obj.items()
    if tag == "none" and v is None:
        return None
    if tag == "bool" and isinstance(v, bool):
        return v
    if tag == "int" and isinstance(v, int) and not isinstance(v, bool):
        return v
    if tag == "float":
        if isinstance(v, str) and v in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[v]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(v)
    if tag == "str" and isinstance(v, str):
        return v
    if tag == "dtype":
        return parse_dtype(v, where)
    if tag == "sym":
        if symbols is None:
            raise KilnError(f"{where}: a symbolic size in a file that declares no symbols")
        if not isinstance(v, str):
            raise KilnError(f"{where}: a symbolic size is a string, got {_short(v)}")
        return symexpr.read_size(v, symbols, where)
    if tag in ("tuple", "list") and isinstance(v, list):
        items = [decode(x, where, depth + 1, symbols) for x in v]
        return tuple(items) if tag == "tuple" else items
    raise KilnError(f"{where}: bad typed value {_short(obj)}")


def decode_attrs(obj, where, symbols=None):
    if not isinstance(obj, dict):
        raise KilnError(f"{where}: 'attrs' must be an object, got {_short(obj)}")
    return {str(k): decode(v, f"{where} attribute {k!r}", symbols=symbols)
            for k, v in obj.items()}


def _short(obj, limit=80):
    text = repr(obj)   # repr of already-parsed JSON data, for the message only
    return text if len(text) <= limit else text[:limit] + "..."
