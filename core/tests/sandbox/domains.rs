//! Network by name: a session whose sandbox allows some domains reaches
//! them through its proxy (curl, Python, git, over HTTPS, HTTP and
//! SOCKS5), and nothing else: unlisted and denied names, redirects to
//! them, and connections that skip the proxy are refused, each refusal
//! reported in the result. Every server is on loopback (tests/net/server.py),
//! named through the policy's `resolve`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use conch_core::{BashResult, DomainPolicy, Network, Shell};

use super::net::{Servers, blocked, landlock_ports};
use super::*;

fn policy(allow: &[&str], deny: &[&str]) -> Network {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let resolve = [
        "registry.test",
        "unlisted.test",
        "denied.test",
        "a.pkg.test",
    ]
    .map(|n| (n.to_string(), "127.0.0.2".to_string()));
    let policy = DomainPolicy::parse(
        "network",
        &owned(allow),
        &owned(deny),
        &BTreeMap::from(resolve),
    );
    Network::Domains(policy.unwrap())
}

fn session(dir: &Path, network: Network) -> Shell {
    shell(
        dir,
        Some(Sandbox {
            network,
            ..Sandbox::default()
        }),
    )
}

fn assert_ok(r: &BashResult, what: &str) {
    assert_eq!(r.exit_code, Some(0), "{what}: {}", r.output);
    assert!(
        r.sandbox_violations.is_empty(),
        "{what}: {:?}",
        r.sandbox_violations
    );
}

fn assert_blocked(r: &BashResult, target: &str) {
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert_eq!(
        r.sandbox_violations,
        vec![target.to_string()],
        "{}",
        r.output
    );
    assert!(
        r.output.ends_with(&format!("{}\n", blocked(target))),
        "{}",
        r.output
    );
}

