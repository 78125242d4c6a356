"""Fuzzing seeds beside the real results files: the same content re-written by h5py in
HDF5's oldest format (version 0 superblock, no metadata checksums), contiguous and small.
A mutation there reaches HDF5's parsers instead of stopping at a checksum, and every
reader must survive files from other writers too.

usage: make_seeds.py GOOD.h5 OUT.h5
"""
import sys

import h5py

good, out = sys.argv[1], sys.argv[2]
with h5py.File(good, "r", swmr=True) as src, h5py.File(out, "w", libver="earliest") as dst:
    for key, value in src.attrs.items():
        dst.attrs[key] = value
    for name in ("trials", "results", "events", "workers"):
        data = src[name][:]
        dst.create_dataset(name, data=data[: min(len(data), 8)], maxshape=(None,), chunks=(4,))
    dst.create_group("stack")
    for key, value in src["stack"].attrs.items():
        dst["stack"].attrs[key] = value
