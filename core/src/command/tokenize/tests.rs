//! Tests of the tokenizer: quoting, heredocs, comments, substitutions and
//! operators, each as bash reads them.

use super::*;

fn kinds(src: &str) -> Vec<(TokenKind, &str)> {
    let lexed = tokenize(src);
    assert_eq!(lexed.error, None, "{src:?}");
    lexed.tokens.iter().map(|t| (t.kind, t.text(src))).collect()
}

fn words(src: &str) -> Vec<&str> {
    kinds(src)
        .into_iter()
        .filter(|(k, _)| *k == TokenKind::Word)
        .map(|(_, t)| t)
        .collect()
}

#[test]
fn operators() {
    use Op::*;
    let ops: Vec<_> = kinds("a|b|&c||d&&e;f;;g&h\ni(j)")
        .into_iter()
        .filter_map(|(k, _)| match k {
            TokenKind::Op(op) => Some(op),
            _ => None,
        })
        .collect();
    assert_eq!(
        ops,
        [
            Pipe, PipeAll, Or, And, Semi, CaseEnd, Background, Newline, OpenParen, CloseParen
        ]
    );
}

#[test]
fn quotes_and_substitutions_are_single_words() {
    assert_eq!(
        words(r#"echo 'a | b' "c; $(d | e) `f|g`" $'h\'|' ${i:-"}"} $((1|2)) <(j | k)"#),
        [
            "echo",
            "'a | b'",
            r#""c; $(d | e) `f|g`""#,
            r"$'h\'|'",
            r#"${i:-"}"}"#,
            "$((1|2))",
            "<(j | k)"
        ]
    );
    assert_eq!(words(r"a\|b c\ d"), [r"a\|b", r"c\ d"]);
    assert_eq!(
        words("arr=(a | b) ls @(x|y)"),
        ["arr=(a | b)", "ls", "@(x|y)"]
    );
    assert_eq!(
        words("x=$(case a in a) echo |;; esac) y"),
        ["x=$(case a in a) echo |;; esac)", "y"]
    );
}

#[test]
fn redirects_take_their_fd() {
    let toks = kinds("cmd 2>&1 >/dev/null &>>log <<<s 3<in");
    let redirects: Vec<_> = toks
        .iter()
        .filter(|(k, _)| matches!(k, TokenKind::Redirect(_)))
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(redirects, ["2>&", ">", "&>>", "<<<", "3<"]);
}

#[test]
fn heredoc_bodies_are_data() {
    let src = "cat <<EOF | head -5\na | b\nEOF\ncat <<-'X' <<Y\n\tq\n\tX\nY\nls";
    let toks = kinds(src);
    let bodies: Vec<_> = toks
        .iter()
        .filter(|(k, _)| *k == TokenKind::HeredocBody)
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(bodies, ["a | b\nEOF\n", "\tq\n\tX\n", "Y\n"]);
    assert_eq!(toks.last().unwrap().1, "ls");
}

#[test]
fn comments_only_at_word_start() {
    let toks = kinds("echo a#b # c | d\nls");
    assert!(toks.contains(&(TokenKind::Word, "a#b")));
    assert!(toks.contains(&(TokenKind::Comment, "# c | d")));
}

#[test]
fn unterminated_input_reports_and_keeps_the_rest_as_a_word() {
    let lexed = tokenize("ls; echo 'oops | head");
    assert_eq!(
        lexed.error,
        Some(LexError::Unterminated {
            construct: "'",
            start: 9
        })
    );
    let last = lexed.tokens.last().unwrap();
    assert_eq!(last.text("ls; echo 'oops | head"), "'oops | head");
    for src in [
        "echo \"a",
        "echo $(ls",
        "echo `x",
        "echo ${a",
        "echo $((1",
        "f <(x",
    ] {
        assert!(tokenize(src).error.is_some(), "{src}");
    }
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let src = "$(".repeat(10_000);
    assert!(matches!(
        tokenize(&src).error,
        Some(LexError::TooDeep { .. })
    ));
    let src = "\"${".repeat(10_000);
    assert!(matches!(
        tokenize(&src).error,
        Some(LexError::TooDeep { .. })
    ));
}

#[test]
fn assignments() {
    assert_eq!(assignment_equals("FOO=1"), Some(3));
    assert_eq!(assignment_equals("a+=x"), Some(2));
    assert_eq!(assignment_equals("a[i+1]=x"), Some(6));
    assert_eq!(assignment_equals("=x"), None);
    assert_eq!(assignment_equals("1a=x"), None);
    assert_eq!(assignment_equals("cat"), None);
}
