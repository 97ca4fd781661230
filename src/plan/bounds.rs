//! Every numeric input against what this machine can hold and do, checked before a run
//! starts or a file is written: memory for what dbsweep itself holds (the ops of a batched
//! request or of a sized insert, the keys it shuffles, its count of rows per group), and a
//! time horizon for what it would do (ops and loaded rows at the fastest any system goes
//! here, fixed rates whose period the clock cannot resolve or no run outlasts, timeouts).
//!
//! Owns the costs, the limits and their one-line messages; reads `/proc/meminfo`, the core
//! count and the clock's resolution. Must not change the plan or estimate real durations
//! (that is `estimate`).

use super::Plan;
use crate::base::op::Op;
use crate::base::span::number;
use crate::base::table::Value;
use crate::data::DataSpec;
use crate::error::{Error, Result};
use crate::workload::experiment::Experiment;

/// The longest a plan may take: a week. No study dbsweep plans runs this long; `--budget`
/// fits a long one into a given time.
pub const HORIZON_SECS: f64 = 7.0 * 86_400.0;
/// Ops (or loaded rows) a second per core that no system reaches here, the NO-DB ceiling
/// included (10 ns each: less than dbsweep spends making and timing an op).
const FASTEST_OPS_PER_CORE_SEC: f64 = 1e8;
/// Bytes a second per core that no load writes here: a core's memory bandwidth.
const FASTEST_BYTES_PER_CORE_SEC: f64 = 1e10;
/// The shortest duration flag (`--duration`, `--max-time`, `--budget`): a run has to connect its
/// clients and send at least an op.
pub const MIN_DURATION_SECS: f64 = 0.001;

/// What this machine can hold and do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Machine {
    /// Memory available to a new process (`MemAvailable`), in bytes.
    pub available_bytes: u64,
    pub cores: usize,
    /// The resolution of the monotonic clock that paces fixed-rate runs, in seconds.
    pub timer_resolution_secs: f64,
}

impl Machine {
    /// This machine, as the kernel reports it. Without `/proc/meminfo` the bound on memory is
    /// the address space.
    pub fn here() -> Machine {
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let kib = |field: &str| {
            meminfo.lines().find_map(|l| l.strip_prefix(field)?.split_whitespace().next()?.parse::<u64>().ok()).map(|k| k * 1024)
        };
        let available_bytes = kib("MemAvailable:").or_else(|| kib("MemTotal:")).unwrap_or(isize::MAX as u64);
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let mut res = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: clock_getres writes one timespec into `res`.
        let got = unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC, &mut res) };
        let timer_resolution_secs = match got {
            0 => (res.tv_sec as f64 + res.tv_nsec as f64 * 1e-9).max(1e-9),
            _ => 1e-9,
        };
        Machine { available_bytes, cores, timer_resolution_secs }
    }

    /// Ops a second that no system reaches on these cores.
    fn fastest_ops_per_sec(&self) -> f64 {
        self.cores.max(1) as f64 * FASTEST_OPS_PER_CORE_SEC
    }

    /// Bytes a second that no load writes on these cores.
    fn fastest_bytes_per_sec(&self) -> f64 {
        self.cores.max(1) as f64 * FASTEST_BYTES_PER_CORE_SEC
    }

    /// The most ops (or rows) anything here does within the horizon.
    fn horizon_ops(&self) -> u64 {
        (self.fastest_ops_per_sec() * HORIZON_SECS) as u64
    }

    /// "22.9 GB of memory available here".
    fn memory_words(&self) -> String {
        format!("the {} of memory available here", bytes(self.available_bytes as f64))
    }

    /// "200 M ops/s, the fastest any system goes on these 2 cores".
    fn speed_words(&self) -> String {
        format!("{}/s, the fastest any system goes on {} core{}", count(self.fastest_ops_per_sec()), self.cores, plural(self.cores))
    }
}

/// `n` bytes in decimal units ("1.5 GB").
fn bytes(n: f64) -> String {
    scaled(n, &["bytes", "kB", "MB", "GB", "TB", "PB", "EB", "ZB"])
}

