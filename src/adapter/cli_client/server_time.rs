//! The server's own time for a request through a command-line client (`?timing=server`),
//! as the insert-find paper timed it: redis-cli sends the command between two `TIME`s in
//! one `MULTI` (the server's clock around the command's execution, no network or client),
//! and the mariadb client runs the statements between two `SYSDATE(6)` readings (the
//! server's clock from the end of the first reading to the start of the second: the
//! statements' transfer, execution and reply, what `mysql -vvv` timed on the client).
//! Owns the wrapping text and reading the time back; must not change what the request
//! itself sends or how its reply is counted.

use super::Kind;
use std::time::Duration;

/// The last line of a MariaDB request timed this way: microseconds between the readings.
const MYSQL_BEFORE: &str = "SET @dbsweep_t0 = SYSDATE(6);\n";
const MYSQL_AFTER: &str = "SELECT TIMESTAMPDIFF(MICROSECOND, @dbsweep_t0, SYSDATE(6));\n";

/// `script` wrapped so that the server reports its time, or `None` when this request
/// cannot be: empty, or (redis-cli) more than one command line or a `MULTI` of its own.
pub(super) fn wrap(kind: Kind, script: &str) -> Option<String> {
    if script.trim().is_empty() {
        return None;
    }
    match kind {
        Kind::MySql => Some(format!("{MYSQL_BEFORE}{script}{MYSQL_AFTER}")),
        Kind::Redis => {
            let one_line = script.ends_with('\n') && !script[..script.len() - 1].contains('\n');
            (one_line && !script.starts_with("MULTI")).then(|| format!("MULTI\nTIME\n{script}TIME\nEXEC\n"))
        }
    }
}

/// The reply lines of a wrapped request as the unwrapped request would have printed them,
/// and the server's time; the lines unchanged and `None` when the reply is not the
/// expected shape (an error: the request's own parsing reports it).
pub(super) fn unwrap(kind: Kind, mut lines: Vec<String>) -> (Vec<String>, Option<Duration>) {
    match kind {
        Kind::MySql => {
            let micros = lines.last().and_then(|l| l.trim().parse::<i64>().ok()).filter(|m| *m >= 0);
            match micros {
                Some(m) => {
                    lines.pop();
                    (lines, Some(Duration::from_micros(m as u64)))
                }
                None => (lines, None),
            }
        }
        Kind::Redis => match redis_exec(&lines) {
            Some((inner, time)) => (inner, Some(time)),
            None => (lines, None),
        },
    }
}

/// `OK`, `QUEUED` x3, then EXEC's array: `1) 1) "s"` / `   2) "us"`, the command's reply
/// as element 2, and the second TIME as element 3 (redis-cli may add a `(0.51s)` line).
fn redis_exec(lines: &[String]) -> Option<(Vec<String>, Duration)> {
    let mut rest = lines.strip_prefix(&["OK".to_string(), "QUEUED".into(), "QUEUED".into(), "QUEUED".into()])?;
    while rest.last().is_some_and(|l| l.starts_with('(') && l.ends_with("s)")) {
        rest = &rest[..rest.len() - 1];
    }
    if rest.len() < 5 {
        return None;
    }
    let time = |first: &str, second: &str, index: &str| -> Option<Duration> {
        let seconds: u64 = first.strip_prefix(index)?.strip_prefix("1) \"")?.strip_suffix('"')?.parse().ok()?;
        let micros: u64 = second.strip_prefix("   2) \"")?.strip_suffix('"')?.parse().ok()?;
        Some(Duration::from_secs(seconds) + Duration::from_micros(micros))
    };
    let n = rest.len();
    let start = time(&rest[0], &rest[1], "1) ")?;
    let end = time(&rest[n - 2], &rest[n - 1], "3) ")?;
    let middle = &rest[2..n - 2];
    let first = middle.first()?.strip_prefix("2) ")?;
    let inner = std::iter::once(first.to_string()).chain(middle[1..].iter().map(|l| l.get(3..).unwrap_or("").to_string())).collect();
    Some((inner, end.checked_sub(start)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<String> {
        text.lines().map(String::from).collect()
    }

    #[test]
    fn redis_wraps_one_command_line_only() {
        assert_eq!(wrap(Kind::Redis, "MGET a b\n").as_deref(), Some("MULTI\nTIME\nMGET a b\nTIME\nEXEC\n"));
        assert_eq!(wrap(Kind::Redis, "MULTI\nSET a 1\nEXEC\n"), None);
        assert_eq!(wrap(Kind::Redis, "HGETALL a\nHGETALL b\n"), None);
        assert_eq!(wrap(Kind::Redis, ""), None);
    }

    #[test]
    fn redis_exec_gives_the_command_s_reply_and_the_server_s_time() {
        // As redis-cli --no-raw printed it for MGET of 12 keys, 2 present.
        let mut text = String::from("OK\nQUEUED\nQUEUED\nQUEUED\n1) 1) \"1795876862\"\n   2) \"959498\"\n2)  1) \"1\"\n    2) \"2\"\n");
        for i in 3..=12 {
            text.push_str(&format!("{:>5}) (nil)\n", i));
        }
        text.push_str("3) 1) \"1795876863\"\n   2) \"000504\"\n");
        let (inner, time) = unwrap(Kind::Redis, lines(&text));
        assert_eq!(time, Some(Duration::from_micros(41_006)));
        assert_eq!(inner.len(), 12);
        assert_eq!(inner[0], " 1) \"1\"");
        assert_eq!(inner[11], "12) (nil)");
        let (inner, time) =
            unwrap(Kind::Redis, lines("OK\nQUEUED\nQUEUED\nQUEUED\n1) 1) \"5\"\n   2) \"10\"\n2) OK\n3) 1) \"5\"\n   2) \"17\"\n(0.51s)"));
        assert_eq!((inner, time), (vec!["OK".to_string()], Some(Duration::from_micros(7))));
    }

    #[test]
    fn an_unexpected_reply_is_left_whole_and_untimed() {
        let aborted = lines("OK\nQUEUED\n(error) ERR wrong number of arguments\nQUEUED\n(error) EXECABORT Transaction discarded");
        assert_eq!(unwrap(Kind::Redis, aborted.clone()), (aborted, None));
        let sql = lines("ERROR 1146 (42S02) at line 2: Table doesn't exist\nNULL");
        assert_eq!(unwrap(Kind::MySql, sql.clone()), (sql, None));
    }

    #[test]
    fn mysql_reads_the_microseconds_on_the_last_line() {
        assert!(wrap(Kind::MySql, "SELECT 1;\n").unwrap().ends_with("SELECT TIMESTAMPDIFF(MICROSECOND, @dbsweep_t0, SYSDATE(6));\n"));
        let (inner, time) = unwrap(Kind::MySql, lines("1\t10\n2\t20\n1234"));
        assert_eq!((inner.len(), time), (2, Some(Duration::from_micros(1234))));
    }
}
