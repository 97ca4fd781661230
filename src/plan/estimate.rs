//! How long a plan will take, before anything runs: each point's ops times a typical cost
//! per op of its system and op kind, plus loading the data, per target; and `--budget`,
//! which caps the runs so the whole plan fits a given time.
//!
//! The costs are rough figures for a 2-core machine (single-row requests, one client;
//! ranges grow with their width, analytic queries with the scale factor); a run's real
//! duration depends on the hardware and on what else the machine runs. Under `--precision`
//! the estimate is an upper bound: runs stop at their caps or sooner. Must not connect to
//! or start anything.

use super::{Plan, stopping};
use crate::base::op::OpKind;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::workload::experiment::{Experiment, OpStream, Point};

/// A run whose estimate exceeds this prints how to shorten it before it starts.
pub const LONG_RUN_SECS: f64 = 600.0;
/// The shortest run a `--budget` may leave: a precision estimate needs 20 windows of
/// several milliseconds, and a run has to connect its clients.
const MIN_RUN_SECS: f64 = 0.5;

/// The expected duration of a plan, per target.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// (target, seconds), in the plan's target order.
    pub per_target: Vec<(String, f64)>,
    /// Runs whose length the stopping rule caps (all targets), for `--budget`.
    pub capped_runs: u64,
    /// Seconds that no cap shortens: loading, and experiments that run all of their ops.
    pub uncapped_secs: f64,
}

impl Estimate {
    pub fn total(&self) -> f64 {
        self.per_target.iter().map(|(_, s)| s).sum()
    }
}

/// The system family of each target the plan will have (named as `Plan::target_names`).
fn families(plan: &Plan) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = plan.targets.iter().map(|t| (t.name.clone(), t.url.scheme().to_string())).collect();
    let names = plan.target_names();
    for (label, _) in plan.spawn_rounds().iter().filter(|_| !plan.spawn.is_empty()) {
        for kind in &plan.spawn {
            let clients = kind.client_target_name().filter(|_| plan.cli_clients);
            for name in kind.target_names().into_iter().chain(clients.clone()) {
                let family = if clients.as_deref() == Some(name.as_str()) { "cli".to_string() } else { kind.name().to_string() };
                let named = Plan::spawned_target_name(label.as_deref(), &name, |n| out.iter().any(|(t, _)| t == n));
                out.push((named, family));
            }
        }
    }
    out.retain(|(name, _)| names.contains(name));
    out
}

/// Typical service time of one single-row request (µs) of a system family, one client.
fn request_micros(family: &str) -> f64 {
    match family {
        "nodb" | "mock" => 1.0,
        "sqlite" => 20.0,
        "redb" => 40.0,
        "duckdb" | "monetdb" => 250.0,
        "redis" | "memcached" | "ledis" | "ledisdb" => 80.0,
        "postgres" | "hyper" | "h2" => 200.0,
        "mysql" | "mariadb" => 300.0,
        "cassandra" | "mongodb" | "ferretdb" => 600.0,
        "cli" | "mysql-cli" | "redis-cli" => 5000.0,
        _ => 300.0,
    }
}

/// Typical seconds of one TPC-H query at scale factor 1 (a scan of lineitem).
fn query_secs_at_sf1(family: &str) -> f64 {
    match family {
        "nodb" | "mock" => 0.0,
        "duckdb" | "monetdb" | "hyper" => 0.2,
        "redis" | "ledis" | "ledisdb" | "memcached" => 18.0,
        "mysql" | "mariadb" => 20.0,
        _ => 5.0,
    }
}

/// Typical µs to load one row.
fn load_micros(family: &str) -> f64 {
    match family {
        "nodb" | "mock" => 0.0,
        "sqlite" | "duckdb" | "monetdb" | "redb" | "hyper" => 5.0,
        "cassandra" | "mongodb" | "ferretdb" => 100.0,
        _ => 20.0,
    }
}

/// Seconds of one run of `experiment` at `point` on a system of `family`.
fn run_secs(family: &str, experiment: &Experiment, point: &Point, ops: u64, scale: f64) -> f64 {
    let request = request_micros(family);
    let per_op = match experiment.op.kind() {
        OpKind::Query => query_secs_at_sf1(family) * scale * 1e6,
        OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax | OpKind::Scan => {
            request * (1.0 + point.param.unwrap_or(1) as f64 / 20.0)
        }
        // A batch is one request: its ops share the round trip.
        _ if point.batched && point.batch > 1 => request * (0.1 + 1.0 / point.batch as f64),
        _ => request,
    };
    // Two cores: more clients overlap their waits, up to about twice the throughput.
    let parallel = (point.clients as f64).clamp(1.0, 2.0);
    ops as f64 * per_op / parallel / 1e6
}

