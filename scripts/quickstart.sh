#!/usr/bin/env bash
# Sets the project up, then runs a real tuning (configs/quickstart.toml: ASHA over the
# hyperparameters of an MLP on Fashion-MNIST, about 2 minutes on 2 cores, recorded into
# HDF5), prints its leaderboard and writes its HTML report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
mkdir -p results
out="results/quickstart-$(date +%Y%m%d-%H%M%S)"
ranktune run configs/quickstart.toml --results "$out.h5"
echo
ranktune report "$out.h5" --top 10 --html "$out.html"
echo
echo "HTML report: $(pwd)/$out.html"
