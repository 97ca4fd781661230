//! H2 (the Java SQL database, `com.h2database:h2` from Maven Central) as a throwaway
//! server that speaks only the PostgreSQL wire protocol:
//!
//! `java -XmxHEAP -Dh2.bindAddress=127.0.0.1 -cp h2.jar org.h2.tools.Server -pg -pgPort P
//! -ifNotExists -baseDir DIR/db`
//!
//! with the data directory as working directory. Only H2's PG server runs (no TCP server,
//! no web console); `-Dh2.bindAddress` binds it to loopback, and H2 itself refuses
//! non-local clients (no `-pgAllowOthers`). `-ifNotExists` lets a client create a database
//! by naming it; the PG server turns the startup packet's database name into the JDBC URL
//! `jdbc:h2:NAME` (with `MODE=PostgreSQL;DATABASE_TO_LOWER=TRUE`), so the URL names the
//! in-memory database `mem:dbsweep` (`h2://sa@127.0.0.1:P/mem:dbsweep`); the `h2` adapter
//! adds `DB_CLOSE_DELAY=-1` so it outlives its sessions. `-baseDir` confines any file
//! database a client might name to the data directory, which goes away with the server.
//!
//! Finding H2: `$DBSWEEP_H2_JAR` (the jar's path) if set, else
//! `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/h2/h2.jar`, where
//! `scripts/setup-servers` puts it; `java` is looked up like every other program. The heap
//! limit is `$DBSWEEP_H2_HEAP` (a JVM size such as `4g`), default 2g; it caps how much
//! data the in-memory database can hold and is recorded in the settings.
//!
//! Readiness: H2's own start line (`PG server running at pg://localhost:P`) must be in our
//! child's log (a foreign server on the port would have made our bind fail instead), and a
//! real protocol login into a throwaway in-memory database must answer `H2VERSION()`.
//! Must not send anything that changes data.

use super::process::program_version;
use super::{Context, Installed, LOG_FILE, Ready, System};
use crate::base::durability::{Durability, SETTING};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// H2's part of the spawn machinery.
pub(super) struct H2;

#[async_trait::async_trait]
impl System for H2 {
    fn name(&self) -> &'static str {
        "h2"
    }
    /// What carries `java` (the jar comes from Maven Central through `scripts/setup-servers`).
    fn package(&self) -> &'static str {
        "default-jre-headless"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["java"]
    }
    /// The jar found as `--spawn` finds it, asked `SELECT H2VERSION()` in a throwaway
    /// in-memory database through H2's own shell (a JVM start, nothing written).
    async fn installed(&self, mut programs: Vec<PathBuf>) -> Result<Installed> {
        let jar = find_jar(std::env::var_os("DBSWEEP_H2_JAR").filter(|p| !p.is_empty()).map(PathBuf::from), installed_jar())?;
        let mut args = vec!["-cp".to_string(), jar.display().to_string()];
        args.extend(["org.h2.tools.Shell", "-url", "jdbc:h2:mem:", "-sql", "SELECT H2VERSION()"].map(String::from));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let version = program_version(&programs[0], &args, shell_version).await?;
        programs.push(jar);
        Ok(Installed { version, files: programs })
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        init(ctx)
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        command(ctx, port)
    }
    async fn probe(&self, ctx: &Context, port: u16, _pid: u32) -> io::Result<Ready> {
        probe(ctx, port).await
    }
    /// `Exception opening port "P" (port may be in use)`.
    fn port_taken_words(&self) -> &'static [&'static str] {
        &["(port may be in use)"]
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        url(port)
    }
}

/// The user the spawned server's databases are created with (no password).
pub const USER: &str = "sa";
/// The in-memory database the spawned server's URL names.
pub const DATABASE: &str = "mem:dbsweep";
/// The heap limit when `$DBSWEEP_H2_HEAP` is not set.
const DEFAULT_HEAP: &str = "2g";

fn url(port: u16) -> String {
    format!("h2://{USER}@127.0.0.1:{port}/{DATABASE}")
}

/// `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/h2/h2.jar`.
fn installed_jar() -> Option<PathBuf> {
    let root = match std::env::var_os("DBSWEEP_NATIVE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/dbsweep/native"),
    };
    Some(root.join("h2/h2.jar"))
}

/// H2's shell prints the column name, then the value: `H2VERSION()`, `2.4.240`.
fn shell_version(text: &str) -> Option<String> {
    let mut lines = text.lines().map(str::trim).skip_while(|line| *line != "H2VERSION()");
    lines.next()?;
    Some(format!("H2 {}", lines.next().filter(|v| !v.is_empty())?))
}

/// The JVM heap limit: `$DBSWEEP_H2_HEAP` when it is a JVM size, else 2g.
fn heap() -> Result<String> {
    match std::env::var("DBSWEEP_H2_HEAP") {
        Ok(size) if !size.is_empty() => {
            let valid = size.len() > 1
                && size[..size.len() - 1].bytes().all(|b| b.is_ascii_digit())
                && matches!(size.as_bytes()[size.len() - 1], b'k' | b'K' | b'm' | b'M' | b'g' | b'G');
            if valid { Ok(size) } else { Err(Error::usage(format!("DBSWEEP_H2_HEAP={size} is not a JVM heap size; use e.g. 512m or 4g"))) }
        }
        _ => Ok(DEFAULT_HEAP.into()),
    }
}

/// Finds the jar (appended to the context's programs) and creates the base directory.
fn init(mut ctx: Context) -> Result<Context> {
    heap()?;
    let jar = find_jar(std::env::var_os("DBSWEEP_H2_JAR").filter(|p| !p.is_empty()).map(PathBuf::from), installed_jar())?;
    let base = ctx.dir.join("db");
    std::fs::create_dir_all(&base).map_err(|e| Error::runtime(format!("h2: cannot create {}: {e}", base.display())))?;
    ctx.programs.push(jar);
    Ok(ctx)
}

