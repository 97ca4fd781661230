//! MariaDB as a throwaway server: `mariadb-install-db` into a fresh directory, then
//! `mariadbd --no-defaults` listening on 127.0.0.1 and on a socket in that directory.
//!
//! The URL's user is `root@127.0.0.1`: `--auth-root-authentication-method=normal` creates
//! root@localhost, root@127.0.0.1 and root@::1 without a password and with all rights, so
//! no extra client program or user is needed. Readiness proves it: the server's handshake
//! is read first over our own socket (a foreign server on the port cannot answer there),
//! then the probe logs in over TCP as that user and reads the recorded settings. Grant
//! tables stay on; durability is MariaDB's default (log flushed per commit) unless `--durability`
//! sets `innodb_flush_log_at_trx_commit`. `local_infile` is on (MariaDB's default, set
//! explicitly): dbsweep bulk-loads with `LOAD DATA LOCAL INFILE`. Must not read any my.cnf.

use super::process::{program_version, run_setup};
use super::{Context, Installed, Ready, System};
use crate::base::durability::Durability;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;

/// The user of `Server::url`.
const USER: &str = "root";

/// MariaDB's part of the spawn machinery.
pub(super) struct Mariadb;

#[async_trait::async_trait]
impl System for Mariadb {
    fn name(&self) -> &'static str {
        "mariadb"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["mysql"]
    }
    fn client_scheme(&self) -> Option<&'static str> {
        Some("mysql-cli")
    }
    fn package(&self) -> &'static str {
        "mariadb-server"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["mariadb-install-db", "mariadbd"]
    }
    /// `mariadbd --version`: `10.11.19-MariaDB-0+deb12u1`, as its handshake says once it runs.
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        let version = program_version(&programs[1], &["--version"], server_version).await?;
        Ok(Installed { version, files: programs })
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        init(ctx).await
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        command(ctx, port)
    }
    async fn probe(&self, ctx: &Context, port: u16, _pid: u32) -> io::Result<Ready> {
        probe(ctx, port).await
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("mysql://{USER}@127.0.0.1:{port}/")
    }
}

/// Settings that change results, read back from the server into `Server::settings`
/// (names a version lacks are simply absent: 10.11 has `tx_isolation`, 11.1+ renamed it).
const RECORDED: &[&str] = &[
    "innodb_flush_log_at_trx_commit",
    "innodb_doublewrite",
    "innodb_buffer_pool_size",
    "innodb_flush_method",
    "log_bin",
    "sync_binlog",
    "tx_isolation",
    "transaction_isolation",
    "max_connections",
    "tmpdir",
    "local_infile",
];

fn datadir(ctx: &Context) -> PathBuf {
    ctx.dir.join("data")
}

/// Temporary tables and sort files: beside the data (on the same storage, removed with
/// it), not in the machine's /tmp.
fn tmpdir(ctx: &Context) -> PathBuf {
    ctx.dir.join("tmp")
}

fn socket_path(ctx: &Context) -> PathBuf {
    ctx.dir.join("mysqld.sock")
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

async fn init(ctx: Context) -> Result<Context> {
    let mut install = Command::new(ctx.program(0));
    install.arg("--no-defaults").arg(format!("--datadir={}", datadir(&ctx).display())).args([
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
        "--skip-name-resolve",
    ]);
    if running_as_root() {
        install.arg("--user=root");
    }
    run_setup("mariadb", &ctx, install, "install-db.log").await?;
    std::fs::create_dir_all(tmpdir(&ctx)).map_err(|e| Error::runtime(format!("mariadb: cannot create {}: {e}", tmpdir(&ctx).display())))?;
    Ok(ctx)
}

/// MariaDB's `max_connections` unless it is set.
const DEFAULT_MAX_CONNECTIONS: u64 = 151;

fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(1));
    command
        .arg("--no-defaults")
        .arg(format!("--datadir={}", datadir(ctx).display()))
        .arg(format!("--socket={}", socket_path(ctx).display()))
        .arg(format!("--tmpdir={}", tmpdir(ctx).display()))
        .arg(format!("--pid-file={}", ctx.dir.join("mariadbd.pid").display()))
        .arg(format!("--port={port}"))
        .args(["--bind-address=127.0.0.1", "--skip-name-resolve", "--local-infile=ON"]);
    if let Some(level) = flush_log_at_commit(ctx.durability) {
        command.arg(format!("--innodb-flush-log-at-trx-commit={level}"));
    }
    if let Some(limit) = ctx.connection_limit(DEFAULT_MAX_CONNECTIONS) {
        command.arg(format!("--max-connections={limit}"));
    }
    if running_as_root() {
        command.arg("--user=root");
    }
    command
}

