"""hybridize's modules moved from kiln/graph to kiln/hybrid; the old paths still import,
with a DeprecationWarning, and give the same module objects (kiln/mx/alias.py, MOVED)."""
import importlib
import sys

import pytest

import kiln


@pytest.mark.parametrize("name", ["cached", "explain", "fallback"])
def test_old_graph_path_is_the_hybrid_module(name):
    sys.modules.pop(f"kiln.graph.{name}", None)
    with pytest.warns(DeprecationWarning, match=f"kiln.hybrid.{name}"):
        old = importlib.import_module(f"kiln.graph.{name}")
    assert old is importlib.import_module(f"kiln.hybrid.{name}")


def test_old_names_still_resolve():
    for name in ("cached", "explain"):
        sys.modules.pop(f"kiln.graph.{name}", None)
    with pytest.warns(DeprecationWarning):
        from kiln.graph.cached import hybridize
    with pytest.warns(DeprecationWarning):
        from kiln.graph.explain import explain
    assert hybridize is kiln.hybridize and explain is kiln.explain
