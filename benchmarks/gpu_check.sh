#!/usr/bin/env bash
# The GPU checks, as one script for a lent GPU machine (see the `device` tool): build with
# CUDA, then check that workers bind GPUs by their node-local index and record it, and that
# the CPU-mode fallback still works with the devices hidden; then the mlp trainable's GPU
# path: the CUDA unit test (GPU against CPU, 3 epochs on 2,000 images, tolerance 2% of the
# losses and 2 points of accuracy, see benchmarks/README.md), one epoch of the full
# training split on the GPU and on the CPU with samples/s, and `ranktune eval` of one model
# on cuda:0 against the CPU (test accuracy within 0.2 points, loss within 1%) with latency;
# then examples/pytorch_ddp.py as a one-rank nccl trial on the GPU when PyTorch has CUDA.
# Prints one line per check and exits non-zero on the first failure. Budget: under 5 minutes (the build dominates).
# The lent machine cannot install packages: where /usr/share/datasets/fashion-mnist is
# missing, carry the four IDX files in .data/fashion-mnist (or set RANKTUNE_DATA_DIR).
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
mpirun -np $((workers + 1)) --oversubscribe --bind-to none "$bin" run tests/data/quickstart_branin.toml \
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
    # The GPU plugin (train/gpu_runtime.h) was opened: the stack has the loaded runtime and
    # driver, not the versions built against.
    assert "not loaded" not in stack["cuda"] and ", driver " in stack["cuda"], stack["cuda"]
    assert "not loaded" not in stack["nccl"], stack["nccl"]
    print("ok: the GPU plugin is loaded where a worker has a GPU")
else:
    print("skipped: no GPU visible, so only the CPU-mode record was checked")
PY

CUDA_VISIBLE_DEVICES="" mpirun -np 3 --oversubscribe --bind-to none "$bin" run tests/data/quickstart_branin.toml \
  --results "$out/cpu.h5" --set experiment.num_samples=4 --set stop.max_t=3 > "$out/cpu.txt" 2>&1 \
  || { cat "$out/cpu.txt"; echo "FAIL: CPU fallback run"; exit 1; }
