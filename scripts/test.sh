#!/usr/bin/env bash
# Sets the project up (scripts/setup.sh), then runs the whole test suite through ctest.
# Extra arguments go to ctest, e.g. ./scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
cd build
ctest --output-on-failure --timeout 600 "$@"
