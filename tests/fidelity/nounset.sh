# `set -u` left on by one command holds in the next ones, and the session
# goes on with it.
set -u
# --- next run ---
echo "still here"
f() { echo "in f $1"; }
f x
# --- next run ---
echo "${nothing-unset} and $#"
