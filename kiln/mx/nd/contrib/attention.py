"""MXNet's interleaved attention matmuls (`nd.contrib.interleaved_matmul_selfatt_qk`, ...,
used by GluonNLP's 1.x transformers). The projections arrive interleaved per head:
(seq, batch, heads * 3 * head_dim) for self-attention, laid out (heads, q/k/v, head_dim).
Scores are (batch * heads, query, key), the queries scaled by 1/sqrt(head_dim). Composed of
reshapes, transposes and batched matmuls, so they differentiate and trace."""
import math

from .... import np as knp


def _split_heads(x, heads, parts):
    """(L, B, heads * parts * d) -> `parts` arrays of (B * heads, L, d)."""
    length, batch, width = x.shape
    d = width // (heads * parts)
    y = knp.reshape(x, (length, batch, heads, parts, d))
    y = knp.transpose(y, (3, 1, 2, 0, 4))                  # (parts, B, heads, L, d)
    return [knp.reshape(y[p], (batch * heads, length, d)) for p in range(parts)], d


def _merge_heads(x, heads, batch):
    """(B * heads, L, d) -> (L, B, heads * d)."""
    bh, length, d = x.shape
    y = knp.reshape(x, (batch, heads, length, d))
    return knp.reshape(knp.transpose(y, (2, 0, 1, 3)), (length, batch, heads * d))


def _scores(q, k, d):
    return knp.matmul(q * (1.0 / math.sqrt(d)), knp.swapaxes(k, 1, 2))


def interleaved_matmul_selfatt_qk(queries_keys_values, heads=1, **_):
    """Self-attention scores per head, `q @ k.T / sqrt(head_dim)`, from queries, keys and values
    interleaved in one (seq, batch, heads * 3 * head_dim) array."""
    (q, k, _v), d = _split_heads(knp.asarray(queries_keys_values), int(heads), 3)
    return _scores(q, k, d)


def interleaved_matmul_selfatt_valatt(queries_keys_values, attention, heads=1, **_):
    """The attention-weighted values per head, `attention @ v`, with `v` from the interleaved
    queries/keys/values, merged back to (seq, batch, heads * head_dim)."""
    qkv = knp.asarray(queries_keys_values)
    (_q, _k, v), _ = _split_heads(qkv, int(heads), 3)
    return _merge_heads(knp.matmul(knp.asarray(attention), v), int(heads), qkv.shape[1])


def interleaved_matmul_encdec_qk(queries, keys_values, heads=1, **_):
    """Encoder-decoder attention scores per head, `q @ k.T / sqrt(head_dim)`, from `queries` and
    interleaved keys/values."""
    (q,), d = _split_heads(knp.asarray(queries), int(heads), 1)
    (k, _v), _ = _split_heads(knp.asarray(keys_values), int(heads), 2)
    return _scores(q, k, d)


def interleaved_matmul_encdec_valatt(keys_values, attention, heads=1, **_):
    """The attention-weighted values per head, `attention @ v`, with `v` from interleaved
    keys/values, merged back to (seq, batch, heads * head_dim)."""
    kv = knp.asarray(keys_values)
    (_k, v), _ = _split_heads(kv, int(heads), 2)
    return _merge_heads(knp.matmul(knp.asarray(attention), v), int(heads), kv.shape[1])
