//! `Shell::reset`: a fresh bash in the start directory with nothing left,
//! and, from the first reset on, the spare each bash forks (a child of the
//! host) taking the next one's place; many resets leak nothing; a killed
//! host leaves nothing. Alone in its binary, its steps one after the
//! other in one test: they find the spare among the process's children and
//! count its descriptors, and it runs this binary again as a host it
//! kills.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    HANG, TempDir, alive, gone, open_fds, procs_with, threads, unique_sleep, wait_until,
    zombie_children,
};
use conch_core::shell::{Engine, RunOptions, Shell, ShellOptions, Snapshot};

/// Set in the copy of this binary that plays a host killed after a reset.
const HOST: &str = "CONCH_TEST_SPARE_HOST";

fn shell(cwd: &str) -> Shell {
    Shell::new(ShellOptions {
        snapshot: Snapshot::None,
        cwd: Some(cwd.into()),
        ..ShellOptions::default()
    })
    .unwrap()
}

fn run(sh: &Shell, command: &str) -> String {
    sh.run(RunOptions::new(command), |_| {})
        .unwrap()
        .output
        .clone()
}

/// The session's bash as it sees itself: `$$`, which must be its pid.
fn bash_pid(sh: &Shell) -> i32 {
    let out = run(sh, "echo $$ $BASHPID");
    let pids: Vec<i32> = out.split_whitespace().map(|p| p.parse().unwrap()).collect();
    assert_eq!(pids[0], pids[1], "$$ is the bash's own pid: {out}");
    pids[0]
}

/// This process's children that are bashes, but not `but`.
fn bash_children(but: &[i32]) -> Vec<i32> {
    let me = std::process::id().to_string();
    let guard = conch_core::process::lifeline::guard_pid();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|&pid| !but.contains(&pid) && Some(pid) != guard && alive(pid))
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c == "bash\n")
        })
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.split_whitespace().nth(1) == Some(me.as_str()))
            })
        })
        .collect()
}

#[test]
fn resets_take_spares_leak_nothing_and_die_with_their_host() {
    a_reset_starts_afresh_and_later_ones_take_the_spare();
    many_resets_leak_no_descriptor_process_or_thread();
    a_close_right_after_a_reset_neither_waits_nor_leaves_the_spare();
    a_killed_host_leaves_neither_its_bash_its_spare_nor_what_they_run();
}

