//! PostgreSQL as a throwaway server: `initdb` (trust authentication, superuser
//! `postgres`), then `postgres` itself (not `pg_ctl`, so its pid is ours), listening on
//! 127.0.0.1 and on a unix socket inside the data directory.
//!
//! Both programs refuse to run as root; then they run as the `postgres` system user on a
//! directory it owns. Readiness is a real startup + query exchange over the socket in our
//! own directory (so a foreign server that took the port cannot be mistaken for ours),
//! then once more over TCP. Durability is PostgreSQL's default (fsync per commit) unless
//! `--durability` asks otherwise; the values are read back from the server. Must not touch
//! the distribution's own clusters.

use super::process::{program_version, run_setup};
use super::{Context, Installed, Ready, System};
use crate::base::durability::Durability;
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::process::Command;

/// PostgreSQL's part of the spawn machinery.
pub(super) struct Postgres;

#[async_trait::async_trait]
impl System for Postgres {
    fn name(&self) -> &'static str {
        "postgres"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["pg", "postgresql"]
    }
    fn package(&self) -> &'static str {
        "postgresql"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["initdb", "postgres"]
    }
    fn search_dirs(&self) -> Vec<PathBuf> {
        version_dirs(Path::new("/usr/lib/postgresql"))
    }
    /// `postgres --version`: `15.18 (Debian 15.18-0+deb12u1)`, as `server_version` says
    /// once it runs (the version check comes before the refusal to run as root).
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
    /// Fast shutdown: roll back open transactions, end backends, checkpoint.
    fn stop_signal(&self) -> i32 {
        libc::SIGINT
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("postgres://postgres@127.0.0.1:{port}/postgres")
    }
    /// One target per table layout.
    fn variants(&self) -> &'static [(&'static str, &'static str)] {
        &[("pg-row", "?layout=row"), ("pg-hstore", "?layout=hstore"), ("pg-jsonb", "?layout=jsonb")]
    }
}

/// The settings read back from the server, in `Server::settings`.
const RECORDED: &[&str] = &[
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_level",
    "shared_buffers",
    "work_mem",
    "max_connections",
    "lc_collate",
    "server_encoding",
];

/// A unix socket path must fit in `sun_path` (108 bytes with the terminating NUL).
const MAX_SOCKET_PATH: usize = 107;

fn server_version(text: &str) -> Option<String> {
    Some(text.lines().next()?.strip_prefix("postgres (PostgreSQL) ")?.trim().to_string())
}

/// `/usr/lib/postgresql/<version>/bin`, newest version first.
fn version_dirs(base: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(base) else { return Vec::new() };
    let mut versions: Vec<(Vec<u32>, PathBuf)> = entries
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let version = name.split('.').map(|part| part.parse::<u32>().ok()).collect::<Option<Vec<_>>>()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by(|a, b| b.0.cmp(&a.0));
    versions.into_iter().map(|(_, dir)| dir).collect()
}

fn pgdata(ctx: &Context) -> PathBuf {
    ctx.dir.join("pgdata")
}

fn socket_path(ctx: &Context, port: u16) -> PathBuf {
    ctx.dir.join(format!(".s.PGSQL.{port}"))
}

/// Prepares the directory (owned by `postgres` when we are root) and runs initdb.
async fn init(mut ctx: Context) -> Result<Context> {
    if socket_path(&ctx, 65535).as_os_str().len() > MAX_SOCKET_PATH {
        return Err(Error::usage(format!(
            "the data directory {} is too deep for PostgreSQL's unix socket; choose a shorter data root",
            ctx.dir.display()
        )));
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let (uid, gid) = system_user("postgres").ok_or_else(|| {
            Error::Missing(
                "the postgres system user does not exist: install it with scripts/setup-servers (apt-get install postgresql)".into(),
            )
        })?;
        if let Some(blocked) = unreachable_ancestor(&ctx.dir, uid) {
            return Err(Error::usage(format!(
                "PostgreSQL must run as the postgres user, which cannot enter {}; choose a data root it can reach (e.g. /tmp or /dev/shm)",
                blocked.display()
            )));
        }
        std::os::unix::fs::chown(&ctx.dir, Some(uid), Some(gid))
            .map_err(|e| Error::runtime(format!("cannot hand {} to the postgres user: {e}", ctx.dir.display())))?;
        ctx.run_as = Some((uid, gid));
    }
    let mut initdb = Command::new(ctx.program(0));
    initdb.arg("-D").arg(pgdata(&ctx)).args(["-A", "trust", "-U", "postgres", "--no-sync", "--encoding=UTF8", "--locale=C"]);
    run_setup("postgres", &ctx, initdb, "initdb.log").await?;
    Ok(ctx)
}