/// Seconds of one run of `point` of `experiment` (whose op stream is `stream`) on a
/// system of `family` (a target URL's scheme or a spawned server's kind): its `--duration`,
/// or its ops at the family's typical cost (at least their time at a fixed rate); under
/// `--precision` at most its `--max-time`. The progress display starts from these and
/// corrects them with the time the finished points took.
pub fn one_run_secs(plan: &Plan, family: &str, experiment: &Experiment, stream: &OpStream, point: &Point) -> f64 {
    let scale = match &plan.data {
        crate::data::DataSpec::Tpch { scale } => *scale,
        _ => 0.0,
    };
    let ops = stream.ops_at(point);
    // A fixed rate paces the run: it lasts at least its ops at that rate.
    let paced = point.rate.map_or(0.0, |r| ops as f64 / r.ops_per_sec());
    let one = experiment.duration_secs.unwrap_or_else(|| run_secs(family, experiment, point, ops, scale).max(paced));
    match plan.precision_of(experiment) {
        Some(p) => one.min(p.max_time_secs),
        None => one,
    }
}

/// The plan's expected duration per target; under `--precision` each capped run counts
/// at most its `--max-time`.
pub fn estimate(plan: &Plan) -> Estimate {
    let dataset = Dataset::new(&plan.data, plan.seed);
    let rows: u64 = (0..dataset.tables.len()).map(|t| dataset.initial_rows(t)).sum();
    let streams: Vec<OpStream> =
        plan.experiments.iter().enumerate().map(|(i, e)| OpStream::new(e, i, &dataset, plan.seed, e.warmup + e.runs)).collect();
    let mut estimate = Estimate { per_target: Vec::new(), capped_runs: 0, uncapped_secs: 0.0 };
    for (name, family) in families(plan) {
        let load = rows as f64 * load_micros(&family) / 1e6;
        let mut secs = load;
        estimate.uncapped_secs += load;
        for (_, (e, stream)) in plan.experiments.iter().zip(&streams).enumerate().filter(|(i, _)| plan.runs_unit(&name, *i)) {
            let capped = plan.precision_of(e).is_some();
            for point in &e.points {
                let runs = (e.warmup + e.runs) as u64;
                let all_runs = runs as f64 * one_run_secs(plan, &family, e, stream, point);
                secs += all_runs;
                if capped {
                    estimate.capped_runs += runs;
                } else {
                    estimate.uncapped_secs += all_runs;
                }
            }
        }
        estimate.per_target.push((name, secs));
    }
    estimate
}

/// `--budget`: caps every run the stopping rule applies to (`--max-time`) so the plan's
/// estimate fits `budget_secs` (`--budget` implies a stopping rule: see
/// `stopping::resolve`). Returns the line that says what the budget buys.
pub fn fit_budget(plan: &mut Plan, budget_secs: f64) -> Result<String> {
    let Some(precision) = plan.precision else {
        return Err(Error::usage("--budget needs a stopping rule: add --precision 2%"));
    };
    let before = estimate(plan);
    if before.total() <= budget_secs {
        return Ok(format!(
            "budget {}: the plan fits ({} estimated) with runs capped at {}; each stops once its throughput is known to ±{:.1}%",
            human(budget_secs),
            human(before.total()),
            human(precision.max_time_secs),
            precision.target * 100.0
        ));
    }
    let room = budget_secs - before.uncapped_secs;
    let per_run = if before.capped_runs > 0 { room / before.capped_runs as f64 } else { 0.0 };
    if per_run < MIN_RUN_SECS {
        return Err(Error::usage(format!(
            "--budget {}: too short for this plan ({} of loading and fixed-size work, {} runs of at least {MIN_RUN_SECS} s): give at least {}, or fewer targets, experiments or points",
            human(budget_secs),
            human(before.uncapped_secs),
            before.capped_runs,
            human(before.uncapped_secs + before.capped_runs as f64 * MIN_RUN_SECS)
        )));
    }
    plan.precision = Some(stopping::Precision { max_time_secs: per_run.min(precision.max_time_secs), ..precision });
    Ok(format!(
        "budget {}: each of the {} runs gets at most {}; it stops sooner once its throughput is known to ±{:.1}%, and one that reaches {} first is flagged not converged with the precision it reached",
        human(budget_secs),
        before.capped_runs,
        human(per_run),
        precision.target * 100.0,
        human(per_run)
    ))
}

