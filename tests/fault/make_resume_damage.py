"""Writes damaged copies of a stopped run's results file, for tests/fault/resume_damaged.sh.

usage: make_resume_damage.py GOOD.h5 OUTDIR SEED

Every copy must be refused by `ranktune run --resume` (exit 5, a reason naming the file),
and left byte for byte as it was. One line per copy goes to stdout: NAME WORDS, where WORDS
(+ for spaces) must appear in the refusal. The damage is done on the bytes, as
a disk or a copy would do it: table data is located with h5py (chunk offsets), then the
copy is edited with plain file writes.
  truncated-P         cut to P per cent of its size (75: the case of issue 13)
  trial-id-8-to-0     one bit of /trials row 7's trial_id cleared: the row reads unwritten
  trial-id-8-to-9     one bit set: row 7 claims trial 9
  trial-row-twice     /trials row 6 copied over row 7: trial 7 twice (report refuses it too)
  result-twice        a /results row copied over the next one: a (trial, attempt, iteration) twice
  result-zeros        the first /results rows zeroed (what the old resume left after a truncation)
  state-bit           one bit of the newest experiment state flipped: fails its CRC-32C
"""
import os
import random
import sys

import h5py

good, out, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
rng = random.Random(seed)
os.makedirs(out, exist_ok=True)
data = open(good, "rb").read()

with h5py.File(good, "r") as f:
    trials, results = f["trials"], f["results"]
    assert trials.compression is None and results.compression is None
    assert len(trials) >= 9 and len(results) >= 4, (len(trials), len(results))

    def row_offset(ds, row):
        """File offset of row `row` of a chunked, unfiltered 1-D table."""
        chunk = ds.chunks[0]
        info = ds.id.get_chunk_info_by_coord((row - row % chunk,))
        return info.byte_offset + (row % chunk) * ds.dtype.itemsize

    trial_size = trials.dtype.itemsize
    trial_id = trials.dtype.fields["trial_id"][1]
    row7 = row_offset(trials, 7) + trial_id
    row6_start, row7_start = row_offset(trials, 6), row_offset(trials, 7)
    r = rng.randrange(0, len(results) - 1)
    result_size = results.dtype.itemsize
    result_a, result_b = row_offset(results, r), row_offset(results, r + 1)
    result_first = row_offset(results, 0)
    # The newest experiment state: a /state row over /state_data (files from before /state:
    # a /checkpoints row of trial 0 over /checkpoint_data).
    if "state" in f:
        newest = max(f["state"][:], key=lambda c: c["sequence"])
        sequence, cd = int(newest["sequence"]), f["state_data"]
    else:
        rows = f["checkpoints"][:]
        states = [c for c in rows if c["trial_id"] == 0 and not c["dropped"]]
        newest = max(states, key=lambda c: c["iteration"])
        sequence, cd = int(newest["iteration"]), f["checkpoint_data"]
    chunk = cd.chunks[0]
    at = int(newest["offset"]) + rng.randrange(int(newest["size"]))
    state_byte = cd.id.get_chunk_info_by_coord((at - at % chunk,)).byte_offset + at % chunk


def put(name, words, content):
    with open(os.path.join(out, name + ".h5"), "wb") as f:
        f.write(content)
    print(name, words)


def edited(*edits):
    bad = bytearray(data)
    for offset, new in edits:
        bad[offset:offset + len(new)] = new
    return bytes(bad)


for p in (50, 75, 90, 99):
    put(f"truncated-{p}", "truncated", data[: len(data) * p // 100])
assert data[row7] == 8, data[row7]
put("trial-id-8-to-0", "/trials+row+7+was+never+written", edited((row7, bytes([0]))))
put("trial-id-8-to-9", "holds+trial_id+9", edited((row7, bytes([9]))))
put("trial-row-twice", "holds+trial_id+7", edited((row7_start, data[row6_start:row6_start + trial_size])))
put("result-twice", "both+record", edited((result_b, data[result_a:result_a + result_size])))
put("result-zeros", "a+row+of+zeros", edited((result_first, bytes(4 * result_size))))
put("state-bit", f"experiment+state+{sequence}+fails+its+checksum",
    edited((state_byte, bytes([data[state_byte] ^ (1 << rng.randrange(8))]))))
