#!/usr/bin/env bash
# The GPU checks, as one script for a lent GPU machine (see the `device` tool): build with
# CUDA, then check that workers bind GPUs by their node-local index and record it, and that
# the CPU-mode fallback still works with the devices hidden. Prints one line per check and
# exits non-zero on the first failure. Budget: a few minutes (the build dominates).
#   benchmarks/gpu_check.sh [BUILD_DIR]   (default build-gpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-gpu}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
py=/usr/bin/python3
out=$(mktemp -d /tmp/ranktune-gpu.XXXXXX)
trap 'rm -rf "$out"' EXIT

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null \
  || echo "nvidia-smi: not available"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release > "$out/cmake.txt"
grep -q "ranktune: CUDA ON" "$out/cmake.txt" || { cat "$out/cmake.txt"; echo "FAIL: CUDA not found at configure time"; exit 1; }
cmake --build "$build" -j"$(nproc)" --target ranktune > /dev/null
bin="$build/apps/ranktune"
"$bin" --version

gpus=$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)
workers=$(( gpus > 0 ? gpus * 2 : 2 ))   # two workers per GPU: local_index mod devices
mpirun -np $((workers + 1)) --oversubscribe --bind-to none "$bin" run configs/quickstart.toml \
  --results "$out/gpu.h5" --set experiment.num_samples=8 --set stop.max_t=5 > "$out/run.txt" 2>&1 \
  || { cat "$out/run.txt"; echo "FAIL: GPU run"; exit 1; }
"$py" - "$out/gpu.h5" "$gpus" <<'PY'
import sys, h5py
path, gpus = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "r") as f:
    w = f["workers"][:]
    stack = {k: f["stack"].attrs[k].decode() for k in f["stack"].attrs}
print("stack: device_mode=%s gpus=%s cuda=%s nccl=%s" % (stack["device_mode"], stack["gpus"], stack["cuda"], stack["nccl"]))
for row in w:
    print("  rank %d local %d -> %s (%s)" % (row["rank"], row["local_index"], row["device"].decode(), row["device_name"].decode()))
if gpus > 0:
    assert stack["device_mode"] == "gpu", stack["device_mode"]
    for row in w:
        want = "cuda:%d" % (row["local_index"] % gpus)
        assert row["device"].decode() == want, (row["rank"], row["device"], want)
    print("ok: GPU binding by node-local index")
else:
    print("skipped: no GPU visible, so only the CPU-mode record was checked")
PY

CUDA_VISIBLE_DEVICES="" mpirun -np 3 --oversubscribe --bind-to none "$bin" run configs/quickstart.toml \
  --results "$out/cpu.h5" --set experiment.num_samples=4 --set stop.max_t=3 > "$out/cpu.txt" 2>&1 \
  || { cat "$out/cpu.txt"; echo "FAIL: CPU fallback run"; exit 1; }
"$py" -c "
import sys, h5py
f = h5py.File(sys.argv[1], 'r')
assert f['stack'].attrs['device_mode'] == b'cpu', f['stack'].attrs['device_mode']
assert all(d == b'cpu' for d in f['workers']['device'])
print('ok: CPU mode with the devices hidden')" "$out/cpu.h5"
echo "gpu_check: all checks passed"