fn command(ctx: &Context, port: u16) -> Command {
    let mut command = Command::new(ctx.program(1));
    command.arg("-D").arg(pgdata(ctx)).arg("-p").arg(port.to_string()).arg("-k").arg(&ctx.dir).args(["-c", "listen_addresses=127.0.0.1"]);
    for setting in durability_settings(ctx.durability) {
        command.args(["-c", setting]);
    }
    command
}

/// The settings of a durability (none asked: PostgreSQL's defaults, an fsync per commit).
/// `periodic` is asynchronous commit: the WAL writer flushes every 200 ms.
fn durability_settings(durability: Option<Durability>) -> &'static [&'static str] {
    match durability {
        None => &[],
        Some(Durability::None) => &["fsync=off", "synchronous_commit=off", "full_page_writes=off"],
        Some(Durability::Periodic) => &["fsync=on", "synchronous_commit=off"],
        Some(Durability::Commit) => &["fsync=on", "synchronous_commit=on"],
    }
}

/// A full startup + query exchange over our own socket, then a startup over TCP.
async fn probe(ctx: &Context, port: u16) -> io::Result<Ready> {
    let socket = tokio::net::UnixStream::connect(socket_path(ctx, port)).await?;
    let ready = session(socket, true).await?;
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    session(tcp, false).await?;
    Ok(ready)
}

/// Speaks protocol 3.0: startup as `postgres` (trust), optionally reads the recorded
/// settings with a simple query, then terminates.
async fn session<S: AsyncRead + AsyncWrite + Unpin>(mut stream: S, read_settings: bool) -> io::Result<Ready> {
    let mut body = Vec::new();
    body.extend_from_slice(&196_608_i32.to_be_bytes()); // protocol 3.0
    for part in ["user", "postgres", "database", "postgres", "application_name", "dbsweep-ready"] {
        body.extend_from_slice(part.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut startup = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    startup.extend_from_slice(&body);
    stream.write_all(&startup).await?;

    let mut version = String::new();
    loop {
        let (tag, body) = read_message(&mut stream).await?;
        match tag {
            b'R' if body.get(..4) == Some(&[0, 0, 0, 0]) => {}
            b'R' => {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    "the server asks for a password; expected trust authentication",
                ));
            }
            b'S' => {
                let mut fields = body.split(|&b| b == 0);
                if fields.next() == Some(b"server_version") {
                    version = String::from_utf8_lossy(fields.next().unwrap_or_default()).into_owned();
                }
            }
            b'E' => return Err(server_error(&body)),
            b'Z' => break,
            _ => {}
        }
    }

    let mut settings = BTreeMap::new();
    if read_settings {
        let names: Vec<String> = RECORDED.iter().map(|name| format!("'{name}'")).collect();
        let sql = format!("SELECT name, current_setting(name) FROM pg_settings WHERE name IN ({})", names.join(","));
        let mut query = vec![b'Q'];
        query.extend_from_slice(&((sql.len() + 5) as i32).to_be_bytes());
        query.extend_from_slice(sql.as_bytes());
        query.push(0);
        stream.write_all(&query).await?;
        loop {
            let (tag, body) = read_message(&mut stream).await?;
            match tag {
                b'D' => {
                    let columns = data_row(&body)?;
                    if let [Some(name), Some(value)] = columns.as_slice() {
                        settings.insert(name.clone(), value.clone());
                    }
                }
                b'E' => return Err(server_error(&body)),
                b'Z' => break,
                _ => {}
            }
        }
    }
    stream.write_all(&[b'X', 0, 0, 0, 4]).await?;
    Ok(Ready { version, settings })
}

async fn read_message<S: AsyncRead + Unpin>(stream: &mut S) -> io::Result<(u8, Vec<u8>)> {
    let mut header = [0u8; 5];
    stream.read_exact(&mut header).await?;
    let len = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if !(4..=1 << 20).contains(&len) {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("bad message length {len}")));
    }
    let mut body = vec![0u8; len as usize - 4];
    stream.read_exact(&mut body).await?;
    Ok((header[0], body))
}

