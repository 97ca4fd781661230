//! HyPer (Tableau's Hyper, the `hyperd` of the `tableauhyperapi` Python wheel) as a
//! throwaway server:
//!
//! `hyperd run --init-user=tableau_internal_user --log-dir DIR/log --skip-license
//! --no-password --listen-connection tab.tcp://127.0.0.1:PORT`
//!
//! with the data directory as working directory. hyperd speaks the PostgreSQL wire
//! protocol; it starts with no database attached. The URL names a database file inside
//! the data directory (`DIR/dbsweep.hyper`) that the `hyper` adapter creates, so the file
//! goes away with the directory.
//!
//! Finding hyperd: `$DBSWEEP_HYPERD` (the program's path) if set, else
//! `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/hyper/tableauhyperapi/bin/hyper/hyperd`,
//! where `scripts/setup-servers` installs the wheel, else PATH.
//!
//! Readiness is a real protocol login and `SELECT version()`, and hyperd's own startup line
//! must name our child's pid (so a foreign server that took the port is never mistaken for
//! ours). Durability and memory stay at hyperd's defaults (recorded in the settings). Must
//! not send anything that changes data.

use super::process::program_version;
use super::{Context, Installed, LOG_FILE, Ready, System};
use crate::base::durability::{Durability, SETTING};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// HyPer's part of the spawn machinery.
pub(super) struct Hyper;

#[async_trait::async_trait]
impl System for Hyper {
    fn name(&self) -> &'static str {
        "hyper"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["hyperd"]
    }
    fn package(&self) -> &'static str {
        "tableauhyperapi"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["hyperd"]
    }
    fn search_dirs(&self) -> Vec<PathBuf> {
        native_dir().into_iter().collect()
    }
    /// `$DBSWEEP_HYPERD` names the program itself.
    fn programs_from_env(&self) -> Option<Result<Vec<PathBuf>>> {
        let path = std::env::var_os("DBSWEEP_HYPERD").filter(|p| !p.is_empty()).map(PathBuf::from)?;
        if !super::process::is_executable(&path) {
            return Some(Err(Error::Missing(format!(
                "DBSWEEP_HYPERD={} is not an executable file: fix the variable or unset it and run scripts/setup-servers",
                path.display()
            ))));
        }
        Some(Ok(vec![path]))
    }
    /// `hyperd --version`: `Hyper version main.0.0.26963.r84171622`, written as the
    /// spawned server's version (`hyper main.0.0.26963.r84171622`).
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        let version = program_version(&programs[0], &["--version"], |text| {
            Some(format!("hyper {}", text.lines().next()?.strip_prefix("Hyper version ")?.trim()))
        })
        .await?;
        Ok(Installed { version, files: programs })
    }
    fn missing(&self, program: &str) -> Error {
        Error::Missing(format!(
            "{program} not found: install it with scripts/setup-servers (pip wheel tableauhyperapi into \
             ${{DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}}/hyper), or set DBSWEEP_HYPERD to its path"
        ))
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        let log = ctx.dir.join("log");
        std::fs::create_dir_all(&log).map_err(|e| Error::runtime(format!("hyper: cannot create {}: {e}", log.display())))?;
        Ok(ctx)
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        command(ctx, port)
    }
    async fn probe(&self, ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        probe(ctx, port, pid).await
    }
    fn port_taken_words(&self) -> &'static [&'static str] {
        &["unable to listen to any of the given host name and port combinations"]
    }
    /// The URL's path names the database file inside the data directory.
    fn url(&self, port: u16, data_dir: &Path) -> String {
        format!("hyper://{USER}@127.0.0.1:{port}{}", data_dir.join(DATABASE_FILE).display())
    }
}

/// The role hyperd creates at start and dbsweep logs in as (no password).
pub const USER: &str = "tableau_internal_user";

/// The database file the spawned server's URL names, inside its data directory.
const DATABASE_FILE: &str = "dbsweep.hyper";

/// Where `scripts/setup-servers` puts the wheel's `hyperd`.
fn native_dir() -> Option<PathBuf> {
    let root = match std::env::var_os("DBSWEEP_NATIVE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/dbsweep/native"),
    };
    Some(root.join("hyper/tableauhyperapi/bin/hyper"))
}

fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(0));
    command
        .arg("run")
        .arg(format!("--init-user={USER}"))
        .arg("--log-dir")
        .arg(ctx.dir.join("log"))
        .args(["--skip-license", "--no-password", "--listen-connection"])
        .arg(format!("tab.tcp://127.0.0.1:{port}"));
    command
}

async fn probe(ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
    // hyperd prints `listening to 127.0.0.1:PORT using ipv4 with system PID N` once bound.
    let log = std::fs::read_to_string(ctx.dir.join(LOG_FILE)).unwrap_or_default();
    if !log.contains(&format!("listening to 127.0.0.1:{port} ")) {
        return Err(io::Error::other("hyperd has not reported listening yet"));
    }
    if !log.contains(&format!("with system PID {pid}")) {
        return Err(io::Error::other(format!("the server on port {port} is not our hyperd (pid {pid})")));
    }
    let mut config = tokio_postgres::Config::new();
    config.host("127.0.0.1").port(port).user(USER).application_name("dbsweep-ready").connect_timeout(Duration::from_secs(2));
    let (one, version) = super::pg_login::ask(&config, async |client| {
        let one: i32 = client.query_one("SELECT 1", &[]).await?.try_get(0)?;
        let version: String = client.query_one("SELECT version()", &[]).await?.try_get(0)?;
        Ok((one, version))
    })
    .await?;
    if one != 1 {
        return Err(io::Error::other(format!("SELECT 1 answered {one}")));
    }
    // "Hyper 9.1.0 emulation, hyper version main.0.0.26963.r84171622"
    let version = version.split("hyper version ").nth(1).map_or(version.clone(), |v| format!("hyper {v}"));
    let mut settings = BTreeMap::new();
    settings.insert("database_file".into(), ctx.dir.join(DATABASE_FILE).display().to_string());
    settings.insert("log_dir".into(), ctx.dir.join("log").display().to_string());
    settings.insert("disable_fsync".into(), "0 (hyperd default: fsync on)".into());
    settings.insert(
        SETTING.into(),
        Durability::Commit.describe("database file synced at every commit (hyperd's default; no other level is offered)"),
    );
    settings.insert("memory_limit".into(), "80% (hyperd default)".into());
    settings.insert("indexes".into(), "none (HyPer has none)".into());
    Ok(Ready { version, settings })
}
