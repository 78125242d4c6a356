#!/usr/bin/env bash
# mpirun -np 4 gang_agree: a gang of three agrees on outcomes, shares its leader's decision,
# and reports a member's failure to the leader (see gang_agree.cc).
source "$(dirname "$0")/lib.sh"
bin=$1
timeout 100 mpirun -np 4 --bind-to none "$bin" > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "gang_agree exited $?"; }
cat "$WORK/out.txt"
grep -q "^ok: gang of 3" "$WORK/out.txt" || fail "no ok line"
