"""The C library cache is keyed on the generated code, not on its comments."""
import numpy as onp
import pytest

from kiln import np
from kiln.backend.c import build
from kiln.gluon import nn


def _net():
    net = nn.HybridSequential()
    # sizes no other test uses, so no library for this code is loaded before the test
    net.add(nn.Dense(37, activation="relu"), nn.Dense(23, activation="tanh"), nn.Dense(3))
    net.initialize()
    return net


def test_comments_do_not_enter_the_key():
    code = "int kiln_run(void **P) {\n  /* relu -> relu12 */\n  return 0;\n}\n"
    assert build._without_comments(code) == \
        build._without_comments(code.replace("relu12", "relu96"))
    assert build._without_comments(code) != build._without_comments(code.replace("0;", "1;"))


def test_second_instance_of_a_network_reuses_the_compiled_library(tmp_path, monkeypatch):
    try:
        build.compiler()
    except build.CompilerUnavailable:
        pytest.skip("no C compiler")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path))
    programs = []
    real_compile = build._compile

    def counting_compile(cc, flags, source, path):
        if "kiln_run" in source:
            programs.append(source)
        return real_compile(cc, flags, source, path)
    monkeypatch.setattr(build, "_compile", counting_compile)
    x = np.array(onp.random.RandomState(0).randn(2, 11).astype(onp.float32))
    for _ in range(2):   # node names (relu<n>) differ between the two traces
        net = _net()
        expected = net(x).asnumpy()
        net.hybridize(backend="c")
        onp.testing.assert_allclose(net(x).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert len(programs) == 1


@pytest.fixture
def csrc_copy(tmp_path, monkeypatch):
    """A copy of kiln/backend/c/csrc that the test may edit, read in its place."""
    import shutil
    from kiln.backend.c import fixed_source
    copy = tmp_path / "csrc"
    shutil.copytree(fixed_source.CSRC, copy)
    monkeypatch.setattr(fixed_source, "CSRC", copy)
    fixed_source.text.cache_clear()
    yield copy
    monkeypatch.undo()
    fixed_source.text.cache_clear()


def test_a_change_in_the_fixed_c_changes_the_key(csrc_copy, tmp_path, monkeypatch):
    """The fixed C is part of the hashed source: an edited csrc file is compiled anew."""
    import kiln
    from kiln.backend.c import fixed_source, runtime
    try:
        build.compiler()
    except build.CompilerUnavailable:
        pytest.skip("no C compiler")
    monkeypatch.setenv("KILN_CACHE_DIR", str(tmp_path / "cache"))
    programs = []
    real_compile = build._compile

    def counting_compile(cc, flags, source, path):
        if "kiln_run" in source:
            programs.append(source)
        return real_compile(cc, flags, source, path)
    monkeypatch.setattr(build, "_compile", counting_compile)
    x = np.array(onp.arange(6, dtype=onp.float32).reshape(2, 3))
    marker = "static inline int kiln_test_marker(void) { return 29; }\n"
    runtime_before = runtime.source_for(64)
    for edit in ("", marker):
        prelude = csrc_copy / "program_prelude.h"
        prelude.write_text(prelude.read_text() + edit)
        (csrc_copy / "packed.c").write_text((csrc_copy / "packed.c").read_text() + edit)
        fixed_source.text.cache_clear()
        f = kiln.hybridize(lambda a: np.tanh(a) * 3 + 0.25, backend="c", strict=True)
        onp.testing.assert_allclose(f(x).asnumpy(), onp.tanh(x.asnumpy()) * 3 + 0.25,
                                    rtol=1e-6)
    assert len(programs) == 2 and marker in programs[1] and marker not in programs[0]
    assert runtime.source_for(64) != runtime_before
