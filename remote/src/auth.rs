//! The bearer token a listening server asks of its clients: read from a
//! file or `CONCH_TOKEN`, compared in constant time.

use std::path::Path;

/// A server's token.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(…)")
    }
}

impl Token {
    /// A token from its text (surrounding whitespace dropped); an empty
    /// one is refused, as it would let anyone in.
    pub fn new(text: &str) -> Result<Token, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the token is empty".to_string());
        }
        Ok(Token(text.as_bytes().to_vec()))
    }

    /// The token in `path` (its first line).
    pub fn from_file(path: &Path) -> Result<Token, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the token file {}: {e}", path.display()))?;
        Token::new(text.lines().next().unwrap_or(""))
            .map_err(|e| format!("{e} (in {})", path.display()))
    }

    /// Whether `given` is the token, in time that does not depend on where
    /// they differ.
    pub fn matches(&self, given: &str) -> bool {
        let given = given.as_bytes();
        let mut diff = (self.0.len() ^ given.len()) as u8 | u8::from(self.0.len() != given.len());
        for (i, a) in self.0.iter().enumerate() {
            diff |= a ^ given.get(i).copied().unwrap_or(!a);
        }
        diff == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_token_matches() {
        let token = Token::new(" s3cret\n").unwrap();
        assert!(token.matches("s3cret"));
        for wrong in ["", "s3cre", "s3cret!", "S3cret", "s3cres"] {
            assert!(!token.matches(wrong), "{wrong:?}");
        }
        assert!(Token::new("  ").is_err());
    }
}
