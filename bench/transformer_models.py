"""The transformer benchmark's models, in kiln (Gluon written the plain way) and PyTorch,
with the same weights: a BERT-base encoder layer and a GPT-2-small style decoder with a
key/value cache.

kiln's BERT layer is what a user writes: `Dense(flatten=False)`, `np.matmul`,
`npx.softmax`, `nn.LayerNorm`, `npx.gelu`, post-LayerNorm. The PyTorch layer is what a
PyTorch user writes today: `nn.Linear`, `F.scaled_dot_product_attention`, `nn.LayerNorm`,
`F.gelu`.

The decoder step takes fixed-size caches (max_len positions) and the position as an
input, so one compiled program serves every step: the new key and value go into the cache
with a select on the position, and the scores of positions after it are masked.
"""
import math

import numpy as onp

from kiln import np, npx
from kiln.gluon import nn

HIDDEN, HEADS, FFN = 768, 12, 3072


class BertLayer(nn.HybridBlock):
    def __init__(self, hidden=HIDDEN, heads=HEADS, ffn=FFN):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.qkv = nn.Dense(3 * hidden, flatten=False, in_units=hidden)
        self.proj = nn.Dense(hidden, flatten=False, in_units=hidden)
        self.ln1 = nn.LayerNorm(in_channels=hidden)
        self.ff1 = nn.Dense(ffn, flatten=False, in_units=hidden)
        self.ff2 = nn.Dense(hidden, flatten=False, in_units=ffn)
        self.ln2 = nn.LayerNorm(in_channels=hidden)

    def forward(self, x):
        b, t, _ = x.shape
        d = self.hidden // self.heads
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d).transpose(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = np.matmul(q, k.transpose(0, 1, 3, 2)) / math.sqrt(d)
        att = np.matmul(npx.softmax(scores, axis=-1), v)
        att = att.transpose(0, 2, 1, 3).reshape(b, t, self.hidden)
        x = self.ln1(x + self.proj(att))
        return self.ln2(x + self.ff2(npx.gelu(self.ff1(x))))


class BertEncoder(nn.HybridBlock):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.HybridSequential()
        for _ in range(layers):
            self.layers.add(BertLayer())

    def forward(self, x):
        return self.layers(x)


def torch_bert_layer(torch, layer):
    """A PyTorch module with the weights of kiln's BertLayer `layer`."""
    F = torch.nn.functional

    class Layer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
            self.proj = torch.nn.Linear(HIDDEN, HIDDEN)
            self.ln1 = torch.nn.LayerNorm(HIDDEN)
            self.ff1 = torch.nn.Linear(HIDDEN, FFN)
            self.ff2 = torch.nn.Linear(FFN, HIDDEN)
            self.ln2 = torch.nn.LayerNorm(HIDDEN)

        def forward(self, x):
            b, t, _ = x.shape
            qkv = self.qkv(x).view(b, t, 3, HEADS, HIDDEN // HEADS).permute(2, 0, 3, 1, 4)
            att = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2])
            x = self.ln1(x + self.proj(att.transpose(1, 2).reshape(b, t, HIDDEN)))
            return self.ln2(x + self.ff2(F.gelu(self.ff1(x))))

    net = Layer()
    copy_weights(torch, layer, net)
    return net


def copy_weights(torch, block, module):
    """kiln parameters into the PyTorch module's of the same structural names."""
    ours = {name: p.data().asnumpy() for name, p in block.collect_params().items()}
    with torch.no_grad():
        for name, p in module.named_parameters():
            key = name.replace(".weight", ".gamma" if _is_norm(name) else ".weight")
            key = key.replace(".bias", ".beta" if _is_norm(name) else ".bias")
            p.copy_(torch.from_numpy(ours[key]))


def _is_norm(name):
    return any(part.startswith("ln") for part in name.split("."))


# ---- GPT-2-small style decoder ------------------------------------------------------------

class DecoderBlock(nn.HybridBlock):
    """One pre-LayerNorm decoder block on one new token, with fixed-size caches."""

    def __init__(self, hidden=HIDDEN, heads=HEADS):
        super().__init__()
        self.hidden, self.heads = hidden, heads
        self.ln1 = nn.LayerNorm(in_channels=hidden)
        self.qkv = nn.Dense(3 * hidden, flatten=False, in_units=hidden)
        self.proj = nn.Dense(hidden, flatten=False, in_units=hidden)
        self.ln2 = nn.LayerNorm(in_channels=hidden)
        self.ff1 = nn.Dense(4 * hidden, flatten=False, in_units=hidden)
        self.ff2 = nn.Dense(hidden, flatten=False, in_units=4 * hidden)

    def forward(self, x, k_cache, v_cache, at):
        # x: (1, 1, H); caches: (1, heads, L, d); at: (1, 1, L, 1) one-hot of the position
        d = self.hidden // self.heads
        qkv = self.qkv(self.ln1(x)).reshape(1, 3, self.heads, 1, d)
        q, k, v = qkv[:, 0], qkv[:, 1], qkv[:, 2]
        k_cache = np.where(at > 0, k, k_cache)
        v_cache = np.where(at > 0, v, v_cache)
        # positions after this one are masked: cumsum of `at` from the end is 1 up to it
        seen = np.flip(np.cumsum(np.flip(at, axis=2), axis=2), axis=2)
        scores = np.matmul(q, k_cache.transpose(0, 1, 3, 2)) / math.sqrt(d)
        scores = np.where(seen.transpose(0, 1, 3, 2) > 0, scores, -1e9)
        att = np.matmul(npx.softmax(scores, axis=-1), v_cache).reshape(1, 1, self.hidden)
        x = x + self.proj(att)
        return x + self.ff2(npx.gelu(self.ff1(self.ln2(x)), approximation="tanh")), \
            k_cache, v_cache


