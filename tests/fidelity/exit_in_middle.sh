echo start
exit 7
echo never