#[test]
fn allowed_names_are_reached_and_nothing_else_is() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch("domains");
    let servers = Servers::start(&dir.join("net"));
    let (https, http) = (servers.https, servers.http);
    let sh = session(
        &dir,
        policy(&["registry.test", "*.pkg.test"], &["denied.test"]),
    );

    let r = run(
        &sh,
        &servers.curl(&format!("https://registry.test:{https}/")),
    );
    assert_ok(&r, "curl over https");
    assert_eq!(r.output, "hello from registry.test\n");
    assert_ok(
        &run(&sh, &servers.curl(&format!("http://registry.test:{http}/"))),
        "plain http",
    );
    assert_ok(
        &run(&sh, &servers.curl(&format!("https://a.pkg.test:{https}/"))),
        "wildcard",
    );
    let r = run(
        &sh,
        &servers.curl(&format!(
            "--proxy \"$ALL_PROXY\" https://registry.test:{https}/"
        )),
    );
    assert_ok(&r, "SOCKS5 by name");
    let python = format!(
        "python3 -c \"import ssl, urllib.request as u; \
         print(u.urlopen('https://registry.test:{https}/', \
         context=ssl.create_default_context(cafile='{}')).read().decode().strip())\"",
        servers.dir.join("cert.pem").display()
    );
    let r = run(&sh, &python);
    assert_ok(&r, "Python urllib");
    assert_eq!(r.output, "hello from registry.test\n");

    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("https://unlisted.test:{https}/")),
        ),
        &format!("unlisted.test:{https}"),
    );
    assert_blocked(
        &run(&sh, &servers.curl(&format!("https://denied.test:{https}/"))),
        &format!("denied.test:{https}"),
    );
    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("-f http://unlisted.test:{http}/")),
        ),
        &format!("unlisted.test:{http}"),
    );
    // An address literal through SOCKS5 passes only through an allowed block.
    let by_address =
        format!("--proxy \"${{ALL_PROXY/socks5h/socks5}}\" -f http://127.0.0.2:{http}/");
    assert_blocked(
        &run(&sh, &servers.curl(&by_address)),
        &format!("127.0.0.2:{http}"),
    );
    let r = run(&sh, &python.replace("registry.test", "unlisted.test"));
    assert_eq!(
        r.sandbox_violations,
        vec![format!("unlisted.test:{https}")],
        "{}",
        r.output
    );

    // A redirect from an allowed name to an unlisted one.
    let to = format!("https://unlisted.test:{https}/");
    let redirect = format!("-L 'https://registry.test:{https}/redirect?to={to}'");
    assert_blocked(
        &run(&sh, &servers.curl(&redirect)),
        &format!("unlisted.test:{https}"),
    );

    // Around the proxy: no DNS, and no TCP but to the proxy's port.
    let r = run(
        &sh,
        &servers.curl(&format!("--noproxy '*' https://registry.test:{https}/")),
    );
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    let direct = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.2',{https}),2); print('connected')\""
    );
    let r = run(&sh, &direct);
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert!(!r.output.contains("connected"), "{}", r.output);
    assert!(r.sandbox_violations.is_empty(), "the proxy never saw it");

    // As root, the session has a network namespace of its own: the proxy
    // is all there is, even a host service on the proxy's own port number
    // is out of reach.
    if unsafe { libc::geteuid() } == 0 {
        let r = run(
            &sh,
            "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '",
        );
        assert_eq!(r.output, "lo\n");
        let r = run(&sh, "echo ${HTTP_PROXY##*:}");
        let port: u16 = r.output.trim().parse().unwrap();
        if let Ok(host_service) = std::net::TcpListener::bind(("127.0.0.3", port)) {
            let reach = format!(
                "python3 -c \"import socket; socket.create_connection(('127.0.0.3',{port}),2); print('reached')\""
            );
            let r = run(&sh, &reach);
            assert_ne!(r.exit_code, Some(0), "{}", r.output);
            drop(host_service);
        }
    }

    // The host approves a domain: the next command reaches it.
    let wider = policy(
        &["registry.test", "*.pkg.test", "unlisted.test"],
        &["denied.test"],
    );
    sh.set_network(&wider).unwrap();
    assert_ok(&run(&sh, &servers.curl(&redirect)), "after the update");
    // A port pattern allows its port only.
    sh.set_network(&policy(&["registry.test:1"], &[])).unwrap();
    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("https://registry.test:{https}/")),
        ),
        &format!("registry.test:{https}"),
    );
    sh.set_network(&Network::Deny).unwrap();
    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("https://registry.test:{https}/")),
        ),
        &format!("registry.test:{https}"),
    );
    let err = sh.set_network(&Network::Allow).unwrap_err().to_string();
    assert!(err.contains("cannot open the whole network"), "{err}");

    // The proxy gone: commands fail closed.
    sh.set_network(&wider).unwrap();
    sh.stop_network_proxy();
    let r = run(
        &sh,
        &servers.curl(&format!("https://registry.test:{https}/")),
    );
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert_ne!(run(&sh, &direct).exit_code, Some(0));
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn git_clones_over_https_from_an_allowed_name_only() {
    if !landlock_ports() || conch_core::process::find_on_path("git").is_none() {
        return;
    }
    let dir = scratch("domains-git");
    let net = dir.join("net");
    let www = net.join("www");
    std::fs::create_dir_all(&www).unwrap();
    let make = "git init -q -b main --bare repo.git && git init -q -b main src && cd src && \
        git -c user.name=t -c user.email=t@t commit -q --allow-empty -m first && \
        git push -q ../repo.git HEAD:refs/heads/main && cd ../repo.git && git update-server-info";
    let status = Command::new("bash")
        .args(["-c", make])
        .current_dir(&www)
        .status()
        .unwrap();
    assert!(status.success());
    let servers = Servers::start(&net);
    let sh = session(&dir, policy(&["registry.test"], &[]));
    let clone = |host: &str| {
        format!(
            "GIT_SSL_CAINFO={} git clone -q https://{host}:{}/repo.git clone-{host} && git -C clone-{host} log --format=%s",
            servers.dir.join("cert.pem").display(),
            servers.https
        )
    };
    let r = run(&sh, &clone("registry.test"));
    assert_ok(&r, "git clone");
    assert_eq!(r.output, "first\n");
    let r = run(&sh, &clone("unlisted.test"));
    assert_ne!(r.exit_code, Some(0), "{}", r.output);
    assert!(
        r.sandbox_violations
            .contains(&format!("unlisted.test:{}", servers.https))
    );
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_domain_policy_without_a_domain_policy_session_or_with_bad_patterns_is_an_error() {
    let dir = scratch("domains-bad");
    let sh = shell(&dir, Some(Sandbox::default()));
    let err = sh
        .set_network(&policy(&["registry.test"], &[]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("set_network needs a session started with a domain policy"),
        "{err}"
    );
    let unsandboxed = shell(&dir, None);
    assert!(unsandboxed.set_network(&Network::Deny).is_err());

    let given = serde_json::json!({"network": {"allow": ["ok.test", "bad pattern"]}});
    let err = serde_json::from_value::<Sandbox>(given)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("network.allow[1] must be a domain pattern"),
        "{err}"
    );
    let given = serde_json::json!({"network": {"allow": [], "proxy": true}});
    assert!(serde_json::from_value::<Sandbox>(given).is_err());
    // A network given on its own (set_network's) must say what it is: null
    // is refused, not read as "deny"; a wrong type is named.
    use conch_core::wire::{Given, Spelling, read_value};
    let err = read_value::<Network>("network", Given::Null, Spelling::Wire).unwrap_err();
    assert!(
        err.message.starts_with("network: invalid type: unit value"),
        "{}",
        err.message
    );
    let five = Given::from(serde_json::json!(5));
    let err = read_value::<Network>("network", five, Spelling::Wire).unwrap_err();
    assert!(
        err.message
            .starts_with("network: invalid type: integer `5`"),
        "{}",
        err.message
    );
    let deny = Given::from(serde_json::json!("deny"));
    assert_eq!(
        read_value::<Network>("network", deny, Spelling::Wire),
        Ok(Network::Deny)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn allowed_tcp_ports_keep_working_beside_a_domain_policy() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch("domains-ports");
    let servers = Servers::start(&dir.join("net"));
    // A host service on loopback the session may reach on its port: the
    // session then stays in the host's network namespace.
    let service = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = service.local_addr().unwrap().port();
    let sh = shell(
        &dir,
        Some(Sandbox {
            network: policy(&["registry.test"], &[]),
            allow_tcp_ports: vec![port],
            ..Sandbox::default()
        }),
    );
    let reach = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1',{port}),2); print('reached')\""
    );
    let r = run(&sh, &reach);
    assert_eq!((r.exit_code, r.output.as_str()), (Some(0), "reached\n"));
    let r = run(
        &sh,
        &servers.curl(&format!("https://registry.test:{}/", servers.https)),
    );
    assert_ok(&r, "through the proxy");
    assert_blocked(
        &run(
            &sh,
            &servers.curl(&format!("https://unlisted.test:{}/", servers.https)),
        ),
        &format!("unlisted.test:{}", servers.https),
    );
    drop(sh);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_bash_tool_keeps_the_hosts_lists_when_its_session_comes_back() {
    use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext};
    if !landlock_ports() {
        return;
    }
    let dir = scratch("domains-tool");
    let servers = Servers::start(&dir.join("net"));
    let key = format!("domains-tool-{}", std::process::id());
    let mut config = BashToolConfig::new(&dir);
    config.session_key = Some(key.clone());
    config.sandbox = Some(Sandbox {
        network: policy(&["registry.test"], &[]),
        ..Sandbox::default()
    });
    let tool = BashTool::new(config).unwrap();
    let description = tool.definition().description;
    assert!(
        description.contains("to the allowed domains (registry.test)"),
        "{description}"
    );
    let curl = servers.curl(&format!("https://unlisted.test:{}/", servers.https));
    let call = |command: &str| {
        let run = tool.run(
            BashToolArgs::new(command),
            ToolContext {
                on_update: None,
                cancel: None,
                has_ui: false,
            },
        );
        run.bash.expect("a shell run")
    };
    assert_blocked(&call(&curl), &format!("unlisted.test:{}", servers.https));
    tool.set_network(&policy(&["registry.test", "unlisted.test"], &[]))
        .unwrap();
    assert_ok(&call(&curl), "after set_network");
    let description = tool.definition().description;
    assert!(
        description.contains("to the allowed domains (registry.test, unlisted.test)"),
        "the description states the lists in force: {description}"
    );
    // The registry closes the idle session; the next call makes it again,
    // with the host's lists, not the configured ones.
    conch_core::registry::close(&key);
    assert_ok(&call(&curl), "a session made again");
    tool.set_network(&policy(&[], &[])).unwrap();
    conch_core::registry::close(&key);
    assert_blocked(&call(&curl), &format!("unlisted.test:{}", servers.https));
    tool.close();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pty_runs_and_the_bash_tool_on_a_pty_report_what_was_refused() {
    use conch_core::tool::{BashTool, BashToolArgs, BashToolConfig, ToolContext};
    use conch_core::{PtyOptions, PtySession};
    if !landlock_ports() {
        return;
    }
    let dir = scratch("domains-pty");
    let servers = Servers::start(&dir.join("net"));
    let target = servers.target("unlisted.test");
    let sandbox = Sandbox {
        network: policy(&["registry.test"], &[]),
        ..Sandbox::default()
    };
    let mut opts = PtyOptions::new(servers.curl_https("unlisted.test"));
    opts.cwd = Some(dir.clone());
    opts.sandbox = Some(sandbox.clone());
    let r = PtySession::new().start(opts, |_| {}).unwrap();
    let output = &r.summary.output;
    assert!(
        output.ends_with(&format!("{}\n", blocked(&target))),
        "{output}"
    );

    let mut config = BashToolConfig::new(&dir);
    config.sandbox = Some(sandbox);
    config.virtual_terminal = true;
    let tool = BashTool::new(config).unwrap();
    let run = tool.run(
        BashToolArgs::new(servers.curl_https("unlisted.test")),
        ToolContext {
            on_update: None,
            cancel: None,
            has_ui: true,
        },
    );
    let bash = run.bash.expect("a run");
    assert_eq!(
        bash.sandbox_violations,
        vec![target.clone()],
        "{}",
        bash.output
    );
    assert_eq!(
        bash.output.matches(&blocked(&target)).count(),
        1,
        "{}",
        bash.output
    );
    tool.close();
    let _ = std::fs::remove_dir_all(&dir);
}
