//! The worker token: the shared secret that lets a process take part in a run with workers
//! (`--workers`) and that signs shard reports (`--shard`, `dbsweep merge`).
//!
//! Owns where the token comes from (`DBSWEEP_WORKER_TOKEN`, or the file named by
//! `DBSWEEP_WORKER_TOKEN_FILE`, or a fresh random one), and HMAC-SHA-256 tags over byte
//! strings made with it, compared in constant time. Must not print, log or serialise the
//! token itself: `Debug` shows only that there is one, and nothing here goes on the wire but
//! tags.

use crate::error::{Error, Result};
use hmac::{KeyInit, Mac};
use std::fmt;
use std::path::Path;

/// The variable that holds the token's text.
pub const TOKEN_VARIABLE: &str = "DBSWEEP_WORKER_TOKEN";
/// The variable that names a file holding the token (its first line; surrounding white
/// space is ignored). Checked when [`TOKEN_VARIABLE`] is not set.
pub const TOKEN_FILE_VARIABLE: &str = "DBSWEEP_WORKER_TOKEN_FILE";

/// Fewest bytes a token may have: shorter secrets can be guessed offline from one tag.
pub const MIN_TOKEN_BYTES: usize = 16;
/// Most bytes a token may have (a guard against naming the wrong file).
const MAX_TOKEN_BYTES: usize = 4096;

/// The length of a tag in bytes (HMAC-SHA-256).
pub const TAG_BYTES: usize = 32;

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The run's shared secret.
#[derive(Clone, PartialEq, Eq)]
pub struct Token {
    secret: Vec<u8>,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(<secret>)")
    }
}

impl Token {
    /// The token the environment gives (`var` reads a variable): [`TOKEN_VARIABLE`]'s text,
    /// else the first line of the file [`TOKEN_FILE_VARIABLE`] names, else `None`.
    pub fn from_environment(var: impl Fn(&str) -> Option<String>) -> Result<Option<Token>> {
        if let Some(text) = var(TOKEN_VARIABLE).filter(|t| !t.is_empty()) {
            return Token::from_text(&text, TOKEN_VARIABLE).map(Some);
        }
        let Some(path) = var(TOKEN_FILE_VARIABLE).filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        Token::from_file(Path::new(&path)).map(Some)
    }

    /// The token in the first line of `path`.
    pub fn from_file(path: &Path) -> Result<Token> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::usage(format!(
                "cannot read the worker token file {} ({e}); set {TOKEN_FILE_VARIABLE} to a readable file",
                path.display()
            ))
        })?;
        let first = text.lines().next().unwrap_or("");
        Token::from_text(first, &format!("the token file {}", path.display()))
    }

    /// A token from its text, `origin` naming where it came from in errors.
    pub fn from_text(text: &str, origin: &str) -> Result<Token> {
        let secret = text.trim().as_bytes().to_vec();
        if secret.len() < MIN_TOKEN_BYTES {
            return Err(Error::usage(format!(
                "the worker token from {origin} is {} bytes; use at least {MIN_TOKEN_BYTES} (e.g. the output of `openssl rand -hex 32`)",
                secret.len()
            )));
        }
        if secret.len() > MAX_TOKEN_BYTES {
            return Err(Error::usage(format!(
                "the worker token from {origin} is over {MAX_TOKEN_BYTES} bytes; use one line such as `openssl rand -hex 32`"
            )));
        }
        Ok(Token { secret })
    }

    /// A fresh token: 32 random bytes from the operating system, as 64 hex digits (so that
    /// it can be handed to child processes in [`TOKEN_VARIABLE`]).
    pub fn generate() -> Result<Token> {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).map_err(|e| Error::runtime(format!("cannot draw a worker token from the operating system ({e})")))?;
        Ok(Token { secret: hex(&bytes).into_bytes() })
    }

    /// The token's text, for the environment of a child process. Never print it.
    pub fn expose_for_child_environment(&self) -> String {
        String::from_utf8_lossy(&self.secret).into_owned()
    }

    /// The HMAC-SHA-256 tag of `parts`, each part length-prefixed so that no two different
    /// lists of parts give the same input.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; TAG_BYTES] {
        self.mac(parts).finalize().into_bytes().into()
    }

    /// The tag of `parts` as lower-case hex.
    pub fn tag_hex(&self, parts: &[&[u8]]) -> String {
        hex(&self.tag(parts))
    }

    /// Whether `tag_hex` is the tag of `parts`, compared in constant time.
    pub fn verify_hex(&self, parts: &[&[u8]], tag_hex: &str) -> bool {
        let Some(tag) = unhex(tag_hex) else { return false };
        self.mac(parts).verify_slice(&tag).is_ok()
    }

    fn mac(&self, parts: &[&[u8]]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.secret).expect("HMAC takes keys of any length");
        for part in parts {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }
}

