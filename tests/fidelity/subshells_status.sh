x=1; (x=2; echo inner $x); echo outer $x
echo $(echo nested $(echo deep))
false; echo "st=$?"
true | false; echo "pipe=$? ${PIPESTATUS[*]}"
set -o pipefail; false | true; echo "pf=$?"
