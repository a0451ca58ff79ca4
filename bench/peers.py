"""The seed MLP (512-256-128-2, ReLU) in every installed peer runtime, same weights.

Each builder takes the weights as NumPy arrays [(W, b), ...] with W of shape (out, in) and
returns (name, zero-argument call, note) tuples; peers that are not installed are skipped.
"""
import importlib.util
import os
import time

import numpy as onp

# Peers share two cores with kiln in one process. Their thread pools must not spin while
# someone else runs: an OpenMP pool that busy-waits after torch ran made every later
# measurement 10-100x slower. Inductor's parallel compile workers likewise.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")


def _have(mod):
    return importlib.util.find_spec(mod) is not None


def numpy_reference(weights, x):
    def run():
        h = x
        for k, (w, b) in enumerate(weights):
            h = h @ w.T + b
            if k < len(weights) - 1:
                onp.maximum(h, 0, out=h)
        return h
    return run


def torch_peers(weights, x, with_compile=True):
    if not _have("torch"):
        return []
    import torch
    torch.set_num_threads(2)
    layers = []
    for k, (w, b) in enumerate(weights):
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(w))
            lin.bias.copy_(torch.from_numpy(b))
        layers.append(lin)
        if k < len(weights) - 1:
            layers.append(torch.nn.ReLU())
    net = torch.nn.Sequential(*layers).eval()
    tx = torch.from_numpy(x)
    out = []

    def eager():
        with torch.inference_mode():
            return net(tx)
    out.append(("PyTorch eager (inference_mode)", eager, ""))
    scripted = torch.jit.script(net)

    def script():
        with torch.inference_mode():
            return scripted(tx)
    out.append(("torch.jit.script", script, ""))
    if with_compile:
        compiled = torch.compile(net)
        start = time.perf_counter()
        with torch.inference_mode():
            compiled(tx)
        first = time.perf_counter() - start

        def comp():
            with torch.inference_mode():
                return compiled(tx)
        out.append(("torch.compile", comp, f"first call {first:.1f} s"))
    return out


def jax_peers(weights, x):
    if not _have("jax"):
        return []
    import jax
    import jax.numpy as jnp
    params = [(jnp.asarray(w), jnp.asarray(b)) for w, b in weights]

    @jax.jit
    def mlp(p, h):
        for k, (w, b) in enumerate(p):
            h = h @ w.T + b
            if k < len(p) - 1:
                h = jax.nn.relu(h)
        return h
    jx = jnp.asarray(x)
    mlp(params, jx).block_until_ready()
    return [("JAX jit", lambda: mlp(params, jx).block_until_ready(), "")]


def onnxruntime_peers(weights, x):
    if not (_have("onnxruntime") and _have("onnx")):
        return []
    from onnx import helper, TensorProto, numpy_helper
    import onnxruntime as ort
    nodes, inits = [], []
    prev = "x"
    for k, (w, b) in enumerate(weights):
        inits += [numpy_helper.from_array(w, f"w{k}"), numpy_helper.from_array(b, f"b{k}")]
        nodes.append(helper.make_node("Gemm", [prev, f"w{k}", f"b{k}"], [f"h{k}"], transB=1))
        prev = f"h{k}"
        if k < len(weights) - 1:
            nodes.append(helper.make_node("Relu", [prev], [f"r{k}"]))
            prev = f"r{k}"
    graph = helper.make_graph(nodes, "mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                             ["N", x.shape[1]])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, None)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what every onnxruntime release of the last years accepts
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    sess = ort.InferenceSession(model.SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    feed = {"x": x}
    return [("ONNX Runtime", lambda: sess.run(None, feed), "")]
