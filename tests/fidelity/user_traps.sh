# ERR and RETURN traps set by the command fire on its own commands only.
trap 'echo "ERR at $LINENO ($?)"' ERR
false
echo next
trap 'echo "RETURN from ${FUNCNAME:-source}"' RETURN
f() { :; }
f
trap - RETURN
g() { return 4; }
g
echo "g gave $?"
trap 'echo "late RETURN"; false' RETURN
trap 'echo "late ERR"' ERR
