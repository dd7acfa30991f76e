//! The string and command helpers, artifact stores and cancel tokens.

use super::*;

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn text_and_command_helpers(
        t in text(),
        data in proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
        len in prop_oneof![Just(0usize), 1usize..8],
        head in i64_edge(),
        tail in i64_edge(),
        tools in list(),
        rules in prop_oneof![
            Just(None),
            text(),
            (bytes(), bytes(), text_or(&["", "i", "x", "iu"])).prop_map(|(p, t, f)| {
                let rule = serde_json::json!([{
                    "pattern": String::from_utf8_lossy(&p),
                    "tool": String::from_utf8_lossy(&t),
                    "message": "m",
                    "flags": f.map(|f| String::from_utf8_lossy(&f).into_owned()),
                }]);
                Some(rule.to_string().into_bytes())
            }),
        ],
        null_out in any::<bool>(),
    ) {
        watchdog();
        let mut arena = Arena::default();
        let tp = arena.text(&t);
        // SAFETY (whole block): every pointer is NULL or a live C string,
        // list or buffer of the stated length; results are freed once.
        unsafe {
            let s = conch_sanitize_text(tp);
            check_pointer(s, "conch_sanitize_text")?;
            check_text(s, true, "conch_sanitize_text")?;
            conch_string_free(s);

            let (dp, dlen) = match &data {
                None => (ptr::null(), len),
                Some(d) => (d.as_ptr(), d.len()),
            };
            let s = conch_sanitize_bytes(dp, dlen);
            check_pointer(s, "conch_sanitize_bytes")?;
            check_text(s, true, "conch_sanitize_bytes")?;
            conch_string_free(s);

            let (mut h, mut tl) = (0i64, 0i64);
            let (hp, tlp) = if null_out {
                (ptr::null_mut(), &mut tl as *mut i64)
            } else {
                (&mut h as *mut i64, &mut tl as *mut i64)
            };
            let s = conch_normalize_bash_command(tp, hp, tlp);
            check_pointer(s, "conch_normalize_bash_command")?;
            check_text(s, true, "conch_normalize_bash_command")?;
            if !s.is_null() {
                prop_assert!(h >= -1 && tl >= -1);
            }
            conch_string_free(s);

            let s = conch_apply_head_tail(tp, head, tail);
            check_pointer(s, "conch_apply_head_tail")?;
            check_text(s, true, "conch_apply_head_tail")?;
            conch_string_free(s);

            let mut hit: *mut conch_interception = ptr::null_mut();
            let out = if null_out { ptr::null_mut() } else { &mut hit as *mut _ };
            let rc = conch_check_bash_interception(tp, arena.list(&tools), arena.text(&rules), out);
            check_status(rc, "conch_check_bash_interception")?;
            if !hit.is_null() {
                check_text((*hit).message, false, "interception message")?;
                check_text((*hit).suggested_tool, false, "suggested_tool")?;
            }
            conch_interception_free(hit);

            let s = conch_default_interceptor_rules();
            check_pointer(s, "conch_default_interceptor_rules")?;
            conch_string_free(s);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn artifact_stores_and_cancel_tokens(
        dir in text(),
        kind in text_or(&["bash", "x.y", ""]),
        id in text_or(&["0", "1", "artifact://0", "999999999999999999999"]),
        offset in usize_edge(),
        limit in i64_edge(),
        null_out in any::<bool>(),
    ) {
        watchdog();
        let mut arena = Arena::default();
        let home = scratch();
        // SAFETY (whole block): as in `text_and_command_helpers`.
        unsafe {
            // A store over a random directory is made and freed, never
            // written to (the directory would be the test's cwd).
            let store = conch_artifact_store_new(arena.text(&dir));
            check_pointer(store, "conch_artifact_store_new (random dir)")?;
            conch_artifact_store_free(store);

            let home_c = arena.text(&Some(home.to_str().unwrap().as_bytes().to_vec()));
            let store = conch_artifact_store_new(home_c);
            check_pointer(store, "conch_artifact_store_new")?;
            let (mut id_out, mut path_out) = (ptr::null_mut(), ptr::null_mut());
            let id_ptr = if null_out { ptr::null_mut() } else { &mut id_out as *mut _ };
            let rc = conch_artifact_store_allocate(store, arena.text(&kind), id_ptr, &mut path_out);
            check_status(rc, "conch_artifact_store_allocate")?;
            check_text(id_out, rc != 0, "allocated id")?;
            check_text(path_out, rc != 0, "allocated path")?;
            conch_string_free(id_out);
            conch_string_free(path_out);
            let _ = std::fs::write(home.join("0.bash.log"), "a\nb\nc\n");

            let mut text_out = ptr::null_mut();
            let text_ptr = if null_out { ptr::null_mut() } else { &mut text_out as *mut _ };
            let rc = conch_artifact_store_read(store, arena.text(&id), offset, limit, text_ptr);
            check_status(rc, "conch_artifact_store_read")?;
            check_text(text_out, rc != 0, "read text")?;
            conch_string_free(text_out);
            text_out = ptr::null_mut();
            let rc = conch_artifact_store_resolve(store, arena.text(&id), text_ptr);
            check_status(rc, "conch_artifact_store_resolve")?;
            check_text(text_out, rc != 0, "resolved text")?;
            conch_string_free(text_out);
            check_status(
                conch_artifact_store_read(ptr::null(), arena.text(&id), offset, limit, text_ptr),
                "conch_artifact_store_read(NULL)",
            )?;
            conch_artifact_store_free(store);

            let token = conch_cancel_token_new();
            check_pointer(token, "conch_cancel_token_new")?;
            let mut cancelled = false;
            let out = if null_out { ptr::null_mut() } else { &mut cancelled as *mut bool };
            check_status(conch_cancel_token_is_cancelled(token, out), "is_cancelled")?;
            check_status(conch_cancel_token_cancel(token), "cancel")?;
            check_status(conch_cancel_token_cancel(ptr::null()), "cancel(NULL)")?;
            conch_cancel_token_free(token);
        }
        let _ = std::fs::remove_dir_all(home);
    }
}
