f=$(mktemp)
echo one > "$f"; echo two >> "$f"; cat "$f"
{ echo out; echo err >&2; } 2>&1 | sort
exec 3> "$f"; echo via3 >&3; exec 3>&-; cat "$f"
cat <<< "here string"
rm -f "$f"
