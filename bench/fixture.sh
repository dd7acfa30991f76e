#!/usr/bin/env bash
# Makes the small project the agent-like sequence works on: a git repository
# with C sources, a Makefile, a README, one commit and an uncommitted edit.
# Usage: fixture.sh DIR   (DIR is created afresh)
set -euo pipefail
dir=$1
rm -rf "$dir"
mkdir -p "$dir/src" "$dir/build"
cd "$dir"
for i in $(seq 1 40); do
  {
    echo "/* module $i */"
    echo "#include <stdio.h>"
    echo "int module_$i(int x) {"
    [ $((i % 7)) -eq 0 ] && echo "    /* TODO: handle overflow in module $i */"
    echo "    return x * $i + 1;"
    echo "}"
  } > "src/module_$i.c"
done
cat > src/tiny.c <<'C'
#include <stdio.h>
int main(void) { puts("tiny ok"); return 0; }
C
cat > src/main.c <<'C'
#include <stdio.h>
int module_1(int x);
int main(void) {
    /* TODO: parse arguments */
    printf("%d\n", module_1(41));
    return 0;
}
C
cat > Makefile <<'MK'
build/app: src/main.c src/module_1.c
	cc -O0 -o $@ src/main.c src/module_1.c
MK
printf '# fixture\n\nA small project for the agent-like benchmark sequence.\n' > README.md
printf 'build/\n' > .gitignore
git init -q
git -c user.email=bench@example.invalid -c user.name=bench add -A
git -c user.email=bench@example.invalid -c user.name=bench commit -qm "fixture"
echo "/* edited */" >> src/module_3.c
