"""Low precision where the CPU lacks the instructions: oneDNN capped at AVX2 (no bfloat16
arithmetic, no VNNI) still gives the same values, from oneDNN's fallback kernels or from
NumPy with a one-time warning that says why; `python -m kiln info` names the ISA."""
import os
import subprocess
import sys

import pytest

from paths import ROOT

PROBE = r"""
import warnings
import numpy as onp
from kiln.backend.dnnl import lowp
from kiln.ops import REGISTRY
from kiln.ops.lowp import round_to_bfloat16
r = onp.random.default_rng(0)
a = r.standard_normal((64, 96)).astype("float32")
b = r.standard_normal((96, 32)).astype("float32")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    y = REGISTRY["matmul_bf16"].impl(a, b)
    y2 = REGISTRY["matmul_bf16"].impl(a, b)
want = round_to_bfloat16(a).astype("float64") @ round_to_bfloat16(b).astype("float64")
assert abs(y - want).max() <= 1e-4 * abs(want).max(), abs(y - want).max()
assert (y == y2).all()
slow = [w for w in caught if "no fast" in str(w.message)]
assert len(slow) <= 1, [str(w.message) for w in slow]
q = r.integers(-128, 128, (16, 96)).astype("int8")
w = r.integers(-127, 128, (96, 32)).astype("int8")
s = onp.full(32, 0.01, "float32")
got = lowp.matmul_int8(q, w, s)
ref = (q.astype("int32") @ w.astype("int32")).astype("float32") * s
assert got is None or onp.array_equal(got, ref)
print("isa", lowp.isa(), "warned", len(slow))
"""


def _run(code, **env):
    full = dict(os.environ, PYTHONPATH=str(ROOT), **env)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=full, timeout=300)


@pytest.mark.parametrize("isa", ["AVX2", "ALL"])
def test_bfloat16_and_int8_are_correct_whatever_the_isa(isa):
    pytest.importorskip("kiln.backend.dnnl.library").shim() or pytest.skip("no oneDNN")
    out = _run(PROBE, ONEDNN_MAX_CPU_ISA=isa)
    assert out.returncode == 0, out.stderr[-2000:]
    if isa == "AVX2":
        assert "isa avx2" in out.stdout


def test_kiln_info_names_onednn_isa():
    out = _run("import sys; from kiln.cli import main; sys.exit(main(['info']))")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "oneDNN: ISA " in out.stdout or "oneDNN: unavailable" in out.stdout
