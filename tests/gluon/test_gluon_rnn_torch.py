"""gluon.rnn layers against PyTorch's nn.RNN / nn.LSTM / nn.GRU with mapped weights:
outputs and the gradients of inputs, initial states and every parameter, eagerly and
hybridized on both backends (hybridized must also equal eager)."""
import numpy as np
import pytest

import kiln
from kiln.backend.c import build as c_build
from kiln import autograd
from kiln.gluon import rnn
from test_backend_c_control import assert_compiled

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::kiln.graph.capture.KilnTraceWarning")

MODES = ["rnn_relu", "rnn_tanh", "lstm", "gru"]
T, N, C, H = 5, 3, 4, 6


def make_pair(mode, num_layers, bidirectional, layout, seed=0):
    batch_first = layout == "NTC"
    if mode == "lstm":
        ours = rnn.LSTM(H, num_layers, layout=layout, bidirectional=bidirectional)
        theirs = torch.nn.LSTM(C, H, num_layers, bidirectional=bidirectional,
                               batch_first=batch_first)
    elif mode == "gru":
        ours = rnn.GRU(H, num_layers, layout=layout, bidirectional=bidirectional)
        theirs = torch.nn.GRU(C, H, num_layers, bidirectional=bidirectional,
                              batch_first=batch_first)
    else:
        act = mode.split("_")[1]
        ours = rnn.RNN(H, num_layers, activation=act, layout=layout,
                       bidirectional=bidirectional)
        theirs = torch.nn.RNN(C, H, num_layers, nonlinearity=act, bidirectional=bidirectional,
                              batch_first=batch_first)
    ours.initialize()
    ours(kiln.np.zeros((T, N, C) if layout == "TNC" else (N, T, C)))   # deferred shapes
    rng = np.random.default_rng(seed)
    params = ours.collect_params()
    for name in params.keys():
        params[name].set_data(kiln.np.array(rng.uniform(-0.5, 0.5, params[name].shape)
                                            .astype("float32")))
    # the documented mapping (kiln/gluon/rnn/rnn_layer.py): one to one, no reordering
    with torch.no_grad():
        for name, tensor in theirs.named_parameters():
            kind, _, layer = name.split("_")[:3]
            direction = "r" if name.endswith("_reverse") else "l"
            which = {"ih": "i2h", "hh": "h2h"}[name.split("_")[1]]
            ours_name = f"{direction}{layer[1:]}_{which}_{kind}"
            tensor.copy_(torch.from_numpy(params[ours_name].data().asnumpy()))
    return ours, theirs


def data(mode, num_layers, bidirectional, layout, seed=1):
    rng = np.random.default_rng(seed)
    shape = (T, N, C) if layout == "TNC" else (N, T, C)
    x = rng.normal(size=shape).astype("float32")
    n_states = 2 if mode == "lstm" else 1
    d = 2 if bidirectional else 1
    states = [rng.normal(size=(num_layers * d, N, H)).astype("float32") * 0.5
              for _ in range(n_states)]
    heads = [rng.normal(size=(T, N, H * d) if layout == "TNC" else (N, T, H * d))
             .astype("float32")] + [rng.normal(size=s.shape).astype("float32") for s in states]
    return x, states, heads


def run_torch(theirs, mode, x, states, heads, with_states):
    xt = torch.tensor(x, requires_grad=True)
    st = [torch.tensor(s, requires_grad=True) for s in states]
    if with_states:
        out, new = theirs(xt, (st[0], st[1]) if mode == "lstm" else st[0])
        new = list(new) if mode == "lstm" else [new]
        loss = (out * torch.from_numpy(heads[0])).sum()
        for s, h in zip(new, heads[1:]):
            loss = loss + (s * torch.from_numpy(h)).sum()
    else:
        out, new = theirs(xt)
        loss = (out * torch.from_numpy(heads[0])).sum()
    loss.backward()
    grads = {name: p.grad.numpy().copy() for name, p in theirs.named_parameters()}
    return (out.detach().numpy(), [s.detach().numpy() for s in new], xt.grad.numpy(),
            [s.grad.numpy() if with_states else None for s in st], grads)


