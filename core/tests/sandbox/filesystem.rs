//! Writes only under the cwd, `$TMPDIR` and the listed paths.

use super::*;

#[test]
fn probe() {
    let dir = scratch("probe");
    let sh = shell(&dir, Some(Sandbox::default()));
    for cmd in [
        "echo hi > a; cat a; echo $TMPDIR; touch $TMPDIR/x && echo tmpok",
        "touch /root/zz; echo $?",
        "sleep 100 & echo bg",
        "echo after",
        "exit 3",
        "echo $((1+1))",
        "python3 -c 'import socket; socket.socket()'",
    ] {
        let (c, o) = out(&sh, cmd);
        eprintln!("{cmd}: {c:?} {o}");
    }
    eprintln!("{:?}", sh.sandbox_applied());
}
