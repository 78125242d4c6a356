# A second local user, for tests of what another user on the machine can do to a run
# (plant links, write into a shared folder, send control requests). Source it after
# tests/mpi/lib.sh (it needs $WORK and fail), then:
#
#   second_user_or_skip        # makes the user, or exits 77 (ctest: skipped) saying why
#   as_other CMD ARGS...       # runs CMD as that user (no login shell, same environment)
#   shared_folder DIR          # makes DIR mode 1777, as /scratch often is, reachable by the user
#   attack_scene               # the above for an attack: the user made, $S a shared folder,
#                              # $VICTIM a file only root may read or write, $R the binary
#
# The user is a system account without a home (`useradd -M -r`), named ranktune-o-PID so
# that concurrent tests do not share one; it is deleted when the script exits (the trap
# keeps the EXIT trap already set, lib.sh's removal of $WORK). Making a user needs root and
# useradd; running as it needs runuser or setpriv. Register the test with
# SKIP_RETURN_CODE 77.

OTHER=""
OTHER_UID=""

second_user_cleanup() {
  if [[ -n $OTHER ]]; then
    # as_other runs in the foreground, so nothing of the user's is left running.
    userdel "$OTHER" 2>/dev/null || echo "warning: userdel $OTHER failed; remove it by hand" >&2
    OTHER=""
  fi
}

second_user_or_skip() {
  local why=""
  if [[ $(id -u) -ne 0 ]]; then
    why="not root: cannot make a second user"
  elif ! command -v useradd > /dev/null || ! command -v userdel > /dev/null; then
    why="no useradd/userdel here"
  elif ! command -v runuser > /dev/null && ! command -v setpriv > /dev/null; then
    why="neither runuser nor setpriv here: cannot run as a second user"
  fi
  if [[ -z $why ]]; then
    local name="ranktune-o-$$"
    # The previous EXIT trap's command (lib.sh removes $WORK), run after ours.
    local previous
    previous=$(trap -p EXIT)
    if [[ -n $previous ]]; then eval "set -- $previous"; previous=$3; fi
    # shellcheck disable=SC2064  # expand $previous now
    trap "second_user_cleanup; $previous" EXIT
    if useradd -M -r -s /usr/sbin/nologin "$name" > "$WORK/useradd.txt" 2>&1; then
      OTHER=$name
      OTHER_UID=$(id -u "$name")
    else
      why="useradd failed: $(head -c 300 "$WORK/useradd.txt")"
    fi
  fi
  if [[ -n $why ]]; then
    echo "SKIP: this test needs a second local user ($why)"
    exit 77
  fi
  # $WORK (mktemp -d) is 0700: let the other user reach what the test shares with it.
  chmod 0755 "$WORK"
}

as_other() {
  [[ -n $OTHER ]] || fail "as_other before second_user_or_skip"
  if command -v runuser > /dev/null; then
    runuser -u "$OTHER" -- "$@"
  else
    setpriv --reuid="$OTHER_UID" --regid="$(id -g "$OTHER")" --clear-groups -- "$@"
  fi
}

shared_folder() {
  mkdir -p "$1"
  chmod 1777 "$1"
}

attack_scene() {
  second_user_or_skip
  R="$RANKTUNE"
  S="$WORK/scratch"
  shared_folder "$S"
  VICTIM="$WORK/victim"  # a file only root may write (and read)
  echo precious > "$VICTIM"
  chmod 0600 "$VICTIM"
}
