"""A progress bar: tqdm when it is installed, otherwise a small stand-in on stderr.

Only what kiln's tools use is offered: iterate, `set_postfix`, `close`, and use as a context
manager.  The stand-in (also used whenever stderr is not a terminal) redraws one line with a
carriage return on a terminal and otherwise prints a single summary line at the end, and
only if `leave` is true, so CI logs stay readable.
"""
import sys
import time


def progress(iterable=None, total=None, desc=None, disable=False, leave=True, unit="it"):
    """Wrap an iterable in a progress bar (tqdm's signature, the common subset)."""
    try:
        from tqdm.auto import tqdm
        # into a log file or pipe tqdm writes a line per refresh; the stand-in writes one
        interactive = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    except ImportError:
        interactive = False
    if not interactive:
        return SimpleProgress(iterable, total=total, desc=desc, disable=disable, leave=leave,
                              unit=unit)
    return tqdm(iterable, total=total, desc=desc, disable=disable, leave=leave, unit=unit,
                file=sys.stderr, dynamic_ncols=True)


class SimpleProgress:
    """Fallback bar: `desc  42/45 [#########-] 1.2s  loss=0.031`."""

    WIDTH = 24

    def __init__(self, iterable=None, total=None, desc=None, disable=False, leave=True,
                 unit="it", stream=None):
        self.iterable = iterable
        if total is None and iterable is not None and hasattr(iterable, "__len__"):
            total = len(iterable)
        self.total, self.desc, self.disable, self.leave, self.unit = (
            total, desc, disable, leave, unit)
        self.stream = stream or sys.stderr
        self.n = 0
        self.postfix = ""
        self._start = time.perf_counter()
        self._last_draw = 0.0
        self._closed = False
        self._live = hasattr(self.stream, "isatty") and self.stream.isatty()

    def __iter__(self):
        try:
            for item in self.iterable:
                yield item
                self.update(1)
        finally:
            self.close()

    def __len__(self):
        return self.total

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def update(self, n=1):
        self.n += n
        now = time.perf_counter()
        if self._live and now - self._last_draw > 0.1:
            self._last_draw = now
            self._draw("\r")

    def set_postfix(self, ordered_dict=None, refresh=True, **kwargs):
        items = dict(ordered_dict or {}, **kwargs)
        self.postfix = "  ".join(f"{k}={_fmt(v)}" for k, v in items.items())

    def set_description(self, desc=None, refresh=True):
        self.desc = desc

    def _line(self):
        elapsed = time.perf_counter() - self._start
        if self.total:
            filled = int(self.WIDTH * min(self.n, self.total) / self.total)
            bar = f"{self.n}/{self.total} [{'#' * filled}{'-' * (self.WIDTH - filled)}]"
        else:
            bar = f"{self.n} {self.unit}"
        parts = [p for p in (self.desc, bar, f"{elapsed:.1f}s", self.postfix) if p]
        return "  ".join(parts)

    def _draw(self, prefix):
        if not self.disable:
            self.stream.write(prefix + self._line())
            self.stream.flush()

    def close(self):
        if self._closed:
            return
        self._closed = True
        if self.disable:
            return
        if self.leave:
            self._draw("\r" if self._live else "")
            self.stream.write("\n")
        elif self._live:
            self.stream.write("\r" + " " * len(self._line()) + "\r")
        self.stream.flush()


def _fmt(value):
    return f"{value:.4g}" if isinstance(value, float) else str(value)
