#!/usr/bin/env bash
# Results file size (issue 16): the same `ranktune simulate` by a baseline binary and by this
# one, each file's size, every dataset's allocated bytes (h5py get_storage_size) and the wall
# time, then the ratio new / baseline. Usage:
#   benchmarks/results_size.sh BASELINE_RANKTUNE [SAMPLES] [WORKERS]
# defaults 1000000 and 32768 (the issue's run: about 3.5 GB and 3 min for a baseline before
# schema 3, 4 GB of free disk needed). The new binary is $RANKTUNE, else build-bench/ or build/.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
old=${1:?usage: results_size.sh BASELINE_RANKTUNE [SAMPLES] [WORKERS]}
samples=${2:-1000000}
workers=${3:-32768}
new=${RANKTUNE:-}
for b in "$here/../build-bench/apps/ranktune" "$here/../build/apps/ranktune"; do
  [[ -z $new && -x $b ]] && new=$b
done
[[ -n $new ]] || { echo "no ranktune binary: build one or set RANKTUNE" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for which in baseline new; do
  bin=$old; [[ $which == new ]] && bin=$new
  start=$(date +%s.%N)
  "$bin" simulate "$here/../configs/hartmann6_asha.toml" --workers "$workers" \
    --set "experiment.num_samples=$samples" --results "$dir/$which.h5" > "$dir/$which.txt"
  end=$(date +%s.%N)
  echo "$which: $bin: $(python3 -c "print(f'{$end - $start:.1f}')") s wall"
  grep -E "simulated|peak RSS" "$dir/$which.txt" | sed 's/^/  /'
done
/usr/bin/python3 - "$dir/baseline.h5" "$dir/new.h5" <<'PY'
import os, sys, h5py
sizes = []
for path in sys.argv[1:]:
    print(os.path.basename(path))
    with h5py.File(path, "r") as f:
        data = 0
        for name, d in f.items():
            if not isinstance(d, h5py.Dataset):
                continue
            stored = d.id.get_storage_size()
            data += stored
            filters = (d.compression or "none") + ("+shuffle" if d.shuffle else "")
            print(f"  /{name:15s} {d.shape[0]:>9} rows x {d.dtype.itemsize:>5} B  {stored / 1e6:9.1f} MB  {filters}")
        for name in ("trials", "trial_texts"):
            if name in f and "log_tail" in f[name].dtype.names:
                print(f"  (error and log_tail in /{name})")
    size = os.path.getsize(path)
    sizes.append(size)
    print(f"  file {size / 1e6:.1f} MB, datasets {data / 1e6:.1f} MB")
print(f"ratio new / baseline: {sizes[1] / sizes[0]:.3f} (target <= 0.10)")
PY
