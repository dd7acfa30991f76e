//! Network by name through the `conch` binary: `--allow-domain`,
//! `--deny-domain` and `--resolve` give `conch run`, `conch rpc` and `conch
//! mcp` a domain policy; curl reaches the allowed names of
//! tests/net/server.py (on 127.0.0.2, named through `--resolve`) and no
//! other, each refusal in the result; `rpc`'s `set_network` request and
//! `mcp`'s `conch/set_network` change the domains for the next command.
//! Bad flags and policies are refused with the core's words.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

#[allow(dead_code)] // the helpers other test binaries use too
mod common;
use common::{Lines, mcp, mcp_bash, mcp_handshake, scratch_dir};
#[path = "../../../tests/net/servers.rs"]
mod net;
use net::{Servers, blocked, landlock_ports};

/// The flags of a policy allowing `registry.test`, denying `denied.test`,
/// every test name resolved to the servers' address.
const FLAGS: &[&str] = &[
    "--allow-domain",
    "registry.test",
    "--deny-domain",
    "denied.test",
    "--resolve",
    "registry.test=127.0.0.2",
    "--resolve",
    "unlisted.test=127.0.0.2",
    "--resolve",
    "denied.test=127.0.0.2",
];

/// An `rpc` request and its reply.
fn rpc(server: &mut Lines, id: u64, mut request: Value) -> Value {
    request["id"] = id.into();
    server.send(request);
    server.reply(id)
}

