f() { local -n ref=$1; ref=changed; }
v=orig; f v; echo $v
declare -i n=3+4; echo $n
printf -v out '%05d' 42; echo $out
