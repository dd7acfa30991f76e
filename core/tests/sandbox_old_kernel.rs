//! Fails closed: on a kernel without Landlock (simulated with the test
//! hook `CONCH_TEST_LANDLOCK_ABI`, which caps the ABI conch sees) or a host
//! that may not make namespaces (`CONCH_TEST_NO_NAMESPACES`) a sandbox
//! is `SandboxUnavailable` naming what is missing, and with `best_effort` the
//! session starts and reports what did not apply. Alone in its binary: it
//! sets an environment variable of the whole process.
#![cfg(target_os = "linux")]

use conch_core::{Error, Network, RunOptions, Sandbox, Shell, ShellOptions, Snapshot};

fn shell(sandbox: Sandbox) -> conch_core::Result<Shell> {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        cwd: Some(std::env::temp_dir()),
        sandbox: Some(sandbox),
        ..ShellOptions::default()
    })
}

#[test]
fn an_old_kernel_fails_closed_unless_best_effort() {
    // SAFETY: the only test of this binary; no other thread reads the
    // environment while it is set.
    unsafe { std::env::set_var("CONCH_TEST_LANDLOCK_ABI", "0") };
    match shell(Sandbox::default()) {
        Err(Error::SandboxUnavailable(what)) => assert!(what.contains("Landlock"), "{what}"),
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a sandbox without Landlock was accepted"),
    }
    assert!(matches!(
        Sandbox::default().check(),
        Err(Error::SandboxUnavailable(_))
    ));

    let sh = shell(Sandbox {
        best_effort: true,
        ..Sandbox::default()
    })
    .unwrap();
    let applied = sh.sandbox_applied().unwrap().clone();
    assert!(!applied.filesystem);
    assert!(applied.network, "seccomp does not need Landlock");
    assert_eq!(applied.landlock_abi, 0);
    assert!(applied.not_applied[0].contains("Landlock"), "{applied:?}");
    let r = sh
        .run(
            RunOptions::new("python3 -c 'import socket; socket.socket()' 2>/dev/null; echo $?"),
            |_| {},
        )
        .unwrap();
    assert_eq!(r.output, "1\n", "the network rule still holds");
    drop(sh);

    // ABI 3: the filesystem holds, the TCP ports (ABI 4) do not.
    unsafe { std::env::set_var("CONCH_TEST_LANDLOCK_ABI", "3") };
    let ports = Sandbox {
        network: Network::Deny,
        allow_tcp_ports: vec![8080],
        ..Sandbox::default()
    };
    match shell(ports.clone()) {
        Err(Error::SandboxUnavailable(what)) => assert!(what.contains("ABI 4"), "{what}"),
        other => panic!("{:?}", other.err()),
    }
    let sh = shell(Sandbox {
        best_effort: true,
        ..ports
    })
    .unwrap();
    let applied = sh.sandbox_applied().unwrap();
    assert!(applied.filesystem && applied.network && !applied.tcp_ports);
    unsafe { std::env::remove_var("CONCH_TEST_LANDLOCK_ABI") };

    // No namespaces (a host that may not make them): fails closed naming
    // them; with best effort, Landlock alone holds the writes.
    unsafe { std::env::set_var("CONCH_TEST_NO_NAMESPACES", "1") };
    match shell(Sandbox::default()) {
        Err(Error::SandboxUnavailable(what)) => {
            assert!(what.contains("namespaces"), "{what}")
        }
        other => panic!("{:?}", other.err()),
    }
    let sh = shell(Sandbox {
        best_effort: true,
        ..Sandbox::default()
    })
    .unwrap();
    let applied = sh.sandbox_applied().unwrap().clone();
    assert!(applied.filesystem && !applied.namespaces, "{applied:?}");
    assert!(applied.not_applied[0].contains("namespaces"), "{applied:?}");
    let r = sh
        .run(
            RunOptions::new("echo $$; touch /etc/conch-no-ns; echo $?"),
            |_| {},
        )
        .unwrap();
    assert!(
        !r.output.starts_with("1\n") && r.output.ends_with("1\n"),
        "{}",
        r.output
    );
    unsafe { std::env::remove_var("CONCH_TEST_NO_NAMESPACES") };
}
