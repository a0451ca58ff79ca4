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
