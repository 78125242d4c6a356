#!/usr/bin/env bash
# Installs every dependency from Debian (as root), builds ranktune in Release into build/,
# and installs the `ranktune` binary into /usr/local/bin. Safe to run again: it installs
# only what is missing and rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git ca-certificates procps
  openmpi-bin libopenmpi-dev
  libhdf5-dev hdf5-tools
  libboost-mpi-dev libboost-serialization-dev
  libcli11-dev libtoml11-dev nlohmann-json3-dev
  libopenblas-dev zlib1g-dev
  libeigen3-dev  # CMA-ES (search/cmaes.cc), the Gaussian process of gp and pb2 (search/gaussian_process.cc)
  libarchive-dev
  slurm-wlm munge libpmix-dev
  iproute2 util-linux  # the multi-node tests: hosts as network namespaces (scripts/netns-cluster.sh)
  libgtest-dev libgmock-dev libbenchmark-dev
  gdb  # tests/mpi/lib.sh prints the backtrace of any ranktune core dump a test leaves
  python3 python3-numpy python3-h5py python3-pandas
  chromium python3-pil  # the HTML report's browser test renders it headless and reads the screenshot
  python3-optuna python3-cmaes python3-scipy python3-sklearn  # baselines of benchmarks/ (quality/: Optuna, its CMA-ES, Mann-Whitney) and the report's importance check
  python3-torch  # the PyTorch examples and their tests (optional: the tests skip without it)
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup.sh: missing packages: ${missing[*]}; run as root to install them" >&2
    exit 1
  fi
  echo "setup.sh: installing ${missing[*]}"
  apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$jobs"
if [[ -w /usr/local/bin ]]; then
  install -m 0755 build/apps/ranktune /usr/local/bin/ranktune
  # The GPU plugin (train/gpu_runtime.h), built when the CUDA toolkit is present: found by
  # the installed binary in ../lib/ranktune/.
  if [[ -f build/lib/libranktune_gpu.so ]]; then
    install -d /usr/local/lib/ranktune
    install -m 0755 build/lib/libranktune_gpu.so /usr/local/lib/ranktune/libranktune_gpu.so
  fi
  install -d /usr/local/share/ranktune/python/ranktune
  install -m 0644 python/ranktune/*.py /usr/local/share/ranktune/python/ranktune/
  echo "setup.sh: installed $(/usr/local/bin/ranktune --version) into /usr/local/bin"
else
  echo "setup.sh: /usr/local/bin is not writable; use $(pwd)/build/apps/ranktune" >&2
fi
