"""What a layer is given: an array with a batch axis, of its parameters' dtype. Errors name
the layer and the input it expects; eager and hybridized calls run the same checks (while
tracing, shapes and dtypes are concrete), so they fail alike."""
from ..._core.base import DTypeError, KilnError, where_in_user_code


def _layer(block):
    return f"{block.name} ({type(block).__name__})"


def expect_batch(block, x, expected):
    """`x` must be an array with a batch axis; `expected` describes the input the layer
    takes, e.g. '(batch, 5)'. Other array types (NumPy's, a symbol) answer for themselves
    when asked their shape."""
    if not hasattr(type(x), "shape"):
        got = "None" if x is None else f"a {type(x).__name__} ({str(x)[:40]})"
        raise KilnError(f"{_layer(block)}: expected an array of shape {expected}, got {got}"
                        f"{where_in_user_code()}")
    if x.ndim == 0:
        raise KilnError(f"{_layer(block)}: expected an array of shape {expected}, got a 0-d "
                        f"array (shape ()); a single sample needs a batch axis of 1"
                        f"{where_in_user_code()}")


def expect_dtype(block, x, param, exact=False):
    """An integer or boolean `x` is refused by a layer with floating-point parameters, as
    MXNet refuses it: FullyConnected and Convolution infer one dtype for data, weight and
    bias ("Incompatible attr in node FullyConnected at 1-th input: expected int64, got
    float32"). NumPy's promotion would instead compute an int64 batch silently in float64.
    A float input of another precision is computed with NumPy's promotion (Dense, as kiln
    always has; MXNet refuses that too), or refused (`exact`: the convolution primitive
    takes one dtype)."""
    if x.dtype == param.dtype or not exact and param.dtype.kind == x.dtype.kind == "f":
        return
    raise DTypeError(f"{_layer(block)}: the input is {x.dtype} but the layer's parameters "
                     f"are {param.dtype}; cast the input (x.astype('{param.dtype}'))"
                     f"{where_in_user_code()}")
