//! What `dbsweep targets` reports of each system in `registry::SYSTEMS`: whether it can
//! run here, with the version found or why not, found for real and quickly. Servers: the
//! programs `--spawn` would start, found and asked their version by the server modules
//! (`servers::installed`). Command-line clients: a client target opened as a run opens it
//! (which finds the client program on PATH and asks its version), plus its server.
//! Embedded engines and the built-in targets: a target opened in a scratch directory
//! reports its library's version and the adapter's capabilities. The probes run
//! concurrently; each program run has its own time limit (`servers::process`).
//!
//! Must not: start a server, connect to anything, write outside its scratch directory, or
//! print (app.rs prints).

use super::registry::{self, Declaration, Needs, SYSTEMS};
use super::{Capabilities, OpenContext, TargetInfo, TargetUrl};
use crate::error::{Error, Result};
use crate::servers::{self, Installed, ServerKind};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// How `dbsweep targets` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A line per system, then its description and capabilities.
    Text,
    /// `{"systems": [...]}`, the same facts for scripts.
    Json,
}

/// Whether a system can run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Status {
    /// What it needs was found and answered with its version.
    #[serde(rename = "ready")]
    Ready,
    /// Something it needs is missing (or does not run); the reason says what to install.
    #[serde(rename = "not installed")]
    NotInstalled,
    /// dbsweep cannot run it anywhere; the reason says what to use instead.
    #[serde(rename = "n/a")]
    NotAvailable,
}

impl Status {
    /// The word printed (and written in the JSON).
    pub fn word(self) -> &'static str {
        match self {
            Status::Ready => "ready",
            Status::NotInstalled => "not installed",
            Status::NotAvailable => "n/a",
        }
    }
}

/// One system as found here.
#[derive(Debug, Serialize)]
pub struct SystemStatus {
    pub scheme: &'static str,
    pub system: &'static str,
    pub status: Status,
    /// The version found (the server program's, the client's, the library's); `None`
    /// unless ready.
    pub version: Option<String>,
    /// Why it is not ready, in words for a user; `None` when ready.
    pub reason: Option<String>,
    /// The `--spawn` name of the server it runs on, if dbsweep can start one.
    pub spawn: Option<&'static str>,
    /// The programs and files found: server programs (and a jar), the client program.
    pub files: Vec<PathBuf>,
    pub description: &'static str,
    /// What its adapter can run; `None` when no adapter could be built here (a missing
    /// client program) or it has none.
    pub capabilities: Option<Capabilities>,
}

/// Every system of `SYSTEMS`, in its order, as found here.
pub async fn probe_all() -> Result<Vec<SystemStatus>> {
    let scratch = tempfile::tempdir().map_err(|e| Error::runtime(format!("cannot create a scratch directory for the probes: {e}")))?;
    let mut kinds: Vec<ServerKind> = SYSTEMS.iter().filter_map(|entry| server_of(entry.needs)).collect();
    kinds.sort();
    kinds.dedup();
    let servers = futures_util::future::join_all(kinds.iter().map(|&kind| async move { (kind, servers::installed(kind).await) }));
    let opened = futures_util::future::join_all(SYSTEMS.iter().map(|entry| {
        let dir = scratch.path().to_path_buf();
        async move {
            match tokio::task::spawn_blocking(move || open_probe(entry, &dir)).await {
                Ok(opened) => opened,
                Err(e) => Some(Err(Error::runtime(format!("opening a {} target panicked: {e}", entry.system)))),
            }
        }
    }));
    let (servers, opened) = tokio::join!(servers, opened);
    let servers: BTreeMap<ServerKind, Result<Installed>> = servers.into_iter().collect();
    Ok(SYSTEMS.iter().zip(opened).map(|(entry, opened)| status(entry, opened, &servers)).collect())
}

