//! LedisDB (a Redis-protocol server on LevelDB, the design of SSDB) as a throwaway server:
//!
//! `ledis-server -addr 127.0.0.1:PORT -data_dir DIR/data -db_name goleveldb`
//!
//! with the data directory as working directory and LedisDB's default configuration
//! (16 databases, no replication, `db_sync_commit = 0`: LevelDB writes are not synced to
//! disk per commit), recorded in the settings.
//!
//! Finding it: `$DBSWEEP_LEDIS_SERVER` (the program's path) if set, else
//! `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/ledisdb/bin/ledis-server`, where
//! `scripts/setup-servers` builds it with Go, else PATH.
//!
//! Readiness is PING -> +PONG, then INFO, whose `process_id` must be our child's pid (so a
//! foreign server that took the port is never mistaken for ours). Must not send anything
//! that changes data.

use super::{Context, Installed, Ready, System};
use crate::base::durability::{Durability, SETTING};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use tokio::process::Command;

/// LedisDB's part of the spawn machinery.
pub(super) struct LedisDb;

/// The storage engine the spawn asks for (LevelDB in pure Go).
const STORE: &str = "goleveldb";

#[async_trait::async_trait]
impl System for LedisDb {
    fn name(&self) -> &'static str {
        "ledisdb"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["ledis"]
    }
    fn package(&self) -> &'static str {
        "ledis-server"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["ledis-server"]
    }
    fn search_dirs(&self) -> Vec<PathBuf> {
        native_dir("ledisdb/bin").into_iter().collect()
    }
    fn programs_from_env(&self) -> Option<Result<Vec<PathBuf>>> {
        program_from_env("DBSWEEP_LEDIS_SERVER")
    }
    fn missing(&self, program: &str) -> Error {
        missing_go_program(program, "ledisdb/bin", "DBSWEEP_LEDIS_SERVER")
    }
    /// ledis-server has no version flag: the module version Go wrote into the binary
    /// (`v0.0.0-20200510135210-d35789ec47e6`, the commit `scripts/setup-servers` builds).
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        let program = programs[0].clone();
        let read = tokio::task::spawn_blocking(move || std::fs::read(&program).map(|bytes| go_main_module(&bytes)));
        let module = match read.await {
            Ok(Ok(module)) => module,
            Ok(Err(e)) => {
                return Err(Error::Missing(format!("{} cannot be read ({e}): run scripts/setup-servers again", programs[0].display())));
            }
            Err(e) => return Err(Error::runtime(format!("reading {} failed: {e}", programs[0].display()))),
        };
        let version = match module {
            Some((path, version)) => format!("{version} ({path})"),
            None => "unknown (the program carries no Go module version)".into(),
        };
        Ok(Installed { version, files: programs })
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        let mut command = Command::new(ctx.program(0));
        command.arg("-addr").arg(format!("127.0.0.1:{port}")).arg("-data_dir").arg(ctx.dir.join("data")).args(["-db_name", STORE]);
        command
    }
    async fn probe(&self, _ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        let info = super::redis::ping_info(port).await?;
        if info.get("process_id").and_then(|p| p.parse::<u32>().ok()) != Some(pid) {
            return Err(io::Error::other(format!("port {port} is served by another ledis-server process")));
        }
        let mut settings = BTreeMap::new();
        settings.insert("store".into(), info.get("name").cloned().unwrap_or_else(|| STORE.to_string()));
        settings.insert("db_sync_commit".into(), "0 (LedisDB's default: LevelDB writes are not synced per commit)".into());
        settings.insert(
            SETTING.into(),
            Durability::None
                .describe("LevelDB writes are not synced, the OS flushes them (db_sync_commit = 0; no other level is set here)"),
        );
        settings.insert("replication".into(), "off".into());
        let version = info.get("ledisdb_version").cloned().unwrap_or_default();
        Ok(Ready { version, settings })
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("ledis://127.0.0.1:{port}/0")
    }
}

/// `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/<sub>`, where `scripts/setup-servers`
/// installs programs that no Debian package carries.
pub(super) fn native_dir(sub: &str) -> Option<PathBuf> {
    let root = match std::env::var_os("DBSWEEP_NATIVE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/dbsweep/native"),
    };
    Some(root.join(sub))
}

/// The main module (path, version) a Go binary was built from: the `mod` line of the build
/// information that follows the `\xff Go buildinf:` marker (what `go version -m` reads).
fn go_main_module(binary: &[u8]) -> Option<(String, String)> {
    const MARKER: &[u8] = b"\xff Go buildinf:";
    let mut from = 0;
    let start = loop {
        let at = from + binary[from..].iter().position(|&b| b == MARKER[0])?;
        if binary[at..].starts_with(MARKER) {
            break at;
        }
        from = at + 1;
    };
    let info = String::from_utf8_lossy(&binary[start..binary.len().min(start + 64 * 1024)]);
    info.split('\n').find_map(|line| {
        let mut fields = line.split('\t');
        (fields.next()? == "mod").then_some(())?;
        Some((fields.next()?.to_string(), fields.next()?.to_string()))
    })
}

/// The program named by `$var`, if set; an error when it is not an executable file.
pub(super) fn program_from_env(var: &str) -> Option<Result<Vec<PathBuf>>> {
    let path = std::env::var_os(var).filter(|p| !p.is_empty()).map(PathBuf::from)?;
    if !super::process::is_executable(&path) {
        return Some(Err(Error::Missing(format!(
            "{var}={} is not an executable file: fix the variable or unset it and run scripts/setup-servers",
            path.display()
        ))));
    }
    Some(Ok(vec![path]))
}

/// The "not found" error of a program `scripts/setup-servers` builds with Go.
pub(super) fn missing_go_program(program: &str, sub: &str, var: &str) -> Error {
    Error::Missing(format!(
        "{program} not found: build it with scripts/setup-servers (Go, into ${{DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}}/{sub}), \
         or set {var} to its path"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_module_is_read_from_go_build_information() {
        let mut binary = b"\x7fELF junk \xff not it".to_vec();
        binary.extend_from_slice(b"\xff Go buildinf:\x08\x02\x00\x00go1.22\x30\xf0path\tgithub.com/ledisdb/ledisdb/cmd/ledis-server\n");
        binary.extend_from_slice(b"mod\tgithub.com/ledisdb/ledisdb\tv0.0.0-20200510135210-d35789ec47e6\th1:wxyq=\ndep\tx\tv1\n");
        let (path, version) = go_main_module(&binary).unwrap();
        assert_eq!((path.as_str(), version.as_str()), ("github.com/ledisdb/ledisdb", "v0.0.0-20200510135210-d35789ec47e6"));
        assert_eq!(go_main_module(b"no build information"), None);
    }

    #[test]
    fn missing_ledis_server_names_the_setup_script_and_the_variable() {
        let err = LedisDb.missing("ledis-server");
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.starts_with("ledis-server not found: build it with scripts/setup-servers"), "{text}");
        assert!(text.contains("DBSWEEP_LEDIS_SERVER"), "{text}");
    }
}
