shopt -s extglob
d=$(mktemp -d); cd "$d"; touch a.c b.h c.txt
echo !(*.txt)
echo @(a|b).*
cd /; rm -rf "$d"