/// The server a system runs on, if dbsweep can start one.
fn server_of(needs: Needs) -> Option<ServerKind> {
    match needs {
        Needs::Server(kind) | Needs::Client(kind) => Some(kind),
        Needs::BuiltIn | Needs::Library | Needs::Unavailable(_) => None,
    }
}

/// What the adapter of `entry` says of itself, built as a run builds it (named after the
/// system, so its errors read "target 'redis-cli': ...") with its files in `dir`, and
/// dropped again on the thread that built it (a MonetDB client belongs to its thread);
/// `None` for a system dbsweep has no adapter for.
fn open_probe(entry: &Declaration, dir: &Path) -> Option<Result<TargetInfo>> {
    if let Needs::Unavailable(_) = entry.needs {
        return None;
    }
    let url = TargetUrl::parse(&entry.url.replace("[PATH]", ""));
    Some(url.and_then(|url| registry::open(entry.system, &url, &OpenContext::new(dir.to_path_buf()))).map(|target| target.info().clone()))
}

/// Puts together what was found for one system.
fn status(entry: &Declaration, opened: Option<Result<TargetInfo>>, servers: &BTreeMap<ServerKind, Result<Installed>>) -> SystemStatus {
    let capabilities = opened.as_ref().and_then(|o| o.as_ref().ok()).map(|info| info.capabilities.clone());
    let mut found = SystemStatus {
        scheme: entry.url,
        system: entry.system,
        status: Status::Ready,
        version: None,
        reason: None,
        spawn: server_of(entry.needs).map(ServerKind::name),
        files: Vec::new(),
        description: entry.description,
        capabilities,
    };
    let server = server_of(entry.needs).map(|kind| servers.get(&kind).expect("every server kind was probed"));
    let outcome: std::result::Result<String, String> = match (entry.needs, opened) {
        (Needs::Unavailable(why), _) => {
            found.status = Status::NotAvailable;
            Err(why.to_string())
        }
        (Needs::Server(_), _) => match server.expect("a server system has a server") {
            Ok(installed) => {
                found.files.clone_from(&installed.files);
                Ok(installed.version.clone())
            }
            Err(e) => Err(e.to_string()),
        },
        (Needs::Client(_), Some(opened)) => match (opened, server.expect("a client system has a server")) {
            (Ok(info), Ok(installed)) => {
                let (program, version) = client_program(&info.settings);
                found.files.extend(program);
                found.files.extend(installed.files.iter().cloned());
                Ok(version)
            }
            (Ok(_), Err(e)) => Err(e.to_string()),
            (Err(e), Ok(_)) => Err(e.to_string()),
            (Err(client), Err(server)) => Err(format!("{client}; {server}")),
        },
        (_, Some(Err(e))) => Err(e.to_string()),
        (Needs::BuiltIn, Some(Ok(info))) => Ok(format!("dbsweep {}", info.version)),
        (Needs::Library, Some(Ok(info))) => Ok(info.version),
        (Needs::BuiltIn | Needs::Library | Needs::Client(_), None) => unreachable!("open_probe opens every system that has an adapter"),
    };
    match outcome {
        Ok(version) => found.version = Some(version),
        Err(reason) => {
            // The adapter's errors name the target; here the line names the system.
            let reason = reason.strip_prefix(&format!("target '{}': ", entry.system)).map_or(reason.clone(), str::to_string);
            if found.status == Status::Ready {
                found.status = Status::NotInstalled;
            }
            found.files.clear();
            found.reason = Some(reason);
        }
    }
    found
}

