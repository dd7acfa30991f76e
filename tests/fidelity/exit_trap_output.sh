# A command that sets an EXIT trap and then calls `exit`: the trap's
# output, stdout and stderr, is the command's, with `exit`'s status in `$?`.
trap 'echo "cleanup ran, status $?"; echo "to stderr" >&2' EXIT
echo working
exit 3
