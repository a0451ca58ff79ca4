"""Timing helpers shared by the benchmark scripts: per-call time, side by side, one run."""
import gc
import time


# OpenBLAS workers spin about 2^28 cycles after a call, OpenMP's KMP_BLOCKTIME is 200 ms:
# a pause this long lets the previous runtime's pool park before the next is timed
SETTLE_SECONDS = 0.25


def side_by_side(rows, min_time=0.2, rounds=5, warmup=20, settle=SETTLE_SECONDS):
    """[(name, fn, note)] -> [(name, seconds per call, note)], timed in interleaved rounds.

    Each round times every runtime once, so a slow stretch of a shared machine hits all of
    them alike, and waits `settle` seconds between runtimes, so no runtime is timed while
    the previous one's threads still spin; the result per runtime is the median over
    rounds."""
    plans = []
    for name, fn, note in rows:
        for _ in range(warmup):
            fn()
        n = 1
        while True:
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if time.perf_counter() - start > min_time / rounds or n > 1 << 20:
                break
            n *= 2
        plans.append((name, fn, note, n, []))
    gc.disable()
    try:
        for _ in range(rounds):
            for name, fn, note, n, samples in plans:
                time.sleep(settle)
                start = time.perf_counter()
                for _ in range(n):
                    fn()
                samples.append((time.perf_counter() - start) / n)
    finally:
        gc.enable()
    return [(name, sorted(s)[len(s) // 2], note) for name, fn, note, n, s in plans]


def fmt_time(seconds):
    if seconds is None:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def markdown_table(title, rows, reference):
    """rows: list of (name, seconds or None, note). Ratios are relative to `reference`."""
    ref = dict((r[0], r[1]) for r in rows).get(reference)
    lines = [f"### {title}", "", f"| runtime | time per call | ratio to {reference} | note |",
             "| --- | ---: | ---: | --- |"]
    for name, t, note in rows:
        ratio = f"{t / ref:.2f}×" if (t is not None and ref) else "n/a"
        lines.append(f"| {name} | {fmt_time(t)} | {ratio} | {note} |")
    return "\n".join(lines)


def setup_line():
    """What the C backend's matmuls run on, for the table's caption."""
    from kiln.backend.c.blas import find_blas
    from kiln.backend.c.runtime import thread_count
    blas = find_blas()
    name = {"mkl": "Intel MKL", "openblas": "NumPy's OpenBLAS"}.get(blas.name if blas else "",
                                                                   "kiln's own loops")
    return f"C backend matmuls: {name}, {thread_count()} threads (kiln's pool)"


def jax_sgd_row(loss_fn, params, xv, yv, lr):
    """The JAX jit row of a training bench: one jitted SGD step of `loss_fn(p, x, y)`."""
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(p, x, y):
        loss, g = jax.value_and_grad(loss_fn)(p, x, y)
        return jax.tree_util.tree_map(lambda a, b: a - lr * b, p, g), loss

    x, y = jnp.asarray(xv), jnp.asarray(yv.astype("int32"))
    state = {"p": params}

    def run():
        state["p"], loss = step(state["p"], x, y)
        loss.block_until_ready()
    run()
    return [("JAX jit", run, "")]
