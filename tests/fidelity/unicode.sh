s='héllo wörld ✓ 日本'
echo "${#s} ${s^^}"
printf '%s\n' "${s:6:5}"
