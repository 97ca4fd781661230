//! Answering a stop request (Ctrl-C, SIGTERM) at once in every phase: what the run is doing right
//! now and what stopping it will still do (remove dbsweep's data from the targets that hold
//! some, kill the spawned servers), so the first Ctrl-C can say so and a second one can
//! abandon that cleanup; the helpers that let a phase end promptly (a future that resolves
//! when the stop flag is set, a row stream that dries up).
//!
//! Must not print or decide exit codes: `app` prints the message and maps the outcome.

use crate::base::table::RowSource;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often a waiting phase looks at the stop flag (the flag has no waker).
const POLL: Duration = Duration::from_millis(20);

/// What the run is doing and what a stop would still have to clean up; shared by the
/// runner (which updates it) and the signal watcher (which reads it).
#[derive(Debug, Clone, Default)]
pub struct Activity(Arc<Mutex<State>>);

#[derive(Debug, Default)]
struct State {
    /// The current step, e.g. "loading lineitem into postgres".
    doing: String,
    /// Targets that hold dbsweep's data which stopping removes.
    holding_data: Vec<String>,
    /// Spawned throwaway servers, killed with their directories when the run stops.
    servers: Vec<String>,
}

impl Activity {
    fn with<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// The step the run has begun.
    pub fn doing(&self, step: impl Into<String>) {
        let step = step.into();
        self.with(|s| s.doing = step);
    }

    /// `target` now holds dbsweep's data (prepared, maybe loaded).
    pub fn holds_data(&self, target: &str) {
        self.with(|s| {
            if !s.holding_data.iter().any(|t| t == target) {
                s.holding_data.push(target.to_string());
            }
        });
    }

    /// `target`'s data is gone (removed, or left in place on purpose).
    pub fn data_released(&self, target: &str) {
        self.with(|s| s.holding_data.retain(|t| t != target));
    }

    /// A spawned server is running (by its system's name).
    pub fn server_started(&self, server: &str) {
        let server = server.to_string();
        self.with(|s| s.servers.push(server));
    }

    /// What the first signal prints: what was interrupted, what stopping still does and
    /// that a second signal (`again`: how to send it) abandons it.
    pub fn stopping_message(&self, again: &str) -> String {
        self.with(|s| {
            let was = if s.doing.is_empty() { String::new() } else { format!(" (was {})", s.doing) };
            let mut steps = Vec::new();
            if !s.holding_data.is_empty() {
                steps.push(format!("removing dbsweep's data from {}", s.holding_data.join(", ")));
            }
            if !s.servers.is_empty() {
                steps.push(format!("killing the spawned servers ({}) and removing their directories", s.servers.join(", ")));
            }
            match steps.is_empty() {
                true => format!("stopping{was}: saving what was measured"),
                false => format!("stopping{was}: {}; {again} to abandon it", steps.join(", then ")),
            }
        })
    }

    /// What the second Ctrl-C leaves behind, for its message.
    pub fn abandoned_message(&self) -> String {
        self.with(|s| match s.holding_data.is_empty() {
            true => "cleanup abandoned; the spawned servers are killed".to_string(),
            false => format!(
                "cleanup abandoned: dbsweep's data is left in {} (still marked as dbsweep's: the next run on it removes it)",
                s.holding_data.join(", ")
            ),
        })
    }
}

/// Resolves once `flag` is set.
pub async fn stopped(flag: &AtomicBool) {
    while !flag.load(Ordering::Relaxed) {
        tokio::time::sleep(POLL).await;
    }
}

/// `rows`, ending early once `flag` is set: a load (also one that blocks its thread)
/// then finishes with what it has.
pub fn until_stopped(rows: RowSource, flag: Arc<AtomicBool>) -> RowSource {
    Box::new(rows.take_while(move |_| !flag.load(Ordering::Relaxed)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_step_the_data_and_the_servers() {
        let a = Activity::default();
        assert_eq!(a.stopping_message("press Ctrl-C again"), "stopping: saving what was measured");
        a.doing("loading kv into pg");
        a.holds_data("pg");
        a.holds_data("redis");
        a.holds_data("pg");
        a.server_started("mariadb");
        assert_eq!(
            a.stopping_message("press Ctrl-C again"),
            "stopping (was loading kv into pg): removing dbsweep's data from pg, redis, then killing the spawned servers \
             (mariadb) and removing their directories; press Ctrl-C again to abandon it"
        );
        a.data_released("pg");
        assert_eq!(
            a.abandoned_message(),
            "cleanup abandoned: dbsweep's data is left in redis (still marked as dbsweep's: the next run on it removes it)"
        );
    }

    #[test]
    fn a_stopped_stream_dries_up() {
        let flag = Arc::new(AtomicBool::new(false));
        let rows: RowSource = Box::new((0..10).map(|k| vec![crate::base::table::Value::Int(k)]));
        let mut rows = until_stopped(rows, flag.clone());
        assert!(rows.next().is_some());
        flag.store(true, Ordering::Relaxed);
        assert!(rows.next().is_none());
    }

    #[tokio::test]
    async fn stopped_resolves_once_the_flag_is_set() {
        let flag = Arc::new(AtomicBool::new(false));
        let setter = flag.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            setter.store(true, Ordering::Relaxed);
        });
        tokio::time::timeout(Duration::from_secs(10), stopped(&flag)).await.expect("resolves");
    }
}
