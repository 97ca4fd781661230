//! One run at a time per namespace: dbsweep's namespace in a shared target (`--namespace`)
//! and the ownership lease a run holds on it while it lasts.
//!
//! Owns the lease protocol, described once for every system: a run writes a record naming
//! itself (run id, host, pid, start, last renewal) into the target before it touches
//! anything, renews it every [`RENEW_EVERY`], and removes it after its cleanup. A second
//! run that finds a live record refuses at once (`Error::InUse`, exit 2) and names the
//! holder and the ways forward; a record whose holder is gone (not renewed for
//! [`STALE_AFTER`], or its pid is dead on this host) is taken over and the report says so.
//! Each system only stores the record, through [`LeaseStore`]: a compare-and-swap with the
//! system's own atomic primitive (a transaction under an advisory lock, `SET NX` and a Lua
//! script, memcached `add`/`cas`, a Cassandra LWT). Embedded engines with a user-given file
//! use [`FileLease`], an `flock` beside the file. Must not know any system's protocol.

use super::Target;
use crate::error::{Error, Result};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::hash::{BuildHasher, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// How often a running dbsweep rewrites its lease records.
pub const RENEW_EVERY: Duration = Duration::from_secs(10);
/// A record not renewed for this long belongs to a run that is gone.
pub const STALE_AFTER: Duration = Duration::from_secs(60);

/// dbsweep's namespace in every shared target of a run: the schema (PostgreSQL, H2), the
/// database (MariaDB), the keyspace (Cassandra) and the key prefix `NAME:` (Redis,
/// Memcached). `dbsweep` by default; `--namespace X` makes it `dbsweep_x`, so runs side by
/// side never see each other's objects (`dbsweep:*` does not match `dbsweep_x:*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    name: String,
}

impl Namespace {
    const DEFAULT: &str = "dbsweep";

    /// The namespace for `--namespace NAME` (`None`: the default `dbsweep`).
    pub fn new(suffix: Option<&str>) -> Result<Self> {
        let Some(suffix) = suffix else { return Ok(Namespace::default()) };
        let valid =
            !suffix.is_empty() && suffix.len() <= 32 && suffix.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(Error::usage(format!(
                "--namespace '{suffix}': use 1-32 lowercase letters, digits or '_' (it names a schema, database, keyspace and key prefix)"
            )));
        }
        Ok(Namespace { name: format!("{}_{suffix}", Self::DEFAULT) })
    }

    /// The schema, database or keyspace name: `dbsweep` or `dbsweep_NAME`.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The prefix of every key in a key-value store: `dbsweep:` or `dbsweep_NAME:`.
    pub fn key_prefix(&self) -> String {
        format!("{}:", self.name)
    }

    pub fn is_default(&self) -> bool {
        self.name == Self::DEFAULT
    }
}

impl Default for Namespace {
    fn default() -> Self {
        Namespace { name: Self::DEFAULT.to_string() }
    }
}

/// The run that holds (or asks for) a lease, as its record says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Holder {
    /// Random per run; tells two runs on one host apart.
    pub run: String,
    pub host: String,
    pub pid: u32,
    /// Unix seconds when the run started.
    pub started: u64,
    /// Unix seconds of the last renewal.
    pub renewed: u64,
}

/// Seconds since the Unix epoch.
fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// This machine's host name (as `hostname` prints it).
fn this_host() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "unknown".into())
}

