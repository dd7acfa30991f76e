diff <(printf 'a\nb\n') <(printf 'a\nc\n'); echo "status $?"
while read -r l; do echo "got $l"; done < <(printf '1\n2\n')
