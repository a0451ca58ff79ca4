"""kiln's fixed C files compile cleanly with -Wall -Wextra -Werror.

The C backend's fixed C (kiln/backend/c/csrc) reaches the compiler inside larger sources:
kiln/backend/c/fixed_source.py expands the quoted includes between the files. Here each
file that no other file includes is compiled as a translation unit of its own, by the
compiler's own preprocessor, with the defines and include paths kiln gives it; the
compiler's dependency list then shows that every file in csrc/ was compiled that way.
kiln/export/csrc/main.c, which build-c copies beside a generated model, is compiled
against a model.h written by the exporter.
"""
import math
import os
import re
import shutil
import subprocess
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

from kiln.backend.c import fixed_source, runtime
from kiln.export import standalone_c

CSRC = fixed_source.CSRC
EXPORT_CSRC = Path(standalone_c.__file__).parent / "csrc"
WARNINGS = ("-Wall", "-Wextra", "-Werror")
# the flags kiln compiles with that change what the code means (build.FLAGS), at -O2 so
# that the warnings which need the optimizer's analysis are given too
BASE = ("-std=c99", "-O2", "-fPIC", "-fno-math-errno", "-fno-trapping-math", "-fopenmp-simd",
        "-fwrapv")
MACHINE = os.uname().machine


