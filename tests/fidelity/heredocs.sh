x=world
cat <<EOF2
hello $x
	tab kept
EOF2
cat <<'RAW'
no $expansion here
RAW
cat <<-DASH
	leading tabs stripped
	DASH
