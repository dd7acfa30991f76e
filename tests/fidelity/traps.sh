trap 'echo on-exit' EXIT
f() { trap 'echo ret' RETURN; echo in-f; }
f
( trap 'echo sub-exit' EXIT; echo in-sub )
trap - EXIT
echo done