/// InnoDB's `innodb_flush_log_at_trx_commit` for a durability (none asked: its default,
/// 1). InnoDB has no "never": 0 still writes and flushes the log about once a second.
fn flush_log_at_commit(durability: Option<Durability>) -> Option<u8> {
    durability.map(|d| match d {
        Durability::None => 0,
        Durability::Periodic => 2,
        Durability::Commit => 1,
    })
}

async fn probe(ctx: &Context, port: u16) -> io::Result<Ready> {
    let mut socket = tokio::net::UnixStream::connect(socket_path(ctx)).await?;
    let (_, greeting) = read_packet(&mut socket).await?;
    let version = parse_handshake(&greeting)?;
    let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let settings = login_and_read_settings(&mut tcp).await?;
    Ok(Ready { version, settings })
}

/// Logs in as `USER` without a password (protocol 4.1) and reads `RECORDED` with one
/// text-protocol query.
async fn login_and_read_settings<S: AsyncRead + AsyncWrite + Unpin>(stream: &mut S) -> io::Result<BTreeMap<String, String>> {
    let (_, greeting) = read_packet(stream).await?;
    parse_handshake(&greeting)?;
    const LONG_PASSWORD: u32 = 0x1;
    const PROTOCOL_41: u32 = 0x200;
    const TRANSACTIONS: u32 = 0x2000;
    const SECURE_CONNECTION: u32 = 0x8000;
    const PLUGIN_AUTH: u32 = 0x8_0000;
    let capabilities = LONG_PASSWORD | PROTOCOL_41 | TRANSACTIONS | SECURE_CONNECTION | PLUGIN_AUTH;
    let mut login = Vec::new();
    login.extend_from_slice(&capabilities.to_le_bytes());
    login.extend_from_slice(&(16u32 << 20).to_le_bytes()); // max packet size
    login.push(33); // utf8_general_ci
    login.extend_from_slice(&[0; 23]);
    login.extend_from_slice(USER.as_bytes());
    login.push(0);
    login.push(0); // empty auth response: no password
    login.extend_from_slice(b"mysql_native_password\0");
    write_packet(stream, 1, &login).await?;
    let (_, answer) = read_packet(stream).await?;
    match answer.first() {
        Some(0x00) => {}
        Some(0xff) => return Err(io::Error::new(io::ErrorKind::PermissionDenied, server_error(&answer).to_string())),
        other => {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("login as {USER} without a password was not accepted (reply {other:?})"),
            ));
        }
    }

    let names: Vec<String> = RECORDED.iter().map(|name| format!("'{name}'")).collect();
    let query = format!("SHOW GLOBAL VARIABLES WHERE Variable_name IN ({})", names.join(","));
    let mut command = vec![0x03]; // COM_QUERY
    command.extend_from_slice(query.as_bytes());
    write_packet(stream, 0, &command).await?;
    // A column count, the column definitions and an EOF packet, rows of (name, value),
    // another EOF packet.
    let (_, count) = read_packet(stream).await?;
    if count.first() == Some(&0xff) {
        return Err(server_error(&count));
    }
    let mut settings = BTreeMap::new();
    let mut eof_packets = 0;
    while eof_packets < 2 {
        let (_, packet) = read_packet(stream).await?;
        match packet.first() {
            Some(0xfe) if packet.len() < 9 => eof_packets += 1,
            Some(0xff) => return Err(server_error(&packet)),
            _ if eof_packets == 0 => {} // a column definition
            _ => {
                let mut at = 0;
                let name = lenenc_string(&packet, &mut at)?.unwrap_or_default();
                let value = lenenc_string(&packet, &mut at)?.unwrap_or_else(|| "NULL".into());
                settings.insert(name.to_ascii_lowercase(), value);
            }
        }
    }
    let _ = write_packet(stream, 0, &[0x01]).await; // COM_QUIT
    Ok(settings)
}

async fn read_packet<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<(u8, Vec<u8>)> {
    let mut header = [0u8; 4];
    stream.read_exact(&mut header).await?;
    let len = u32::from_le_bytes([header[0], header[1], header[2], 0]) as usize;
    let mut payload = vec![0u8; len];
    stream.read_exact(&mut payload).await?;
    Ok((header[3], payload))
}

