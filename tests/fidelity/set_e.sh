set -e
echo before
false || echo recovered
if false; then echo no; fi
( false ); echo unreachable
