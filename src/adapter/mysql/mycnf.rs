//! Password lookup in the MariaDB/MySQL client option file `~/.my.cnf`, as the `mariadb`
//! and `mysql` clients read it: `password=…` in the `[client]` or `[client-mariadb]`
//! group, the last one winning; values may be quoted (`"…"`, `'…'`) with backslash
//! escapes. Must not log or return anything but that password.

use crate::adapter::url::read_password_file;
use std::path::PathBuf;

/// The groups every MariaDB/MySQL client reads.
const GROUPS: [&str; 2] = ["client", "client-mariadb"];

/// The password from `~/.my.cnf`, if any. Like the clients, a world-writable file is
/// ignored.
pub fn lookup() -> Option<String> {
    let path = PathBuf::from(std::env::var_os("HOME")?).join(".my.cnf");
    find(&read_password_file(&path, 0o002, "world-writable")?)
}

/// The `password` of the client groups in option-file text.
pub fn find(text: &str) -> Option<String> {
    let mut in_client = false;
    let mut found = None;
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with(['#', ';']) || line.starts_with('!') {
            continue;
        }
        if let Some(group) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            in_client = GROUPS.contains(&group.trim());
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_client && key.trim().replace('_', "-") == "password" {
            found = Some(unquote(value.trim()));
        }
    }
    found.filter(|p| !p.is_empty())
}

/// An option value without its quotes and escapes (an unquoted value ends at ` #`).
fn unquote(value: &str) -> String {
    let quote = value.chars().next().filter(|c| *c == '"' || *c == '\'');
    let body = match quote {
        Some(q) => value[1..].rfind(q).map_or(&value[1..], |end| &value[1..=end]),
        None => value.split(" #").next().unwrap_or(value).trim_end(),
    };
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('s') => out.push(' '),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_groups_password_is_found_last_one_winning() {
        let text = "[mysqld]\npassword=server\n[client]\nuser = bench\npassword = first # note\n\n[client-mariadb]\npassword=\"sec ret\\\\x\"\n[mysql]\npassword=other\n";
        assert_eq!(find(text).as_deref(), Some("sec ret\\x"));
        assert_eq!(find("[client]\npassword='it''s'\n").as_deref(), Some("it''s"));
        assert_eq!(find("[client]\npassword=plain\n").as_deref(), Some("plain"));
        assert_eq!(find("[mysqld]\npassword=server\n"), None);
        assert_eq!(find("[client]\npassword\n"), None);
    }
}
