#!/usr/bin/env bash
# mpirun -np 3 gang_mlp: a 2-rank gang (MPI_Comm_create_group) trains the mlp data-parallel;
# weights identical on both members, and equal to one rank's within a tolerance.
source "$(dirname "$0")/lib.sh"
bin=$1
timeout 100 mpirun -np 3 --bind-to none "$bin" 4 > "$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; fail "gang_mlp exited $?"; }
cat "$WORK/out.txt"
grep -q "^ok: weights identical" "$WORK/out.txt" || fail "no ok line"
