"""MXNet's `mx.profiler`: per-operator timings of kiln's eager execution.

    mx.profiler.set_config(profile_all=True, aggregate_stats=True, filename='profile.json')
    mx.profiler.set_state('run'); ...; mx.profiler.set_state('stop')
    print(mx.profiler.dumps()); mx.profiler.dump()    # table; Chrome trace JSON

What is measured: while the profiler runs, every kiln primitive's eager kernel (the NumPy
or C function of kiln/ops/ that computes an op, including the ops of backward() and of
hybridized blocks run by the NumPy executor) is timed with perf_counter, as MXNet's
"operator" category. A hybridized block that runs as one compiled C program is one call
kiln cannot see inside: it is not broken down per op; each call of a hybridized block
is timed whole, in the category "hybridized block" under its class name (the first call
includes tracing and compiling). The Python around a kernel (dispatch, autograd taping) is
not included in the operator times. User Tasks, Frames, Events
(durations), Counters and Markers of a Domain go in the trace and, with durations, in the
table. Memory is not profiled.

The hook replaces each primitive's `impl` by a timing wrapper at `set_state('run')` and
restores it at 'stop' (HybridBlock.__call__ likewise); a plan built while profiling keeps
the wrapper, which only records while the profiler runs.
"""
import json
import os
import threading
import time

from .._core.base import KilnError

_config = {"filename": "profile.json", "aggregate_stats": False, "profile_imperative": True}
_state = {"running": False, "paused": False}
_events = []                 # Chrome trace events
_stats = {}                  # (category, name) -> [count, total_s, min_s, max_s]
_originals = {}              # primitive name -> its impl before the hook
_block_call = [None]         # HybridBlock.__call__ before the hook
BLOCK_CATEGORY = "hybridized block"
_lock = threading.Lock()
_T0 = time.perf_counter()


def _record(category, name, start, duration):
    with _lock:
        _events.append({"name": name, "cat": category, "ph": "X", "pid": os.getpid(),
                        "tid": threading.get_ident() % 100000,
                        "ts": (start - _T0) * 1e6, "dur": duration * 1e6})
        if _config["aggregate_stats"]:
            s = _stats.setdefault((category, name), [0, 0.0, float("inf"), 0.0])
            s[0] += 1
            s[1] += duration
            s[2] = min(s[2], duration)
            s[3] = max(s[3], duration)


def _recording():
    return _state["running"] and not _state["paused"]


def _timed(name, impl):
    def run(*args, **kwargs):
        if not _recording():
            return impl(*args, **kwargs)
        start = time.perf_counter()
        try:
            return impl(*args, **kwargs)
        finally:
            _record("operator", name, start, time.perf_counter() - start)
    run.__wrapped__ = impl
    run.__doc__ = impl.__doc__
    return run


def _timed_block_call(call):
    def timed(self, *args, **kwargs):
        bound = call.__get__(self, type(self))
        if not (_recording() and self.__dict__.get("_hybrid_active")):
            return bound(*args, **kwargs)
        start = time.perf_counter()
        try:
            return bound(*args, **kwargs)
        finally:
            _record(BLOCK_CATEGORY, type(self).__name__, start, time.perf_counter() - start)
    timed.__wrapped__ = call
    return timed


def _hook():
    from ..ops.registry import REGISTRY
    from ..gluon.block import HybridBlock
    for name, prim in REGISTRY.items():
        if name not in _originals:
            _originals[name] = prim.impl
            prim.impl = _timed(name, prim.impl)
    if _block_call[0] is None:
        _block_call[0] = HybridBlock.__dict__["__call__"]
        HybridBlock.__call__ = _timed_block_call(_block_call[0])


def _unhook():
    from ..ops.registry import REGISTRY
    from ..gluon.block import HybridBlock
    for name, impl in _originals.items():
        REGISTRY[name].impl = impl
    _originals.clear()
    if _block_call[0] is not None:
        # unless kiln's C dispatcher took __call__'s place meanwhile (then it stays)
        if getattr(HybridBlock.__dict__["__call__"], "__wrapped__", None) is _block_call[0]:
            HybridBlock.__call__ = _block_call[0]
        _block_call[0] = None


_KNOWN = ("filename", "profile_all", "profile_symbolic", "profile_imperative",
          "profile_memory", "profile_api", "continuous_dump", "dump_period",
          "aggregate_stats", "profile_process")


def set_config(**kwargs):
    """MXNet's options; kiln uses filename, aggregate_stats and profile_imperative (or
    profile_all). The others are accepted and have nothing to switch in kiln."""
    unknown = sorted(set(kwargs) - set(_KNOWN))
    if unknown:
        raise KilnError(f"profiler.set_config: unknown option(s) {unknown}; known: "
                        f"{list(_KNOWN)}")
    _config.update(kwargs)
    if kwargs.get("profile_all"):
        _config["profile_imperative"] = True


def set_state(state="stop", profile_process="worker"):
    """'run' starts timing, 'stop' ends it (the data stays until dumps(reset=True))."""
    if state not in ("run", "stop"):
        raise KilnError(f"profiler.set_state: expected 'run' or 'stop', got {state!r}")
    _state["running"] = state == "run"
    _state["paused"] = False
    if state == "run" and _config.get("profile_imperative", True):
        _hook()
    elif state == "stop":
        _unhook()


def start(profile_process="worker"):
    """Start timing (`set_state('run')`)."""
    set_state("run")


def stop(profile_process="worker"):
    """Stop timing (`set_state('stop')`); the data stays until dumped."""
    set_state("stop")


