# Background jobs inside one command: `$!`, `wait` and its statuses, a
# job's output, `jobs` once they are done.
sleep 0.05 & pid=$!
wait "$pid"; echo "waited: $?"
( exit 3 ) & wait $!; echo "status: $?"
{ sleep 0.05; echo "from the background"; } &
wait
jobs
echo "no job left: $(jobs -p | wc -l)"
wait 999999 2>/dev/null; echo "unknown pid: $?"
