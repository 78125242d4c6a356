#!/bin/sh
# A command trainable in POSIX sh (no Python, no ranktune helper): it speaks the protocol of
# docs/command_protocol.md by hand. Gradient descent with learning rate `lr` on
# f(x) = (x - 1)^2; its state is x and its own step count, saved as one file in the
# checkpoint folder when ranktune says "save", and loaded at start when the folder holds it.
# examples/protocol_shell.toml runs it under PBT, whose exploits restore other trials' files.
#
# Each iteration reports {"loss": f(x), "x": x, "step": step} on RANKTUNE_REPORT_FD, then
# waits for ranktune's answer on RANKTUNE_CONTROL_FD: it speaks protocol 2 (it says hello
# first), so ranktune answers every report, and asks it to stop rather than signalling it.
#
# Standalone, it reports on stdout and does not wait:
#   RANKTUNE_CONFIG='{"lr":0.1}' sh examples/protocol_shell.sh
set -eu

config=${RANKTUNE_CONFIG:?"not started by ranktune: set RANKTUNE_CONFIG='{\"lr\":0.1}' to run it alone"}
report_fd=${RANKTUNE_REPORT_FD:-1}
control_fd=${RANKTUNE_CONTROL_FD:-}
folder=${RANKTUNE_CHECKPOINT_DIR:-}
iteration=${RANKTUNE_ITERATION:-1}   # the iteration the next report will be, as ranktune counts
trial=${RANKTUNE_TRIAL_ID:-1}
protocol=${RANKTUNE_PROTOCOL:-1}      # unset: a ranktune of protocol 1, which signals a stop

# A number from the config's JSON object (ranktune writes it without spaces, but allow them).
param() {
  printf '%s\n' "$config" | sed -n "s/.*\"$1\"[[:space:]]*:[[:space:]]*\([-+0-9.eE]*\).*/\1/p"
}
lr=$(param lr)
[ -n "$lr" ] || { echo "error: RANKTUNE_CONFIG has no number 'lr': $config" >&2; exit 2; }
steps=$(param steps)   # only for a standalone run: under ranktune, [stop] max_t ends it
steps=${steps:-20}

# The state: restored when the folder holds the file an earlier save wrote (this trial's,
# or a PBT donor's), else a start that differs per trial.
if [ -n "$folder" ] && [ -f "$folder/state" ]; then
  read -r x step < "$folder/state"
  echo "restored x=$x step=$step from $folder; next iteration $iteration"
else
  x=$((3 + trial % 4))
  step=0
fi

save() {
  # Write, then rename: a save cut short never leaves half a state behind.
  printf '%s %s\n' "$x" "$step" > "$folder/state.tmp"
  mv "$folder/state.tmp" "$folder/state"
}

# Protocol 2: say hello before the first report, so ranktune answers every report and sends
# "stop" when the trial ends (then there are stop_grace_s seconds to exit by ourselves).
if [ -n "$control_fd" ] && [ "$protocol" -ge 2 ]; then
  printf '{"ranktune": "hello", "protocol": 2}\n' >&"$report_fd"
fi

while [ -n "$control_fd" ] || [ "$step" -lt "$steps" ]; do
  # awk for the floating point; %.17g keeps every bit of x across a save.
  x=$(awk -v x="$x" -v lr="$lr" 'BEGIN { printf "%.17g", x - lr * 2 * (x - 1) }')
  loss=$(awk -v x="$x" 'BEGIN { printf "%.17g", (x - 1) ^ 2 }')
  step=$((step + 1))
  printf '{"loss": %s, "x": %s, "step": %s}\n' "$loss" "$x" "$step" >&"$report_fd"
  [ -n "$control_fd" ] || continue
  # One answer per report; after a save and its acknowledgement, the next answer.
  while :; do
    # End of file: ranktune is stopping this program (or is gone).
    IFS= read -r answer <&"$control_fd" || exit 0
    case $answer in
      continue) break ;;
      stop) echo "asked to stop after step $step"; exit 0 ;;
      save)
        save
        printf '{"ranktune": "saved"}\n' >&"$report_fd"
        ;;
      *) echo "error: unexpected line on RANKTUNE_CONTROL_FD: '$answer'" >&2; exit 2 ;;
    esac
  done
done
