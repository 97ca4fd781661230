//! Command-line client adapters (`mysql-cli://`, `redis-cli://`): the same statements as the
//! library adapters, sent through the real `mariadb`/`mysql` and `redis-cli` programs as
//! subprocesses, so the cost of a command-line client (the insert-find study's setup) can be
//! measured against a library driver.
//!
//! Owns only the subprocess `Connection`: by default one long-lived client process per
//! `connect()`, fed statements over stdin and read over stdout (stderr merged in); with
//! `?spawn=per-op` a fresh client per request, as shell scripts do. With `?timing=server`
//! each request also reports the server's own time (`server_time`), the insert-find
//! paper's way of timing, beside dbsweep's end-to-end time. Each request ends with a
//! unique marker (`SELECT '<marker>';` / `ECHO <marker>`) and is read up to the marker line.
//! `prepare`, `load`, `count_rows` and `cleanup` are delegated to the library adapter for the
//! equivalent `mysql://` / `redis://` URL, so the schema, key layout and ownership marker
//! (DESIGN §5) are exactly the library adapters'. Must not put the password on a command
//! line (it goes in the child's `MYSQL_PWD` / `REDISCLI_AUTH`) nor show it.
//!
//! What each request is: MariaDB gets the library adapter's statements as text with literal
//! values (a batch of inserts is one multi-row `INSERT` + `SELECT ROW_COUNT()`, a multi-get
//! one `IN (...)`), run with `--batch --force` so an error line does not end the client.
//! redis-cli (interactive mode on a pipe, `--no-raw` so every reply element is one quoted
//! line) sends each input line as its own request and waits for the reply. On a pairs table
//! (the library adapter's plain-string mapping) a batch of inserts is one `MSET` line and a
//! multi-get one `MGET` line, as the insert-find paper typed them; on hash rows a batch is
//! one `MULTI`…`EXEC` and a multi-get one `HGETALL` line per key, so N round trips through
//! the client: that is the client's behaviour, not emulated here. The requests are listed
//! in the target's settings (`request.*`). A dead client is an `ErrorClass::Connection`
//! error; the next request starts a new one.

use crate::adapter::declaration::{CapabilitySet, Declaration, Needs, OpSet, TargetInfoCell, UrlOptions};
use crate::adapter::{Execution, OpenContext, Target, TargetUrl};
use crate::base::op::OpKind;
use crate::base::table::TableDef;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
pub use session::CliConn;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

mod server_time;
mod session;
mod target;
mod text;

/// How long `connect()` waits for the client's first answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What a client program can send: the ops of one statement or command each.
const CAPABILITIES: CapabilitySet = CapabilitySet {
    ops: OpSet::BY_KEY.without(OpKind::Update).without(OpKind::ReadModifyWrite),
    queries: &[],
    native_batch: true,
    secondary_indexes: true,
    statements: None,
};

pub const MARIADB_CLI: Declaration = Declaration {
    system: "mariadb-cli",
    url: "mysql-cli://",
    description: "MariaDB through the `mariadb`/`mysql` command-line client over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
    needs: Needs::Client(ServerKind::Mariadb),
    schemes: &["mysql-cli", "mariadb-cli"],
    options: UrlOptions::Only(&["spawn", "timing"]),
    several_hosts: false,
    capabilities: CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(CliTarget::new(name, url, ctx)?))),
};

pub const REDIS_CLI: Declaration = Declaration {
    system: "redis-cli",
    url: "redis-cli://",
    description: "Redis through `redis-cli` over stdin (?spawn=per-op); echo, insert, get, multi-get, delete",
    needs: Needs::Client(ServerKind::Redis),
    schemes: &["redis-cli"],
    options: UrlOptions::Only(&["spawn", "batch", "timing"]),
    // The same adapter (its client follows the scheme) and capabilities.
    ..MARIADB_CLI
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    MySql,
    Redis,
}

/// What `CliTarget::new` picks per system: the library adapter, the client program, its
/// arguments, its environment (the password) and the system as listed.
type Setup = (Arc<dyn Target>, String, Vec<String>, Vec<(String, String)>, &'static Declaration);

/// How to start one client process. The password lives only in `env`.
struct Launch {
    kind: Kind,
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    per_op: bool,
    /// `?timing=server`: each request also asks the server for its own time
    /// (`server_time`).
    server_timing: bool,
    /// The target's name, for messages.
    name: String,
    /// The library adapters' namespace: MariaDB's database (`dbsweep`) and Redis's key
    /// prefix (`dbsweep:`).
    database: String,
    key_prefix: String,
}

pub struct CliTarget {
    inner: Arc<dyn Target>,
    /// What is known before `prepare`, then with the server's version and settings.
    info: TargetInfoCell,
    launch: Arc<Launch>,
    tables: RwLock<Arc<Vec<Arc<TableDef>>>>,
}

fn find_program(candidates: &[&str]) -> Option<String> {
    let path = std::env::var_os("PATH")?;
    for c in candidates {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(c);
            if p.is_file() {
                return Some(p.to_string_lossy().into_owned());
            }
        }
    }
    None
}

