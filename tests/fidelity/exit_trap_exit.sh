# `exit` in an EXIT trap gives the status.
trap 'echo "in the trap ($?)"; exit 7' EXIT
echo body
false
