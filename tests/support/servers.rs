//! Servers started by dbsweep's own spawn code (the same code `--spawn` uses) for the
//! tests: one server per kind per test file, shared by that file's tests, killed and
//! removed when the test binary exits. Keyed by the calling file so that files merged
//! into one test binary keep the servers they had as binaries of their own: a file that
//! pauses its Redis (SIGSTOP) or locks its own tests out of one namespace never reaches
//! another file's server. `spawn` starts a server of the test's own instead, for a test
//! that stops, breaks or reconfigures it.

use dbsweep::servers::{self, Server, ServerKind, SpawnOptions};
use std::sync::{Arc, Mutex, Once};

/// A test file's server of one kind, started on first use.
type Slot = Arc<Mutex<Option<Server>>>;

static SLOTS: Mutex<Vec<((&'static str, ServerKind), Slot)>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

extern "C" fn stop_all() {
    let slots = std::mem::take(&mut *SLOTS.lock().unwrap_or_else(|e| e.into_inner()));
    for (_, slot) in slots {
        drop(slot.lock().unwrap_or_else(|e| e.into_inner()).take());
    }
}

/// The slot of `file`'s server of `kind`. The list is locked only to find or add the
/// slot: one file's slow start (Cassandra takes minutes) does not hold up another's.
fn slot(file: &'static str, kind: ServerKind) -> Slot {
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain function to run at process exit.
        unsafe {
            libc::atexit(stop_all);
        }
    });
    let mut slots = SLOTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, slot)) = slots.iter().find(|(key, _)| *key == (file, kind)) {
        return slot.clone();
    }
    let slot = Slot::default();
    slots.push(((file, kind), slot.clone()));
    slot
}

/// Runs `with` on the calling file's server of `kind`, starting it first if needed.
#[track_caller]
fn with_server<T>(kind: ServerKind, with: impl FnOnce(&Server) -> T) -> T {
    let slot = slot(std::panic::Location::caller().file(), kind);
    let mut server = slot.lock().unwrap_or_else(|e| e.into_inner());
    if server.is_none() {
        // Spawn on a runtime of our own: test runtimes end with their test, the server must not.
        let spawned = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
            rt.block_on(servers::spawn(kind, &SpawnOptions::default()))
        })
        .join()
        .expect("spawn thread")
        .unwrap_or_else(|e| panic!("could not start {kind}: {e} (run scripts/setup-servers)"));
        *server = Some(spawned);
    }
    with(server.as_ref().expect("started above"))
}

/// The URL of the calling test file's server of `kind`, starting it on first use.
#[track_caller]
pub fn url(kind: ServerKind) -> String {
    with_server(kind, Server::url)
}

/// The calling test file's server of `kind` with its URL's scheme replaced by `scheme`
/// (a command-line client's, `redis-cli` or `mysql-cli`, on the same server).
#[track_caller]
pub fn url_as(kind: ServerKind, scheme: &str) -> String {
    let url = url(kind);
    format!("{scheme}://{}", url.split_once("://").expect("a spawned server's URL has a scheme").1)
}

/// The process id of the calling test file's server of `kind` (started on first use), e.g.
/// to pause it with SIGSTOP.
#[track_caller]
pub fn pid(kind: ServerKind) -> u32 {
    with_server(kind, Server::pid)
}

/// A server of `kind` of the calling test's own, with default options (stopped when
/// dropped).
pub async fn spawn(kind: ServerKind) -> Server {
    servers::spawn(kind, &SpawnOptions::default())
        .await
        .unwrap_or_else(|e| panic!("could not start {kind}: {e} (run scripts/setup-servers)"))
}