/// A fresh random nonce (a challenge), as 32 hex digits.
pub fn nonce() -> Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| Error::runtime(format!("cannot draw a nonce from the operating system ({e})")))?;
    Ok(hex(&bytes))
}

/// SHA-256 of `parts` (length-prefixed, as [`Token::tag`]) as lower-case hex: the digest a
/// shard report carries when there is no token.
pub fn digest_hex(parts: &[&[u8]]) -> String {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hex(&hasher.finalize())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) || text.len() > 2 * TAG_BYTES {
        return None;
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(text: &str) -> Token {
        Token::from_text(text, "a test").unwrap()
    }

    #[test]
    fn a_tag_verifies_under_its_token_and_parts_only() {
        let a = token("0123456789abcdef-first");
        let b = token("0123456789abcdef-second");
        let tag = a.tag_hex(&[b"hello", b"world"]);
        assert!(a.verify_hex(&[b"hello", b"world"], &tag));
        assert!(!b.verify_hex(&[b"hello", b"world"], &tag), "another token's tag passed");
        assert!(!a.verify_hex(&[b"hello", b"worle"], &tag), "a changed message passed");
        assert!(!a.verify_hex(&[b"hellow", b"orld"], &tag), "moving bytes between parts passed");
        assert!(!a.verify_hex(&[b"hello", b"world"], &tag[..62]), "a cut tag passed");
        assert!(!a.verify_hex(&[b"hello", b"world"], "zz"), "non-hex passed");
    }

    #[test]
    fn the_tag_is_rfc_4231_hmac_sha256() {
        // RFC 4231 test case 2 ("Jefe"), on the raw HMAC (tags add a length prefix per part).
        let mut mac = HmacSha256::new_from_slice(b"Jefe").unwrap();
        mac.update(b"what do ya want for nothing?");
        assert_eq!(hex(&mac.finalize().into_bytes()), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn short_tokens_are_refused_with_the_fix() {
        let error = Token::from_text("short", "DBSWEEP_WORKER_TOKEN").unwrap_err().to_string();
        assert!(error.contains("at least 16") && error.contains("openssl rand"), "{error}");
    }

    #[test]
    fn the_environment_wins_over_the_file_and_debug_hides_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "from-the-file-0123456789\nsecond line\n").unwrap();
        let file_text = file.display().to_string();
        let both = |name: &str| match name {
            TOKEN_VARIABLE => Some("from-the-variable-0123".to_string()),
            TOKEN_FILE_VARIABLE => Some(file_text.clone()),
            _ => None,
        };
        let only_file = |name: &str| (name == TOKEN_FILE_VARIABLE).then(|| file_text.clone());
        assert_eq!(Token::from_environment(both).unwrap().unwrap(), token("from-the-variable-0123"));
        assert_eq!(Token::from_environment(only_file).unwrap().unwrap(), token("from-the-file-0123456789"));
        assert_eq!(Token::from_environment(|_| None).unwrap(), None);
        assert_eq!(format!("{:?}", token("from-the-variable-0123")), "Token(<secret>)");
    }

    #[test]
    fn generated_tokens_differ_and_round_trip_through_the_environment() {
        let a = Token::generate().unwrap();
        let b = Token::generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(token(&a.expose_for_child_environment()), a);
        assert_ne!(nonce().unwrap(), nonce().unwrap());
    }

    #[test]
    fn digests_separate_parts() {
        assert_ne!(digest_hex(&[b"ab", b"c"]), digest_hex(&[b"a", b"bc"]));
        assert_eq!(digest_hex(&[b"ab", b"c"]).len(), 64);
    }
}