fn a_reset_starts_afresh_and_later_ones_take_the_spare() {
    let dir = TempDir::new("spare");
    let sh = shell(&dir);
    let marker = unique_sleep(900);
    run(
        &sh,
        &format!("cd /; X=1; f() {{ :; }}; set -o noglob; /bin/sleep {marker} &"),
    );
    assert!(wait_until(HANG, || procs_with(&marker).len() == 1));
    let [sleeper] = procs_with(&marker)[..] else {
        panic!("one sleep runs")
    };
    let first = bash_pid(&sh);

    sh.reset().unwrap();
    assert!(gone(sleeper), "the last session's job is killed");
    assert_eq!(sh.cwd(), dir.path());
    let r = sh
        .run(
            RunOptions::new("echo ${X-unset}; type f; [[ -o noglob ]] || echo globs; pwd"),
            |_| {},
        )
        .unwrap();
    assert_eq!(
        r.output,
        format!("unset\nbash: line 1: type: f: not found\nglobs\n{dir}\n")
    );
    assert!(!r.session_reset, "a reset asked for is not reported");
    let second = bash_pid(&sh);
    let numbers = "echo $RANDOM $RANDOM $RANDOM";
    let drawn = run(&sh, numbers);
    assert!(second != first && gone(first));

    if sh.engine().unwrap() == Engine::Eval {
        // The eval loop forks no spare: each reset starts a bash.
        assert_eq!(bash_children(&[second]), Vec::<i32>::new());
        sh.reset().unwrap();
        assert!(gone(second));
        assert_eq!(run(&sh, "echo ${X-unset}"), "unset\n");
        return;
    }
    // The bash a reset started forked its spare once ready: a bash, a
    // child of this process, in a session of its own.
    let spares = bash_children(&[second]);
    let [spare] = spares[..] else {
        panic!("one spare, not {spares:?}")
    };

    // The start directory removed and made again: the spare takes over
    // there, as a fresh bash would start there.
    std::fs::remove_dir_all(dir.path()).unwrap();
    std::fs::create_dir(dir.path()).unwrap();
    std::fs::write(dir.path().join("new"), "").unwrap();
    run(&sh, "Y=2; cd /tmp");
    sh.reset().unwrap();
    assert_eq!(bash_pid(&sh), spare, "the spare took the bash's place");
    // A copy of that bash before it drew any, with a seed of its own.
    assert_ne!(run(&sh, numbers), drawn, "$RANDOM is seeded again");
    assert!(gone(second));
    assert_eq!(
        run(
            &sh,
            "echo ${Y-unset} $SECONDS; ls; [[ $(ps -o sid= -p $$) -eq $$ ]] && echo own"
        ),
        "unset 0\nnew\nown\n"
    );
    // A spare a command stopped does not answer: a bash starts instead.
    assert!(wait_until(HANG, || bash_children(&[spare]).len() == 1));
    let stopped = bash_children(&[spare])[0];
    run(&sh, &format!("kill -STOP {stopped}"));
    sh.reset().unwrap();
    let instead = bash_pid(&sh);
    assert!(
        instead != stopped && gone(stopped),
        "the stopped spare is killed"
    );
    assert_eq!(run(&sh, "echo ${Y-unset}; pwd"), format!("unset\n{dir}\n"));
    // One a command killed is collected, and a bash starts instead.
    assert!(wait_until(HANG, || bash_children(&[instead]).len() == 1));
    let killed = bash_children(&[instead])[0];
    run(&sh, &format!("kill -KILL {killed}"));
    sh.reset().unwrap();
    assert!(bash_pid(&sh) != killed && gone(killed));
    assert!(
        wait_until(HANG, || zombie_children() == 0),
        "the killed spare is collected"
    );
    // It answers as any bash: a command, its exit, the bash after it.
    assert_eq!(run(&sh, "echo a; exit 3"), "a\n");
    assert_eq!(run(&sh, "echo b"), "b\n");

    // A reset right after another, nothing run between: the bash the
    // first made (a spare) forks its own spare as it reports ready, and
    // the second takes that one. A spare has read no start-up text; a
    // bash started afresh reads several KiB of it.
    // Each pair a chance for the new spare to run only after the host
    // took it over (from its bash's word) and closed the channel.
    for _ in 0..20 {
        sh.reset().unwrap();
        sh.reset().unwrap();
        let read: u64 = run(
            &sh,
            "while read -r k v; do [[ $k == rchar: ]] && echo $v; done < /proc/$$/io",
        )
        .trim()
        .parse()
        .unwrap();
        assert!(
            read < 4096,
            "a spare took over, not a new bash: it read {read} bytes"
        );
    }

    // The spare's own spare, then nothing once the session closes.
    let third = bash_pid(&sh);
    assert!(wait_until(HANG, || bash_children(&[third]).len() == 1));
    let next = bash_children(&[third])[0];

    // No start directory: a new shell's error, once all is ended; the
    // next run starts a bash where a run does after its bash died.
    std::fs::remove_dir_all(dir.path()).unwrap();
    let e = sh.reset().unwrap_err().to_string();
    assert!(e.contains("Working directory does not exist"), "{e}");
    assert!(
        gone(third) && gone(next),
        "the bash and its spare are ended"
    );
    let r = sh.run(RunOptions::new("pwd"), |_| {}).unwrap();
    assert!(r.session_reset);
    let parent = dir.path().parent().unwrap().display().to_string();
    assert_eq!(r.output, format!("{parent}\n"));
    std::fs::create_dir(dir.path()).unwrap();

    let last = bash_pid(&sh);
    // A command that stops the spare holds neither the close nor the spare.
    assert!(wait_until(HANG, || bash_children(&[last]).len() == 1));
    let stopped = bash_children(&[last])[0];
    run(&sh, &format!("kill -STOP {stopped}"));
    sh.close();
    assert!(gone(last), "the bash is killed");
    assert!(gone(stopped), "and the stopped spare");
    assert!(wait_until(HANG, || zombie_children() == 0), "and collected");
    assert_eq!(bash_children(&[]), Vec::<i32>::new());
}