/// The library adapter's URL for the same server (same user, password, DB and params).
fn inner_url(url: &TargetUrl, scheme: &str) -> Result<TargetUrl> {
    let mut u = url::Url::parse(&format!("{scheme}://localhost/")).map_err(|e| Error::usage(e.to_string()))?;
    let bad = |_| Error::usage(format!("bad URL {}", url.redacted()));
    u.set_host(Some(url.host().unwrap_or("127.0.0.1"))).map_err(|e| Error::usage(format!("bad host in {}: {e}", url.redacted())))?;
    u.set_port(url.port()).map_err(bad)?;
    if let Some(user) = url.username() {
        u.set_username(&user).map_err(bad)?;
    }
    if let Some(pw) = url.password() {
        u.set_password(Some(&pw)).map_err(bad)?;
    }
    u.set_path(&format!("/{}", url.database().unwrap_or_default()));
    let params: Vec<(String, String)> = url.params().into_iter().filter(|(k, _)| k != "spawn" && k != "timing").collect();
    if !params.is_empty() {
        u.query_pairs_mut().extend_pairs(params);
    }
    TargetUrl::parse(u.as_str())
}

impl CliTarget {
    pub fn new(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Self> {
        let kind = match url.scheme() {
            scheme if MARIADB_CLI.schemes.contains(&scheme) => Kind::MySql,
            scheme if REDIS_CLI.schemes.contains(&scheme) => Kind::Redis,
            other => return Err(Error::usage(format!("target '{name}': not a command-line client scheme: {other}"))),
        };
        let per_op = match url.param("spawn").as_deref() {
            None | Some("per-connection") => false,
            Some("per-op") => true,
            Some(other) => return Err(Error::usage(format!("target '{name}': spawn must be 'per-connection' or 'per-op', got '{other}'"))),
        };
        let server_timing = match url.param("timing").as_deref() {
            None | Some("client") => false,
            Some("server") => true,
            Some(other) => return Err(Error::usage(format!("target '{name}': timing must be 'client' or 'server', got '{other}'"))),
        };
        let host = url.host().unwrap_or("127.0.0.1").to_string();
        let (inner, program, args, env, system): Setup = match kind {
            Kind::MySql => {
                let inner = crate::adapter::mysql::MySql::new(name, &inner_url(url, "mysql")?, ctx)?;
                let program = find_program(&["mariadb", "mysql"]).ok_or_else(|| {
                    Error::Missing(format!("target '{name}': no `mariadb` or `mysql` client on PATH; install mariadb-client"))
                })?;
                let port = url.port().unwrap_or(3306);
                let user = url.username().unwrap_or_else(|| "root".into());
                let args = [
                    "--no-defaults",
                    "--batch",
                    "--skip-column-names",
                    "--unbuffered",
                    "--force",
                    "--protocol=TCP",
                    "--default-character-set=utf8mb4",
                ]
                .iter()
                .map(|s| s.to_string())
                .chain(["-h".into(), host.clone(), "-P".into(), port.to_string(), "-u".into(), user])
                .collect();
                let mut env = Vec::new();
                if let Some(pw) = crate::adapter::mysql::password(url) {
                    env.push(("MYSQL_PWD".to_string(), pw));
                }
                (Arc::new(inner), program, args, env, &MARIADB_CLI)
            }
            Kind::Redis => {
                let inner = crate::adapter::kv::redis::Redis::new(name, &inner_url(url, "redis")?, ctx)?;
                let program = find_program(&["redis-cli"])
                    .ok_or_else(|| Error::Missing(format!("target '{name}': no `redis-cli` on PATH; install redis-tools")))?;
                let port = url.port().unwrap_or(6379);
                let db = url.database().unwrap_or_else(|| "0".into());
                let mut args: Vec<String> =
                    vec!["-h".into(), host.clone(), "-p".into(), port.to_string(), "-n".into(), db, "--no-raw".into()];
                if let Some(user) = url.username() {
                    args.extend(["--user".into(), user]);
                }
                let mut env = Vec::new();
                if let Some(pw) = crate::adapter::kv::redis::password(url) {
                    env.push(("REDISCLI_AUTH".to_string(), pw));
                }
                (Arc::new(inner), program, args, env, &REDIS_CLI)
            }
        };
        let client_version = std::process::Command::new(&program)
            .arg("--version")
            .output()
            .ok()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let mut settings = BTreeMap::new();
        settings.insert(
            "spawn".to_string(),
            if per_op {
                "per-op (a new client process per request)"
            } else {
                "per-connection (one long-lived client process, statements over stdin)"
            }
            .to_string(),
        );
        settings.insert("client".to_string(), format!("{program} ({client_version})"));
        if server_timing {
            let how = match kind {
                Kind::MySql => "server (SYSDATE(6) before and after the statements, as the server's clock saw them)",
                Kind::Redis => "server (TIME before and after the command in one MULTI; one-line commands only)",
            };
            settings.insert("timing".to_string(), how.to_string());
        }
        let base = system.target_info(name, url, Execution::Async, "unknown (not prepared yet)", settings);
        let launch = Arc::new(Launch {
            kind,
            program,
            args,
            env,
            per_op,
            server_timing,
            name: name.to_string(),
            database: ctx.namespace.name().to_string(),
            key_prefix: ctx.namespace.key_prefix(),
        });
        Ok(CliTarget { inner, info: TargetInfoCell::new(base), launch, tables: RwLock::new(Arc::new(Vec::new())) })
    }
}

#[cfg(test)]
mod tests {
    use super::session::is_error_line;
    use super::text::{redis_quote, redis_reply_value, with_literals};
    use super::*;
    use crate::base::table::Value;

