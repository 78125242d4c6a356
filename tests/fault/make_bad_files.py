"""Writes damaged variants of a real ranktune results file, for tests/fault/bad_files.sh.

usage: make_bad_files.py GOOD.h5 OUTDIR SEED [COUNT]

Each file name says its damage and its kind:
  must-*   every reader must refuse it (exit 5): empty, not HDF5, foreign HDF5, wrong
           schema, truncated, one byte flipped in checksummed metadata;
  raw-*    one byte flipped in table data (HDF5 keeps no checksum there): the reader may
           read it (rc 0) or refuse it (rc 5), never crash or hang.
Metadata is everything outside the datasets' chunks, as h5py reports them.
"""
import os
import random
import sys

import h5py
import numpy as np

good, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
count = int(sys.argv[4]) if len(sys.argv) > 4 else 20
rng = random.Random(seed)
os.makedirs(out, exist_ok=True)
data = open(good, "rb").read()
size = len(data)


def put(name, content):
    with open(os.path.join(out, name), "wb") as f:
        f.write(content)


put("must-empty.h5", b"")
put("must-text.h5", b"trial_id,loss\n1,0.5\n" * 50)
put("must-signature-only.h5", data[:8])
put("must-zeros.h5", bytes(size))

with h5py.File(os.path.join(out, "must-foreign.h5"), "w") as f:
    f["images"] = np.arange(1000, dtype=np.float32).reshape(10, 100)
    f.attrs["creator"] = "some other tool"
with h5py.File(os.path.join(out, "must-foreign-tables.h5"), "w", libver="latest") as f:
    f.attrs["schema_version"] = 1  # ours, but the tables are missing or wrong
    f["trials"] = np.zeros(3, dtype=[("trial_id", "<i8")])
with h5py.File(os.path.join(out, "must-schema-99.h5"), "w", libver="latest") as f:
    f.attrs["schema_version"] = 99

# Byte ranges of table data: flips there are not detectable by HDF5.
raw = []
with h5py.File(good, "r", swmr=True) as f:
    for name in ("trials", "results", "events", "workers"):
        dsid = f[name].id
        for i in range(dsid.get_num_chunks()):
            info = dsid.get_chunk_info(i)
            raw.append((info.byte_offset, info.byte_offset + info.size))
raw.sort()


def in_raw(offset):
    return any(lo <= offset < hi for lo, hi in raw)


cuts = {8, 47, 100, 1000, size // 2, size - 1}
while len(cuts) < count + 6:
    cuts.add(rng.randrange(1, size))
for cut in sorted(cuts):
    put(f"must-truncated-{cut}.h5", data[:cut])

meta = [o for o in range(size) if not in_raw(o)]
for offset in sorted(rng.sample(meta, min(count, len(meta)))):
    bad = bytearray(data)
    bad[offset] ^= 1 << rng.randrange(8)
    put(f"meta-flip-{offset}.h5", bytes(bad))
for lo, hi in raw[: max(1, count // 4)]:
    offset = rng.randrange(lo, hi)
    bad = bytearray(data)
    bad[offset] ^= 0xFF
    put(f"raw-flip-{offset}.h5", bytes(bad))