/// `2h 05m`, `3m 20s`, `12.5s`.
pub fn human(secs: f64) -> String {
    let s = secs.max(0.0);
    if s >= 3600.0 {
        format!("{}h {:02}m", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64)
    } else if s >= 60.0 {
        format!("{}m {:02}s", (s / 60.0) as u64, (s % 60.0) as u64)
    } else {
        format!("{s:.1}s")
    }
}

/// The estimate as lines for the terminal: per target and the total.
pub fn describe(plan: &Plan, estimate: &Estimate) -> String {
    let mut out = format!(
        "estimated duration{}: {} (rough: typical per-op costs on a 2-core machine; real runs depend on the hardware and its load)\n",
        if plan.precision.is_some() { " at most" } else { "" },
        human(estimate.total())
    );
    for (name, secs) in &estimate.per_target {
        out.push_str(&format!("  {name:<20} {}\n", human(*secs)));
    }
    out
}

/// How to shorten a long run, for the line printed before it starts.
pub fn shorten_hint(plan: &Plan) -> String {
    let mut ways = vec!["--quick (a smoke run)".to_string()];
    if plan.precision.is_none() {
        ways.push("--precision 2% (runs stop once their throughput is known)".into());
    }
    ways.push("--budget 1h (caps the runs to fit)".into());
    ways.push("--experiments, --target or fewer --clients/--batch/--widths (less work)".into());
    format!("to shorten it: {}", ways.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, resolve};

    fn plan(args: RunOptions) -> Plan {
        resolve(&args).unwrap()
    }

    #[test]
    fn the_default_study_is_short_and_the_full_kv_study_is_long() {
        let embedded = estimate(&plan(RunOptions::default()));
        assert!(embedded.total() < LONG_RUN_SECS, "{}", embedded.total());
        assert_eq!(embedded.per_target.len(), 5);
        let full = estimate(&plan(RunOptions {
            study: Some("kv-vs-relational".into()),
            scale: Some(1.0),
            spawn: vec!["all".into()],
            ..Default::default()
        }));
        assert!(full.total() > 12.0 * 3600.0, "{}", human(full.total()));
        // Every spawned target has an estimate, named as the run will name it.
        assert!(full.per_target.iter().any(|(n, _)| n == "pg-jsonb"));
    }

    #[test]
    fn a_budget_caps_the_runs_to_fit_or_says_it_is_too_short() {
        let opts = RunOptions {
            study: Some("kv-vs-relational".into()),
            scale: Some(1.0),
            spawn: vec!["all".into()],
            budget: Some("8h".into()),
            ..Default::default()
        };
        let p = plan(opts.clone());
        let line = p.budget_note.clone().unwrap();
        assert!(line.contains("at most") && line.contains("±2.0%"), "{line}");
        let after = estimate(&p);
        assert!(after.total() <= 8.0 * 3600.0 * 1.001, "{}", human(after.total()));
        assert!(p.precision.unwrap().max_time_secs < stopping::DEFAULT_MAX_TIME_SECS);
        let e = resolve(&RunOptions { budget: Some("1m".into()), ..opts }).unwrap_err().to_string();
        assert!(e.contains("--budget") && e.contains("give at least"), "{e}");
        // A plan that fits keeps its caps.
        let small = plan(RunOptions { budget: Some("1h".into()), ..Default::default() });
        assert!(small.budget_note.as_deref().unwrap().contains("fits"));
        assert_eq!(small.precision.unwrap(), stopping::Precision { target: 0.02, max_time_secs: stopping::DEFAULT_MAX_TIME_SECS });
    }

    #[test]
    fn a_fixed_rate_paces_the_estimate() {
        let opts =
            |rate: Option<Vec<f64>>| RunOptions { experiments: Some(vec!["get".into()]), ops: Some(1000), rate, ..Default::default() };
        let open = plan(opts(None));
        let paced = plan(opts(Some(vec![10.0])));
        let runs: u64 =
            paced.experiments.iter().filter(|e| e.name == "get").map(|e| (e.runs + e.warmup) as u64 * e.points.len() as u64).sum();
        let nodb = |p: &Plan| estimate(p).per_target.iter().find(|(n, _)| n == "nodb").unwrap().1;
        assert!(nodb(&open) < 10.0, "{}", nodb(&open));
        // 1000 ops at 10 ops/s: 100 s a run, whatever the target.
        assert!(nodb(&paced) >= runs as f64 * 100.0, "{} for {runs} runs", nodb(&paced));
    }

    #[test]
    fn durations_read_as_hours_minutes_or_seconds() {
        assert_eq!(human(7500.0), "2h 05m");
        assert_eq!(human(200.0), "3m 20s");
        assert_eq!(human(12.46), "12.5s");
    }
}