async fn write_packet<S: AsyncWrite + Unpin>(stream: &mut S, sequence: u8, payload: &[u8]) -> io::Result<()> {
    let len = (payload.len() as u32).to_le_bytes();
    let mut packet = vec![len[0], len[1], len[2], sequence];
    packet.extend_from_slice(payload);
    stream.write_all(&packet).await
}

/// A length-encoded string at `*at` (`None` = SQL NULL); advances `at`.
fn lenenc_string(packet: &[u8], at: &mut usize) -> io::Result<Option<String>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed length-encoded string");
    let first = *packet.get(*at).ok_or_else(bad)?;
    *at += 1;
    let width = match first {
        0xfb => return Ok(None),
        0xfc => 2,
        0xfd => 3,
        0xfe => 8,
        0xff => return Err(bad()),
        _ => 0,
    };
    let len = if width == 0 {
        first as usize
    } else {
        let bytes = packet.get(*at..*at + width).ok_or_else(bad)?;
        *at += width;
        bytes.iter().rev().fold(0usize, |n, &b| (n << 8) | b as usize)
    };
    let value = packet.get(*at..*at + len).ok_or_else(bad)?;
    *at += len;
    Ok(Some(String::from_utf8_lossy(value).into_owned()))
}

/// An ERR packet: 0xff, code (2 bytes), '#' + SQLSTATE (5 bytes), message.
fn server_error(packet: &[u8]) -> io::Error {
    let rest = packet.get(3..).unwrap_or_default();
    let message = rest.strip_prefix(b"#").and_then(|r| r.get(5..)).unwrap_or(rest);
    io::Error::other(format!("server refused: {}", String::from_utf8_lossy(message)))
}

fn parse_handshake(payload: &[u8]) -> io::Result<String> {
    match payload.first() {
        Some(10) => {
            let end = payload[1..].iter().position(|&b| b == 0).map_or(payload.len(), |i| i + 1);
            let version = String::from_utf8_lossy(&payload[1..end]);
            // MariaDB prefixes "5.5.5-" for old MySQL clients.
            Ok(version.strip_prefix("5.5.5-").unwrap_or(&version).to_string())
        }
        Some(0xff) => Err(server_error(payload)),
        other => Err(io::Error::new(io::ErrorKind::InvalidData, format!("not a MySQL handshake (first byte {other:?})"))),
    }
}

/// The word after `Ver` in `mariadbd --version` (`mysqld --version` words it the same way).
fn server_version(text: &str) -> Option<String> {
    let mut words = text.split_whitespace().skip_while(|word| *word != "Ver");
    words.next()?;
    words.next().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_mariadbd_version() {
        let text = "mariadbd  Ver 10.11.19-MariaDB-0+deb12u1 for debian-linux-gnu on x86_64 (Debian 12)\n";
        assert_eq!(server_version(text).as_deref(), Some("10.11.19-MariaDB-0+deb12u1"));
        assert_eq!(server_version("mariadbd"), None);
    }

    #[test]
    fn handshake_gives_the_version_without_the_compat_prefix() {
        let mut payload = vec![10];
        payload.extend_from_slice(b"5.5.5-10.11.19-MariaDB-0+deb12u1\0");
        payload.extend_from_slice(&[1, 0, 0, 0]);
        assert_eq!(parse_handshake(&payload).unwrap(), "10.11.19-MariaDB-0+deb12u1");
        let refused = b"\xff\x69\x04Host '10.0.0.1' is not allowed";
        assert_eq!(parse_handshake(refused).unwrap_err().to_string(), "server refused: Host '10.0.0.1' is not allowed");
        assert!(parse_handshake(b"+PONG").is_err());
        let denied = b"\xff\x15\x04#28000Access denied for user 'root'@'127.0.0.1'";
        assert_eq!(server_error(denied).to_string(), "server refused: Access denied for user 'root'@'127.0.0.1'");
    }

    #[test]
    fn length_encoded_strings_decode_short_long_and_null() {
        let mut packet = vec![3, b'O', b'N', b'!', 0xfb];
        packet.extend_from_slice(&[0xfc, 0x2c, 0x01]);
        packet.extend_from_slice(&[b'x'; 300]);
        let mut at = 0;
        assert_eq!(lenenc_string(&packet, &mut at).unwrap().as_deref(), Some("ON!"));
        assert_eq!(lenenc_string(&packet, &mut at).unwrap(), None);
        assert_eq!(lenenc_string(&packet, &mut at).unwrap().map(|s| s.len()), Some(300));
        assert_eq!(at, packet.len());
        assert!(lenenc_string(&packet, &mut at).is_err());
    }
}