/// The client program and its version from a client target's `client` setting,
/// `PROGRAM (VERSION)`; a version that starts with the program's path (`mariadb --version`
/// prints its own path) starts with its name instead, and runs of spaces are one space.
fn client_program(settings: &BTreeMap<String, String>) -> (Option<PathBuf>, String) {
    let client = settings.get("client").map(String::as_str).unwrap_or("unknown");
    let Some((program, version)) = client.split_once(" (") else { return (None, client.to_string()) };
    let version = version.strip_suffix(')').unwrap_or(version);
    let name = Path::new(program).file_name().map_or(program.into(), |n| n.to_string_lossy());
    let version = version.strip_prefix(program).map_or(version.to_string(), |rest| format!("{name}{rest}"));
    (Some(PathBuf::from(program)), version.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn installed(version: &str, file: &str) -> Result<Installed> {
        Ok(Installed { version: version.into(), files: vec![PathBuf::from(file)] })
    }

    fn entry(system: &str) -> &'static Declaration {
        SYSTEMS.iter().find(|e| e.system == system).unwrap()
    }

    #[test]
    fn a_missing_server_program_is_never_ready() {
        let servers = BTreeMap::from([(
            ServerKind::Redis,
            Err(Error::Missing("redis-server not found: install it with scripts/setup-servers (apt-get install redis-server)".into())),
        )]);
        let dir = tempfile::tempdir().unwrap();
        let redis = status(entry("redis"), open_probe(entry("redis"), dir.path()), &servers);
        assert_eq!(redis.status, Status::NotInstalled);
        assert_eq!(redis.version, None);
        assert!(redis.files.is_empty());
        assert_eq!(
            redis.reason.as_deref(),
            Some("redis-server not found: install it with scripts/setup-servers (apt-get install redis-server)")
        );
        // The client needs its server too.
        let cli = status(entry("redis-cli"), open_probe(entry("redis-cli"), dir.path()), &servers);
        assert_eq!(cli.status, Status::NotInstalled);
        assert!(cli.reason.unwrap().starts_with("redis-server not found"));
    }

    #[test]
    fn a_found_server_is_ready_with_its_version_and_files() {
        let servers =
            BTreeMap::from([(ServerKind::Postgres, installed("15.18 (Debian 15.18-0+deb12u1)", "/usr/lib/postgresql/15/bin/postgres"))]);
        let dir = tempfile::tempdir().unwrap();
        for system in ["pg-row", "pg-jsonb"] {
            let pg = status(entry(system), open_probe(entry(system), dir.path()), &servers);
            assert_eq!((pg.status, pg.version.as_deref(), pg.reason), (Status::Ready, Some("15.18 (Debian 15.18-0+deb12u1)"), None));
            assert_eq!(pg.files, [PathBuf::from("/usr/lib/postgresql/15/bin/postgres")]);
            assert_eq!(pg.spawn, Some("postgres"));
            assert!(pg.capabilities.unwrap().ops.len() > 5);
        }
    }

    #[test]
    fn systems_that_cannot_run_say_what_to_use_instead() {
        let ssdb = status(entry("ssdb"), open_probe(entry("ssdb"), Path::new("/nonexistent")), &BTreeMap::new());
        assert_eq!(ssdb.status, Status::NotAvailable);
        assert!(ssdb.reason.unwrap().contains("use ledis:// (--spawn ledisdb)"));
        assert!(ssdb.capabilities.is_none() && ssdb.version.is_none());
    }

    #[test]
    fn the_client_setting_gives_program_and_version() {
        let settings = BTreeMap::from([("client".to_string(), "/usr/bin/redis-cli (redis-cli 7.0.15)".to_string())]);
        assert_eq!(client_program(&settings), (Some(PathBuf::from("/usr/bin/redis-cli")), "redis-cli 7.0.15".to_string()));
        assert_eq!(client_program(&BTreeMap::new()), (None, "unknown".to_string()));
        let text =
            "/usr/bin/mariadb (/usr/bin/mariadb  Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64) using  EditLine wrapper)";
        let settings = BTreeMap::from([("client".to_string(), text.to_string())]);
        let version = "mariadb Ver 15.1 Distrib 10.11.19-MariaDB, for debian-linux-gnu (x86_64) using EditLine wrapper";
        assert_eq!(client_program(&settings), (Some(PathBuf::from("/usr/bin/mariadb")), version.to_string()));
    }
}
