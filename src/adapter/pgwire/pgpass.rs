//! Password lookup in the PostgreSQL password file (`$PGPASSFILE` or `~/.pgpass`).
//!
//! Owns parsing of the standard `host:port:database:user:password` format (`*` matches
//! anything, `\:` and `\\` escape). Must not log or return anything but the password of
//! the first matching line.

use crate::adapter::url::read_password_file;
use std::path::PathBuf;

/// The password for this connection from the user's password file, if any. Like libpq,
/// a file readable by group or others is ignored.
pub fn lookup(host: &str, port: u16, database: &str, user: &str) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pgpass")))?;
    let text = read_password_file(&path, 0o077, "readable by group or others")?;
    find(&text, host, &port.to_string(), database, user)
}

/// The password of the first line of `text` that matches.
pub fn find(text: &str, host: &str, port: &str, database: &str, user: &str) -> Option<String> {
    let wanted = [host, port, database, user];
    text.lines().filter(|l| !l.trim_start().starts_with('#') && !l.trim().is_empty()).find_map(|line| {
        let fields = split(line);
        if fields.len() < 5 {
            return None;
        }
        let matches = fields.iter().zip(wanted).all(|(field, want)| field == "*" || field == want);
        matches.then(|| fields[4..].join(":"))
    })
}

/// Splits a line on unescaped colons, removing the escapes.
fn split(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n\
        otherhost:5432:*:bench:wrong\n\
        127.0.0.1:5433:db:bench:pa\\:ss\\\\word\n\
        *:*:*:bench:fallback\n";

    #[test]
    fn first_matching_line_wins_with_wildcards_and_escapes() {
        assert_eq!(find(FILE, "127.0.0.1", "5433", "db", "bench").as_deref(), Some("pa:ss\\word"));
        assert_eq!(find(FILE, "127.0.0.1", "5432", "db", "bench").as_deref(), Some("fallback"));
        assert_eq!(find(FILE, "otherhost", "5432", "x", "bench").as_deref(), Some("wrong"));
        assert_eq!(find(FILE, "127.0.0.1", "5432", "db", "postgres"), None);
    }
}