fn many_resets_leak_no_descriptor_process_or_thread() {
    let dir = TempDir::new("spare-leaks");
    let sh = shell(&dir);
    sh.reset().unwrap();
    run(&sh, "true");
    let (fds, tasks) = (open_fds(), threads());
    for _ in 0..50 {
        sh.reset().unwrap();
        assert_eq!(run(&sh, "echo $PWD"), format!("{dir}\n"));
    }
    // What may differ by chance: a descriptor or thread of the harness.
    assert!(
        open_fds() <= fds + 2,
        "{} descriptors, {fds} before",
        open_fds()
    );
    assert!(threads() <= tasks + 2);
    let bash = bash_pid(&sh);
    let spares = usize::from(sh.engine().unwrap() == Engine::Builtin);
    assert!(wait_until(HANG, || bash_children(&[bash]).len() == spares));
    assert!(wait_until(HANG, || zombie_children() == 0));
    sh.close();
    assert!(wait_until(HANG, || bash_children(&[]).is_empty()));
}

/// A close just after a reset finds the bash that took over forking its
/// own spare: killed between that fork and its write of the spare's pid,
/// the bash leaves the spare to tell the host, which the close then ends
/// at once (without it, the close waited 5 s for a pid that never came).
fn a_close_right_after_a_reset_neither_waits_nor_leaves_the_spare() {
    let dir = TempDir::new("spare-close");
    for _ in 0..20 {
        let sh = shell(&dir);
        sh.reset().unwrap();
        run(&sh, "true");
        sh.reset().unwrap();
        let start = Instant::now();
        sh.close();
        let took = start.elapsed();
        assert!(took < Duration::from_secs(2), "the close took {took:?}");
    }
    assert!(wait_until(HANG, || bash_children(&[]).is_empty()));
    assert!(wait_until(HANG, || zombie_children() == 0));
}

/// In the copy of this binary that plays the host (`HOST` set): resets a
/// session twice (its bash is then a spare that took over), leaves a
/// process running in it, prints the pids of that process, of its bash
/// and of its spare, and waits to be killed.
#[test]
#[ignore = "the host process of the test above"]
fn a_host_with_a_spare_that_waits() {
    let Some(dir) = std::env::var_os(HOST) else {
        return;
    };
    let sh = shell(&dir.to_string_lossy());
    sh.reset().unwrap();
    bash_pid(&sh);
    sh.reset().unwrap();
    let marker = unique_sleep(901);
    run(&sh, &format!("/bin/sleep {marker} &"));
    assert!(wait_until(HANG, || procs_with(&marker).len() == 1));
    print!("pids={} ", procs_with(&marker)[0]);
    let bash = bash_pid(&sh);
    let spare = match sh.engine().unwrap() {
        Engine::Builtin => {
            assert!(wait_until(HANG, || bash_children(&[bash]).len() == 1));
            format!(" {}", bash_children(&[bash])[0])
        }
        Engine::Eval => String::new(),
    };
    println!("{bash}{spare}");
    std::thread::sleep(Duration::from_secs(60));
}

fn a_killed_host_leaves_neither_its_bash_its_spare_nor_what_they_run() {
    let dir = TempDir::new("spare-host");
    let mut host = Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "a_host_with_a_spare_that_waits",
            "--nocapture",
        ])
        .env(HOST, dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let line = BufReader::new(host.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
        .find_map(|l| l.split_once("pids=").map(|(_, pids)| pids.to_string()))
        .expect("the host names its processes");
    let pids: Vec<i32> = line.split(' ').map(|p| p.parse().unwrap()).collect();
    assert!(pids.iter().all(|&p| alive(p)));
    host.kill().unwrap();
    host.wait().unwrap();
    for pid in pids {
        assert!(gone(pid), "{pid} outlived its host");
    }
}
