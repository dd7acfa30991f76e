shopt -s expand_aliases
alias greet='echo hi'
greet there
f() { echo "args=$# first=$1"; return 3; }
f a b; echo "ret=$?"
type -t f
