//! Redis as a throwaway server: `redis-server` without snapshots (`--save ''`) and, unless
//! `--durability` asks for one, without the append-only file (`--appendonly no`; periodic:
//! `appendfsync everysec`, commit: `always`), working directory inside the data directory,
//! bound to 127.0.0.1.
//!
//! Readiness is PING -> +PONG, then INFO, whose `process_id` must be our child's pid (so
//! a foreign server that took the port is never mistaken for ours). Must not send
//! anything that changes data.

use super::process::program_version;
use super::{Context, Installed, Ready, System, read_line};
use crate::base::durability::{Durability, SETTING};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

/// Redis's part of the spawn machinery.
pub(super) struct Redis;

#[async_trait::async_trait]
impl System for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }
    fn package(&self) -> &'static str {
        "redis-server"
    }
    fn client_scheme(&self) -> Option<&'static str> {
        Some("redis-cli")
    }
    fn programs(&self) -> &'static [&'static str] {
        &["redis-server"]
    }
    async fn installed(&self, programs: Vec<PathBuf>) -> crate::error::Result<Installed> {
        installed(programs).await
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        command(ctx, port)
    }
    async fn probe(&self, ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        probe(ctx, port, pid).await
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("redis://127.0.0.1:{port}/0")
    }
}

/// `redis-server --version`: the `v=7.0.15` INFO reports as `redis_version` once it runs.
pub(super) async fn installed(programs: Vec<PathBuf>) -> crate::error::Result<Installed> {
    let version = program_version(&programs[0], &["--version"], server_version).await?;
    Ok(Installed { version, files: programs })
}

fn server_version(text: &str) -> Option<String> {
    text.split_whitespace().find_map(|word| word.strip_prefix("v=")).map(str::to_string)
}

pub(super) fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(0));
    command
        .arg("--port")
        .arg(port.to_string())
        .args(["--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--logfile", ""])
        .args(persistence(ctx.durability))
        .arg("--dir")
        .arg(&ctx.dir);
    command
}

/// The append-only file's settings for a durability (no snapshots in any case): without
/// one asked, none (Redis as a cache, the studies' setting).
fn persistence(durability: Option<Durability>) -> [&'static str; 4] {
    match durability.unwrap_or(Durability::None) {
        Durability::None => ["--appendonly", "no", "--appendfsync", "everysec"],
        Durability::Periodic => ["--appendonly", "yes", "--appendfsync", "everysec"],
        Durability::Commit => ["--appendonly", "yes", "--appendfsync", "always"],
    }
}

/// A spawned Redis's `durability` setting, from the persistence INFO reports.
fn durability_of(aof_enabled: bool, durability: Option<Durability>) -> String {
    match (aof_enabled, durability.unwrap_or(Durability::None)) {
        (false, _) => Durability::None.describe("no persistence (appendonly no, no snapshots)"),
        (true, Durability::Commit) => Durability::Commit.describe("append-only file fsynced at every write (appendfsync always)"),
        (true, _) => Durability::Periodic.describe("append-only file fsynced every second (appendfsync everysec)"),
    }
}

pub(super) async fn probe(ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
    let mut ready = probe_info(port, pid).await?;
    let aof = ready.settings.get("appendonly").is_some_and(|v| v == "yes");
    ready.settings.insert(SETTING.to_string(), durability_of(aof, ctx.durability));
    Ok(ready)
}

async fn probe_info(port: u16, pid: u32) -> io::Result<Ready> {
    let info = ping_info(port).await?;
    if info.get("process_id").and_then(|p| p.parse::<u32>().ok()) != Some(pid) {
        return Err(io::Error::other(format!("port {port} is served by another redis process")));
    }
    let mut settings = BTreeMap::new();
    settings.insert("save".to_string(), String::new());
    for (key, name) in [("aof_enabled", "appendonly"), ("maxmemory", "maxmemory"), ("maxmemory_policy", "maxmemory_policy")] {
        if let Some(value) = info.get(key) {
            let value = if key == "aof_enabled" { if value == "1" { "yes" } else { "no" }.to_string() } else { value.clone() };
            settings.insert(name.to_string(), value);
        }
    }
    let version = info.get("redis_version").cloned().unwrap_or_default();
    Ok(Ready { version, settings })
}

/// PING (must answer +PONG), then the `key:value` lines of INFO, with the commands sent as
/// RESP arrays (LedisDB, which shares this probe, does not take inline commands).
pub(super) async fn ping_info(port: u16) -> io::Result<BTreeMap<String, String>> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let mut stream = BufReader::new(stream);
    stream.get_mut().write_all(b"*1\r\n$4\r\nPING\r\n").await?;
    let pong = read_line(&mut stream).await?;
    if pong != "+PONG" {
        return Err(io::Error::other(format!("PING answered {pong:?}")));
    }
    stream.get_mut().write_all(b"*1\r\n$4\r\nINFO\r\n").await?;
    let header = read_line(&mut stream).await?;
    let len: usize = header
        .strip_prefix('$')
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, format!("INFO answered {header:?}")))?;
    let mut body = vec![0u8; len + 2];
    stream.read_exact(&mut body).await?;
    let _ = stream.get_mut().write_all(b"*1\r\n$4\r\nQUIT\r\n").await;
    Ok(parse_info(&String::from_utf8_lossy(&body)))
}

/// `key:value` lines of an INFO reply.
fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .filter_map(|line| line.trim_end().split_once(':'))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_redis_server_version() {
        let text = "Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=ae4d7c971a948f0\n";
        assert_eq!(server_version(text).as_deref(), Some("7.0.15"));
        assert_eq!(server_version("something else"), None);
    }

    #[test]
    fn info_lines_become_a_map() {
        let info = parse_info("# Server\r\nredis_version:7.0.15\r\nprocess_id:42\r\n\r\n# Memory\r\nmaxmemory:0\r\n");
        assert_eq!(info["redis_version"], "7.0.15");
        assert_eq!(info["process_id"], "42");
        assert_eq!(info["maxmemory"], "0");
        assert_eq!(info.len(), 3);
    }

    #[test]
    fn a_durability_sets_the_append_only_file() {
        assert_eq!(persistence(None), ["--appendonly", "no", "--appendfsync", "everysec"]);
        assert_eq!(persistence(Some(Durability::Commit)), ["--appendonly", "yes", "--appendfsync", "always"]);
        assert!(durability_of(false, Some(Durability::Commit)).starts_with("none: "), "what INFO says wins");
        assert!(durability_of(true, Some(Durability::Periodic)).starts_with("periodic: "));
    }
}
