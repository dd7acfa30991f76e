//! What Landlock cannot see, held by the session's namespaces: modes,
//! owners, times and links outside the writable paths; the host's
//! processes; the secrets of the system.

use conch_core::{PtyOptions, PtySession};

use super::*;

#[test]
fn modes_owners_times_and_links_outside_are_refused_inside_they_work() {
    let dir = scratch("ns-modes");
    let outside = scratch("ns-modes-outside");
    let victim = outside.join("victim");
    std::fs::write(&victim, "v").unwrap();
    let before = std::fs::metadata(&victim).unwrap();
    let sh = shell(&dir, Some(Sandbox::default()));
    let v = victim.display();
    for attempt in [
        format!("chmod 4777 {v}"),
        format!("chown nobody {v}"),
        format!("touch -d 1999-01-01 {v}"),
        format!("chmod 777 {}", outside.display()),
        format!("ln {v} hard"),
        format!("python3 -c \"import os; os.utime('{v}', (0, 0))\""),
        "mount -o remount,rw /".to_string(),
        "umount /proc".to_string(),
    ] {
        let (code, output) = out(&sh, &attempt);
        assert_ne!(code, Some(0), "{attempt}: {output}");
    }
    let (code, output) = out(&sh, &format!("chmod 4777 {v}"));
    assert_ne!(code, Some(0));
    assert!(output.contains("Read-only file system"), "{output}");
    let after = std::fs::metadata(&victim).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (after.mode(), after.uid(), after.mtime()),
        (before.mode(), before.uid(), before.mtime())
    );
    // Inside the writable paths, all of it works (but no device node).
    let (code, output) = out(
        &sh,
        "touch f && chmod 755 f && touch -d 1999-01-01 f && ln f g && [ -x g ] && echo ok",
    );
    assert_eq!((code, output.trim()), (Some(0), "ok"));
    assert!(sh.sandbox_applied().unwrap().namespaces);
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&outside);
}

/// The pids `/proc` lists in `output` (one name per line).
fn pids(output: &str) -> Vec<u32> {
    output
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[test]
fn the_host_and_every_process_outside_are_invisible() {
    let dir = scratch("ns-proc");
    let host = std::process::id();
    // With everything readable, and with a readable list.
    for readable in [None, Some(vec![dir.clone()])] {
        let sh = shell(
            &dir,
            Some(Sandbox {
                readable,
                ..Sandbox::default()
            }),
        );
        let (_, output) = out(
            &sh,
            &format!("echo $$ $PPID; cat /proc/{host}/cmdline; ls /proc"),
        );
        assert!(output.starts_with("1 0\n"), "{output}");
        assert!(output.contains("No such file"), "{output}");
        let seen = pids(&output);
        assert!(!seen.is_empty() && !seen.contains(&host), "{output}");
        assert!(seen.iter().all(|&p| p < 100), "{output}");
        // /proc itself is readable: the session's own processes.
        let (code, output) = out(&sh, "cat /proc/self/status | head -1; ps -e | wc -l");
        assert_eq!(code, Some(0), "{output}");
        // A job runs in namespaces of its own, as a one-shot run does.
        let job = sh
            .start(conch_core::JobOptions::new(format!(
                "echo job $$; ls /proc/{host} 2>&1 | head -1"
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
        assert!(polled.output.contains("job 1"), "{}", polled.output);
        assert!(polled.output.contains("No such file"), "{}", polled.output);
    }
    let pty = PtySession::new();
    let mut opts = PtyOptions::new(format!("echo pty $$; ls /proc/{host} 2>&1; true"));
    opts.cwd = Some(dir.clone());
    opts.sandbox = Some(Sandbox::default());
    let r = pty.start(opts, |_| {}).unwrap();
    let text = &r.summary.output;
    assert!(
        text.contains("pty 1") && text.contains("No such file"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn secrets_are_hidden_unless_the_policy_names_them() {
    let dir = scratch("ns-secrets");
    let sh = shell(&dir, Some(Sandbox::default()));
    if Path::new("/etc/shadow").exists() {
        let (code, output) = out(&sh, "wc -c < /etc/shadow; echo x >> /etc/shadow");
        assert_ne!(code, Some(0));
        assert!(output.starts_with("0\n"), "{output}");
        assert!(output.contains("Read-only file system"), "{output}");
    }
    // /root is an empty directory, whatever it holds.
    let (code, output) = out(
        &sh,
        "ls -A /root | wc -l; cat /etc/hostname > /dev/null && echo etc",
    );
    assert_eq!((code, output.as_str()), (Some(0), "0\netc\n"), "{output}");
    drop(sh);
    // A path the policy names inside a hidden one is put back, read-only.
    let kept = PathBuf::from("/root").join(format!(".conch-ns-test-{}", std::process::id()));
    std::fs::create_dir_all(&kept).unwrap();
    std::fs::write(kept.join("f"), "kept words").unwrap();
    let sh = shell(
        &dir,
        Some(Sandbox {
            readable: Some(vec![PathBuf::from("/"), kept.clone()]),
            ..Sandbox::default()
        }),
    );
    let k = kept.display();
    let (code, output) = out(&sh, &format!("cat {k}/f; echo; ls -A /root; touch {k}/g"));
    assert_ne!(code, Some(0));
    assert!(output.starts_with("kept words\n"), "{output}");
    assert!(output.contains("Read-only file system"), "{output}");
    let listed: Vec<_> = output.lines().filter(|l| l.starts_with(".conch")).collect();
    assert_eq!(listed.len(), 1, "{output}");
    drop(sh);
    // The cwd inside a hidden directory is the cwd, writable.
    let cwd = kept.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let sh = shell(&cwd, Some(Sandbox::default()));
    let (code, output) = out(&sh, "touch made && pwd && ls ../f");
    assert_ne!(code, Some(0), "{output}");
    assert!(
        output.starts_with(&format!("{}\n", cwd.display())),
        "{output}"
    );
    assert!(cwd.join("made").exists());
    drop(sh);
    let _ = std::fs::remove_dir_all(&kept);
    let _ = std::fs::remove_dir_all(&dir);
}