#[test]
fn rpc_set_network_widens_and_narrows_a_domain_policy() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch_dir("domains-rpc");
    let servers = Servers::start(&dir.join("net"));
    let mut args = vec!["rpc"];
    args.extend(FLAGS);
    let mut server = Lines::start(&dir, &args);
    let bash = |server: &mut Lines, id, name: &str| {
        rpc(
            server,
            id,
            json!({"type": "bash", "command": servers.curl_https(name)}),
        )
    };

    let r = bash(&mut server, 1, "registry.test");
    assert_eq!(r["success"], true, "{r}");
    assert_eq!(r["data"]["output"], "hello from registry.test\n", "{r}");
    assert_eq!(r["data"]["sandboxViolations"], json!([]), "{r}");
    let r = bash(&mut server, 2, "unlisted.test");
    let target = servers.target("unlisted.test");
    assert_eq!(r["data"]["sandboxViolations"], json!([target]), "{r}");
    let output = r["data"]["output"].as_str().unwrap();
    assert!(output.ends_with(&format!("{}\n", blocked(&target))), "{r}");

    // The host approves unlisted.test: the next command reaches it.
    let wider = json!({"allow": ["registry.test", "unlisted.test"], "deny": ["denied.test"],
        "resolve": {"registry.test": "127.0.0.2", "unlisted.test": "127.0.0.2",
                    "denied.test": "127.0.0.2"}});
    let r = rpc(
        &mut server,
        3,
        json!({"type": "set_network", "network": wider}),
    );
    assert_eq!(
        r,
        json!({"type": "response", "id": 3, "command": "set_network", "success": true, "data": {}})
    );
    let r = bash(&mut server, 4, "unlisted.test");
    assert_eq!(r["data"]["output"], "hello from unlisted.test\n", "{r}");
    let r = bash(&mut server, 5, "denied.test");
    let denied = servers.target("denied.test");
    assert_eq!(r["data"]["sandboxViolations"], json!([denied]), "{r}");

    // Refused: a bad pattern (named), the whole network, no network.
    let bad = json!({"type": "set_network", "network": {"allow": ["ok.test", "bad pattern"]}});
    let r = rpc(&mut server, 6, bad);
    assert_eq!(
        (&r["success"], &r["command"]),
        (&json!(false), &json!("set_network"))
    );
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("network.allow[1] must be a domain pattern"),
        "{r}"
    );
    let r = rpc(
        &mut server,
        7,
        json!({"type": "set_network", "network": "allow"}),
    );
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("cannot open the whole network"),
        "{r}"
    );
    let r = rpc(&mut server, 8, json!({"type": "set_network"}));
    assert!(
        r["error"]
            .as_str()
            .unwrap()
            .contains("set_network needs a \"network\""),
        "{r}"
    );
    let r = bash(&mut server, 9, "unlisted.test");
    assert_eq!(
        r["data"]["output"], "hello from unlisted.test\n",
        "unchanged: {r}"
    );

    // "deny": nothing any more.
    let r = rpc(
        &mut server,
        10,
        json!({"type": "set_network", "network": "deny"}),
    );
    assert_eq!(r["success"], true, "{r}");
    let r = bash(&mut server, 11, "registry.test");
    let registry = servers.target("registry.test");
    assert_eq!(r["data"]["sandboxViolations"], json!([registry]), "{r}");
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn rpc_set_network_without_a_domain_policy_is_refused() {
    let dir = scratch_dir("domains-rpc-none");
    let mut server = Lines::start(&dir, &["rpc"]);
    let r = rpc(
        &mut server,
        1,
        json!({"type": "set_network", "network": {"allow": ["registry.test"]}}),
    );
    assert_eq!(r["success"], false, "{r}");
    let error = r["error"].as_str().unwrap();
    assert!(
        error.contains("set_network needs a session started with a domain policy"),
        "{r}"
    );
    // The server goes on.
    let r = rpc(
        &mut server,
        2,
        json!({"type": "bash", "command": "echo on"}),
    );
    assert_eq!(r["data"]["output"], "on\n", "{r}");
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_with_domain_flags_and_conch_set_network() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch_dir("domains-mcp");
    let servers = Servers::start(&dir.join("net"));
    let mut args = vec!["mcp"];
    args.extend(FLAGS);
    let mut server = Lines::start(&dir, &args);
    let r = mcp_handshake(&mut server);
    assert_eq!(
        r["result"]["capabilities"]["experimental"]["conch/set_network"],
        json!({}),
        "{r}"
    );

    assert_eq!(
        mcp_bash(&mut server, 2, &servers.curl_https("registry.test")),
        "hello from registry.test"
    );
    let text = mcp_bash(&mut server, 3, &servers.curl_https("unlisted.test"));
    assert!(
        text.contains(&blocked(&servers.target("unlisted.test"))),
        "{text}"
    );
    // The tool's description tells the model what it may reach.
    let r = mcp(&mut server, 4, "tools/list", json!({}));
    let description = r["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("allowed domains (registry.test)"),
        "{description}"
    );

    let wider = json!({"network": {"allow": ["registry.test", "unlisted.test"],
        "resolve": {"unlisted.test": "127.0.0.2"}}});
    let r = mcp(&mut server, 5, "conch/set_network", wider);
    assert_eq!(r["result"], json!({}), "{r}");
    // The description changed: the client is told to list the tools again.
    let told = server.notified.borrow().clone();
    assert!(
        told.contains(&"notifications/tools/list_changed".to_string()),
        "{told:?}"
    );
    let r = mcp(&mut server, 12, "tools/list", json!({}));
    let description = r["result"]["tools"][0]["description"].as_str().unwrap();
    assert!(
        description.contains("allowed domains (registry.test, unlisted.test)"),
        "{description}"
    );
    assert_eq!(
        mcp_bash(&mut server, 6, &servers.curl_https("unlisted.test")),
        "hello from unlisted.test"
    );

    let bad = json!({"network": {"allow": ["bad pattern"]}});
    let r = mcp(&mut server, 7, "conch/set_network", bad);
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("network.allow[0] must be a domain pattern"),
        "{r}"
    );
    let r = mcp(&mut server, 8, "conch/set_network", json!({}));
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = mcp(&mut server, 9, "conch/other", json!({}));
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let r = mcp(
        &mut server,
        10,
        "conch/set_network",
        json!({"network": "deny"}),
    );
    assert_eq!(r["result"], json!({}), "{r}");
    let text = mcp_bash(&mut server, 11, &servers.curl_https("registry.test"));
    assert!(
        text.contains(&blocked(&servers.target("registry.test"))),
        "{text}"
    );
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn mcp_set_network_without_a_domain_policy_is_refused() {
    let dir = scratch_dir("domains-mcp-none");
    let mut server = Lines::start(&dir, &["mcp"]);
    mcp_handshake(&mut server);
    let r = mcp(
        &mut server,
        2,
        "conch/set_network",
        json!({"network": "deny"}),
    );
    let message = r["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("{r}"));
    assert!(
        message.contains("set_network needs a session started with a domain policy"),
        "{r}"
    );
    server.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

fn conch_run(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_conch"))
        .arg("run")
        .args(args)
        .current_dir(dir)
        .env("CONCH_ARTIFACTS_DIR", dir.join("artifacts"))
        .output()
        .unwrap()
}

#[test]
fn run_prints_the_blocked_line_and_its_json_the_violations() {
    if !landlock_ports() {
        return;
    }
    let dir = scratch_dir("domains-run");
    let servers = Servers::start(&dir.join("net"));
    let curl = servers.curl_https("registry.test");
    let mut args = FLAGS.to_vec();
    args.extend(["--", &curl]);
    let out = conch_run(&dir, &args);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "hello from registry.test\n"
    );
    assert!(out.status.success());

    let curl = servers.curl_https("unlisted.test");
    let target = servers.target("unlisted.test");
    let mut args = FLAGS.to_vec();
    args.extend(["--", &curl]);
    let out = conch_run(&dir, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&blocked(&target)), "{text}");
    assert!(!out.status.success());
    let mut args = FLAGS.to_vec();
    args.extend(["--json", "--", &curl]);
    let out = conch_run(&dir, &args);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["sandboxViolations"], json!([target]), "{result}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_domain_flags_are_usage_errors() {
    let dir = scratch_dir("domains-flags");
    let error = |args: &[&str]| {
        let out = conch_run(&dir, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let e = error(&[
        "--network",
        "allow",
        "--allow-domain",
        "a.test",
        "--",
        "true",
    ]);
    assert!(
        e.starts_with("conch run: --allow-domain, --deny-domain and --resolve limit the network")
            && e.contains("contradict --network allow"),
        "{e}"
    );
    let e = error(&[
        "--allow-domain",
        "a.test",
        "--allow-domain",
        "bad pattern",
        "--",
        "true",
    ]);
    assert!(
        e.starts_with("conch run: network.allow[1] must be a domain pattern (example.com"),
        "{e}"
    );
    let e = error(&["--deny-domain", "*.", "--", "true"]);
    assert!(e.starts_with("conch run: network.deny[0] must be"), "{e}");
    let e = error(&["--resolve", "a.test", "--", "true"]);
    assert_eq!(e, "conch run: --resolve must be NAME=IP, got \"a.test\"\n");
    let e = error(&["--resolve", "a.test=nowhere", "--", "true"]);
    assert!(e.contains("must be an IP address, got \"nowhere\""), "{e}");
    let e = error(&["--allow-domain"]);
    assert_eq!(e, "conch run: --allow-domain needs a value\n");
    // rpc and mcp refuse them the same way, before serving.
    for command in ["rpc", "mcp"] {
        let out = Command::new(env!("CARGO_BIN_EXE_conch"))
            .args([command, "--network", "allow", "--deny-domain", "x.test"])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{command}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(
            e.starts_with(&format!("conch {command}: --allow-domain, --deny-domain")),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