def run_kiln(ours, x, states, heads, with_states):
    xk = kiln.np.array(x)
    xk.attach_grad()
    sk = [kiln.np.array(s) for s in states]
    for s in sk:
        s.attach_grad()
    with autograd.record():
        if with_states:
            out, new = ours(xk, sk)
            loss = (out * kiln.np.array(heads[0])).sum()
            for s, h in zip(new, heads[1:]):
                loss = loss + (s * kiln.np.array(h)).sum()
        else:
            out = ours(xk)
            new = []
            loss = (out * kiln.np.array(heads[0])).sum()
    loss.backward()
    params = ours.collect_params()
    grads = {name: params[name].grad().asnumpy().copy() for name in params.keys()}
    return (out.asnumpy(), [s.asnumpy() for s in new], xk.grad.asnumpy(),
            [s.grad.asnumpy() if with_states else None for s in sk], grads)


def torch_name(name):
    direction, rest = name[0], name[1:]
    layer, which, kind = rest.split("_")
    suffix = "_reverse" if direction == "r" else ""
    return f"{kind}_{ {'i2h': 'ih', 'h2h': 'hh'}[which]}_l{layer}{suffix}"


def check(got, want, rtol=2e-4, atol=2e-5, rename=torch_name):
    out, new, gx, gs, gp = got
    out_t, new_t, gx_t, gs_t, gp_t = want
    np.testing.assert_allclose(out, out_t, rtol=rtol, atol=atol)
    for a, b in zip(new, new_t):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    np.testing.assert_allclose(gx, gx_t, rtol=rtol, atol=atol)
    for a, b in zip(gs, gs_t):
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    assert len(gp) == len(gp_t)
    for name, g in gp.items():
        np.testing.assert_allclose(g, gp_t[rename(name)], rtol=rtol, atol=atol,
                                   err_msg=name)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("num_layers", [1, 2])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_eager_matches_torch(mode, num_layers, bidirectional):
    for layout in ("TNC", "NTC"):
        for with_states in (False, True):
            ours, theirs = make_pair(mode, num_layers, bidirectional, layout)
            x, states, heads = data(mode, num_layers, bidirectional, layout)
            want = run_torch(theirs, mode, x, states, heads, with_states)
            check(run_kiln(ours, x, states, heads, with_states), want)


# (num_layers, bidirectional, layout, with_states): between them, every value of each option
CONFIGS = [(1, False, "TNC", False), (2, True, "NTC", True), (1, True, "TNC", True),
           (2, False, "NTC", False)]


# the C backend compiles each case (a second or more cold), so it gets the first two
# configurations, which between them still cover every option value
CASES = [(config, "numpy") for config in CONFIGS] + [(config, "c") for config in CONFIGS[:2]]


@pytest.mark.parametrize("config,backend", CASES,
                         ids=["-".join(map(str, c)) + "-" + b for c, b in CASES])
@pytest.mark.parametrize("mode", MODES)
def test_hybridized_matches_torch_and_eager(mode, config, backend):
    if backend == "c" and not c_build.available():
        pytest.skip("no working C compiler: the C case would run on the NumPy executor")
    num_layers, bidirectional, layout, with_states = config
    ours, theirs = make_pair(mode, num_layers, bidirectional, layout)
    x, states, heads = data(mode, num_layers, bidirectional, layout)
    eager = run_kiln(ours, x, states, heads, with_states)
    ours.hybridize(backend=backend)
    hybrid = run_kiln(ours, x, states, heads, with_states)
    if backend == "c":
        assert_compiled(ours._kiln_cached)
    check(hybrid, run_torch(theirs, mode, x, states, heads, with_states))
    check(hybrid, eager, rtol=1e-5, atol=1e-6, rename=lambda name: name)
