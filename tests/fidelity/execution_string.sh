# The command is $BASH_EXECUTION_STRING, as in `bash -c`.
printf '%s\n' "$BASH_EXECUTION_STRING" | head -n 2
[[ $BASH_EXECUTION_STRING == *'that is all'* ]] && echo that is all
