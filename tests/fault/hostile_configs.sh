#!/usr/bin/env bash
# Hostile configs (issue 13, items 9-13 and 18) through `ranktune check`, and some through
# `ranktune run`: each is refused with exit 2 and a message naming file:line and what is
# wrong, or (the big ones) accepted, within 30 s each; never a crash, a hang, or a silent
# wrong value. The configs come from make_hostile_configs.py.
source "$(dirname "$0")/../mpi/lib.sh"
"$PY" "$SRC/tests/fault/make_hostile_configs.py" "$WORK/cfg" || fail "make_hostile_configs.py failed"
cd "$WORK/cfg"

failures=0
# expect NAME VERDICT LINE FRAGMENT CMD...: CMD's exit code and first stderr line must match.
expect() {
  local name=$1 verdict=$2 line=$3 fragment=$4 rc=0 start problem=""
  shift 4
  start=$(date +%s%N)
  timeout -s KILL 30 "$@" > "$WORK/out.txt" 2> "$WORK/err.txt" || rc=$?
  local ms=$((($(date +%s%N) - start) / 1000000))
  local where="$name.toml:$line: "
  [[ $line == - ]] && where="$name.toml: "
  if ((rc == 137)); then problem="hung (killed after 30 s)"
  elif ((rc > 128)); then problem="crashed with signal $((rc - 128))"
  elif [[ $verdict == ok ]]; then
    ((rc == 0)) || problem="exited $rc, expected 0"
  elif ((rc != 2)); then problem="exited $rc, expected 2"
  elif ! head -c 300 "$WORK/err.txt" | grep -qF "$where"; then problem="error does not name $where"
  elif ! grep -qF -- "$fragment" "$WORK/err.txt"; then problem="error lacks \"$fragment\""
  elif (($(wc -c < "$WORK/err.txt") > 1000)); then problem="error is $(wc -c < "$WORK/err.txt") bytes long"
  fi
  printf '%-24s %-7s %6d ms  %s\n' "$name" "$verdict" "$ms" "${problem:-ok}"
  if [[ -n $problem ]]; then
    head -c 600 "$WORK/err.txt"; echo
    failures=$((failures + 1))
  fi
}

for f in *.toml; do
  name=${f%.toml}
  read -r verdict line fragment < "$name.expect"
  expect "$name" "$verdict" "$line" "$fragment" "$RANKTUNE" check "$f"
done
# `run` refuses the same way before any rank starts, and creates no results file, control
# file or logs folder.
for name in deep_arrays deep_tables long_name num_samples_overflow grid_max_samples params_8000 choice_70k metrics_100k; do
  read -r verdict line fragment < "$name.expect"
  expect "$name" "$verdict" "$line" "$fragment" "$RANKTUNE" run "$name.toml" --np 2 --results "$WORK/$name.h5"
  for left in "$WORK/$name.h5" "$WORK/$name.h5.control" "$WORK/$name.h5.logs"; do
    [[ ! -e $left ]] || { echo "$name: run left $left"; failures=$((failures + 1)); }
  done
done
# The largest config the limits allow runs.
rc=0; timeout -s KILL 120 "$RANKTUNE" run params_1000.toml --np 2 --results "$WORK/params_1000.h5" \
  --set experiment.num_samples=2 --set stop.max_t=2 > "$WORK/out.txt" 2>&1 || rc=$?
((rc == 0)) || { cat "$WORK/out.txt"; echo "params_1000: run exited $rc"; failures=$((failures + 1)); }
((failures == 0)) || fail "$failures hostile configs were not handled"
echo "hostile_configs: all handled"
