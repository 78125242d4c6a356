"""An independent numpy forward pass of ranktune's mlp, for the tests that check `ranktune
eval`'s figures: the checkpoint format (train/mlp_trainable.cc: tag, layer sizes, activation,
then W (out x in) and b per layer) and Debian's Fashion-MNIST test set, read without ranktune."""
import gzip
import struct

import numpy as np

FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def load_checkpoint(path):
    """(sizes, activation, parameters) of an exported mlp checkpoint.bin."""
    raw = open(path, "rb").read()
    assert raw[:8] == b"mlp-ckp1", raw[:8]
    at = 8
    (n,) = struct.unpack_from("<Q", raw, at); at += 8
    sizes = struct.unpack_from("<%di" % n, raw, at); at += 4 * n
    (act,) = struct.unpack_from("<i", raw, at); at += 4
    (count,) = struct.unpack_from("<Q", raw, at); at += 8
    return sizes, act, np.frombuffer(raw, dtype="<f4", count=count, offset=at)


def test_set(folder=FASHION_MNIST):
    """The t10k images (uint8, one row of pixels each) and labels."""
    x = np.frombuffer(gzip.open(folder + "/t10k-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(-1, 784)
    y = np.frombuffer(gzip.open(folder + "/t10k-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
    return x, y


def forward(checkpoint, inputs):
    """The logits of `inputs` (float32 rows) through the checkpoint's layers."""
    sizes, act, p = checkpoint
    h, off = inputs, 0
    for l in range(len(sizes) - 1):
        i, o = sizes[l], sizes[l + 1]
        W = p[off:off + i * o].reshape(o, i); off += i * o
        b = p[off:off + o]; off += o
        h = h @ W.T + b
        if l < len(sizes) - 2:
            h = np.tanh(h) if act == 1 else np.maximum(h, 0)
    assert off == len(p), (off, len(p))
    return h


def mean_cross_entropy(logits, y):
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return float(-logp[np.arange(len(y)), y].mean())
