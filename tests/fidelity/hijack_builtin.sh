# A function named `builtin` takes the command's own calls; the session
# goes on, so do functions named `unset` and `command` (the session
# reaches its builtins past them).
unset() { echo "my unset $*"; }
command() { echo "my command $*"; }
builtin() { echo "my builtin $*"; }
builtin echo hi
unset x
command ls
echo "status $?"
# --- next run ---
unset y
command true
echo "next run"