def _compiler():
    cc = os.environ.get("CC") or "cc"
    if shutil.which(cc) is None:
        return None
    try:
        ok = subprocess.run([cc, "-x", "c", "-c", "-o", os.devnull, "-"],
                            input="int kiln_probe(void) { return 0; }\n", text=True,
                            capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return None
    return cc if ok else None


CC = _compiler()
needs_cc = pytest.mark.skipif(CC is None, reason="no working C compiler")


def _included(directory, name):
    return re.findall(r'^#include "([^"]+)"', (directory / name).read_text(), re.M)


def _roots():
    names = sorted(p.name for p in CSRC.iterdir() if p.suffix in (".c", ".h"))
    included = {i for n in names for i in _included(CSRC, n)}
    return [n for n in names if n not in included]


def _python_headers():
    import numpy
    include = sysconfig.get_paths()["include"]
    if not os.path.exists(os.path.join(include, "Python.h")):
        return None
    return ["-pthread", f"-I{include}", f"-I{numpy.get_include()}"]


def _defines(values):
    return [f"-D{name}={value}" for name, value in values.items()]


def _variants(name):
    """[(label, extra flags)] under which kiln compiles csrc/<name>."""
    if name == "runtime.c":       # once per BLAS integer width (runtime.source_for)
        return [(f"blas{bits}", ["-pthread", *_defines(runtime.defines_for(bits))])
                for bits in (32, 64)]
    if name == "fastcall.c":
        flags = _python_headers()
        return [("", flags)] if flags is not None else []
    if name == "array_cache.c":
        return [("", ["-pthread"])]
    if name == "sized_dnnl.h":     # after the grid's constants (dnnl_dense.grid_defines)
        from kiln.backend.c import dnnl_dense
        return [("", ["-Wno-unused-function", *_defines(dnnl_dense.grid_defines())])]
    # a header alone does not call its static functions; its includers do
    flags = ["-Wno-unused-function"] if name.endswith(".h") else []
    if name == "dot.h" and MACHINE in ("x86_64", "AMD64"):
        # the AVX-512 vectors and the plain fallback, whatever this machine has
        return [("avx512", flags + ["-mavx512f"]), ("plain", flags + ["-mno-avx512f"])]
    if name == "program_prelude.h" and MACHINE in ("x86_64", "AMD64"):
        # vector_math.h: libmvec's AVX-512 and AVX2 variants, and plain libm
        avx2 = ["-mavx2", "-mfma", "-mno-avx512f"]
        return [("libmvec-avx512", flags + ["-DKILN_LIBMVEC", "-mavx2", "-mfma", "-mavx512f"]),
                ("libmvec-avx2", flags + ["-DKILN_LIBMVEC"] + avx2), ("libm", flags)]
    if name in ("attention.h", "normalization.h") and MACHINE in ("x86_64", "AMD64"):
        # put in a program after program_prelude.h, whose vector_math.h gives kiln_vm_exp*
        after = flags + ["-include", "math.h", "-include", str(CSRC / "vector_math.h")]
        return [("libmvec-avx512", after + ["-DKILN_LIBMVEC", "-mavx2", "-mfma", "-mavx512f"]),
                ("libmvec-avx2", after + ["-DKILN_LIBMVEC", "-mavx2", "-mfma", "-mno-avx512f"]),
                ("libm", after)]
    return [("", flags + ["-march=native"])]


def _compile(source, flags, tmp_path, language="c"):
    deps = tmp_path / "deps.d"
    res = subprocess.run([CC, *BASE, *WARNINGS, *flags, "-x", language, "-c",
                          "-o", str(tmp_path / "out.o"), "-MMD", "-MF", str(deps), str(source)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-4000:]
    return {Path(p).name for p in deps.read_text().replace("\\\n", " ").split()[1:]}


@needs_cc
def test_every_csrc_file_compiles_cleanly_in_a_root(tmp_path):
    files = {p.name for p in CSRC.iterdir() if p.suffix in (".c", ".h")}
    reached = set()
    for name in _roots():
        variants = _variants(name)
        if not variants:      # fastcall.c without the Python headers: kiln skips it too
            files -= {name, *_included(CSRC, name)}
        for label, flags in variants:
            work = tmp_path / f"{name}-{label}"
            work.mkdir()
            reached |= _compile(CSRC / name, flags, work)
    assert files - reached == set(), "csrc files that no translation unit includes"


def _tensor(name, shape):
    """What standalone_c._header reads of a graph's input or output node."""
    return SimpleNamespace(name=name, shape=shape, size=math.prod(shape))


@needs_cc
def test_standalone_main_compiles_cleanly_against_a_model_header(tmp_path):
    graph = SimpleNamespace(inputs=[_tensor("x", (2, 3)), _tensor("y", (4,))],
                            outputs=[_tensor("out", (2, 2))])
    (tmp_path / "model.h").write_text(standalone_c._header(graph))
    shutil.copy(EXPORT_CSRC / "main.c", tmp_path / "main.c")
    _compile(tmp_path / "main.c", [f"-I{tmp_path}"], tmp_path)
    assert sorted(p.name for p in EXPORT_CSRC.iterdir()) == ["main.c"]


@needs_cc
def test_standalone_main_compiles_cleanly_against_a_header_with_run_time_sizes(tmp_path):
    graph = SimpleNamespace(inputs=[_tensor("x", (2, 3))], outputs=[_tensor("out", (2, 2))],
                            shape_env=SimpleNamespace(symbols={"batch": 2, "seq": 3}))
    header = standalone_c._header(graph)
    assert "#define KILN_MODEL_NUM_SIZES 2" in header
    (tmp_path / "model.h").write_text(header)
    shutil.copy(EXPORT_CSRC / "main.c", tmp_path / "main.c")
    _compile(tmp_path / "main.c", [f"-I{tmp_path}"], tmp_path)


def test_fixed_source_expands_quoted_includes_and_drops_file_headers(tmp_path):
    (tmp_path / "a.c").write_text('/* a: for readers */\nint a;\n#include "b.h"\n'
                                  '#include <stdint.h>\n')
    (tmp_path / "b.h").write_text("/* b: for readers */\nint b; /* kept */\n")
    assert fixed_source._expand(tmp_path, "a.c", set()) == \
        "int a;\nint b; /* kept */\n#include <stdint.h>\n"
    (tmp_path / "c.c").write_text('#include "b.h"\n#include "b.h"\n')
    with pytest.raises(ValueError, match="included twice"):
        fixed_source._expand(tmp_path, "c.c", set())
    (tmp_path / "d.c").write_text('#include "missing.h"\n')
    with pytest.raises(FileNotFoundError, match="missing.h"):
        fixed_source._expand(tmp_path, "d.c", set())


def test_every_root_expands_to_one_translation_unit():
    for name in _roots():
        text = fixed_source.text(name)
        assert '#include "' not in text, name
        assert not text.lstrip().startswith("/*"), name   # the file's header comment went
