//! Memcached as a throwaway server: TCP on 127.0.0.1 only (`-U 0` turns UDP off) with a
//! memory limit (`-m`) of a quarter of the machine's memory, 1–8 GB (TPC-H SF 1 takes
//! about 3 GB as items), which decides when it starts evicting. Memcached takes slab
//! memory only as items arrive, so the limit costs nothing until it is used.
//!
//! Readiness is `version`, then `stats`, whose pid must be our child's (so a foreign server
//! on the port is never mistaken for ours), then `stats settings` for the recorded limits.
//! Must not send anything that changes data.

use super::process::program_version;
use super::{Context, Installed, Ready, System, read_line};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncBufRead, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::Command;

/// Memcached's part of the spawn machinery.
pub(super) struct Memcached;

#[async_trait::async_trait]
impl System for Memcached {
    fn name(&self) -> &'static str {
        "memcached"
    }
    fn package(&self) -> &'static str {
        "memcached"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["memcached"]
    }
    /// `memcached -V`: `memcached 1.6.18`, the version its `version` command answers.
    async fn installed(&self, programs: Vec<PathBuf>) -> crate::error::Result<Installed> {
        let version = program_version(&programs[0], &["-V"], |text| text.trim().strip_prefix("memcached ").map(str::to_string)).await?;
        Ok(Installed { version, files: programs })
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        command(ctx, port)
    }
    async fn probe(&self, _ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        probe(port, pid).await
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("memcached://127.0.0.1:{port}")
    }
}

/// The memory limit in megabytes (`-m`): a quarter of the machine's memory, 1024..=8192.
fn memory_mb() -> u64 {
    let total_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| m.lines().find_map(|l| l.strip_prefix("MemTotal:")?.split_whitespace().next()?.parse::<u64>().ok()))
        .unwrap_or(4 << 20);
    (total_kib / 1024 / 4).clamp(1024, 8192)
}

fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(0));
    command.arg("-p").arg(port.to_string()).args(["-l", "127.0.0.1", "-U", "0", "-m"]).arg(memory_mb().to_string());
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        command.args(["-u", "root"]);
    }
    command
}

async fn probe(port: u16, pid: u32) -> io::Result<Ready> {
    let mut stream = BufReader::new(TcpStream::connect(("127.0.0.1", port)).await?);
    stream.get_mut().write_all(b"version\r\n").await?;
    let line = read_line(&mut stream).await?;
    let version = line.strip_prefix("VERSION ").ok_or_else(|| io::Error::other(format!("version answered {line:?}")))?.to_string();
    let counters = stats(&mut stream, "stats").await?;
    if counters.get("pid").and_then(|p| p.parse::<u32>().ok()) != Some(pid) {
        return Err(io::Error::other(format!("port {port} is served by another memcached process")));
    }
    let limits = stats(&mut stream, "stats settings").await?;
    let _ = stream.get_mut().write_all(b"quit\r\n").await;

    let mut settings = BTreeMap::new();
    if let Some(bytes) = limits.get("maxbytes").and_then(|b| b.parse::<u64>().ok()) {
        settings.insert("memory_limit_mb".to_string(), (bytes >> 20).to_string());
    }
    for key in ["maxconns", "num_threads", "evictions", "item_size_max"] {
        if let Some(value) = limits.get(key) {
            settings.insert(key.to_string(), value.clone());
        }
    }
    Ok(Ready { version, settings })
}

/// Sends a stats command and collects its `STAT name value` lines up to `END`.
async fn stats<S: AsyncBufRead + tokio::io::AsyncWrite + Unpin>(stream: &mut S, command: &str) -> io::Result<BTreeMap<String, String>> {
    stream.write_all(format!("{command}\r\n").as_bytes()).await?;
    let mut values = BTreeMap::new();
    loop {
        let line = read_line(stream).await?;
        if line == "END" {
            return Ok(values);
        }
        match line.strip_prefix("STAT ").and_then(|rest| rest.split_once(' ')) {
            Some((name, value)) => {
                values.insert(name.to_string(), value.to_string());
            }
            None => return Err(io::Error::other(format!("{command} answered {line:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn stats_lines_are_collected_until_end() {
        let reply: &[u8] = b"STAT pid 77\r\nSTAT maxbytes 1073741824\r\nEND\r\n";
        let (mut ours, theirs) = tokio::io::duplex(1024);
        let mut theirs = BufReader::new(theirs);
        ours.write_all(reply).await.unwrap();
        let values = stats(&mut theirs, "stats").await.unwrap();
        assert_eq!(values["pid"], "77");
        assert_eq!(values["maxbytes"], "1073741824");
        let mut sent = [0u8; 7];
        tokio::io::AsyncReadExt::read_exact(&mut ours, &mut sent).await.unwrap();
        assert_eq!(&sent, b"stats\r\n");
    }
}
