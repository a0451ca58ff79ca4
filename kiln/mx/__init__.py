"""MXNet 1.x: everything only code written for MXNet 1.x needs, as packages by topic.

`nd` and `sym` (the NDArray and Symbol namespaces, also the `F` of hybrid_forward), `mod`
(Module), `image`, `recordio`, `callback`, `model`, `monitor`, `operator`, `profiler`,
`visualization`, `kvstore`, `test_utils`, the op-name tables (`ops`) and the `mxnet` alias
(`alias`). It builds on kiln's packages below it; nothing below imports it (an
import-linter contract in pyproject.toml checks that). Users reach it through kiln's
public paths (`kiln.nd`, `kiln.image`, `import mxnet`), which alias.py resolves.
"""
from . import nd, sym
from .sym import symbol_block  # noqa: F401  (registers MXNet Symbols with gluon.SymbolBlock)
from .rnn import gluon_symbolic  # noqa: F401  (registers Gluon's recurrent cells on Symbols)
from .._core import autograd as _autograd
from ..gluon import f_namespace

f_namespace.use(nd, sym)    # gluon's hybrid_forward(F, x) gets MXNet 1.x's namespaces
# MXNet's autograd.py has no __all__ and imports NDArray and Symbol at module level, so
# `from mxnet.autograd import *` gives them to MXNet code, which uses them
_autograd.NDArray, _autograd.Symbol = nd.NDArray, sym.Symbol
# MXNet's NDArray attribute, kept by the tape (kiln/_core/autograd.py)
nd.NDArray._fresh_grad = property(_autograd.grad_is_fresh, _autograd.set_grad_fresh)
