"""MXNet 1.x's names of blocks and parameters: prefixes and name scopes.

kiln names parameters structurally ('0.weight': the attribute and child keys, as MXNet 2
does), so the same architecture always gives the same names. Code written for MXNet 1.x
that names things itself gets MXNet 1.x's names for those blocks: a block given `prefix=`,
or made inside `with parent.name_scope():`, is a *named* block. A block made in a scope is
prefixed by the scope's prefix and a per-scope counter of its class ('test_' + 'dense0_'),
its parameters are called prefix + name ('test_dense0_weight'), and collect_params() keys
them by those names, as MXNet 1.9 does. save_parameters keeps structural names in both
cases, as MXNet 1.9 does.
"""
import contextlib
import threading

_local = threading.local()


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def assign_prefix(block_class, prefix, params, alias=None):
    """(block prefix, parameter prefix, dict to share from, named) of a block of `block_class`
    being made with `prefix` and `params` (None: not given); `alias` is the block's own name
    hint where MXNet takes it from the instance (an Activation's act_type: 'relu0_'). As in
    MXNet 1.x, parameters take the prefix of the dict they may be shared from
    (`params=other.collect_params()` names them as `other`'s), and blocks made in a scope
    share from what the scope's block does."""
    stack = _stack()
    shared_prefix = getattr(params, "prefix", None) if params is not None else None
    if stack:
        parent = stack[-1]
        if prefix is None:
            hint = alias or getattr(block_class, "_mx_alias", None) or \
                block_class.__name__.lower()
            counter = parent.__dict__["_scope_counter"]
            count = counter.get(hint, 0)
            counter[hint] = count + 1
            prefix = f"{hint}{count}_"
        if params is None:
            params = parent._reg_params._shared
            params_prefix = parent._params_prefix + prefix
        else:
            params_prefix = shared_prefix or ""
        return parent._prefix + prefix, params_prefix, params, True
    if prefix is None:
        return None, None, params, False
    return prefix, (shared_prefix if params is not None else prefix) or "", params, True


def display_name(prefix):
    """MXNet's block.name: the prefix without its trailing underscore."""
    return prefix[:-1] if prefix.endswith("_") else prefix


def full_name(block, key):
    """MXNet 1.x's name of the parameter `key` of a named block."""
    return block._params_prefix + key


@contextlib.contextmanager
def name_scope(block):
    """Blocks made inside are named under `block`'s prefix (which makes `block` named)."""
    if block.__dict__["_prefix"] == "" and block.__dict__["_mx1_names"]:
        yield block                  # MXNet: an empty prefix opens no scope
        return
    if not block.__dict__["_mx1_names"]:
        object.__setattr__(block, "_mx1_names", True)
        shared = block._reg_params._shared
        object.__setattr__(block, "_params_prefix", getattr(shared, "prefix", None) or
                           block._prefix if shared is not None else block._prefix)
        for key, param in block._reg_params.items():
            if param._full_name is None:
                param._full_name = full_name(block, key)
    stack = _stack()
    stack.append(block)
    try:
        yield block
    finally:
        stack.pop()
