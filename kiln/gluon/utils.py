"""Gluon helpers: Block.summary, split_data / split_and_load, clip_global_norm, download."""
import os

from .._core.base import KilnError, where_in_user_code

_DEFAULT_REPO_URL = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/"


def _count(block):
    n = 0
    for p in block.params.values():
        if p.shape is not None:
            size = 1
            for d in p.shape:
                size *= d
            n += size
    return n


class SummaryAfterHybridizeError(KilnError, AssertionError):
    """Block.summary of a hybridized block."""


def print_summary(block, *inputs):
    """Run `block` on `inputs` once and print each layer's output shape and parameter count."""
    if block.__dict__.get("_hybrid_active"):
        # a compiled call runs no layer's hooks; MXNet raises AssertionError here too
        raise SummaryAfterHybridizeError(f"{type(block).__name__}.summary must be called "
                                         "before hybridize()" + where_in_user_code())
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


class UnevenSplitError(KilnError, ValueError):
    """split_data(even_split=True) of a batch that does not divide evenly (ValueError in MXNet)."""


def split_data(data, num_slice, batch_axis=0, even_split=True):
    """`data` split along `batch_axis` into `num_slice` slices. Uneven splits (even_split=False)
    give the first `size % num_slice` slices one more row, as MXNet 1.9 and np.array_split do."""
    size = data.shape[batch_axis]
    if not 1 <= num_slice <= max(size, 1):
        raise KilnError(f"split_data: cannot split a batch of {size} into {num_slice} slices")
    if num_slice == 1:
        return [data]
    if even_split and size % num_slice:
        raise UnevenSplitError(f"split_data: data with shape {tuple(data.shape)} cannot be "
                               f"evenly split into {num_slice} slices along axis {batch_axis}; "
                               "use a batch size that is a multiple of it or "
                               "even_split=False" + where_in_user_code())
    each, extras = divmod(size, num_slice)
    bounds = [0]
    for i in range(num_slice):
        bounds.append(bounds[-1] + each + (1 if i < extras else 0))
    from .. import np as knp
    return [knp.take(data, knp.arange(bounds[i], bounds[i + 1], dtype="int64"), axis=batch_axis)
            for i in range(num_slice)]


def split_and_load(data, ctx_list, batch_axis=0, even_split=True):
    """`data` split along `batch_axis` into one slice per context of `ctx_list`, each on its
    context (all CPU on kiln)."""
    from .._core.ndarray import as_array
    data = as_array(data)
    if not isinstance(ctx_list, (list, tuple)):
        ctx_list = [ctx_list]
    if not ctx_list:
        raise KilnError("split_and_load: ctx_list is empty (d2l's try_all_gpus() returns [] "
                        "without a GPU); pass at least one context, e.g. [npx.cpu()]")
    slices = split_data(data, len(ctx_list), batch_axis, even_split)
    return [part.as_in_context(ctx) for part, ctx in zip(slices, ctx_list)]


def clip_global_norm(arrays, max_norm, check_isfinite=True):
    """Scale `arrays` in place so their joint L2 norm is at most `max_norm`; return the norm
    before scaling (a Python float, or an array when check_isfinite=False, as in MXNet)."""
    import math
    import numpy as _onp
    from .._core.ndarray import ndarray
    from .._core.writes import arrays_written
    if not arrays:
        raise KilnError("clip_global_norm: expected a non-empty list of arrays")
    bufs = [a._concrete("clip_global_norm") for a in arrays]
    total = math.sqrt(sum(float(_onp.sum(_onp.square(b, dtype=_onp.float64))) for b in bufs))
    if check_isfinite and not math.isfinite(total):
        import warnings
        warnings.warn("clip_global_norm: nan or inf found in the arrays", UserWarning,
                      stacklevel=2)
    scale = max_norm / (total + 1e-8)
    if scale < 1.0:
        for a, b in zip(arrays, bufs):
            if a.stype == "default":
                b *= b.dtype.type(scale)
            else:       # MXNet 1.x's sparse arrays: b is a dense copy; their own operator
                a *= b.dtype.type(scale)
        arrays_written()
    return total if check_isfinite else ndarray._wrap(_onp.array(total, _onp.float32))


def check_sha1(filename, sha1_hash):
    """True when the file's SHA-1 hex digest equals `sha1_hash`."""
    import hashlib
    sha1 = hashlib.sha1()
    with open(filename, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha1.update(chunk)
    return sha1.hexdigest() == sha1_hash


def replace_file(src, dst):
    """Move `src` to `dst`, replacing `dst` atomically (os.replace)."""
    import os
    os.replace(src, dst)


def shape_is_known(shape):
    """Whether every dimension of `shape` is known: not None and each dimension positive (MXNet
    marks an unknown one with 0)."""
    return shape is not None and all(d > 0 for d in shape)


def download(url, path=None, overwrite=False, sha1_hash=None, retries=5, verify_ssl=True):
    """Fetch `url` to `path` (a file, or a folder to put it in) unless a file with the right
    hash is already there; written atomically, checked against `sha1_hash`. Returns the path."""
    import os
    import tempfile
    import urllib.request
    fname = url.split("/")[-1]
    if path is not None:
        path = os.path.expanduser(path)
        fname = os.path.join(path, fname) if os.path.isdir(path) or path.endswith(os.sep) \
            else path
    if (not overwrite and os.path.exists(fname)
            and (not sha1_hash or check_sha1(fname, sha1_hash))):
        return fname
    folder = os.path.dirname(os.path.abspath(fname))
    os.makedirs(folder, exist_ok=True)
    last = None
    for _ in range(max(1, int(retries))):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".kiln-download-")
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=30) as resp:
                for chunk in iter(lambda: resp.read(1 << 20), b""):
                    out.write(chunk)
            if sha1_hash and not check_sha1(tmp, sha1_hash):
                raise KilnError(f"download: {url} arrived with a SHA-1 other than {sha1_hash}")
            os.replace(tmp, fname)
            return fname
        except (OSError, KilnError) as exc:
            last = exc
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    raise KilnError(f"download: could not fetch {url} to {fname}: {last}") from None


def _get_repo_url():
    """The base URL of MXNet's dataset and model store: $MXNET_GLUON_REPO, else Apache's
    bucket (always ending in '/'), as MXNet's gluon.utils gives it."""
    url = os.environ.get("MXNET_GLUON_REPO", _DEFAULT_REPO_URL)
    return url if url.endswith("/") else url + "/"


def _get_repo_file_url(namespace, filename):
    """The URL of `filename` under `namespace` in MXNet's store."""
    return f"{_get_repo_url()}{namespace}/{filename}"
