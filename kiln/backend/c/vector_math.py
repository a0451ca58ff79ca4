"""Whether generated programs vectorize their transcendental functions with glibc's libmvec.

exp, log, erf, tanh, sin, cos and pow (and what is made of them: sigmoid, GELU and the
gradients) call kiln_vm_* functions (csrc/vector_math.h). With libmvec they run 8 or 16
elements per call on AVX2 or AVX-512; without it they are libm's scalar functions, the
same results to within the documented 4 ulp. libmvec is part of glibc on x86-64 (erff and
tanhf since glibc 2.35); a probe program, compiled and run once per machine (a marker
file beside the compile cache keeps the answer), decides, so an older glibc, another C
library or a machine without AVX2 simply runs the scalar functions. KILN_VECTOR_MATH=0
turns it off (tests compare both).
"""
import ctypes
import hashlib
import os
import platform
import re
import subprocess
import tempfile
import threading

from ..._core.base import KilnError
from . import build, fixed_source

FLAGS = ("-DKILN_LIBMVEC", "-lmvec")

_PROBE = """
#if !defined(__AVX2__) || !defined(__FMA__)
#error "libmvec's kernels need AVX2 and FMA"
#endif
/* 1 when a vectorized loop of every function agrees with libm within 8 ulp */
int kiln_vm_probe(void) {
  float x[37], y[37], z[37];
  for (int i = 0; i < 37; i++) x[i] = -4.0f + 0.23f * i;
  for (int i = 0; i < 37; i++) y[i] = kiln_vm_erff(x[i]) + kiln_vm_tanhf(x[i])
      + kiln_vm_expf(x[i]) + kiln_vm_log_f(x[i] + 5.0f) + kiln_vm_powf(x[i] + 5.0f, 1.5f)
      + kiln_vm_sinf(x[i]) + kiln_vm_cosf(x[i]) + (float)(kiln_vm_exp(x[i])
      + kiln_vm_log(x[i] + 5.0) + kiln_vm_erf(x[i]) + kiln_vm_tanh(x[i]) + kiln_vm_sin(x[i])
      + kiln_vm_cos(x[i]));
  for (int i = 0; i < 37; i++) z[i] = erff(x[i]) + tanhf(x[i]) + expf(x[i])
      + logf(x[i] + 5.0f) + powf(x[i] + 5.0f, 1.5f) + sinf(x[i]) + cosf(x[i])
      + (float)(exp(x[i]) + log(x[i] + 5.0) + erf(x[i]) + tanh(x[i]) + sin(x[i])
      + cos(x[i]));
  for (int i = 0; i < 37; i++)
    if (!(fabsf(y[i] - z[i]) <= 1e-5f * (1.0f + fabsf(z[i])))) return 0;
  return 1;
}
"""

_decided = []
_lock = threading.Lock()


def enabled():
    """Do generated programs use libmvec on this machine (and is it not turned off)?"""
    if os.environ.get("KILN_VECTOR_MATH", "1") in ("0", "", "off"):
        return False
    with _lock:
        if not _decided:
            _decided.append(_probe())
        return _decided[0]


# what one call of a vectorized math function (exp, tanh, a sigmoid...) costs in an elementwise
# loop, in loads/stores/arithmetic of one element; with libmvec's AVX-512 kernels a float
# tanh or sigmoid takes about as long as 8-10 adds of a loop limited by memory
CALL_COST = 8
_CALLS = re.compile(r"\bkiln_(?:vm_\w+|sigmoid\w*)\(")


def loop_work(elements, statements):
    """The work of an elementwise loop over `elements` running these C statements per
    element: the elements, plus each element's calls of vector math at CALL_COST. A gate
    loop of an LSTM step (32x256 elements, three sigmoids or tanhs each) is worth running
    on several threads; a loop of as many multiplies is not."""
    return elements * (1 + CALL_COST * len(_CALLS.findall("\n".join(statements))))


def flags():
    """The compiler flags that switch generated programs to libmvec, when enabled()."""
    return FLAGS if enabled() else ()


def _probe():
    """Compile and run the probe program once per machine, compiler and flags; remember
    the answer beside the compile cache (a marker file, not a cached library)."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return False
    try:
        cc, version = build.compiler()
    except KilnError:
        return False
    source = "#include <math.h>\n#include <stdint.h>\n" + fixed_source.text(
        "vector_math.h") + _PROBE
    flags = ("-O2",) + build.FLAGS + FLAGS + ("-Wl,--no-undefined",)
    digest = hashlib.sha256("\0".join((cc, version, source, " ".join(flags),
                                        _cpu_flags())).encode()).hexdigest()[:24]
    try:
        marker = os.path.join(build.cache_dir(), f"libmvec-{digest}")
        for answer in (True, False):
            if os.path.exists(f"{marker}.{'yes' if answer else 'no'}"):
                return answer
    except OSError:
        return False
    answer = _compile_and_run(cc, flags, source)
    try:
        with open(f"{marker}.{'yes' if answer else 'no'}", "w"):
            pass
    except OSError:
        pass
    return answer


def _compile_and_run(cc, flags, source):
    with tempfile.TemporaryDirectory(prefix="kiln-libmvec-") as tmp:
        out = os.path.join(tmp, "probe.so")
        try:
            res = subprocess.run([cc, *flags, "-x", "c", "-o", out, "-", "-lm"], input=source,
                                 capture_output=True, text=True, timeout=120)
            if res.returncode != 0:
                return False
            lib = ctypes.CDLL(out)
            lib.kiln_vm_probe.restype = ctypes.c_int
            return lib.kiln_vm_probe() == 1
        except (OSError, subprocess.SubprocessError, AttributeError):
            return False


def _cpu_flags():
    # what -march=native depends on, so a cache shared by machines keeps an answer each
    try:
        with open("/proc/cpuinfo") as f:
            return next((line for line in f if line.startswith("flags")), "")
    except OSError:
        return ""