def pause(profile_process="worker"):
    """Pause timing until `resume()`."""
    _state["paused"] = True


def resume(profile_process="worker"):
    """Resume timing after `pause()`."""
    _state["paused"] = False


def state():
    """'run' while the profiler is timing, else 'stop'."""
    return "run" if _state["running"] else "stop"


def dump(finished=True, profile_process="worker"):
    """Write the events so far as Chrome trace JSON (chrome://tracing) to `filename`;
    finished=True also forgets them (the next dump starts afresh)."""
    with _lock:
        trace = {"traceEvents": list(_events), "displayTimeUnit": "ms"}
        if finished:
            _events.clear()
    with open(_config["filename"], "w") as f:
        json.dump(trace, f)


dump_profile = dump


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics (set_config(aggregate_stats=True)) as a table or JSON."""
    if format not in ("table", "json"):
        raise KilnError(f"profiler.dumps: format must be 'table' or 'json', got {format!r}")
    keys = {"total": 1, "avg": None, "min": 2, "max": 3, "count": 0}
    if sort_by not in keys:
        raise KilnError(f"profiler.dumps: sort_by must be one of {list(keys)}, got "
                        f"{sort_by!r}")
    with _lock:
        stats = {k: list(v) for k, v in _stats.items()}
        if reset:
            _stats.clear()

    def sort_key(item):
        count, total, lo, hi = item[1]
        return total / count if sort_by == "avg" else item[1][keys[sort_by]]
    by_cat = {}
    for (cat, name), v in sorted(stats.items(), key=sort_key, reverse=not ascending):
        by_cat.setdefault(cat, []).append((name, v))
    if format == "json":
        return json.dumps({"Time": {cat: {name: {
            "Count": c, "Total": t * 1e3, "Min": lo * 1e3, "Max": hi * 1e3,
            "Avg": t / c * 1e3} for name, (c, t, lo, hi) in rows}
            for cat, rows in by_cat.items()}, "Unit": {"Time": "ms"}})
    lines = ["", "Profile Statistics:",
             "\tkiln: eager kernel time per primitive; a hybridized block's call timed whole "
             "(see kiln/mx/profiler.py).", ""]
    if not _config["aggregate_stats"]:
        lines.append("(no statistics: call set_config(aggregate_stats=True) before running)")
    for cat, rows in by_cat.items():
        lines += [cat, "=================",
                  f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
                  f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}",
                  f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
                  f"{'-------------':>17}{'-------------':>17}"]
        for name, (c, t, lo, hi) in rows:
            lines.append(f"{name:<30}{c:>11}{t * 1e3:>17.4f}{lo * 1e3:>17.4f}"
                         f"{hi * 1e3:>17.4f}{t / c * 1e3:>17.4f}")
        lines.append("")
    return "\n".join(lines)


class Domain:
    """A named group of user-defined profiling objects."""

    def __init__(self, name):
        self.name = str(name)

    def __str__(self):
        return self.name

    def new_task(self, name):
        return Task(self, name)

    def new_frame(self, name):
        return Frame(self, name)

    def new_counter(self, name, value=None):
        return Counter(self, name, value)

    def new_marker(self, name):
        return Marker(self, name)


class _Duration:
    """start()/stop() (or `with`) records one duration in the domain's category."""
    kind = "task"

    def __init__(self, domain, name):
        self.domain, self.name = domain, str(name)
        self._start = None

    def start(self):
        self._start = time.perf_counter()

    def stop(self):
        if self._start is None:
            raise KilnError(f"profiler.{type(self).__name__} {self.name!r}: stop() "
                            "without start()")
        if _recording():
            _record(str(self.domain), self.name, self._start,
                    time.perf_counter() - self._start)
        self._start = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()

    def __str__(self):
        return self.name


class Task(_Duration):
    """A named duration in a profiler Domain: `start()`/`stop()` (or `with`) records one."""
    pass


class Frame(_Duration):
    """A named frame duration in a profiler Domain: `start()`/`stop()` (or `with`) records one."""
    pass


class Event(_Duration):
    """A named event duration (no domain): `start()`/`stop()` (or `with`) records one."""
    def __init__(self, name):
        super().__init__("event", name)


class Counter:
    """A named value in the trace: set_value, increment, decrement (also += and -=)."""

    def __init__(self, domain, name, value=None):
        self.domain, self.name = domain, str(name)
        self.value = 0
        if value is not None:
            self.set_value(value)

    def set_value(self, value):
        self.value = int(value)
        if _recording():
            with _lock:
                _events.append({"name": self.name, "cat": str(self.domain), "ph": "C",
                                "pid": os.getpid(), "ts": (time.perf_counter() - _T0) * 1e6,
                                "args": {self.name: self.value}})

    def increment(self, delta=1):
        self.set_value(self.value + delta)

    def decrement(self, delta=1):
        self.set_value(self.value - delta)

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


class Marker:
    """An instant event: mark(scope) with scope 'global', 'process', 'thread', ..."""

    def __init__(self, domain, name):
        self.domain, self.name = domain, str(name)

    def mark(self, scope="process"):
        if _recording():
            with _lock:
                _events.append({"name": self.name, "cat": str(self.domain), "ph": "i",
                                "s": {"global": "g", "process": "p"}.get(scope, "t"),
                                "pid": os.getpid(), "ts": (time.perf_counter() - _T0) * 1e6})


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """MXNet's deprecated form of set_config."""
    set_config(filename=filename, profile_all=mode == "all")


def profiler_set_state(state="stop"):
    """MXNet's deprecated form of set_state."""
    set_state(state)
