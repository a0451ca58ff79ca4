"""The book's own library (`pip install --no-deps d2l==1.0.3`) on kiln, through the alias.

Small stand-ins in the published file formats replace the datasets (no network here):
gzip IDX files for Fashion-MNIST, a tab-separated airfoil file, a fra-eng.zip.
"""
import hashlib
import zipfile

import numpy as onp
import pytest

pytest.importorskip("d2l")
for _module in ("pandas", "matplotlib", "requests", "IPython", "matplotlib_inline"):
    pytest.importorskip(_module, reason="`from d2l import mxnet` imports it (dev extra)")
pytest.importorskip("PIL", reason="transforms.Resize needs Pillow (image extra)")

import kiln  # noqa: E402
from kiln.mx import alias as mxnet_alias  # noqa: E402

from vision_files import write_mnist  # noqa: E402


@pytest.fixture(scope="module")
def d2l():
    pytest.importorskip("kiln.gluon.rnn", reason="gluon.rnn is not in this tree")
    import matplotlib
    matplotlib.use("Agg")  # d2l draws its progress plots; no display here
    mxnet_alias.install()
    from d2l import mxnet as d2l_mxnet
    yield d2l_mxnet
    mxnet_alias.uninstall()


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """d2l keeps data in ../data (relative to the notebook) and Fashion-MNIST under
    MXNET_HOME; both point into a temp dir."""
    (tmp_path / "work").mkdir()
    (tmp_path / "data").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setenv("MXNET_HOME", str(tmp_path / "mxnet"))
    monkeypatch.setenv("KILN_DATASET_VERIFY", "0")
    return tmp_path


@pytest.fixture
def fashion(d2l, workdir):
    written = write_mnist(str(workdir / "mxnet" / "datasets" / "fashion-mnist"),
                          n_train=192, n_test=64)
    data = d2l.FashionMNIST(batch_size=32, resize=(32, 32))
    data.num_workers = 2
    return data, written


def _val_loss_and_accuracy(model, data):
    losses, accs = [], []
    for X, y in data.val_dataloader():
        y_hat = model(X)
        losses.append(float(model.loss(y_hat, y)))
        accs.append(float(model.accuracy(y_hat, y)))
    return onp.mean(losses), onp.mean(accs)


def test_fashion_mnist_with_resize(fashion):
    from PIL import Image
    data, written = fashion
    X, y = next(iter(data.get_dataloader(train=False)))
    assert X.shape == (32, 1, 32, 32) and X.dtype == onp.float32 and y.dtype == onp.int32
    images, labels = written["t10k"]
    expected = onp.asarray(Image.fromarray(images[5]).resize((32, 32), Image.BILINEAR))
    onp.testing.assert_allclose(X.asnumpy()[5, 0], expected / 255.0, atol=1e-6)
    onp.testing.assert_array_equal(y.asnumpy(), labels[:32])
    assert data.text_labels([0, 9]) == ["t-shirt", "ankle boot"]


def test_softmax_regression_trains(d2l, fashion):
    data, _ = fashion
    model = d2l.SoftmaxRegression(num_outputs=10, lr=0.1)
    d2l.Trainer(max_epochs=3).fit(model, data)
    loss, acc = _val_loss_and_accuracy(model, data)
    assert loss < 1.0 and acc > 0.6  # the band's row gives the label away


def test_lenet_and_resnet_style_classifiers_train(d2l, fashion):
    from mxnet import init, npx
    from mxnet.gluon import nn
    data, _ = fashion

    class ResNet(d2l.Classifier):  # the shape of the book's ResNet, smaller
        def __init__(self, arch, lr=0.1, num_classes=10):
            super().__init__()
            self.save_hyperparameters()
            self.net = nn.Sequential()
            self.net.add(nn.Conv2D(8, kernel_size=3, strides=2, padding=1), nn.BatchNorm(),
                         nn.Activation("relu"))
            for i, (num_residuals, channels) in enumerate(arch):
                blk = nn.Sequential()
                for j in range(num_residuals):
                    first = j == 0 and i > 0
                    blk.add(d2l.Residual(channels, use_1x1conv=first, strides=2 if first else 1))
                self.net.add(blk)
            self.net.add(nn.GlobalAvgPool2D(), nn.Dense(num_classes))
            self.net.initialize(init.Xavier())

    for model in (d2l.LeNet(lr=0.9), ResNet(((1, 8), (1, 16)), lr=0.05)):
        before, _ = _val_loss_and_accuracy(model, data) if model.net[0].weight.shape[1] \
            else (None, None)
        d2l.Trainer(max_epochs=2).fit(model, data)
        after, _ = _val_loss_and_accuracy(model, data)
        assert onp.isfinite(after)
        if before is not None:
            assert after < before
        X, _ = next(iter(data.val_dataloader()))
        assert model(X).shape == (32, 10)
    assert npx.num_gpus() == 0 and d2l.try_gpu() == npx.cpu()


def test_get_data_ch11_and_train_ch11(d2l, workdir):
    rs = onp.random.RandomState(0)
    X = rs.rand(400, 5)
    y = X @ onp.array([1.0, -2.0, 0.5, 3.0, -1.0]) + 0.05 * rs.randn(400)
    path = workdir / "data" / "airfoil_self_noise.dat"
    onp.savetxt(path, onp.column_stack([X, y]), delimiter="\t", fmt="%.6f")
    url = d2l.DATA_HUB["airfoil"][0]
    d2l.DATA_HUB["airfoil"] = (url, hashlib.sha1(path.read_bytes()).hexdigest())
    data_iter, feature_dim = d2l.get_data_ch11(batch_size=10, n=400)
    assert feature_dim == 5

    def sgd(params, states, hyperparams):
        for p in params:
            p[:] -= hyperparams["lr"] * p.grad

    _, losses = d2l.train_ch11(sgd, None, {"lr": 0.05}, data_iter, feature_dim, 2)
    # zero weights would score 0.5 on standardized targets; the noise floor is far below
    assert losses[-1] < losses[0] and losses[-1] < 0.01