/// The columns of a DataRow message (`None` = SQL NULL).
fn data_row(body: &[u8]) -> io::Result<Vec<Option<String>>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "malformed DataRow");
    let count = u16::from_be_bytes(body.get(..2).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
    let mut at = 2;
    let mut columns = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = i32::from_be_bytes(body.get(at..at + 4).ok_or_else(bad)?.try_into().map_err(|_| bad())?);
        at += 4;
        if len < 0 {
            columns.push(None);
        } else {
            let value = body.get(at..at + len as usize).ok_or_else(bad)?;
            columns.push(Some(String::from_utf8_lossy(value).into_owned()));
            at += len as usize;
        }
    }
    Ok(columns)
}

/// The message field of an ErrorResponse (e.g. "the database system is starting up").
fn server_error(body: &[u8]) -> io::Error {
    let message = body
        .split(|&b| b == 0)
        .find(|field| field.first() == Some(&b'M'))
        .map(|field| String::from_utf8_lossy(&field[1..]).into_owned())
        .unwrap_or_else(|| "unknown server error".into());
    io::Error::other(message)
}

/// uid and gid of a system user.
fn system_user(name: &str) -> Option<(u32, u32)> {
    let name = CString::new(name).ok()?;
    // SAFETY: getpwnam_r writes only into the buffers we pass and sets `result` to
    // either null or `&mut entry`.
    unsafe {
        let mut entry: libc::passwd = std::mem::zeroed();
        let mut buf = vec![0 as libc::c_char; 16 * 1024];
        let mut result: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwnam_r(name.as_ptr(), &mut entry, buf.as_mut_ptr(), buf.len(), &mut result);
        (rc == 0 && !result.is_null()).then_some((entry.pw_uid, entry.pw_gid))
    }
}

/// The first ancestor of `dir` that user `uid` cannot search (no execute bit for it),
/// which would make initdb fail with a confusing message.
fn unreachable_ancestor(dir: &Path, uid: u32) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    dir.ancestors().skip(1).find_map(|ancestor| {
        let meta = std::fs::metadata(ancestor).ok()?;
        let searchable = meta.mode() & 0o001 != 0 || (meta.uid() == uid && meta.mode() & 0o100 != 0);
        (!searchable).then(|| ancestor.to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_postgres_version() {
        assert_eq!(
            server_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n").as_deref(),
            Some("15.18 (Debian 15.18-0+deb12u1)")
        );
        assert_eq!(server_version("pg_ctl (PostgreSQL) 15.18"), None);
    }

    #[test]
    fn newest_version_dir_comes_first() {
        let base = tempfile::tempdir().unwrap();
        for name in ["9.6", "15", "13", "not-a-version"] {
            std::fs::create_dir(base.path().join(name)).unwrap();
        }
        let dirs = version_dirs(base.path());
        let names: Vec<_> = dirs.iter().map(|d| d.parent().unwrap().file_name().unwrap().to_str().unwrap()).collect();
        assert_eq!(names, ["15", "13", "9.6"]);
        assert!(dirs[0].ends_with("15/bin"));
    }

    #[test]
    fn data_rows_decode_values_and_nulls() {
        let mut body = 2u16.to_be_bytes().to_vec();
        body.extend_from_slice(&5i32.to_be_bytes());
        body.extend_from_slice(b"fsync");
        body.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(data_row(&body).unwrap(), vec![Some("fsync".to_string()), None]);
        assert!(data_row(&body[..8]).is_err());
    }

    #[test]
    fn error_responses_yield_their_message() {
        let body = b"SFATAL\0C57P03\0Mthe database system is starting up\0\0";
        assert_eq!(server_error(body).to_string(), "the database system is starting up");
    }

    #[test]
    fn root_has_a_user_and_private_dirs_are_detected() {
        assert_eq!(system_user("root"), Some((0, 0)));
        assert_eq!(system_user("no-such-user-dbsweep"), None);
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        let private = base.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(unreachable_ancestor(&private.join("data"), 4242), Some(private.clone()));
        assert_eq!(unreachable_ancestor(&base.path().join("data"), 4242), None);
    }
}
