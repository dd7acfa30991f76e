# A DEBUG trap set by the command fires on its own commands; nothing of
# the session's shows in the command's output after it ends.
trap 'echo "debug $LINENO: $BASH_COMMAND"' DEBUG
echo one
x=$((1 + 1))
f() { echo "in f"; }
f
echo "two: $x"
