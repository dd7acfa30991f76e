use super::*;

fn policy(allow: &[&str], deny: &[&str]) -> DomainPolicy {
    let owned = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    DomainPolicy::parse("network", &owned(allow), &owned(deny), &BTreeMap::new()).unwrap()
}

fn allowed(p: &DomainPolicy, host: &str, port: u16) -> bool {
    p.check_target(&Host::parse(host).unwrap(), port).is_ok()
}

#[test]
fn names_wildcards_and_ports_match_as_written() {
    let p = policy(&["example.com", "*.npmjs.org", "git.test:443"], &[]);
    assert!(allowed(&p, "example.com", 80));
    assert!(
        allowed(&p, "EXAMPLE.com.", 443),
        "case and a trailing dot do not matter"
    );
    assert!(
        !allowed(&p, "www.example.com", 443),
        "a name is not its subdomains"
    );
    assert!(allowed(&p, "registry.npmjs.org", 443));
    assert!(allowed(&p, "a.b.npmjs.org", 443));
    assert!(
        !allowed(&p, "npmjs.org", 443),
        "*. is the names below, not the name"
    );
    assert!(!allowed(&p, "evilnpmjs.org", 443));
    assert!(allowed(&p, "git.test", 443));
    assert!(
        !allowed(&p, "git.test", 80),
        "a port pattern allows that port only"
    );
    assert!(!allowed(&p, "other.test", 443));
}

#[test]
fn deny_wins_and_an_empty_allow_list_allows_nothing() {
    let p = policy(&["*.example.com"], &["evil.example.com"]);
    assert!(allowed(&p, "good.example.com", 443));
    assert!(!allowed(&p, "evil.example.com", 443));
    let none = policy(&[], &[]);
    assert!(!allowed(&none, "example.com", 443));
    assert!(!allowed(&none, "127.0.0.1", 80));
}

#[test]
fn address_literals_pass_only_through_a_block() {
    let p = policy(&["example.com", "10.0.0.0/8", "::1"], &["10.9.0.0/16"]);
    assert!(allowed(&p, "10.1.2.3", 80));
    assert!(
        !allowed(&p, "10.9.1.1", 80),
        "a denied block inside an allowed one"
    );
    assert!(!allowed(&p, "11.0.0.1", 80));
    assert!(allowed(&p, "[::1]", 80));
    assert!(
        allowed(&p, "::ffff:10.0.0.7", 80),
        "IPv4 written as IPv6 is the same address"
    );
    assert!(
        !allowed(&p, "93.184.216.34", 443),
        "a name's pattern does not allow its address"
    );
}

#[test]
fn an_unspecified_address_is_judged_as_the_loopback_it_reaches() {
    let p = policy(&["0.0.0.0/0", "::/0"], &["127.0.0.0/8", "::1"]);
    assert!(allowed(&p, "93.184.216.34", 443));
    for target in ["0.0.0.0", "[::]", "[::ffff:0.0.0.0]"] {
        assert!(!allowed(&p, target, 80), "{target} reaches the loopback");
    }
    let name = Host::parse("example.com").unwrap();
    let q = policy(&["example.com", "0.0.0.0/0"], &["127.0.0.0/8"]);
    assert_eq!(
        q.check_address(&name, "0.0.0.0".parse().unwrap(), 443),
        Err(Refusal::NotAllowed),
        "a name resolving to 0.0.0.0"
    );
    let open = policy(&["0.0.0.0/0"], &[]);
    assert!(
        allowed(&open, "0.0.0.0", 80),
        "allowed where the loopback is"
    );
}

#[test]
fn a_name_resolving_to_a_private_address_is_refused_unless_allowed() {
    let name = Host::parse("example.com").unwrap();
    let p = policy(&["example.com"], &[]);
    let public: IpAddr = "93.184.216.34".parse().unwrap();
    assert_eq!(p.check_address(&name, public, 443), Ok(()));
    for private in [
        "127.0.0.1",
        "10.0.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "::1",
        "fd00::1",
    ] {
        let ip: IpAddr = private.parse().unwrap();
        assert_eq!(
            p.check_address(&name, ip, 443),
            Err(Refusal::Private(ip)),
            "{private}"
        );
    }
    let with_block = policy(&["example.com", "127.0.0.0/8"], &[]);
    assert_eq!(
        with_block.check_address(&name, "127.0.0.2".parse().unwrap(), 443),
        Ok(())
    );
    let denied = policy(&["example.com"], &["93.184.0.0/16"]);
    assert_eq!(
        denied.check_address(&name, public, 443),
        Err(Refusal::NotAllowed)
    );
}

#[test]
fn the_hosts_own_overrides_may_name_private_addresses() {
    let resolve = BTreeMap::from([("Registry.Test".to_string(), "127.0.0.5".to_string())]);
    let p = DomainPolicy::parse("network", &["registry.test".into()], &[], &resolve).unwrap();
    let ip: IpAddr = "127.0.0.5".parse().unwrap();
    assert_eq!(p.resolve.get("registry.test"), Some(&ip));
    assert_eq!(
        p.check_address(&Host::parse("registry.test").unwrap(), ip, 443),
        Ok(())
    );
}

#[test]
fn bad_patterns_are_named_errors() {
    let cases = [
        ("", "allow[0]"),
        ("exa mple.com", "allow[0]"),
        ("*", "allow[0]"),
        ("a.*.com", "allow[0]"),
        ("example.com:0", "allow[0]"),
        ("example.com:70000", "allow[0]"),
        ("10.0.0.0/33", "allow[0]"),
        ("::/129", "allow[0]"),
        ("http://example.com", "allow[0]"),
    ];
    for (text, at) in cases {
        let err = DomainPolicy::parse("network", &[text.into()], &[], &BTreeMap::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!("network.{at} must be a domain pattern")),
            "{text}: {err}"
        );
        assert!(err.contains(&format!("{text:?}")), "{err}");
    }
    let resolve = BTreeMap::from([("registry.test".to_string(), "not-an-ip".to_string())]);
    let err = DomainPolicy::parse("network", &[], &[], &resolve)
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        r#"network.resolve.registry.test must be an IP address, got "not-an-ip""#
    );
}

#[test]
fn the_lines_name_the_target() {
    assert_eq!(
        Refusal::NotAllowed.line("evil.example:443"),
        "[sandbox] blocked: evil.example:443 is not in the allowed domains"
    );
    assert!(Refusal::NotAllowed.is_violation());
    assert!(!Refusal::Unreachable("no such host".into()).is_violation());
    assert_eq!(Host::parse("[::1]").unwrap().to_string(), "[::1]");
}
