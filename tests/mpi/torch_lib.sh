# Shared set-up for the PyTorch example tests (tests/mpi/pytorch_*.sh): lib.sh, then a skip
# (exit 77, the tests' SKIP_RETURN_CODE) when Debian's python3-torch is missing, since
# PyTorch is an optional dependency. Sourced by each test script.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
if ! torch_error=$("$PY" -c "import torch" 2>&1); then
  echo "SKIP: PyTorch is not importable by $PY (apt install python3-torch): ${torch_error##*$'\n'}"
  exit 77
fi
# The example configs run `python3`; the tests run the python that has torch (a `python3`
# earlier in PATH may lack it). Paths are relative to configs/, the configs' folder.
torch_command() { printf 'trainable.command=["%s", "../examples/%s"]' "$PY" "$1"; }
# The test's own python imports the examples' helpers (the model, state_sha256) from here.
TORCH_PYTHONPATH="$SRC/examples:$SRC/python"
