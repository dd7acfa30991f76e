# A command starts as a script does: $? is 0, $PPID is the parent of the
# shell, $$ the shell itself, no positional parameters, no function.
echo "status at start: $?"
read -r _ _ _ parent _ < /proc/$$/stat
[ "$PPID" = "$parent" ] && echo "PPID is the parent"
[ "$BASHPID" = "$$" ] && echo "BASHPID is \$\$"
echo "args: $# [$*] subshell: $BASH_SUBSHELL"
echo "FUNCNAME: ${FUNCNAME[*]-none} BASH_SOURCE: ${#BASH_SOURCE[@]}"
echo "options: $-"
caller || echo "caller: not in a function"
