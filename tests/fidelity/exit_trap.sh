# An EXIT trap set by the command runs when the command ends, with the
# command's status in $?, and the status stays the command's.
tmp=$(mktemp)
trap 'echo "cleanup ($?)"; rm -f "$tmp"; [ -e "$tmp" ] || echo removed' EXIT
echo working
(exit 5)
