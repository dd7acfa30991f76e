# A DEBUG trap left set by one command fires on the next command's own
# commands, as in one bash -c script: nothing of the session's steps
# before or after the next command shows in its output.
trap 'echo "debug: $BASH_COMMAND"; echo "debug err" >&2' DEBUG
# --- next run ---
echo one
x=2
echo "two $x" >&2
# --- next run ---
trap - DEBUG
echo three
