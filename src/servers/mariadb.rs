//! MariaDB as a throwaway server: `mariadb-install-db` into a fresh directory, then
//! `mariadbd --no-defaults` listening on 127.0.0.1 and on a socket in that directory.
//!
//! The URL's user is `root@127.0.0.1`: `--auth-root-authentication-method=normal` creates
//! root@localhost, root@127.0.0.1 and root@::1 without a password and with all rights (the
//! integration test logs in over TCP as that user), so no extra client program is needed.
//! Grant tables stay on. Readiness is the server's handshake packet, read first over our
//! own socket (a foreign server on the port cannot answer there), then over TCP. Durability
//! settings are MariaDB's defaults, passed explicitly so the recorded values are the ones
//! in force. Must not read any my.cnf.

use super::{Context, Ready, ServerKind, run_setup};
use crate::error::Result;
use std::collections::BTreeMap;
use std::io;
use std::path::PathBuf;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

pub(super) const PROGRAMS: &[&str] = &["mariadb-install-db", "mariadbd"];

/// Settings that change results, passed on the command line (all MariaDB 10.11 defaults).
const SETTINGS: &[(&str, &str)] = &[
    ("innodb_flush_log_at_trx_commit", "1"),
    ("innodb_doublewrite", "ON"),
    ("innodb_buffer_pool_size", "128M"),
    ("log_bin", "OFF"),
];

fn datadir(ctx: &Context) -> PathBuf {
    ctx.dir.join("data")
}

fn socket_path(ctx: &Context) -> PathBuf {
    ctx.dir.join("mysqld.sock")
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub(super) async fn init(ctx: Context) -> Result<Context> {
    let mut install = Command::new(ctx.program(0));
    install
        .arg("--no-defaults")
        .arg(format!("--datadir={}", datadir(&ctx).display()))
        .args(["--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve"]);
    if running_as_root() {
        install.arg("--user=root");
    }
    run_setup(ServerKind::Mariadb, &ctx, install, "install-db.log").await?;
    Ok(ctx)
}

pub(super) fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(1));
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", datadir(ctx).display()))
        .arg(format!("--socket={}", socket_path(ctx).display()))
        .arg(format!("--pid-file={}", ctx.dir.join("mariadbd.pid").display()))
        .arg(format!("--port={port}"))
        .args(["--bind-address=127.0.0.1", "--skip-name-resolve", "--skip-log-bin"])
        .args(["--innodb-flush-log-at-trx-commit=1", "--innodb-doublewrite=1", "--innodb-buffer-pool-size=128M"]);
    if running_as_root() {
        command.arg("--user=root");
    }
    command
}

pub(super) async fn probe(ctx: &Context, port: u16) -> io::Result<Ready> {
    let socket = tokio::net::UnixStream::connect(socket_path(ctx)).await?;
    let version = handshake(socket).await?;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    handshake(tcp).await?;
    let settings: BTreeMap<String, String> = SETTINGS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    Ok(Ready { version, settings })
}

/// Reads the server's initial handshake packet and returns its version string.
async fn handshake<S: AsyncRead + Unpin>(mut stream: S) -> io::Result<String> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    parse_handshake(&payload)
}

fn parse_handshake(payload: &[u8]) -> io::Result<String> {
    match payload.first() {
        Some(10) => {
            let end = payload[1..].iter().position(|&b| b == 0).map_or(payload.len(), |i| i + 1);
            let version = String::from_utf8_lossy(&payload[1..end]);
            // MariaDB prefixes "5.5.5-" for old MySQL clients.
            Ok(version.strip_prefix("5.5.5-").unwrap_or(&version).to_string())
        }
        Some(0xff) => {
            // Error packet: 0xff, code (2 bytes), then the message.
            let message = payload.get(3..).map(String::from_utf8_lossy).unwrap_or_default();
            Err(io::Error::other(format!("server refused the connection: {message}")))
        }
        other => Err(io::Error::new(io::ErrorKind::InvalidData, format!("not a MySQL handshake (first byte {other:?})"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handshake_gives_the_version_without_the_compat_prefix() {
        let mut payload = vec![10];
        payload.extend_from_slice(b"5.5.5-10.11.19-MariaDB-0+deb12u1\0");
        payload.extend_from_slice(&[1, 0, 0, 0]);
        assert_eq!(parse_handshake(&payload).unwrap(), "10.11.19-MariaDB-0+deb12u1");
        let refused = b"\xff\x69\x04Host '10.0.0.1' is not allowed";
        assert!(parse_handshake(refused).unwrap_err().to_string().contains("is not allowed"));
        assert!(parse_handshake(b"+PONG").is_err());
    }
}
