"""Generated C under AddressSanitizer: an out-of-bounds access fails the test.

KILN_ASAN=1 builds kiln's C with -fsanitize=address; the program runs in a child process
with the ASan runtime preloaded (Python itself is not built with it). Skips where the
compiler has no libasan.
"""
import os
import subprocess
import sys
import textwrap

import pytest

from kiln.backend.c import build
from paths import ROOT



def _libasan():
    if not build.available():
        return None
    try:
        cc, _ = build.compiler()
        path = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                              text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return path if os.path.isabs(path) and os.path.exists(path) else None


LIBASAN = _libasan()
pytestmark = pytest.mark.skipif(LIBASAN is None, reason="no C compiler with libasan")


def run_under_asan(code, tmp_path):
    env = dict(os.environ, KILN_ASAN="1", LD_PRELOAD=LIBASAN, KILN_CACHE_DIR=str(tmp_path),
               ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:exitcode=86",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_asan_catches_an_overrun(tmp_path):
    """The harness works: a deliberate overrun in a kiln-built library is reported."""
    res = run_under_asan("""
        import ctypes, numpy as onp
        from kiln.backend.c import build
        lib = build.load("int kiln_abi_version(void) { return 1; }\\n"
                         "void bad(float *p, int n) { for (int i = 0; i <= n; i++) p[i] = 1; }")
        buf = onp.zeros(8, onp.float32)
        lib.bad(ctypes.c_void_p(buf.ctypes.data), 8)
    """, tmp_path)
    assert res.returncode != 0
    assert "AddressSanitizer" in res.stderr


def test_c_reproducers_run_clean_under_asan(tmp_path):
    res = run_under_asan("""
        import numpy as onp, kiln
        from kiln import np, npx, autograd
        rng = onp.random.default_rng(0)
        def arr(*s):
            return np.array(rng.uniform(-2, 2, s).astype("float32"))
        cases = [
            (lambda a, w: np.matmul(a, w) >= -0.5, (arr(126, 5), arr(5, 3))),
            (lambda a, w: np.dot(a, w).astype("float64"), (arr(1, 3), arr(3, 6))),
            (lambda a, w: np.inner(a, w) < 0.1, (arr(40, 5), arr(3, 5))),
            (lambda a, w: npx.batch_dot(a, w).astype("float64") * 2, (arr(2, 63, 5), arr(2, 5, 3))),
            (lambda a: np.std(a) + a.sum(), (arr(1),)),
            (lambda a: np.sqrt(np.sum(a - a)) + a.sum(), (arr(2),)),
        ]
        for f, args in cases:
            g = kiln.hybridize(f, backend="c", strict=True)
            for _ in range(3):
                out = g(*args)
            onp.testing.assert_allclose(out.asnumpy(), f(*args).asnumpy(), rtol=1e-5)
            for a in args:
                a.attach_grad()
            with autograd.record():
                y = g(*args)
            if y.dtype.kind == "f":
                y.backward()
        print("clean")
    """, tmp_path)
    assert "AddressSanitizer" not in res.stderr, res.stderr[-4000:]
    assert res.returncode == 0, res.stderr[-4000:]
    assert "clean" in res.stdout


def test_fixed_c_runs_clean_under_asan(tmp_path):
    """The fixed C of kiln/backend/c/csrc on its busy paths: HybridBlock.__call__ and the
    dispatcher in C (fastcall.c, fastdispatch.c), the runtime's gemm over its thread pool
    (runtime.c), weights packed from the second call on where MKL is the BLAS (packed.c),
    and the array cache handing back blocks of 4 MB and more (array_cache.c)."""
    res = run_under_asan("""
        import os
        os.environ.update(KILN_NUM_THREADS="2", KILN_DNNL="0")   # kiln's gemm, two threads
        import numpy as onp, kiln
        from kiln import np
        from kiln.gluon import nn
        from kiln.backend.c import array_cache, fastcall, runtime
        rng = onp.random.default_rng(0)
        net = nn.HybridSequential()
        net.add(nn.Dense(512, activation="relu"), nn.Dense(64))
        net.initialize()
        x = np.array(rng.standard_normal((32, 384)).astype("float32"))
        expected = net(x).asnumpy()
        net.hybridize(backend="c")
        for _ in range(4):
            onp.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-4, atol=1e-4)
        assert fastcall.caller_type() is None or net._kiln_cached.dispatch is not None
        rt = runtime.runtime()
        assert not rt.sgemm_cached or rt.packs_made() > 0
        a = rng.standard_normal((256, 512)).astype("float32")
        b = rng.standard_normal((512, 512)).astype("float32")
        f = kiln.hybridize(lambda a, b: np.dot(a, b), backend="c", strict=True)
        onp.testing.assert_allclose(f(np.array(a), np.array(b)).asnumpy(), a @ b,
                                    rtol=1e-4, atol=1e-3)
        big = np.ones((1200, 1000))
        for _ in range(3):
            (big * 2).asnumpy()
        assert array_cache.stats()["hits"] > 0
        print("clean", rt.blas, rt.packs_made() if rt.sgemm_cached else "no packs")
    """, tmp_path)
    assert "AddressSanitizer" not in res.stderr, res.stderr[-4000:]
    assert res.returncode == 0, res.stderr[-4000:]
    assert "clean" in res.stdout


def test_programs_with_run_time_sizes_run_clean_under_asan(tmp_path):
    """One program at many sizes (backend/c/sized_program.py): the arena grows, the dense
    chain and the oneDNN blocks take their turns, and a training step runs its last
    smaller batch."""
    res = run_under_asan("""
        import numpy as onp, kiln
        from kiln import np, autograd
        from kiln.gluon import nn, Trainer, loss as gloss
        def mlp(widths, in_units):
            net = nn.HybridSequential()
            for k, w in enumerate(widths):
                net.add(nn.Dense(w, activation="relu" if k < len(widths) - 1 else None,
                                 in_units=in_units))
                in_units = w
            net.initialize()
            return net
        net = mlp((256, 128, 10), 64)
        net.hybridize(backend="c", dynamic_axes={"x": {0: "batch"}})
        for b in (3, 1, 0, 8, 300, 2, 1000, 7, 64):
            x = np.array(onp.random.rand(b, 64).astype("float32"))
            onp.testing.assert_allclose(net(x).asnumpy(), net.forward(x).asnumpy(),
                                        rtol=1e-4, atol=1e-5)
        assert len(kiln.programs(net)) == 1
        net = mlp((32, 10), 20)
        net.hybridize(backend="c", dynamic_axes={0: {0: "batch"}})
        trainer = Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
        loss = gloss.SoftmaxCrossEntropyLoss()
        for b in (16, 16, 5, 16):
            x = np.array(onp.random.rand(b, 20).astype("float32"))
            y = np.array(onp.random.randint(0, 10, b).astype("float32"))
            with autograd.record():
                out = loss(net(x), y)
            out.backward()
            trainer.step(b)
        assert len(kiln.programs(net)) == 1
        print("done")
    """, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "done" in res.stdout
