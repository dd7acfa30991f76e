# Nothing of the session's is in the command's shell: no variable, no
# function, no alias, however bash lists them (the environment is the
# same for both shells, so any difference is the session's).
x=1
# --- next run ---
declare -F
compgen -A function
compgen -v | grep '^__'
declare -p | grep -E '^declare -[-a-zA-Z]* __'
set | grep '^__'
alias
type -t __conch_ret __conch_end __conch_restore
echo "x is $x"
