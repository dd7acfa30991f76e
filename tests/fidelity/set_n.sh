# `set -n` stops the script: nothing after it runs, and the status is the
# last one before it.
echo before
set -n
echo after
exit 3