def test_rnn_scratch(d2l):
    from mxnet import np
    rnn = d2l.RNNScratch(num_inputs=4, num_hiddens=6)
    X = np.ones((5, 2, 4))  # (num_steps, batch, inputs)
    outputs, state = rnn(X)
    assert len(outputs) == 5 and outputs[0].shape == (2, 6) and state.shape == (2, 6)
    H = onp.zeros((2, 6))
    for _ in range(5):
        H = onp.tanh(onp.ones((2, 4)) @ rnn.W_xh.asnumpy() + H @ rnn.W_hh.asnumpy()
                     + rnn.b_h.asnumpy())
    onp.testing.assert_allclose(state.asnumpy(), H, rtol=1e-5, atol=1e-6)


def test_rnn_on_gru_layer(d2l):
    from mxnet import np
    gru = d2l.GRU(num_hiddens=8, num_layers=2)
    gru.initialize()
    X = np.random.normal(size=(5, 3, 4))
    outputs, H = gru(X)
    assert outputs.shape == (5, 3, 8) and H.shape == (2, 3, 8)  # (layers, batch, hidden)
    vanilla = d2l.RNN(num_hiddens=8)
    vanilla.initialize()
    out, state = vanilla(X)
    assert out.shape == (5, 3, 8)


def _fra_eng_zip(folder, n=160):
    words_en = ["go", "run", "stop", "wait", "help", "jump"]
    words_fr = ["va", "cours", "arrete", "attends", "aide", "saute"]
    rs = onp.random.RandomState(0)
    lines = []
    for _ in range(n):
        idx = rs.randint(0, 6, rs.randint(1, 4))
        lines.append(" ".join(words_en[i] for i in idx) + " .\t"
                     + " ".join(words_fr[i] for i in idx) + " .")
    path = folder / "fra-eng.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("fra-eng/fra.txt", "\n".join(lines) + "\n")
    return path


def test_seq2seq_encoder_decoder_trains(d2l, workdir, monkeypatch):
    from mxnet import init, np
    from mxnet.gluon import nn
    zip_path = _fra_eng_zip(workdir / "data")
    real_download = d2l.download

    def local_download(url, folder="../data", sha1_hash=None):
        # the stand-in's hash differs from the book's; everything after the download is real
        if url.endswith("fra-eng.zip"):
            return str(zip_path)
        return real_download(url, folder, sha1_hash)
    monkeypatch.setattr(d2l, "download", local_download)
    data = d2l.MTFraEng(batch_size=16, num_steps=6, num_train=128, num_val=32)

    class Seq2SeqDecoder(d2l.Decoder):  # the book's decoder (sec_seq2seq)
        def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, embed_size)
            self.rnn = d2l.GRU(num_hiddens, num_layers, dropout)
            self.dense = nn.Dense(vocab_size, flatten=False)
            self.initialize(init.Xavier())

        def init_state(self, enc_all_outputs, *args):
            return enc_all_outputs

        def forward(self, X, state):
            embs = self.embedding(d2l.transpose(X).astype(np.int32))
            enc_output, hidden_state = state
            context = np.tile(enc_output[-1], (embs.shape[0], 1, 1))
            outputs, hidden_state = self.rnn(d2l.concat((embs, context), -1), hidden_state)
            return d2l.swapaxes(self.dense(outputs), 0, 1), [enc_output, hidden_state]

    encoder = d2l.Seq2SeqEncoder(len(data.src_vocab), 8, 16, 2)
    decoder = Seq2SeqDecoder(len(data.tgt_vocab), 8, 16, 2)
    model = d2l.Seq2Seq(encoder, decoder, tgt_pad=data.tgt_vocab["<pad>"], lr=0.01)
    batch = next(iter(data.val_dataloader()))
    before = float(model.loss(model(*batch[:-1]), batch[-1]))
    d2l.Trainer(max_epochs=3, gradient_clip_val=1).fit(model, data)
    after = float(model.loss(model(*batch[:-1]), batch[-1]))
    assert after < before
    preds, _ = model.predict_step(batch, kiln.cpu(), data.num_steps)
    assert preds.shape == (16, data.num_steps)


def test_multi_head_attention_and_transformer_encoder(d2l):
    from mxnet import np
    attention = d2l.MultiHeadAttention(num_hiddens=16, num_heads=4, dropout=0.0)
    attention.initialize()
    X = np.random.normal(size=(2, 5, 16))
    Y = np.random.normal(size=(2, 7, 16))
    valid_lens = np.array([3, 2])
    out = attention(X, Y, Y, valid_lens)
    assert out.shape == (2, 5, 16)
    # keys past valid_len get no weight: changing them changes nothing
    Y2 = Y.copy()
    Y2[:, 3:] = 100.0
    onp.testing.assert_allclose(attention(X, Y2, Y2, valid_lens).asnumpy(), out.asnumpy(),
                                rtol=1e-5, atol=1e-5)
    encoder = d2l.TransformerEncoder(vocab_size=50, num_hiddens=16, ffn_num_hiddens=32,
                                     num_heads=4, num_blks=2, dropout=0.1)
    tokens = np.ones((2, 6))
    assert encoder(tokens, np.array([3, 6])).shape == (2, 6, 16)
    assert encoder.attention_weights[1].shape == (8, 6, 6)
