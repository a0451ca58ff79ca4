"""`mx.model.load_checkpoint` / `save_checkpoint`: a symbol file plus MXNet's params file."""
from .mod.base_module import BatchEndParam  # noqa: F401 (what batch-end callbacks receive)
from .mod.module import load_checkpoint  # noqa: F401
from .mod.params import save_param_file


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write `prefix-symbol.json` and `prefix-%04d.params` as MXNet does."""
    symbol.save(f"{prefix}-symbol.json")
    save_param_file(f"{prefix}-{int(epoch):04d}.params", arg_params, aux_params)
