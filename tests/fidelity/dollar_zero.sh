# $0 is the shell's name, as `bash -c` run from PATH shows it.
echo "$0"
printf '%s\n' "${@:0:1}"
echo "$BASH_ARGV0"
f() { echo "in f: $0"; }
f
