"""Timing helpers shared by the benchmark scripts: per-call time, side by side, one run."""
import gc
import time


def side_by_side(rows, min_time=0.2, rounds=5, warmup=20):
    """[(name, fn, note)] -> [(name, seconds per call, note)], timed in interleaved rounds.

    Each round times every runtime once, so a slow stretch of a shared machine, or a
    thread pool still spinning after the previous runtime, hits all of them alike; the
    result per runtime is the median over rounds."""
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
