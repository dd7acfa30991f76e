# Functions named like the builtins the session uses change only what the
# command itself calls.
read() { echo "my read $*"; }
printf() { echo "my printf $*"; }
eval() { echo "my eval $*"; }
trap() { echo "my trap $*"; }
set() { echo "my set $*"; }
read -r x
printf '%s\n' y
eval 'echo z'
trap 'echo t' EXIT
set -e
command printf 'real %s\n' printf
