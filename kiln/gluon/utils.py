"""Small Gluon helpers: Block.summary's table, split_data / split_and_load (CPU only)."""
from ..base import KilnError


def _count(block):
    n = 0
    for p in block.params.values():
        if p.shape is not None:
            size = 1
            for d in p.shape:
                size *= d
            n += size
    return n


def print_summary(block, *inputs):
    """Run `block` on `inputs` once and print each layer's output shape and parameter count."""
    rows, handles = [], []

    def walk(b, name):
        def hook(blk, args, out):
            shape = out.shape if hasattr(out, "shape") else tuple(
                getattr(o, "shape", None) for o in out)
            rows.append((name, type(blk).__name__, shape, blk))
        handles.append(b.register_forward_hook(hook))
        for key, child in b._children.items():
            walk(child, f"{name}.{key}" if name else key)

    walk(block, "")
    try:
        block(*inputs)
    finally:
        for h in handles:
            h.detach()
    header = f"{'Layer (type)':<40}{'Output Shape':>24}{'Param #':>12}"
    print("-" * len(header))
    print(header)
    print("=" * len(header))
    for name, kind, shape, blk in rows:
        label = f"{name or '(input net)'} ({kind})"
        print(f"{label:<40}{str(shape):>24}{_count(blk):>12}")
    total = sum(p.data().size for p in block.collect_params().values())
    trainable = sum(p.data().size for p in block.collect_params().values()
                    if p.grad_req != "null")
    print("=" * len(header))
    print(f"Parameters in forward computation graph: {total}")
    print(f"Trainable params: {trainable}")
    print(f"Non-trainable params: {total - trainable}")
    print("-" * len(header))


def split_data(data, num_slice, batch_axis=0, even_split=True):
    if num_slice == 1:
        return [data]
    size = data.shape[batch_axis]
    if even_split and size % num_slice:
        raise KilnError(f"split_data: batch of {size} does not split evenly into {num_slice}")
    step = size // num_slice
    from .. import np as knp
    return [knp.take(data, knp.arange(i * step, size if i == num_slice - 1 else (i + 1) * step,
                                      dtype="int64"), axis=batch_axis)
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    from ..ndarray import as_array
    data = as_array(data)
    if not isinstance(ctx_list, (list, tuple)):
        ctx_list = [ctx_list]
    return split_data(data, len(ctx_list), batch_axis, even_split)
