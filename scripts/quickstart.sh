#!/usr/bin/env bash
# Sets the project up, runs a real experiment (configs/quickstart.toml: random search over
# the Branin function on every core, recorded into HDF5), then prints its leaderboard.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
mkdir -p results
out="results/quickstart-$(date +%Y%m%d-%H%M%S).h5"
ranktune run configs/quickstart.toml --results "$out"
echo
ranktune report "$out" --top 10