    #[test]
    fn placeholders_outside_quotes_become_literals() {
        let text = "SELECT * FROM `d`.`t?` WHERE `k` IN (?, ?)";
        assert_eq!(
            with_literals(text, &[&Value::Int(1), &Value::Text("a'b".into())]).unwrap(),
            "SELECT * FROM `d`.`t?` WHERE `k` IN (1, X'612762')"
        );
        assert!(with_literals(text, &[&Value::Int(1)]).is_err());
        assert!(with_literals(text, &[&Value::Int(1), &Value::Int(2), &Value::Int(3)]).is_err());
    }

    #[test]
    fn redis_args_are_quoted_byte_exactly() {
        assert_eq!(redis_quote("a b\"c\\"), "\"a b\\\"c\\\\\"");
        assert_eq!(redis_quote("x\ny\u{e9}"), "\"x\\x0ay\\xc3\\xa9\"");
    }

    #[test]
    fn redis_reply_values_are_read_at_top_level_and_in_arrays() {
        assert_eq!(redis_reply_value("\"42\""), Some("\"42\""));
        assert_eq!(redis_reply_value("(nil)"), Some("(nil)"));
        assert_eq!(redis_reply_value("   12) (nil)"), Some("(nil)"));
        assert_eq!(redis_reply_value("1) \"(nil)\""), Some("\"(nil)\""));
        assert_eq!(redis_reply_value("OK"), None);
        assert_eq!(redis_reply_value("(0.51s)"), None, "the client's timing line");
    }

    #[test]
    fn error_lines_are_recognised() {
        assert!(is_error_line(Kind::Redis, "(error) ERR wrong"));
        assert!(is_error_line(Kind::Redis, "2) (error) WRONGTYPE"));
        assert!(!is_error_line(Kind::Redis, "2) \"(error) in a value\""));
        assert!(is_error_line(Kind::MySql, "ERROR 1062 (23000) at line 1: Duplicate entry"));
        assert!(!is_error_line(Kind::MySql, "17\tERROR x"));
    }

    #[test]
    fn urls_pick_the_library_equivalent_and_keep_the_password_off_argv() {
        let url = TargetUrl::parse("mysql-cli://root:s3cr%40t@127.0.0.1:3307/?spawn=per-op").unwrap();
        let inner = inner_url(&url, "mysql").unwrap();
        assert_eq!(inner.scheme(), "mysql");
        assert_eq!(inner.password().as_deref(), Some("s3cr@t"));
        assert_eq!(inner.param("spawn"), None);
        if let Ok(t) = CliTarget::new("x", &url, &OpenContext::new("/tmp")) {
            assert!(t.launch.per_op);
            assert!(!t.launch.args.iter().any(|a| a.contains("s3cr")));
            assert!(!t.info().url.contains("s3cr"));
        }
    }
}
