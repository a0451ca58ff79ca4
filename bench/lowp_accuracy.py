"""The accuracy row of `python -m kiln bench lowp`: a small CNN with BatchNorm trained to
convergence on the bundled digits (kiln.data.digits: scikit-learn's 8x8 digits, a fixed
split of 1438 training and 359 test images).

  float32              trained EPOCHS epochs (Adam), the reference accuracy
  int8 naive/entropy   that network through quantize_net (BatchNorm folded into the
                       convolutions, int8 chains), calibrated on 10 training batches
  AMP bfloat16         the same network, init and data order, trained the same epochs
                       in mixed precision (amp.convert_hybrid_block + init_trainer)

Each low-precision row should be within 1 point of float32 (the issue's Done-when).
"""
import numpy as onp

from kiln import autograd, gluon, init, np, npx
from kiln.contrib import amp, quantization
from kiln.data.digits import load_arrays
from kiln.gluon import nn

EPOCHS = 20
BATCH = 64


def digits_cnn():
    net = nn.HybridSequential()
    net.add(nn.Conv2D(32, 3, padding=1, in_channels=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.Conv2D(32, 3, padding=1), nn.BatchNorm(), nn.Activation("relu"),
            nn.MaxPool2D(2), nn.Conv2D(64, 3, padding=1), nn.BatchNorm(),
            nn.Activation("relu"), nn.Flatten(), nn.Dense(64, activation="relu"),
            nn.Dense(10))
    return net


def _accuracy(net, x, y):
    return float((net(np.array(x)).asnumpy().argmax(axis=1) == y).mean())


def train(convert, epochs, seed=3):
    """(trained network, test accuracy); convert: AMP bfloat16."""
    xtr, ytr = load_arrays(train=True, flatten=False)
    xte, yte = load_arrays(train=False, flatten=False)
    onp.random.seed(seed)
    npx.random.seed(seed)       # the initial weights: the same in both trainings
    net = digits_cnn()
    net.initialize(init.Xavier())
    net.hybridize()
    if convert:
        amp.convert_hybrid_block(net, "bfloat16")
    trainer = gluon.Trainer(net.collect_params(), "adam", {"learning_rate": 2e-3})
    if convert:
        amp.init_trainer(trainer)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    order = onp.random.default_rng(seed)
    for _ in range(epochs):
        perm = order.permutation(len(xtr))
        for k in range(0, len(xtr) - BATCH + 1, BATCH):
            idx = perm[k:k + BATCH]
            with autograd.record():
                loss = loss_fn(net(np.array(xtr[idx])), np.array(ytr[idx].astype("float32")))
            loss.backward()
            trainer.step(len(idx))
    return net, _accuracy(net, xte, yte)


def rows(epochs=EPOCHS):
    """[(name, test accuracy)]: float32, int8 naive, int8 entropy, AMP bfloat16."""
    xtr, _ = load_arrays(train=True, flatten=False)
    xte, yte = load_arrays(train=False, flatten=False)
    net, f32 = train(False, epochs)
    out = [("float32", f32)]
    calib = [np.array(xtr[k:k + BATCH]) for k in range(0, 10 * BATCH, BATCH)]
    for mode in ("naive", "entropy"):
        quantization.quantize_net(net, calib_data=calib, calib_mode=mode)
        out.append((f"int8 ({mode} calibration)", _accuracy(net, xte, yte)))
    out.append(("AMP bfloat16 training", train(True, epochs)[1]))
    return out


def markdown(results, epochs=EPOCHS):
    f32 = results[0][1]
    lines = [f"### Accuracy: digits CNN with BatchNorm, {epochs} epochs, 359 test images", "",
             "| precision | test accuracy | points from float32 | within 1 point |",
             "| --- | ---: | ---: | --- |"]
    for name, acc in results:
        d = 100 * (acc - f32)
        lines.append(f"| {name} | {100 * acc:.2f}% | {d:+.2f} | "
                     f"{'yes' if d >= -1.0 else 'NO'} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(markdown(rows()))
