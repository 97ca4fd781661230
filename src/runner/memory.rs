//! Memory readings for studies that measure memory: the engine's own figure, the
//! proportional set size of a spawned server's process group, and dbsweep's resident
//! memory, all read from /proc or the target between runs.
//!
//! Owns reading and summarizing memory. Must not run while ops are timed (the runner
//! calls it between runs) and must not read processes dbsweep did not start.

use crate::adapter::Target;
use crate::base::measurement::{MemoryMeasurement, MemoryReading, RunMeasurement};
use crate::report::model::MemorySummary;
use crate::stats::median;
use std::path::Path;

/// One reading of a target's memory. `server_pid` is the spawned server's process (and
/// process-group) id, when dbsweep started it.
pub async fn read(target: &dyn Target, server_pid: Option<u32>) -> (MemoryReading, Option<String>) {
    let engine = match target.engine_memory().await {
        Ok(m) => m,
        Err(e) => {
            tracing::warn!("{}: engine memory unreadable: {e}", target.info().name);
            None
        }
    };
    let reading = MemoryReading {
        engine_bytes: engine.as_ref().map(|m| m.bytes),
        server_bytes: server_pid.and_then(group_pss),
        client_bytes: self_rss().unwrap_or(0),
    };
    (reading, engine.map(|m| m.source))
}

/// Pairs two readings into a run's measurement.
pub fn measurement(before: MemoryReading, after: MemoryReading, engine_source: Option<String>) -> MemoryMeasurement {
    MemoryMeasurement { engine_source, before, after }
}

/// Medians over the measured runs that carry memory readings.
pub fn summarize(measured: &[&RunMeasurement]) -> Option<MemorySummary> {
    let with: Vec<(&MemoryMeasurement, u64)> = measured.iter().filter_map(|r| r.memory.as_ref().map(|m| (m, r.rows))).collect();
    if with.is_empty() {
        return None;
    }
    let med = |values: Vec<f64>| (!values.is_empty()).then(|| median(&values));
    let range = |values: Vec<f64>| {
        (!values.is_empty()).then(|| [values.iter().copied().fold(f64::MAX, f64::min), values.iter().copied().fold(f64::MIN, f64::max)])
    };
    let engine: Vec<f64> = with.iter().filter_map(|(m, _)| m.engine_delta()).map(|d| d as f64).collect();
    let server: Vec<f64> = with.iter().filter_map(|(m, _)| m.server_delta()).map(|d| d as f64).collect();
    let client: Vec<f64> = with.iter().map(|(m, _)| m.client_delta() as f64).collect();
    let per_row = |delta: Option<i64>, rows: u64| delta.filter(|_| rows > 0).map(|d| d as f64 / rows as f64);
    Some(MemorySummary {
        engine_source: with.iter().find_map(|(m, _)| m.engine_source.clone()),
        engine_delta_bytes: med(engine.clone()),
        server_delta_bytes: med(server.clone()),
        client_delta_bytes: median(&client),
        engine_delta_range: range(engine),
        server_delta_range: range(server),
        client_delta_range: range(client),
        engine_bytes_per_row: med(with.iter().filter_map(|(m, rows)| per_row(m.engine_delta(), *rows)).collect()),
        server_bytes_per_row: med(with.iter().filter_map(|(m, rows)| per_row(m.server_delta(), *rows)).collect()),
        engine_after_bytes: med(with.iter().filter_map(|(m, _)| m.after.engine_bytes).map(|b| b as f64).collect()),
        server_after_bytes: med(with.iter().filter_map(|(m, _)| m.after.server_bytes).map(|b| b as f64).collect()),
    })
}

/// Resident memory of this process (`VmRSS` of /proc/self/status).
pub fn self_rss() -> Option<u64> {
    status_kib(Path::new("/proc/self/status"), "VmRSS:").map(|kib| kib * 1024)
}

/// Sum of the proportional set sizes of a spawned server's processes
/// (`server_processes::of_group`: its process group and the helpers it forked, PostgreSQL's
/// backends in their own sessions included). PSS counts shared pages once across them, so
/// shared buffers are not multiplied.
pub fn group_pss(pgid: u32) -> Option<u64> {
    let kib = super::server_processes::of_group(pgid)
        .iter()
        // A process may exit between the listing and the read: skip it.
        .filter_map(|p| status_kib(Path::new(&format!("/proc/{}/smaps_rollup", p.pid)), "Pss:"))
        .collect::<Vec<u64>>();
    (!kib.is_empty()).then(|| kib.iter().sum::<u64>() * 1024)
}

/// A `Key:   N kB` line of a /proc status-like file, in KiB.
fn status_kib(path: &Path, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|line| line.strip_prefix(key)).and_then(|rest| rest.split_whitespace().next()).and_then(|n| n.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_memory_is_readable_and_grows_with_an_allocation() {
        let before = self_rss().expect("VmRSS");
        assert!(before > 1 << 20, "a running test binary holds more than 1 MiB: {before}");
        let block = vec![1u8; 64 << 20];
        let after = self_rss().unwrap();
        assert!(after >= before + (48 << 20), "64 MiB touched, RSS {before} -> {after}");
        drop(block);
    }

    #[test]
    fn a_group_s_pss() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sleep").arg("30").process_group(0).spawn().unwrap();
        let pid = child.id();
        let pss = group_pss(pid).expect("the child's group is readable");
        assert!(pss > 0 && pss < 64 << 20, "sleep's PSS {pss}");
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(group_pss(pid), None, "no process left in the group");
    }

    #[test]
    fn summary_takes_medians_and_per_row_costs() {
        let run = |engine_after: u64, rows: u64| {
            let mut m = crate::stats::Recorder::default().into_measurement(0, false, 1.0, 0.0, true);
            m.rows = rows;
            m.memory = Some(measurement(
                MemoryReading { engine_bytes: Some(1000), server_bytes: Some(10_000), client_bytes: 500 },
                MemoryReading { engine_bytes: Some(engine_after), server_bytes: Some(20_000), client_bytes: 700 },
                Some("test".into()),
            ));
            m
        };
        let runs = [run(2000, 10), run(3000, 10), run(5000, 10)];
        let refs: Vec<&RunMeasurement> = runs.iter().collect();
        let s = summarize(&refs).unwrap();
        assert_eq!(s.engine_delta_bytes, Some(2000.0));
        assert_eq!(s.engine_bytes_per_row, Some(200.0));
        assert_eq!(s.server_delta_bytes, Some(10_000.0));
        assert_eq!(s.server_bytes_per_row, Some(1000.0));
        assert_eq!(s.client_delta_bytes, 200.0);
        assert_eq!((s.engine_delta_range, s.client_delta_range), (Some([1000.0, 4000.0]), Some([200.0, 200.0])));
        assert_eq!(s.engine_source.as_deref(), Some("test"));
    }
}