/// `n` things in decimal units ("200 M").
fn count(n: f64) -> String {
    scaled(n, &["", "k", "M", "G", "T", "P", "E", "Z"])
}

fn scaled(n: f64, units: &[&str]) -> String {
    let mut value = n;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < units.len() {
        value /= 1000.0;
        unit += 1;
    }
    let text = if value >= 100.0 || unit == 0 { format!("{value:.0}") } else { format!("{value:.1}") };
    let text = text.strip_suffix(".0").unwrap_or(&text);
    format!("{text} {}", units[unit]).trim_end().to_string()
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Bytes one row of `data` takes in memory: its values and their text (a YCSB record also
/// its table's definition of each field: a column and its name).
fn row_bytes(data: &DataSpec) -> u64 {
    let value = std::mem::size_of::<Value>() as u64;
    match data {
        DataSpec::Kv { payload_bytes, .. } => 3 * value + *payload_bytes as u64,
        DataSpec::Pairs { value_bytes, .. } => 2 * value + *value_bytes as u64,
        DataSpec::Ycsb { fieldcount, fieldlength, .. } => {
            let per_field = value + std::mem::size_of::<crate::base::table::Column>() as u64 + 16;
            (*fieldcount as u64).saturating_add(1).saturating_mul(per_field.saturating_add(*fieldlength as u64))
        }
        // A lineitem row, the widest: 16 values, about 130 bytes of text.
        DataSpec::Tpch { .. } => 16 * value + 130,
        // An account row: four values and its 84-byte filler.
        DataSpec::Pgbench { .. } => 4 * value + 84,
    }
}

/// Bytes one op of `data` holds in memory while it waits in a request: the op and a row
/// (an insert's; a lookup holds less).
fn op_bytes(data: &DataSpec) -> u64 {
    (std::mem::size_of::<Op>() as u64).saturating_add(row_bytes(data))
}

/// Bytes dbsweep keeps per preloaded row of `data` for as long as the run lasts: shuffled
/// keys (8 bytes each), the kv table's row count per group (8 bytes per 10 rows).
fn held_bytes_per_row(data: &DataSpec) -> f64 {
    match data {
        DataSpec::Kv { .. } => 0.8,
        DataSpec::Pairs { keys: crate::data::pairs::KeyOrder::Shuffled, .. } => 8.0,
        _ => 0.0,
    }
}

/// The plan's numbers against this machine (see the module doc). Checked before anything
/// is built from the plan.
pub fn check_plan(plan: &Plan, machine: &Machine) -> Result<()> {
    check_rows(plan, machine)?;
    check_memory_per_request(plan, machine)?;
    check_rates(plan, machine)?;
    check_time(plan, machine)
}

/// Preloaded rows: what dbsweep holds for them fits in memory, and loading them fits the
/// horizon.
fn check_rows(plan: &Plan, machine: &Machine) -> Result<()> {
    let rows = match &plan.data {
        DataSpec::Kv { rows, .. } | DataSpec::Pairs { rows, .. } => vec![*rows],
        DataSpec::Ycsb { recordcount, .. } => recordcount.to_vec(),
        DataSpec::Tpch { .. } | DataSpec::Pgbench { .. } => return Ok(()),
    };
    let per_row = held_bytes_per_row(&plan.data);
    for n in rows {
        let held = n as f64 * per_row;
        if held > machine.available_bytes as f64 {
            let most = (machine.available_bytes as f64 / per_row) as u64;
            return Err(Error::usage(format!(
                "--rows {n}: dbsweep keeps {per_row} bytes per row here, {}, more than {}; use --rows {most} or fewer",
                bytes(held),
                machine.memory_words()
            )));
        }
        let row = row_bytes(&plan.data) as f64;
        let load_secs = (n as f64 / machine.fastest_ops_per_sec()).max(n as f64 * row / machine.fastest_bytes_per_sec());
        if load_secs > HORIZON_SECS {
            let most = (machine.horizon_ops() as f64).min(HORIZON_SECS * machine.fastest_bytes_per_sec() / row) as u64;
            return Err(Error::usage(format!(
                "--rows {n}: loading {n} rows of about {row} bytes takes more than a week even at {} and {}/s; use --rows {most} or fewer",
                machine.speed_words(),
                bytes(machine.fastest_bytes_per_sec())
            )));
        }
    }
    Ok(())
}

/// The ops one request holds at once (a client's batch, or a sized insert's N keys in one
/// request, with its shuffled keys), for every client of a point at once, fit in memory.
fn check_memory_per_request(plan: &Plan, machine: &Machine) -> Result<()> {
    let per_op = op_bytes(&plan.data);
    let clients = plan.experiments.iter().flat_map(|e| e.points.iter().map(|p| p.clients)).max().unwrap_or(1).max(1);
    if let DataSpec::Ycsb { fieldcount, fieldlength, .. } = &plan.data
        && per_op as f64 * clients as f64 > machine.available_bytes as f64
    {
        return Err(Error::usage(format!(
            "a record of {fieldcount} fields of {fieldlength} bytes, one for each of {clients} client{}, needs {}, more than {}; lower fieldlength or fieldcount",
            plural(clients),
            bytes(per_op as f64 * clients as f64),
            machine.memory_words()
        )));
    }
    for e in &plan.experiments {
        for p in &e.points {
            let (flag, value, held_ops, per) = if e.sized || e.lifecycle {
                let n = e.ops_at(p);
                ("--sizes", n, n, per_op + 8)
            } else {
                (if p.batch > 1 { "--batch" } else { "--clients" }, p.batch as u64, p.batch as u64, per_op)
            };
            let clients = p.clients.max(1) as f64;
            let need = held_ops as f64 * per as f64 * clients;
            if need > machine.available_bytes as f64 {
                let most = (machine.available_bytes as f64 / (per as f64 * clients)).floor() as u64;
                return Err(Error::usage(format!(
                    "{flag} {value}: {} client{} holding {held_ops} ops of about {per} bytes need {}, more than {}; use {flag} {most} or less",
                    p.clients,
                    plural(p.clients),
                    bytes(need),
                    machine.memory_words()
                )));
            }
        }
    }
    Ok(())
}

/// A YCSB record (its columns and their text) fits in memory, one at least.
pub fn check_record(data: &DataSpec, machine: &Machine) -> Result<()> {
    let DataSpec::Ycsb { fieldcount, fieldlength, .. } = data else { return Ok(()) };
    let need = op_bytes(data);
    if need > machine.available_bytes {
        return Err(Error::usage(format!(
            "a record of {fieldcount} fields of {fieldlength} bytes needs {}, more than {}; lower fieldlength or fieldcount",
            bytes(need as f64),
            machine.memory_words()
        )));
    }
    Ok(())
}

/// Fixed rates: a period the clock resolves, and runs that end within the horizon (a
/// time-based run: a period shorter than the run).
fn check_rates(plan: &Plan, machine: &Machine) -> Result<()> {
    let fastest = (1.0 / machine.timer_resolution_secs).round();
    for rate in &plan.rates {
        let r = rate.ops_per_sec();
        if r > fastest {
            return Err(Error::usage(format!(
                "--rate {}: one op every {} s is below the clock's resolution ({} s); use --rate {} or less",
                number(r),
                number(1.0 / r),
                number(machine.timer_resolution_secs),
                number(fastest)
            )));
        }
    }
    for e in &plan.experiments {
        for p in &e.points {
            let Some(rate) = p.rate else { continue };
            let r = rate.ops_per_sec();
            match e.duration_secs {
                Some(secs) if 1.0 / r > secs => {
                    return Err(Error::usage(format!(
                        "--rate {}: one op every {} s is longer than the {} s each run lasts; use --rate {} or more",
                        number(r),
                        number(1.0 / r),
                        number(secs),
                        number(1.0 / secs)
                    )));
                }
                Some(_) => {}
                None if e.ops_at(p) as f64 / r > HORIZON_SECS => {
                    return Err(Error::usage(format!(
                        "--rate {}: a run of {} ops at that rate lasts more than a week; use --rate {} or more",
                        number(r),
                        e.ops_at(p),
                        (e.ops_at(p) as f64 / HORIZON_SECS).ceil()
                    )));
                }
                None => {}
            }
        }
    }
    Ok(())
}

/// The shortest the whole plan could take (every run at the fastest any system goes here,
/// or at its fixed rate, or its duration; every target) fits the horizon.
fn check_time(plan: &Plan, machine: &Machine) -> Result<()> {
    let targets = plan.target_names().len().max(1) as f64;
    let fastest = machine.fastest_ops_per_sec();
    let mut runs_total = 0.0;
    let mut secs = 0.0;
    for e in &plan.experiments {
        let runs = f64::from(e.runs) + f64::from(e.warmup);
        for p in &e.points {
            let ops = e.ops_at(p);
            if e.duration_secs.is_none() && ops > machine.horizon_ops() {
                let flag = if e.sized || e.lifecycle { "--sizes" } else { "--ops" };
                return Err(Error::usage(format!(
                    "{flag} {ops}: one run of {ops} ops takes more than a week even at {}; use {flag} {} or less",
                    machine.speed_words(),
                    machine.horizon_ops()
                )));
            }
            runs_total += runs * targets;
            secs += runs * targets * run_secs(e, p, fastest);
        }
    }
    if secs > HORIZON_SECS {
        return Err(Error::usage(format!(
            "the plan's {} runs take more than a week even at {}: lower --ops, --runs, --duration or the points (--clients, --batch, --sizes), or split it with --shard",
            count(runs_total),
            machine.speed_words()
        )));
    }
    Ok(())
}

/// The shortest one run of `e` at `p` could last.
fn run_secs(e: &Experiment, p: &crate::workload::experiment::Point, fastest: f64) -> f64 {
    match e.duration_secs {
        Some(secs) => secs,
        None => {
            let ops = e.ops_at(p) as f64;
            let paced = p.rate.map_or(0.0, |r| ops / r.ops_per_sec());
            (ops / fastest).max(paced).max(e.min_run_secs.unwrap_or(0.0))
        }
    }
}

/// `dbsweep gen keys N`: the shuffled keys and their CSV text fit in memory.
pub fn check_keys(n: u64, value_bytes: Option<usize>, machine: &Machine) -> Result<()> {
    // A key (8 bytes) and its line: up to 20 digits, a comma, the value, a newline.
    let per_key = 8.0 + 22.0 + value_bytes.unwrap_or(20) as f64;
    let need = n as f64 * per_key;
    if need > machine.available_bytes as f64 {
        let most = (machine.available_bytes as f64 / per_key) as u64;
        return Err(Error::usage(format!(
            "gen keys {n}: {n} keys of about {per_key} bytes need {}, more than {}; use at most {most} keys",
            bytes(need),
            machine.memory_words()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, resolve};

    /// A small machine: 1 GB available, 2 cores, a 1 ns clock.
    const SMALL: Machine = Machine { available_bytes: 1_000_000_000, cores: 2, timer_resolution_secs: 1e-9 };

    fn refusal(opts: RunOptions) -> String {
        let plan = resolve::resolve_with(&opts, &SMALL);
        plan.err().map(|e| e.to_string()).unwrap_or_else(|| panic!("accepted: {opts:?}"))
    }

    #[test]
    fn units_read_as_words() {
        assert_eq!(bytes(999.0), "999 bytes");
        assert_eq!(bytes(1_500_000_000.0), "1.5 GB");
        assert_eq!(bytes(8.8e15), "8.8 PB");
        assert_eq!(count(2e8), "200 M");
        assert_eq!(count(12.0), "12");
    }

    #[test]
    fn the_machine_here_has_memory_cores_and_a_clock() {
        let here = Machine::here();
        assert!(here.available_bytes > 1 << 20 && here.cores >= 1, "{here:?}");
        assert!(here.timer_resolution_secs > 0.0 && here.timer_resolution_secs < 0.01, "{here:?}");
    }

    #[test]
    fn rows_are_bounded_by_memory_and_by_a_week_of_loading() {
        // kv: 0.8 bytes per row held; 1 GB holds 1.25 G rows.
        let e = refusal(RunOptions { rows: Some(vec![99_999_999_999_999]), ..Default::default() });
        assert_eq!(
            e,
            "--rows 99999999999999: dbsweep keeps 0.8 bytes per row here, 80 TB, more than the 1 GB of memory available here; use --rows 1250000000 or fewer"
        );
        let e = refusal(RunOptions {
            study: Some("ycsb".into()),
            ycsb_properties: vec!["recordcount=99999999999999".into()],
            ..Default::default()
        });
        // YCSB keeps nothing per record: a week of loading at 2 x 10 GB/s is the bound.
        let row = row_bytes(&DataSpec::Ycsb {
            recordcount: crate::data::RecordCounts::One(1),
            fieldcount: 10,
            fieldlength: 100,
            fieldlengthdistribution: Default::default(),
            minfieldlength: 1,
            insertorder: "hashed".into(),
        });
        assert!(
            e.starts_with(&format!("--rows 99999999999999: loading 99999999999999 rows of about {row} bytes takes more than a week")),
            "{e}"
        );
        assert!(e.ends_with(&format!("use --rows {} or fewer", (HORIZON_SECS * 2e10 / row as f64) as u64)), "{e}");
        resolve::resolve_with(&RunOptions { rows: Some(vec![1_000_000_000]), ..Default::default() }, &SMALL).unwrap();
    }

    #[test]
    fn a_batch_and_a_sized_insert_must_fit_in_memory() {
        let e = refusal(RunOptions { batch: Some(vec![99_999_999_999]), ..Default::default() });
        let per = op_bytes(&DataSpec::Kv { rows: 1, payload_bytes: 100 });
        assert!(e.starts_with(&format!("--batch 99999999999: 1 client holding 99999999999 ops of about {per} bytes need")), "{e}");
        assert!(e.ends_with(&format!("use --batch {} or less", 1_000_000_000 / per)), "{e}");
        let e = refusal(RunOptions { study: Some("insert-find".into()), sizes: Some("99999999999999".into()), ..Default::default() });
        assert!(e.starts_with("--sizes 99999999999999: 1 client holding 99999999999999 ops"), "{e}");
        assert!(e.contains("more than the 1 GB of memory available here"), "{e}");
    }

    #[test]
    fn rates_have_a_period_the_clock_resolves_and_runs_end_within_a_week() {
        let rate = |r: f64| RunOptions { rate: Some(vec![r]), ..Default::default() };
        let e = refusal(rate(1e300));
        assert!(e.starts_with("--rate 1e300: one op every 1e-300 s is below the clock's resolution (1e-9 s)"), "{e}");
        assert!(e.ends_with("use --rate 1000000000 or less"), "{e}");
        let e = refusal(rate(1e-300));
        assert!(e.contains("lasts more than a week; use --rate"), "{e}");
        let timed = RunOptions { rate: Some(vec![0.5]), duration: Some("1s".into()), ..Default::default() };
        let e = refusal(timed);
        assert!(e.starts_with("--rate 0.5: one op every 2 s is longer than the 1 s each run lasts; use --rate 1 or more"), "{e}");
        resolve::resolve_with(&rate(1e9), &SMALL).unwrap();
    }

    #[test]
    fn ops_are_bounded_by_a_week_at_the_fastest_rate_per_run_and_per_plan() {
        let e = refusal(RunOptions { ops: Some(99_999_999_999_999_999), ..Default::default() });
        assert!(e.starts_with("--ops 99999999999999999: one run of 99999999999999999 ops takes more than a week even at 200 M/s"), "{e}");
        // Within a run's bound, but the plan's runs together are not.
        let e = refusal(RunOptions { ops: Some(100_000_000_000_000), ..Default::default() });
        assert!(e.starts_with("the plan's ") && e.contains("runs take more than a week"), "{e}");
        let e = refusal(RunOptions { runs: Some(u32::MAX), duration: Some("1s".into()), ..Default::default() });
        assert!(e.contains("runs take more than a week"), "{e}");
    }

    #[test]
    fn generated_keys_must_fit_in_memory() {
        let e = check_keys(99_999_999_999_999_999, None, &SMALL).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("more than the 1 GB of memory available here; use at most 20000000 keys"), "{e}");
        check_keys(1000, Some(100), &SMALL).unwrap();
    }
}
