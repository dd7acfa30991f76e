# A function named `builtin` defined in POSIX mode, with options POSIX mode
# changes set as outside it: the session takes the function away and
# leaves the shell's options as they were.
shopt -s expand_aliases
shopt -u sourcepath
builtin() { echo "my builtin $*"; }
builtin echo hi
# --- next run ---
shopt expand_aliases sourcepath inherit_errexit shift_verbose
[[ -o posix ]] && echo posix || echo "not posix"
set -o posix
builtin() { echo "my posix builtin $*"; }
builtin echo in posix
# --- next run ---
[[ -o posix ]] && echo posix || echo "not posix"
set +o posix
