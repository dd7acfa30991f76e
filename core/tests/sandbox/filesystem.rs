//! Writes only under the cwd, `$TMPDIR` and the listed paths (Landlock),
//! whatever tool or trick makes them.

use super::*;

#[test]
fn writes_outside_the_writable_paths_are_denied_whatever_makes_them() {
    let dir = scratch("fs-deny");
    let outside = scratch("fs-outside");
    let sh = shell(&dir, Some(Sandbox::default()));
    let o = outside.display();
    std::fs::write(dir.join("inside.txt"), "x").unwrap();
    let attempts = [
        format!("touch {o}/touched"),
        format!("echo x > {o}/redirected"),
        "echo x > /etc/conch-sandbox-test".to_string(),
        format!("ln -s / r && touch r{o}/via-symlink"),
        format!("mv inside.txt {o}/moved"),
        format!("python3 -c \"open('{o}/python','w')\""),
        format!("setsid -w bash -c 'echo x > {o}/setsid'"),
        format!("cp /etc/hostname {o}/copied"),
        format!("mkdir {o}/made"),
    ];
    for attempt in &attempts {
        let (code, output) = out(&sh, attempt);
        assert_ne!(code, Some(0), "{attempt}: {output}");
    }
    let left: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().collect();
    assert!(left.is_empty(), "written outside: {left:?}");
    assert!(!Path::new("/etc/conch-sandbox-test").exists());
    assert!(dir.join("inside.txt").exists(), "mv moved the file out");
    // The home directory too ($HOME is outside the cwd).
    let (code, _) = out(&sh, "touch \"$HOME/conch-sandbox-test\"");
    assert_ne!(code, Some(0));
    let home = std::env::var("HOME").unwrap();
    assert!(!Path::new(&home).join("conch-sandbox-test").exists());
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

#[test]
fn the_cwd_tmpdir_and_listed_paths_are_writable_and_tmpdir_goes_at_close() {
    let dir = scratch("fs-allow");
    let extra = scratch("fs-extra");
    let sh = shell(
        &dir,
        Some(Sandbox {
            writable: vec![extra.clone()],
            ..Sandbox::default()
        }),
    );
    let (code, output) = out(
        &sh,
        &format!(
            "mkdir -p sub && echo a > sub/a && mv sub/a b && rm b && echo t > \"$TMPDIR/t\" && \
             cat \"$TMPDIR/t\" && echo e > {}/e && cat <<< here && echo \"$TMPDIR\" && \
             echo x > /dev/null && python3 -c \"open('p','w').write('p')\" && cat p",
            extra.display()
        ),
    );
    assert_eq!(code, Some(0), "{output}");
    assert!(extra.join("e").exists());
    let tmpdir = output.lines().nth(2).unwrap().to_string();
    assert!(Path::new(&tmpdir).is_dir(), "{output}");
    // Jobs run in the session's sandbox too.
    let job = sh
        .start(conch_core::JobOptions::new(format!(
            "echo j > {}/job; touch /etc/conch-sandbox-job; echo rc=$?",
            extra.display()
        )))
        .unwrap();
    let polled = sh
        .poll(
            job,
            &conch_core::PollOptions {
                wait: common::HANG,
                ..conch_core::PollOptions::default()
            },
            None,
        )
        .unwrap();
    assert!(polled.output.contains("rc=1"), "{}", polled.output);
    assert!(extra.join("job").exists());
    assert!(!Path::new("/etc/conch-sandbox-job").exists());
    sh.close();
    assert!(!Path::new(&tmpdir).exists(), "TMPDIR left after close");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&extra);
}

#[test]
fn a_readable_list_hides_the_rest() {
    let dir = scratch("fs-read");
    let secret = scratch("fs-secret");
    std::fs::write(secret.join("s"), "hidden words").unwrap();
    let sh = shell(
        &dir,
        Some(Sandbox {
            readable: Some(vec![]),
            ..Sandbox::default()
        }),
    );
    let (code, output) = out(&sh, &format!("cat {}/s", secret.display()));
    assert_ne!(code, Some(0), "{output}");
    assert!(!output.contains("hidden words"), "{output}");
    // The cwd, the system and bash itself still work.
    let (code, output) = out(&sh, "echo ok > f && cat f && ls /usr/bin/env");
    assert_eq!(code, Some(0), "{output}");
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&secret);
}
