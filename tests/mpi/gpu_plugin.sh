#!/usr/bin/env bash
# CUDA, cuBLAS and NCCL are the GPU plugin's (train/gpu_runtime.h), never the binary's: the
# binary does not link them, and on a host without an NVIDIA driver no rank of a real run
# maps them (each trial reads its worker rank's /proc/PID/maps), so CPU runs do not pay their
# second of start-up per rank. The stack records the CUDA it was built against and why the
# plugin is not loaded.
source "$(dirname "$0")/lib.sh"
cuda_libs='libcudart|libcublas|libcublasLt|libnccl|libranktune_gpu'

needed=$(readelf -d "$RANKTUNE" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
[[ -n $needed ]] || fail "readelf listed no NEEDED entry of $RANKTUNE"
if grep -E "$cuda_libs" <<<"$needed"; then fail "the binary links the CUDA libraries itself"; fi
echo "ok: the binary needs $(wc -l <<<"$needed") libraries, none of CUDA's"

cat > "$WORK/maps.py" <<'PY'
#!/usr/bin/env python3
# Reports, as its loss, how many of its worker rank's mappings are CUDA's libraries.
import json, os, re, sys
maps = open(f"/proc/{os.getppid()}/maps").read()
names = sorted({m for m in re.findall(r"\S+\.so[.\d]*$", maps, re.M) if re.search(r"libcud|libcublas|libnccl|libranktune_gpu", m)})
os.write(3, (json.dumps({"loss": float(len(names))}) + "\n").encode())
print("cuda mappings of rank", os.getppid(), ":", names or "none", file=sys.stderr)
PY
chmod +x "$WORK/maps.py"
command_config "$WORK/maps.toml" maps 4 1 ./maps.py
mpirun -np 3 --bind-to none "$RANKTUNE" run "$WORK/maps.toml" --results "$WORK/maps.h5" > "$WORK/out.txt" 2>&1 \
  || { cat "$WORK/out.txt"; fail "the run failed"; }
check_results "$WORK/maps.h5" 4 1
"$PY" - "$WORK/maps.h5" "$("$RANKTUNE" --version)" <<'PY' || fail "a rank mapped CUDA, or the stack says the wrong thing"
import os, sys, h5py, numpy as np
path, version = sys.argv[1], sys.argv[2]
with h5py.File(path, "r") as f:
    loss = f["results"]["loss"][:]
    stack = {k: (v.decode() if isinstance(v, bytes) else str(v)) for k, v in f["stack"].attrs.items()}
assert len(loss) == 4, loss
if os.path.exists("/proc/driver/nvidia/version") or os.path.exists("/dev/nvidiactl"):
    print("skip: this host has an NVIDIA driver, so the workers may load the plugin:", stack["cuda"])
    sys.exit(0)
assert np.all(loss == 0), f"worker ranks mapped CUDA libraries: {loss}"
print("ok: no worker rank mapped a CUDA library")
if "CUDA on" in version:
    assert stack["cuda"].startswith("runtime ") and "(built; not loaded: " in stack["cuda"], stack["cuda"]
    print("ok: stack cuda =", stack["cuda"], "; nccl =", stack["nccl"])
else:
    assert stack["cuda"] == "not built", stack["cuda"]
    print("ok: a build without CUDA says so:", stack["cuda"])
PY
