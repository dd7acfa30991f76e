a=(one "two words" three); echo "${#a[@]} ${a[1]}"
declare -A m=([k]=v [x]=y); for k in $(printf '%s\n' "${!m[@]}" | sort); do echo "$k=${m[$k]}"; done
a+=(four); echo "${a[@]: -2}"