class Decoder(nn.HybridBlock):
    """GPT-2 small's shape: 12 blocks, hidden 768, vocabulary 50,257, tied output."""

    def __init__(self, layers=12, vocab=50257, max_len=64):
        super().__init__()
        self.vocab, self.max_len = vocab, max_len
        self.wte = nn.Embedding(vocab, HIDDEN)
        self.wpe = nn.Embedding(max_len, HIDDEN)
        self.blocks = nn.HybridSequential()
        for _ in range(layers):
            self.blocks.add(DecoderBlock())
        self.ln_f = nn.LayerNorm(in_channels=HIDDEN)

    def forward(self, token, pos, at, k_caches, v_caches):
        # token, pos: (1, 1) int32; at: (1, 1, L, 1) float32; caches: (layers, 1, heads, L, d)
        x = self.wte(token) + self.wpe(pos)
        ks, vs = [], []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, k_caches[i], v_caches[i], at)
            ks.append(k)
            vs.append(v)
        logits = np.matmul(self.ln_f(x), self.wte.weight.data().T)
        return logits.reshape(-1), np.stack(ks), np.stack(vs)


def kiln_generate(net, prompt, new_tokens):
    """Greedy decoding: the prompt token by token, then new_tokens more; returns the ids."""
    layers, d = len(net.blocks), HIDDEN // HEADS
    shape = (layers, 1, HEADS, net.max_len, d)
    ks, vs = np.zeros(shape), np.zeros(shape)
    eye = onp.eye(net.max_len, dtype=onp.float32)
    out, token = [], prompt[0]
    for t in range(len(prompt) + new_tokens - 1):
        if t < len(prompt):
            token = prompt[t]
        logits, ks, vs = net(np.array([[token]], dtype="int32"),
                             np.array([[t]], dtype="int32"),
                             np.array(eye[t].reshape(1, 1, -1, 1)), ks, vs)
        if t >= len(prompt) - 1:
            token = int(logits.argmax().item())
            out.append(token)
    return out


def torch_decoder(torch, net):
    """PyTorch's version of kiln's Decoder `net` (same weights), with a growing cache as
    PyTorch code keeps one (torch.cat per step)."""
    F = torch.nn.functional

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = torch.nn.LayerNorm(HIDDEN)
            self.qkv = torch.nn.Linear(HIDDEN, 3 * HIDDEN)
            self.proj = torch.nn.Linear(HIDDEN, HIDDEN)
            self.ln2 = torch.nn.LayerNorm(HIDDEN)
            self.ff1 = torch.nn.Linear(HIDDEN, 4 * HIDDEN)
            self.ff2 = torch.nn.Linear(4 * HIDDEN, HIDDEN)

        def forward(self, x, cache):
            d = HIDDEN // HEADS
            q, k, v = self.qkv(self.ln1(x)).view(1, 1, 3, HEADS, d).permute(2, 0, 3, 1, 4)
            if cache is not None:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            att = F.scaled_dot_product_attention(q, k, v)
            x = x + self.proj(att.transpose(1, 2).reshape(1, 1, HIDDEN))
            return x + self.ff2(F.gelu(self.ff1(self.ln2(x)), approximate="tanh")), (k, v)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = torch.nn.Embedding(net.vocab, HIDDEN)
            self.wpe = torch.nn.Embedding(net.max_len, HIDDEN)
            self.blocks = torch.nn.ModuleList([Block() for _ in net.blocks])
            self.ln_f = torch.nn.LayerNorm(HIDDEN)

        def forward(self, token, pos, caches):
            x = self.wte(token) + self.wpe(pos)
            new = []
            for block, cache in zip(self.blocks, caches):
                x, c = block(x, cache)
                new.append(c)
            return (self.ln_f(x) @ self.wte.weight.T).reshape(-1), new

    model = Model().eval()
    ours = {name: p.data().asnumpy() for name, p in net.collect_params().items()}
    with torch.no_grad():
        for name, p in model.named_parameters():
            key = name
            if _is_norm(name) or name.startswith("ln_f"):
                key = key.replace(".weight", ".gamma").replace(".bias", ".beta")
            p.copy_(torch.from_numpy(ours[key]))
    return model


def torch_generate(torch, model, prompt, new_tokens):
    caches = [None] * len(model.blocks)
    out, token = [], prompt[0]
    with torch.inference_mode():
        for t in range(len(prompt) + new_tokens - 1):
            if t < len(prompt):
                token = prompt[t]
            logits, caches = model(torch.tensor([[token]]), torch.tensor([[t]]), caches)
            if t >= len(prompt) - 1:
                token = int(logits.argmax())
                out.append(token)
    return out