/// The jar: the override when given (it must exist), else the installed one.
fn find_jar(overridden: Option<PathBuf>, installed: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(path) = overridden {
        if !path.is_file() {
            return Err(Error::Missing(format!(
                "DBSWEEP_H2_JAR={} is not a file: fix the variable or unset it and run scripts/setup-servers",
                path.display()
            )));
        }
        return Ok(path);
    }
    installed.filter(|p| p.is_file()).ok_or_else(|| {
        Error::Missing(
            "the H2 jar was not found: install it with scripts/setup-servers (Maven Central com.h2database:h2 into \
             ${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/h2/h2.jar), or set DBSWEEP_H2_JAR to its path"
                .into(),
        )
    })
}

fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(0));
    // `init` has checked the variable already.
    let heap = heap().unwrap_or_else(|_| DEFAULT_HEAP.into());
    command
        .arg(format!("-Xmx{heap}"))
        .arg("-Dh2.bindAddress=127.0.0.1")
        .arg("-cp")
        .arg(ctx.program(1))
        .args(["org.h2.tools.Server", "-pg", "-pgPort"])
        .arg(port.to_string())
        .args(["-ifNotExists", "-baseDir"])
        .arg(ctx.dir.join("db"));
    command
}

async fn probe(ctx: &Context, port: u16) -> io::Result<Ready> {
    // H2 prints `PG server running at pg://localhost:PORT (only local connections)` once
    // it holds the port; had another process held it, our child would have failed to bind
    // and exited ("port may be in use").
    let log = std::fs::read_to_string(ctx.dir.join(LOG_FILE)).unwrap_or_default();
    if !log.lines().any(|line| line.starts_with("PG server running at pg://") && line.contains(&format!(":{port} "))) {
        return Err(io::Error::other("H2 has not reported its PG server yet"));
    }
    let mut config = tokio_postgres::Config::new();
    // A throwaway in-memory database: without DB_CLOSE_DELAY it is gone when we log out.
    config
        .host("127.0.0.1")
        .port(port)
        .user(USER)
        .password("")
        .dbname("mem:dbsweep-ready")
        .application_name("dbsweep-ready")
        .connect_timeout(Duration::from_secs(2));
    // One simple (text-protocol) query: H2's PG server has no binary output for text columns.
    let setting = |name: &str| format!("(SELECT SETTING_VALUE FROM INFORMATION_SCHEMA.SETTINGS WHERE SETTING_NAME = '{name}')");
    let sql = format!("SELECT {}, H2VERSION(), {}", setting("info.VERSION"), setting("property.java.runtime.version"));
    let (version, short, java) = super::pg_login::ask(&config, async |client| {
        let messages = client.simple_query(&sql).await?;
        let row = messages.iter().find_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
            _ => None,
        });
        let cell = |i: usize| row.and_then(|row| row.get(i)).map(str::to_string);
        Ok((cell(0), cell(1), cell(2)))
    })
    .await?;
    let (Some(version), Some(short)) = (version, short) else {
        return Err(io::Error::other(format!("the server on port {port} did not report an H2 version")));
    };
    if !version.starts_with(&short) {
        return Err(io::Error::other(format!("the server on port {port} is not H2 ({version} / {short})")));
    }
    let mut settings = BTreeMap::new();
    settings.insert("heap_max".into(), format!("{} (-Xmx; DBSWEEP_H2_HEAP)", heap().unwrap_or_else(|_| DEFAULT_HEAP.into())));
    settings.insert("database".into(), format!("{DATABASE} (in-memory, nothing written to disk)"));
    settings.insert("storage".into(), "MVStore in memory".into());
    settings.insert(SETTING.into(), Durability::None.describe("in-memory database: nothing is written to disk"));
    settings.insert("servers".into(), "PG server only (no TCP server, no web console), loopback".into());
    if let Some(java) = java {
        settings.insert("java".into(), java);
    }
    Ok(Ready { version: format!("H2 {version}"), settings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_names_the_in_memory_database() {
        assert_eq!(url(5435), "h2://sa@127.0.0.1:5435/mem:dbsweep");
        let parsed = crate::adapter::TargetUrl::parse(&url(5435)).unwrap();
        assert_eq!(parsed.database().as_deref(), Some("mem:dbsweep"));
        assert_eq!(parsed.username().as_deref(), Some("sa"));
    }

    #[test]
    fn the_version_is_read_from_the_shells_answer() {
        assert_eq!(shell_version("H2VERSION()\n2.4.240\n(1 row, 48 ms)\n").as_deref(), Some("H2 2.4.240"));
        assert_eq!(shell_version("Exception in thread main"), None);
    }

    #[test]
    fn a_missing_jar_names_the_setup_script() {
        let dir = tempfile::tempdir().unwrap();
        let absent = dir.path().join("h2.jar");
        let err = find_jar(None, Some(absent.clone())).unwrap_err();
        assert!(matches!(err, Error::Missing(_)), "{err}");
        assert!(err.to_string().contains("scripts/setup-servers") && err.to_string().contains("DBSWEEP_H2_JAR"), "{err}");
        let err = find_jar(Some(absent.clone()), None).unwrap_err();
        assert!(matches!(err, Error::Missing(_)) && err.to_string().starts_with("DBSWEEP_H2_JAR="), "{err}");
        std::fs::write(&absent, b"jar").unwrap();
        assert_eq!(find_jar(None, Some(absent.clone())).unwrap(), absent);
        assert_eq!(find_jar(Some(absent.clone()), None).unwrap(), absent);
    }
}
