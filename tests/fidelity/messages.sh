# bash's own messages and $LINENO count from the command's first line.
echo "line $LINENO"
no_such_command_here
f() {
  echo "in f: $LINENO"
  no_such_in_f
}
f
local x
return 2
echo "after: $LINENO"
eval 'echo "in eval: $LINENO"
no_such_in_eval'
for i in 1; do
  echo "loop: $LINENO"
done
cd /no/such/dir
echo "last: $LINENO"