/// Whether a process with this pid exists on this machine.
fn pid_alive(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists; nothing is sent.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

impl Holder {
    /// This process as a new run, with a fresh random run id.
    pub fn this_process() -> Holder {
        let mut hasher = std::hash::RandomState::new().build_hasher();
        hasher.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
        hasher.write_u32(std::process::id());
        let now = unix_now();
        Holder { run: format!("{:012x}", hasher.finish() >> 16), host: this_host(), pid: std::process::id(), started: now, renewed: now }
    }

    /// The record as stored in a target (one line of JSON).
    pub fn encode(&self) -> String {
        serde_json::to_string(self).expect("a holder always encodes")
    }

    /// A stored record, or `None` when the text is not a dbsweep lease record.
    pub fn decode(text: &str) -> Option<Holder> {
        serde_json::from_str(text).ok()
    }

    fn renewed_now(&self) -> Holder {
        Holder { renewed: unix_now(), ..self.clone() }
    }

    /// Why this holder counts as gone, or `None` while it may still be running.
    fn gone(&self, now: u64, here: &str) -> Option<String> {
        if self.host == here && !pid_alive(self.pid) {
            return Some(format!("its process {} no longer exists on this host", self.pid));
        }
        let silent = now.saturating_sub(self.renewed);
        (silent > STALE_AFTER.as_secs()).then(|| format!("it has not renewed its lease for {}", ago(silent)))
    }

    /// `dbsweep run 1a2b3c4d5e6f (pid 4242 on host box, started 3 min ago, renewed 2 s ago)`.
    pub fn describe(&self, now: u64) -> String {
        format!(
            "dbsweep run {} (pid {} on host {}, started {} ago, renewed {} ago)",
            self.run,
            self.pid,
            self.host,
            ago(now.saturating_sub(self.started)),
            ago(now.saturating_sub(self.renewed))
        )
    }
}

fn ago(secs: u64) -> String {
    match secs {
        0..120 => format!("{secs} s"),
        120..7200 => format!("{} min", secs / 60),
        _ => format!("{} h", secs / 3600),
    }
}

/// Where a target keeps its lease record. Implemented by every adapter whose data other
/// runs can reach; the protocol around it is [`acquire`].
#[async_trait]
pub trait LeaseStore: Send + Sync {
    /// What the lease guards, for messages and to share one lease between targets of one
    /// run: `schema dbsweep of database bench on PostgreSQL at 127.0.0.1:5432`.
    fn place(&self) -> String;

    /// How a refused run can proceed besides waiting, e.g. `point the URL at another
    /// database, or add --namespace NAME to run side by side`.
    fn alternatives(&self) -> String;

    /// The stored record; `None` when there is none (also when the namespace does not
    /// exist yet). `Error::NotOwned` when the namespace exists but is not dbsweep's.
    async fn read(&self) -> Result<Option<String>>;

    /// Atomically replaces the stored record `current` (`None`: no record) by `next`
    /// (`None`: remove it). Returns false, changing nothing, when the stored record is not
    /// `current`. Storing into a namespace that does not exist creates it, marked as
    /// dbsweep's; removing the last record may remove the then empty namespace.
    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool>;
}

/// A lease kept as the one row of a table in dbsweep's namespace of an SQL server, seen
/// under a lock the caller holds (a transaction under an advisory lock, a server-wide
/// named lock): the steps in which servers differ. [`swap_locked`] is the swap over them.
#[async_trait]
pub trait LockedLeaseTable: Send {
    /// The stored record; `None` when the namespace or the table does not exist.
    async fn stored(&mut self) -> Result<Option<String>>;

    /// Creates the namespace (marked as dbsweep's) if it is missing, and the lease table.
    async fn create(&mut self) -> Result<()>;

    /// Makes `record` the one stored row.
    async fn write(&mut self, record: &str) -> Result<()>;

    /// Drops the lease table, and the namespace when nothing else is left in it.
    async fn remove(&mut self) -> Result<()>;
}

/// [`LeaseStore::swap`] of a lease table under the caller's lock.
pub async fn swap_locked(table: &mut dyn LockedLeaseTable, current: Option<&str>, next: Option<&str>) -> Result<bool> {
    if table.stored().await?.as_deref() != current {
        return Ok(false);
    }
    match next {
        Some(next) => {
            table.create().await?;
            table.write(next).await?;
        }
        None if current.is_some() => table.remove().await?,
        None => {}
    }
    Ok(true)
}

/// A lease this run holds.
pub struct Lease {
    store: Arc<dyn LeaseStore>,
    /// The record as last written.
    record: tokio::sync::Mutex<String>,
}

impl Lease {
    pub fn place(&self) -> String {
        self.store.place()
    }

    /// Rewrites the record with a new renewal time. `Ok(false)`: another run took the
    /// lease over (this run was silent too long); the namespace is no longer ours.
    pub async fn renew(&self) -> Result<bool> {
        let mut record = self.record.lock().await;
        let next = Holder::decode(&record).expect("our own record decodes").renewed_now().encode();
        if self.store.swap(Some(&record), Some(&next)).await? {
            *record = next;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Removes the record if it is still ours.
    pub async fn release(&self) -> Result<()> {
        let record = self.record.lock().await;
        self.store.swap(Some(&record), None).await.map(|_| ())
    }
}

/// How `acquire` ended when it did not fail.
pub enum Acquired {
    /// The lease is ours; `took_over` says from whom when a gone run held it before.
    Taken { lease: Lease, took_over: Option<String> },
    /// This run already holds it (another target of the run shares the namespace).
    AlreadyOurs,
}

/// Takes the lease of `store` for `me`, on behalf of the target `target` (for messages).
pub async fn acquire(target: &str, store: Arc<dyn LeaseStore>, me: &Holder) -> Result<Acquired> {
    let mine = me.renewed_now().encode();
    let here = this_host();
    // Each round either wins, refuses, or lost a race to another run that changed the
    // record meanwhile; a few rounds settle any race.
    for _ in 0..5 {
        let now = unix_now();
        let Some(stored) = store.read().await? else {
            if store.swap(None, Some(&mine)).await? {
                return Ok(Acquired::Taken { lease: Lease { store, record: tokio::sync::Mutex::new(mine) }, took_over: None });
            }
            continue;
        };
        let Some(holder) = Holder::decode(&stored) else {
            return Err(Error::not_owned(
                target,
                format!(
                    "{} holds a lease record dbsweep did not write ({:.60}); remove it yourself, or {}",
                    store.place(),
                    stored,
                    store.alternatives()
                ),
            ));
        };
        if holder.run == me.run {
            return Ok(Acquired::AlreadyOurs);
        }
        match holder.gone(now, &here) {
            Some(why) => {
                if store.swap(Some(&stored), Some(&mine)).await? {
                    let took_over = format!("{}: took over the lease on {} from {}: {why}", target, store.place(), holder.describe(now));
                    return Ok(Acquired::Taken {
                        lease: Lease { store, record: tokio::sync::Mutex::new(mine) },
                        took_over: Some(took_over),
                    });
                }
            }
            None => {
                return Err(Error::in_use(
                    target,
                    format!("{} is in use by {}; wait for it to finish, or {}", store.place(), holder.describe(now), store.alternatives()),
                ));
            }
        }
    }
    Err(Error::runtime(format!("target '{target}': the lease on {} kept changing hands; try again", store.place())))
}

/// The leases of one run: one per distinct place among its targets.
#[derive(Default)]
pub struct Leases {
    held: Vec<Arc<Lease>>,
    /// The places whose lease another run took over while this one ran.
    lost: Mutex<BTreeSet<String>>,
    /// One line per lease taken over from a run that was gone, for the report.
    pub notes: Vec<String>,
}

impl Leases {
    /// Takes the lease of every target that has one, before anything is touched. On a
    /// refusal, the leases already taken are released again.
    pub async fn acquire_all(targets: &[Arc<dyn Target>], me: &Holder) -> Result<Leases> {
        let mut leases = Leases::default();
        let mut places = BTreeSet::new();
        for target in targets {
            let Some(store) = target.clone().lease() else { continue };
            if !places.insert(store.place()) {
                continue;
            }
            match acquire(&target.info().name, store, me).await {
                Ok(Acquired::Taken { lease, took_over }) => {
                    leases.held.push(Arc::new(lease));
                    leases.notes.extend(took_over);
                }
                Ok(Acquired::AlreadyOurs) => {}
                Err(e) => {
                    leases.release_all().await;
                    return Err(e);
                }
            }
        }
        Ok(leases)
    }

    /// Renews every lease once; returns a line per lease found lost (and remembers it).
    pub async fn renew_all(&self) -> Vec<String> {
        let mut lost = Vec::new();
        for lease in &self.held {
            match lease.renew().await {
                Ok(true) => {}
                Ok(false) => {
                    if self.lost.lock().unwrap().insert(lease.place()) {
                        lost.push(format!("another dbsweep run took over the lease on {}", lease.place()));
                    }
                }
                // A failed renewal is retried next time; only a record that changed hands is lost.
                Err(e) => tracing::warn!("renewing the lease on {}: {e}", lease.place()),
            }
        }
        lost
    }

    /// Renews every lease each [`RENEW_EVERY`] until the task is aborted; `on_lost` hears of
    /// each lease another run took over.
    pub fn keep_renewed(self: &Arc<Self>, on_lost: impl Fn(String) + Send + 'static) -> tokio::task::JoinHandle<()> {
        let leases = self.clone();
        tokio::spawn(async move {
            if leases.held.is_empty() {
                return;
            }
            loop {
                tokio::time::sleep(RENEW_EVERY).await;
                for lost in leases.renew_all().await {
                    on_lost(lost);
                }
            }
        })
    }

    /// Whether this run may still clean up `target` (its lease, if any, was not lost).
    pub fn still_ours(&self, target: &Arc<dyn Target>) -> bool {
        let lost = self.lost.lock().unwrap();
        lost.is_empty() || target.clone().lease().is_none_or(|store| !lost.contains(&store.place()))
    }

    /// Removes every record still ours.
    pub async fn release_all(&self) {
        for lease in &self.held {
            if let Err(e) = lease.release().await {
                tracing::warn!("releasing the lease on {}: {e}", lease.place());
            }
        }
    }
}

/// The lease of an embedded engine's user-given file: an exclusive `flock` on
/// `<file>.dbsweep-lock`, held for as long as this value lives, with the holder's record
/// inside so a refused run can name it. The kernel drops the lock when the holder dies, so
/// a lock file with a record but no lock is a run that is gone. Dropping it removes the
/// lock file.
pub struct FileLease {
    file: std::fs::File,
    path: PathBuf,
    /// Set when a gone run's lock file was taken over.
    pub took_over: Option<String>,
}

impl FileLease {
    /// Locks `db_file` for `me`, or refuses (`Error::InUse`) naming the live holder.
    pub fn acquire(target: &str, db_file: &Path, me: &Holder) -> Result<FileLease> {
        use std::io::{Read, Seek, Write};
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let mut path = db_file.as_os_str().to_owned();
        path.push(".dbsweep-lock");
        let path = PathBuf::from(path);
        let io = |what: &str, e: std::io::Error| Error::usage(format!("target '{target}': cannot {what} {}: {e}", path.display()));
        loop {
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .map_err(|e| io("create the lock file", e))?;
            let mut stored = String::new();
            // SAFETY: flock on a descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::EWOULDBLOCK) {
                    return Err(io("lock", e));
                }
                let _ = file.read_to_string(&mut stored);
                let holder = Holder::decode(stored.trim()).map_or_else(|| "another dbsweep run".to_string(), |h| h.describe(unix_now()));
                return Err(Error::in_use(
                    target,
                    format!(
                        "{} is in use by {holder} (it holds {}); wait for it to finish, or use another file",
                        db_file.display(),
                        path.display()
                    ),
                ));
            }
            // The previous holder may have removed the file between our open and our lock:
            // then we locked an orphan; start over on the path's current file.
            let same =
                std::fs::metadata(&path).ok().zip(file.metadata().ok()).is_some_and(|(p, f)| p.ino() == f.ino() && p.dev() == f.dev());
            if !same {
                continue;
            }
            file.read_to_string(&mut stored).map_err(|e| io("read", e))?;
            let took_over = Holder::decode(stored.trim())
                .map(|h| format!("took over {} from {}: its lock was free, so that run is gone", path.display(), h.describe(unix_now())));
            file.set_len(0).map_err(|e| io("write", e))?;
            file.rewind().map_err(|e| io("write", e))?;
            file.write_all(me.encode().as_bytes()).map_err(|e| io("write", e))?;
            return Ok(FileLease { file, path, took_over });
        }
    }
}

impl Drop for FileLease {
    fn drop(&mut self) {
        // Removed while still locked, so no other run can have taken this file meanwhile.
        let _ = std::fs::remove_file(&self.path);
        let _ = &self.file;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record store in memory with a real compare-and-swap.
    #[derive(Default)]
    struct Memory(Mutex<Option<String>>);

    #[async_trait]
    impl LeaseStore for Memory {
        fn place(&self) -> String {
            "the test store".into()
        }
        fn alternatives(&self) -> String {
            "use another store".into()
        }
        async fn read(&self) -> Result<Option<String>> {
            Ok(self.0.lock().unwrap().clone())
        }
        async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
            let mut stored = self.0.lock().unwrap();
            if stored.as_deref() != current {
                return Ok(false);
            }
            *stored = next.map(str::to_string);
            Ok(true)
        }
    }

    fn other_run(pid: u32, renewed_ago: u64) -> Holder {
        let now = unix_now();
        Holder { run: "0123456789ab".into(), host: this_host(), pid, started: now - renewed_ago - 5, renewed: now - renewed_ago }
    }

    #[test]
    fn namespaces_never_nest_in_each_other() {
        assert_eq!(Namespace::default().name(), "dbsweep");
        assert_eq!(Namespace::new(None).unwrap().key_prefix(), "dbsweep:");
        let alice = Namespace::new(Some("alice_2")).unwrap();
        assert_eq!(alice.name(), "dbsweep_alice_2");
        assert_eq!(alice.key_prefix(), "dbsweep_alice_2:");
        assert!(!alice.key_prefix().starts_with(&Namespace::default().key_prefix()));
        for bad in ["", "Alice", "a-b", "a:b", &"x".repeat(33)] {
            let err = Namespace::new(Some(bad)).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
        }
    }

    #[tokio::test]
    async fn a_live_holder_is_refused_by_name_and_its_record_kept() {
        let store = Arc::new(Memory::default());
        let first = Holder::this_process();
        let Acquired::Taken { lease, took_over: None } = acquire("a", store.clone(), &first).await.unwrap() else { panic!("first run") };
        let second = Holder { run: "fedcba987654".into(), ..Holder::this_process() };
        let err = acquire("b", store.clone(), &second).await.err().expect("second run refused");
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(text.contains(&first.run) && text.contains(&format!("pid {}", first.pid)), "{text}");
        assert!(text.contains("wait for it to finish, or use another store"), "{text}");
        assert!(matches!(acquire("a2", store.clone(), &first).await.unwrap(), Acquired::AlreadyOurs));
        // Renewal keeps it; release frees it for the second run.
        assert!(lease.renew().await.unwrap());
        lease.release().await.unwrap();
        assert_eq!(store.read().await.unwrap(), None);
        assert!(matches!(acquire("b", store, &second).await.unwrap(), Acquired::Taken { took_over: None, .. }));
    }

    #[tokio::test]
    async fn a_gone_holder_is_taken_over_and_said_so() {
        // A dead pid on this host is gone at once; a silent holder after STALE_AFTER.
        let dead = {
            let mut child = std::process::Command::new("true").spawn().unwrap();
            let pid = child.id();
            child.wait().unwrap();
            pid
        };
        for gone in [other_run(dead, 0), other_run(std::process::id(), STALE_AFTER.as_secs() + 5)] {
            let store = Arc::new(Memory(Mutex::new(Some(gone.encode()))));
            let me = Holder::this_process();
            let Acquired::Taken { lease, took_over: Some(note) } = acquire("t", store.clone(), &me).await.unwrap() else {
                panic!("not taken over")
            };
            assert!(note.contains(&gone.run) && note.contains("took over"), "{note}");
            assert_eq!(Holder::decode(&store.read().await.unwrap().unwrap()).unwrap().run, me.run);
            // The gone run's later renewal finds the lease lost.
            let old = Lease { store: store.clone(), record: tokio::sync::Mutex::new(gone.encode()) };
            assert!(!old.renew().await.unwrap());
            old.release().await.unwrap();
            assert!(lease.renew().await.unwrap(), "the old holder's release removed nothing of ours");
        }
        // A live, recently renewed holder on this host is not gone.
        let live = other_run(std::process::id(), 1);
        assert!(live.gone(unix_now(), &this_host()).is_none());
    }

    #[tokio::test]
    async fn a_record_dbsweep_did_not_write_is_not_owned() {
        let store = Arc::new(Memory(Mutex::new(Some("somebody's value".into()))));
        let err = acquire("t", store.clone(), &Holder::this_process()).await.err().unwrap();
        assert!(matches!(err, Error::NotOwned { .. }), "{err:?}");
        assert_eq!(store.read().await.unwrap().as_deref(), Some("somebody's value"));
    }

    #[test]
    fn a_file_is_leased_to_one_run_at_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("x.sqlite");
        let lock = dir.path().join("x.sqlite.dbsweep-lock");
        let first = Holder::this_process();
        let held = FileLease::acquire("a", &db, &first).unwrap();
        assert!(held.took_over.is_none());
        let err = FileLease::acquire("b", &db, &Holder::this_process()).err().expect("refused while locked");
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains(&first.run), "{err}");
        drop(held);
        assert!(!lock.exists(), "the lock file is removed with the lease");
        // A lock file left by a run that died (record, but no lock) is taken over.
        let dead = Holder { run: "deadbeef0000".into(), ..Holder::this_process() };
        std::fs::write(&lock, dead.encode()).unwrap();
        let again = FileLease::acquire("c", &db, &Holder::this_process()).unwrap();
        assert!(again.took_over.as_deref().is_some_and(|n| n.contains("deadbeef0000")), "{:?}", again.took_over);
    }
}