"$py" -c "
import sys, h5py
f = h5py.File(sys.argv[1], 'r')
assert f['stack'].attrs['device_mode'] == b'cpu', f['stack'].attrs['device_mode']
assert all(d == b'cpu' for d in f['workers']['device'])
print('ok: CPU mode with the devices hidden')" "$out/cpu.h5"
# --- the mlp trainable on the GPU -------------------------------------------------------
if [[ -z "${RANKTUNE_DATA_DIR:-}" && ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz \
      && -f .data/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  export RANKTUNE_DATA_DIR=$PWD/.data/fashion-mnist
fi
cmake --build "$build" -j"$(nproc)" --target mlp_test bench_mlp > /dev/null
"$build/tests/mlp_test" --gtest_filter='MlpCuda.*' > "$out/mlp_cuda.txt" 2>&1 \
  || { cat "$out/mlp_cuda.txt"; echo "FAIL: MlpCuda unit test"; exit 1; }
if (( gpus > 0 )); then
  grep -q "no GPU" "$out/mlp_cuda.txt" && { cat "$out/mlp_cuda.txt"; echo "FAIL: the mlp fell back to the CPU on a GPU machine"; exit 1; }
  echo "ok: MlpCuda unit test (GPU vs CPU within tolerance, GPU checkpoint round trip)"
  gpu_out=$("$build/benchmarks/bench_mlp" --device cuda:0 --epochs 2)
  echo "$gpu_out"
  grep -q "path cuda:0" <<<"$gpu_out" || { echo "FAIL: bench_mlp did not run on cuda:0"; exit 1; }
  cpu_out=$("$build/benchmarks/bench_mlp" --device cpu --threads "$(nproc)" --epochs 2)
  echo "$cpu_out"
  "$py" - "$gpu_out" "$cpu_out" <<'PY'
import sys
def last(text):
    line = [l for l in text.splitlines() if l.startswith("epoch")][-1].split()
    return dict(zip(line[2::2], map(float, line[3::2])))
g, c = last(sys.argv[1]), last(sys.argv[2])
print("mlp 784-256-128-10 batch 128, epoch 2: GPU %.0f samples/s, CPU %.0f samples/s (%.1fx); val_accuracy %.4f vs %.4f"
      % (g["samples_per_s"], c["samples_per_s"], g["samples_per_s"] / c["samples_per_s"], g["val_accuracy"], c["val_accuracy"]))
assert abs(g["val_accuracy"] - c["val_accuracy"]) < 0.02, "GPU and CPU accuracies differ by 2 points or more"
assert abs(g["val_loss"] - c["val_loss"]) < 0.05 * c["val_loss"], "GPU and CPU val_loss differ by 5% or more"
print("ok: one epoch on the GPU agrees with the CPU")
PY
  # ranktune eval on the GPU: a model trained on the CPU, restored onto cuda:0, must score
  # as on the CPU (only the summation order differs) and be timed there.
  cmake --build "$build" -j"$(nproc)" --target ranktune > /dev/null
  CUDA_VISIBLE_DEVICES="" "$bin" run benchmarks/eval_latency.toml --np 1 --results "$out/eval.h5" > "$out/eval_run.txt" 2>&1 \
    || { cat "$out/eval_run.txt"; echo "FAIL: training the model to evaluate"; exit 1; }
  "$bin" eval "$out/eval.h5" --device cuda:0 --batch-sizes 1,128,1024 --format json --no-record > "$out/eval_gpu.json" \
    || { echo "FAIL: ranktune eval --device cuda:0"; exit 1; }
  "$bin" eval "$out/eval.h5" --device cpu --threads "$(nproc)" --batch-sizes 1,128,1024 --format json --no-record > "$out/eval_cpu.json" \
    || { echo "FAIL: ranktune eval --device cpu"; exit 1; }
  "$py" - "$out/eval_gpu.json" "$out/eval_cpu.json" <<'PY'
import json, sys
g, c = (json.load(open(p))["evaluations"][0] for p in sys.argv[1:3])
assert g["path"] == "cuda:0", g["path"]
for e, name in ((g, "GPU"), (c, "CPU")):
    lat = ", ".join("b%d p50 %.3f ms %.0f/s" % (l["batch_size"], l["p50_ms"], l["samples_per_s"]) for l in e["latency"])
    print("eval %s: test_accuracy %.4f test_loss %.4f; %s" % (name, e["metrics"]["test_accuracy"], e["metrics"]["test_loss"], lat))
assert abs(g["metrics"]["test_accuracy"] - c["metrics"]["test_accuracy"]) <= 0.002, "GPU and CPU test accuracy differ"
assert abs(g["metrics"]["test_loss"] - c["metrics"]["test_loss"]) <= 0.01 * c["metrics"]["test_loss"], "test loss differs"
print("ok: ranktune eval on cuda:0 agrees with the CPU")
PY
else
  echo "skipped: no GPU visible, so only the mlp's CPU fall-back was checked"
fi
# --- a PyTorch DDP script on one GPU with nccl ----------------------------------------------
# examples/pytorch_ddp.py as a one-rank trial (ranks_per_trial = 1): ranktune narrows
# CUDA_VISIBLE_DEVICES to the worker's GPU, so the script sees cuda:0 and picks nccl. A
# two-rank nccl gang needs two GPUs: those gangs are checked with gloo only
# (tests/mpi/pytorch_ddp.sh). Needs a PyTorch built with CUDA for $py (Debian's is CPU-only).
if (( gpus > 0 )) && "$py" -c "import sys, torch, torch.distributed as d
sys.exit(0 if torch.cuda.is_available() and d.is_nccl_available() else 1)" 2>/dev/null; then
  "$bin" run configs/pytorch_ddp.toml --np 1 --results "$out/ddp.h5" --set resources.ranks_per_trial=1 \
    --set experiment.num_samples=1 --set "trainable.command=[\"$py\", \"../examples/pytorch_ddp.py\"]" \
    > "$out/ddp.txt" 2>&1 || { cat "$out/ddp.txt"; echo "FAIL: examples/pytorch_ddp.py on one GPU"; exit 1; }
  "$py" - "$out/ddp.h5" <<'PY'
import sys, h5py
path = sys.argv[1]
with h5py.File(path, "r") as f:
    t = f["trials"][:]
    r = f["results"][:]
log = open(f"{path}.logs/trial_1_attempt_0.log").read()
assert "rank 0 of 1: backend nccl on cuda:0" in log, log[-600:]
assert t["status"][0] == b"TERMINATED" and len(r) == 3, (t["status"], len(r))
print("pytorch_ddp.py on cuda:0 with nccl: val_accuracy %s" % ", ".join("%.3f" % v for v in r["val_accuracy"]))
assert r["val_accuracy"][-1] > 0.5, "the CNN did not learn on the GPU"
print("ok: a PyTorch DDP trial on one GPU with nccl")
PY
else
  echo "skipped: no GPU, or no PyTorch with CUDA and NCCL for $py, so the PyTorch DDP step did not run"
fi
echo "gpu_check: all checks passed"
