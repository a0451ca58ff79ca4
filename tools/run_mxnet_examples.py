"""Run Apache MXNet 1.9's quantization and AMP example scripts on kiln, under the `mxnet`
alias, with nothing fetched; report each run's result.

    python tools/run_mxnet_examples.py --source /path/to/mxnet.git [--rev v1.9.x]
                                       [--only NAME ...] [--timeout 900] [--keep DIR]

- `--source` is a git directory of apache/mxnet (bare is fine): example/quantization,
  example/automatic-mixed-precision and the image-classification `common` folder they link
  to are staged into a temporary folder with `git archive`. Nothing of MXNet's is kept in
  this repository.
- There is no network: the scripts' downloads find their files already there. The
  calibration/validation set `data/val_256_q90.rec` is written by this tool from kiln's
  bundled digits (8x8 images, upscaled to 40x40 RGB, labels 0-9) with kiln's RecordIO
  writer; the Gluon-CV model zoo the scripts import is a stand-in (`gluoncv` below) that
  builds kiln's model-zoo network of the same name with seeded random weights (there are
  no pretrained weights offline), so accuracies mean nothing; the runs check that the
  flows work end to end.
- Each run is its own process (kiln under the interpreter running this tool, the alias
  installed by a sitecustomize.py in the staged folder), with the scripts' own arguments
  for a small model: mobilenet0.25 on 3x32x32 images, batch 8.
Exit code 1 when a run expected to pass did not.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATHS = ("example/quantization", "example/automatic-mixed-precision",
         "example/image-classification/common", "example/image-classification/symbols")

SITECUSTOMIZE = "import kiln.mx.alias\nkiln.mx.alias.install()\n"

# Gluon-CV is not MXNet: a stand-in package with the names the scripts use
GLUONCV = {
    "__init__.py": '"""Stand-in for Gluon-CV (tools/run_mxnet_examples.py)."""\n'
                   "from . import model_zoo, utils  # noqa: F401\n",
    "utils.py": '"""Stand-in: the scripts import gluoncv.utils and use none of it."""\n',
    "model_zoo.py": '''"""Stand-in for Gluon-CV's model zoo: its names built by kiln's model zoo
