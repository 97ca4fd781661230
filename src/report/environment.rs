//! Facts about the machine and time, recorded in every report.
//!
//! Owns reading /proc and /etc for hardware and OS facts and formatting timestamps. Must
//! not fail: an unknown fact is recorded as "unknown".

use super::model::Environment;
use crate::base::table::Date;
use std::time::{SystemTime, UNIX_EPOCH};

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// This machine's host name.
pub fn hostname() -> String {
    read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".into())
}

pub fn probe() -> Environment {
    let os = read("/etc/os-release")
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string())))
        .unwrap_or_else(|| std::env::consts::OS.to_string());
    let cpu_model = read("/proc/cpuinfo")
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())))
        .unwrap_or_else(|| "unknown".into());
    let memory_bytes = read("/proc/meminfo")
        .and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("MemTotal:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    Environment {
        hostname: hostname(),
        os,
        kernel: read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into()),
        cpu_model,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes,
    }
}

/// The current UTC time as RFC 3339 (`2026-11-22T02:08:01Z`).
pub fn now_rfc3339() -> String {
    rfc3339(SystemTime::now())
}

pub fn rfc3339(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = (secs / 86_400) as i32;
    let rem = secs % 86_400;
    format!("{}T{:02}:{:02}:{:02}Z", Date(days).to_iso(), rem / 3600, rem % 3600 / 60, rem % 60)
}

/// A compact UTC stamp for directory names (`20261122-020801`).
pub fn stamp(t: SystemTime) -> String {
    rfc3339(t).replace(['-', ':'], "").replace('T', "-").trim_end_matches('Z').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_format_in_utc() {
        let t = UNIX_EPOCH + Duration::from_secs(1_795_313_281);
        assert_eq!(rfc3339(t), "2026-11-22T02:08:01Z");
        assert_eq!(stamp(t), "20261122-020801");
    }

    #[test]
    fn probe_finds_cores_and_memory() {
        let env = probe();
        assert!(env.cores >= 1);
        assert!(env.memory_bytes > 0);
    }
}
