# Sourced by the benchmarks that compare against PyTorch (mlp_vs_torch.sh, eval_vs_torch.sh).

# Installs Debian's python3-torch when it is missing (as root), then prints which BLAS
# libblas.so.3 points at: with the reference BLAS PyTorch is about 20x slower, which would
# flatter ranktune.
ensure_torch() {
  if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "installing python3-torch (Debian) for the comparison"
    if [[ $(id -u) -ne 0 ]]; then echo "run as root, or install python3-torch" >&2; exit 1; fi
    apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends python3-torch >/dev/null
  fi
  echo "libblas.so.3 alternative: $(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || echo unknown)"
}

# The median of the arguments (numbers).
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