(the `mxnet` alias); no network here, so `pretrained=True` gives seeded random weights."""
import logging

import mxnet as mx
from mxnet.gluon.model_zoo import vision


def get_model(name, pretrained=False, classes=1000, **kwargs):
    net = vision.get_model(name, classes=classes, **kwargs)
    if pretrained:
        logging.getLogger("gluoncv-stand-in").warning(
            "no network: %s gets seeded random weights, not pretrained ones", name)
    mx.random.seed(0)
    net.initialize(mx.init.Xavier(magnitude=2.0))
    net(mx.nd.zeros((1, 3, 64, 64)))   # the weights' shapes, as loaded ones would have
    # the scripts key parameters by param.name, which MXNet 1.x's model zoo makes equal to
    # the name the network's symbol gives them; kiln's model zoo names parameters
    # structurally ('features.0.weight', param.name 'weight'): a known gap, bridged here
    for key, param in net.collect_params().items():
        param._full_name = key
    return net
'''}

MODEL = "mobilenet0.25"
SHAPE = "3,32,32"
BATCH = "8"
MEAN, STD = "123.68,116.779,103.939", "58.393,57.12,57.375"
QUANT = "example/quantization"
AMP = "example/automatic-mixed-precision"
GEN = ["imagenet_gen_qsym_mkldnn.py", "--model", MODEL, "--batch-size", BATCH,
       "--image-shape", SHAPE, "--data-nthreads", "1", "--num-calib-batches", "2"]
INFER = ["imagenet_inference.py", "--ctx", "cpu", "--batch-size", BATCH, "--image-shape",
         SHAPE, "--data-nthreads", "1", "--num-inference-batches", "2", "--rgb-mean", MEAN,
         "--rgb-std", STD, "--dataset", "data/val_256_q90.rec"]
QPARAMS = f"model/{MODEL}-quantized-0000.params"
BENCH = ["imagenet_inference.py", "--ctx", "cpu", "--benchmark", "True", "--batch-size", BATCH,
         "--image-shape", SHAPE, "--num-inference-batches", "5"]

# MXNet's model zoo checkpoint imagenet_gen_qsym.py downloads, made here instead: the
# Inception-BN of MXNet's own example/image-classification/symbols (its 28x28 variant),
# with seeded Xavier weights, saved by Module.save_checkpoint (run under the alias)
INCEPTION_BN = """
import importlib.util, os, mxnet as mx
os.makedirs("model", exist_ok=True)
spec = importlib.util.spec_from_file_location("inception_bn",
    "../image-classification/symbols/inception-bn.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
net = mx.sym.SoftmaxOutput(module.get_symbol(10, "3,28,28").get_children()[0], name="softmax")
mod = mx.mod.Module(net, context=mx.cpu())
mod.bind(data_shapes=[("data", (1, 3, 28, 28))], label_shapes=[("softmax_label", (1,))],
         for_training=False)
mx.random.seed(0)
mod.init_params(mx.init.Xavier(magnitude=2.0))
mod.save_checkpoint("model/imagenet1k-inception-bn", 0)
"""
SYM_GEN = ["imagenet_gen_qsym.py", "--ctx", "cpu", "--model", "imagenet1k-inception-bn",
           "--batch-size", BATCH, "--image-shape", "3,28,28", "--data-nthreads", "1",
           "--num-calib-batches", "2"]
SYM_INFER = ["imagenet_inference.py", "--ctx", "cpu", "--batch-size", BATCH, "--image-shape",
             "3,28,28", "--data-nthreads", "1", "--num-inference-batches", "2",
             "--rgb-mean", MEAN, "--dataset", "data/val_256_q90.rec"]

# (name, folder, arguments, expected to pass); in order: a run may read an earlier one's files
RUNS = [
    ("gen_qsym_mkldnn naive", QUANT, GEN + ["--calib-mode", "naive"], True),
    ("inference float32", QUANT, INFER + ["--symbol-file", f"model/{MODEL}-symbol.json",
                                          "--param-file", f"model/{MODEL}-0000.params"], True),
    ("inference int8 naive", QUANT, INFER + [
        "--symbol-file", f"model/{MODEL}-quantized-2batches-naive-symbol.json",
        "--param-file", QPARAMS], True),
    # launch_inference_mkldnn.sh's benchmark: dummy data, the symbol's parameters initialized
    ("benchmark float32", QUANT, BENCH + ["--symbol-file", f"model/{MODEL}-symbol.json"], True),
    # the benchmark initializes every argument by its name: kiln's int8 weights and ranges
    # have MXNet's (..._weight_quantize, ..._weight_quantize_max)
    ("benchmark int8", QUANT, BENCH + [
        "--symbol-file", f"model/{MODEL}-quantized-2batches-naive-symbol.json"], True),
    ("gen_qsym_mkldnn entropy", QUANT, GEN + ["--calib-mode", "entropy"], True),
    ("inference int8 entropy", QUANT, INFER + [
        "--symbol-file", f"model/{MODEL}-quantized-2batches-entropy-symbol.json",
        "--param-file", QPARAMS], True),
    ("gen_qsym_mkldnn uint8 naive", QUANT, GEN + ["--calib-mode", "naive",
                                                  "--quantized-dtype", "uint8"], True),
    ("make inception-bn checkpoint", QUANT, ["-c", INCEPTION_BN], True),
    ("gen_qsym (symbolic model) naive", QUANT, SYM_GEN + ["--calib-mode", "naive"], True),
    ("inference int8 symbolic model", QUANT, SYM_INFER + [
        "--symbol-file", "model/imagenet1k-inception-bn-quantized-2batches-naive-symbol.json",
        "--param-file", "model/imagenet1k-inception-bn-quantized-0000.params"], True),
    ("gen_qsym (symbolic model) entropy", QUANT, SYM_GEN + ["--calib-mode", "entropy"], True),
    # no calibration data and no data shape on the symbol: kiln rewrites the graph
    ("gen_qsym_mkldnn none", QUANT, GEN + ["--calib-mode", "none"], True),
    ("inference int8 none", QUANT, INFER + [
        "--symbol-file", f"model/{MODEL}-quantized-symbol.json", "--param-file", QPARAMS], True),
    # convert_model on a symbol without a data shape: amp_cast nodes, as MXNet writes them
    ("inference bfloat16", QUANT, INFER + [
        "--symbol-file", f"model/{MODEL}-symbol.json",
        "--param-file", f"model/{MODEL}-0000.params", "--low-precision", "bfloat16"], True),
    # net.forward(x), export, amp.convert_hybrid_block(net) with MXNet's default arguments,
    # export. MXNet 1.9.1 itself fails this on a CPU build ("GPU is not enabled": the
    # function's default ctx is gpu(0), its default target float16); kiln's default target
    # is bfloat16, on the CPU, and the script has no argument to choose another
    ("amp_model_conversion gluon", AMP, ["amp_model_conversion.py", "--model", MODEL,
                                         "--use-gluon-model"], True),
]


def stage(source, rev, dest):
    archive = subprocess.run(["git", f"--git-dir={source}", "archive", rev, *PATHS],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)


def write_stand_ins(site):
    os.makedirs(os.path.join(site, "gluoncv"), exist_ok=True)
    with open(os.path.join(site, "sitecustomize.py"), "w") as f:
        f.write(SITECUSTOMIZE)
    for name, text in GLUONCV.items():
        with open(os.path.join(site, "gluoncv", name), "w") as f:
            f.write(text)


def write_digits_rec(path, size=40, count=64):
    """`count` of kiln's bundled digits as size x size RGB JPEGs in an indexed .rec."""
    import numpy as np
    from PIL import Image
    sys.path.insert(0, ROOT)
    from kiln.data import recordio
    from kiln.data.digits import load_arrays
    images, labels = load_arrays(train=False)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    rec = recordio.MXIndexedRecordIO(path[:-4] + ".idx", path, "w")
    for i in range(count):
        gray = (images[i].reshape(8, 8) * 255.0).astype(np.uint8)
        img = np.asarray(Image.fromarray(gray).resize((size, size)).convert("RGB"))
        header = recordio.IRHeader(0, float(labels[i]), i, 0)
        rec.write_idx(i, recordio.pack_img(header, img[:, :, ::-1], img_fmt=".jpg"))
    rec.close()


def run(name, cwd, args, env, timeout):
    start = time.time()
    try:
        proc = subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
        code, out = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = "timeout", (exc.stdout or b"").decode() + (exc.stderr or b"").decode()
    return code, out, time.time() - start


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", required=True, help="git directory of apache/mxnet")
    ap.add_argument("--rev", default="v1.9.x")
    ap.add_argument("--only", nargs="*", help="run only these (names as listed)")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--keep", help="stage here and keep it (default: a temporary folder)")
    ap.add_argument("--lines", type=int, default=6, help="output lines shown per run")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kiln-mxnet-examples-") as tmp:
        dest = a.keep or tmp
        os.makedirs(dest, exist_ok=True)
        stage(a.source, a.rev, dest)
        site = os.path.join(dest, "stand-ins")
        write_stand_ins(site)
        write_digits_rec(os.path.join(dest, QUANT, "data", "val_256_q90.rec"))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([site, ROOT]),
                   MPLBACKEND="Agg", PYTHONWARNINGS="ignore")
        unexpected = 0
        for name, folder, args, expected in RUNS:
            if a.only and name not in a.only:
                continue
            code, out, secs = run(name, os.path.join(dest, folder), args, env, a.timeout)
            passed = code == 0
            unexpected += passed != expected
            verdict = "ok" if passed else "FAILED" if expected else "fails (known)"
            print(f"== {name}: {verdict} (exit {code}, {secs:.0f} s)")
            shown = "<" + name + ">" if args[0] == "-c" else " ".join(args)
            print(f"   python {shown}   [in {folder}]")
            for line in [x for x in out.splitlines() if x.strip()][-a.lines:]:
                print("   | " + line[:200])
        print(f"{unexpected} run(s) other than expected")
        return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
