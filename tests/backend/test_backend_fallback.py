"""Slower paths kiln takes when part of its machinery is missing here: each one that costs
an order of magnitude warns once (which part, why, what runs instead, how to fix it), and
kiln.explain says which backend actually ran and why. A path the user chose (KILN_BACKEND,
KILN_DNNL=0, KILN_BLAS=none, KILN_NO_FASTCALL) is reported by explain without a warning.

Each case runs in a fresh process: the environment decides these paths once per process.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from kiln.backend.c import build

pytestmark = pytest.mark.skipif(not build.available(), reason="no working C compiler")

# prints one JSON line: the warnings kiln gave, the backend each program ran on, explain's
# text, and an output value (to check the slower path still computes the right thing)
SCRIPT = textwrap.dedent("""
    import json, sys, warnings
    warnings.simplefilter("always")
    caught = []
    warnings.showwarning = lambda m, c, f, l, *a, **k: caught.append(
        {"category": c.__name__, "message": str(m), "file": f})
    import kiln
    from kiln import np
    from kiln.gluon import nn
    {setup}
    def make():
        net = nn.HybridSequential()
        net.add(nn.Conv2D(2, 3, activation="relu"), nn.Flatten(), nn.Dense(3))
        net.initialize(init=kiln.init.Constant(0.1))
        return net
    x = np.ones((2, 1, 5, 5))
    eager = make()(x)
    programs = []
    for _ in range(2):                  # two models, two calls each: still one warning
        net = make()
        net.hybridize()
        net(x)
        out = net(x)
        programs += [type(e.program).__name__ for e in net._kiln_cached.entries.values()]
    print(json.dumps({
        "warnings": [w for w in caught if w["category"] != "KilnTraceWarning"],
        "programs": programs,
        "explain": str(kiln.explain(make(), x)),
        "same": bool(abs(out - eager).max() < 1e-5),
    }))
""")


def _run(tmp_path, setup="", **env):
    full = dict(os.environ, **env)
    for name in ("KILN_BACKEND", "KILN_DNNL", "KILN_BLAS", "KILN_NO_BLAS", "KILN_NO_FASTCALL"):
        if name not in env:
            full.pop(name, None)
    full.setdefault("KILN_CACHE_DIR", str(tmp_path / "cache"))
    full["TMPDIR"] = str(tmp_path)      # where an unusable cache directory is replaced
    res = subprocess.run([sys.executable, "-c", SCRIPT.replace("{setup}", setup)],
                         capture_output=True, text=True, env=full, timeout=600, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["same"], report
    return report


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One compile cache for the cases that keep the C backend (a warm cache is faster)."""
    return str(tmp_path_factory.mktemp("cache"))


def test_nothing_missing_nothing_warned(tmp_path, cache):
    report = _run(tmp_path, KILN_CACHE_DIR=cache)
    assert report["warnings"] == []
    assert set(report["programs"]) == {"CProgram"}
    assert "runs on c" in report["explain"] and "numpy" not in report["explain"]


def test_no_compiler_warns_once_and_explain_says_numpy_and_why(tmp_path):
    report = _run(tmp_path, CC="/nonexistent/cc")
    assert set(report["programs"]) == {"NumpyProgram"}
    [warning] = report["warnings"]
    message = warning["message"]
    assert warning["category"] == "KilnPerformanceWarning"
    assert warning["file"].endswith("<string>")           # the user's line, not kiln's
    assert "/nonexistent/cc" in message                   # which compiler was tried
    assert "No such file" in message                      # why it failed
    assert "NumPy executor" in message                    # what runs instead
    assert "CC=" in message and "KILN_BACKEND=numpy" in message    # how to fix / silence
    text = report["explain"]
    assert "runs on numpy" in text and "/nonexistent/cc" in text
    assert "C backend is unavailable" in text


def test_a_compiler_that_cannot_build_is_named_too(tmp_path):
    report = _run(tmp_path, CC="/bin/false")
    [warning] = report["warnings"]
    assert "/bin/false" in warning["message"] and "NumPy executor" in warning["message"]


def test_numpy_chosen_by_the_user_is_not_warned(tmp_path, cache):
    report = _run(tmp_path, KILN_BACKEND="numpy", KILN_CACHE_DIR=cache)
    assert report["warnings"] == []
    assert set(report["programs"]) == {"NumpyProgram"}
    assert "runs on numpy" in report["explain"] and "KILN_BACKEND=numpy" in report["explain"]
    # without a compiler, a user who chose both slower paths is not warned either
    report = _run(tmp_path, KILN_BACKEND="numpy", KILN_DNNL="0", CC="/nonexistent/cc")
    assert report["warnings"] == []


def test_no_compiler_met_first_by_onednn_warns_once_too(tmp_path):
    report = _run(tmp_path, KILN_BACKEND="numpy", CC="/nonexistent/cc")
    [warning] = report["warnings"]       # eager convolutions without oneDNN's shim
    assert "/nonexistent/cc" in warning["message"] and "oneDNN" in warning["message"]


@pytest.mark.parametrize("kind", ["regular file", "under a file", "under /proc"])
def test_unusable_cache_dir_warns_once_and_keeps_the_c_backend(tmp_path, kind):
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    bad = {"regular file": str(blocker), "under a file": str(blocker / "cache"),
           "under /proc": "/proc/kiln-cache"}[kind]
    report = _run(tmp_path, KILN_CACHE_DIR=bad)
    # compiled code stays: only the cache location changes (see build.cache_dir)
    assert set(report["programs"]) == {"CProgram"}
    assert os.listdir(tmp_path / f"kiln-cache-{os.getuid()}")
    [warning] = report["warnings"]
    message = warning["message"]
    assert warning["category"] == "KilnPerformanceWarning"
    assert bad in message and "KILN_CACHE_DIR" in message
    assert "instead" in message
    assert bad in report["explain"]


ONEDNN_MISSING = ("import kiln.backend.dnnl.library as _lib; "
                  "_lib._find = lambda: 'oneDNN not installed: pip install onednn-cpu-gomp'")


def test_onednn_missing_warns_once_and_shows_in_explain(tmp_path, cache):
    report = _run(tmp_path, setup=ONEDNN_MISSING, KILN_CACHE_DIR=cache)
    [warning] = report["warnings"]
    assert warning["category"] == "KilnPerformanceWarning"
    assert "oneDNN" in warning["message"] and "pip install" in warning["message"]
    assert "oneDNN not installed" in report["explain"]


def test_onednn_turned_off_by_the_user_is_not_warned(tmp_path, cache):
    report = _run(tmp_path, KILN_DNNL="0", KILN_CACHE_DIR=cache)
    assert report["warnings"] == []
    assert "KILN_DNNL=0" in report["explain"]


def test_no_blas_and_no_fast_call_show_in_explain_without_a_warning(tmp_path, cache):
    # measured: kiln's own matmul loops and the Python call path cost well under an order
    # of magnitude (see the note in kiln/backend/fallbacks.py), so explain says, no warning
    report = _run(tmp_path, setup="import kiln.backend.c.blas as _b; _b._search = lambda: None",
                  KILN_NO_FASTCALL="1", KILN_CACHE_DIR=cache)
    assert report["warnings"] == []
    assert "no BLAS" in report["explain"]
    assert "KILN_NO_FASTCALL" in report["explain"]
    quiet = _run(tmp_path, KILN_BLAS="none", KILN_CACHE_DIR=cache)
    assert quiet["warnings"] == [] and "KILN_BLAS=none" in quiet["explain"]
