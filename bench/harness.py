"""Timing helpers shared by the benchmark scripts: per-call time, side by side, one run."""
import gc
import time


def per_call_seconds(fn, min_time=0.2, repeats=5, warmup=20):
    """Median over `repeats` rounds of the mean time per call; each round lasts ~min_time/5."""
    for _ in range(warmup):
        fn()
    n = 1
    while True:
        start = time.perf_counter()
        for _ in range(n):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > min_time / repeats or n > 1 << 20:
            break
        n *= 2
    samples = []
    gc.disable()
    try:
        for _ in range(repeats):
            start = time.perf_counter()
            for _ in range(n):
                fn()
            samples.append((time.perf_counter() - start) / n)
    finally:
        gc.enable()
    samples.sort()
    return samples[len(samples) // 2]


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
