# `set -n` stops the script: nothing after it runs, and the status is that
# of `set -n` (0).
echo before
set -n
echo after
exit 3
