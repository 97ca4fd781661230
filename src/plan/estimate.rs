//! How long a plan will take, before anything runs: each point's ops times a typical cost
//! per op of its system and op kind, plus loading the data, per target; and `--budget`,
//! which caps the runs so the whole plan fits a given time.
//!
//! The costs are rough figures for a 2-core machine (single-row requests, one client;
//! ranges grow with their width, analytic queries with the scale factor); a run's real
//! duration depends on the hardware and on what else the machine runs. Under `--precision`
//! the estimate is an upper bound: runs stop at their caps or sooner. Must not connect to
//! or start anything.

use super::cost::{self, CostModel};
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
    pub capped_runs: Vec<CappedRun>,
    /// Seconds that no cap shortens: loading, and experiments that run all of their ops.
    pub uncapped_secs: f64,
}

/// Runs of one point on one target that the stopping rule caps.
#[derive(Debug, Clone, PartialEq)]
pub struct CappedRun {
    pub count: u64,
    /// One run's seconds without a cap (infinite: it reaches any cap the plan had).
    pub uncapped_secs: f64,
    /// The slowest single request: no cap stops a run sooner.
    pub slowest_request_secs: f64,
}

impl CappedRun {
    /// Seconds of these runs under a cap of `cap` seconds each.
    fn secs_at(&self, cap: f64) -> f64 {
        self.count as f64 * self.uncapped_secs.min(cap.max(self.slowest_request_secs))
    }
}

impl Estimate {
    pub fn total(&self) -> f64 {
        self.per_target.iter().map(|(_, s)| s).sum()
    }
}

/// The system family of each target the plan will have (named as `Plan::target_names`).
fn families(plan: &Plan) -> Vec<(String, String)> {
    let names = plan.target_names();
    let mut out = plan.target_families();
    out.retain(|(name, _)| names.contains(name));
    out
}

/// The estimated seconds of all runs of `experiment` (warm-up included) on a system of
/// `family` at its typical costs, without caps: what `--shard` balances.
pub fn fixed_secs(family: &str, experiment: &Experiment, scale: f64) -> f64 {
    let runs = f64::from(experiment.warmup + experiment.runs);
    let one = |point: &Point| {
        let ops = experiment.ops_at(point);
        let paced = point.rate.map_or(0.0, |r| ops as f64 / r.ops_per_sec()).max(experiment.min_run_secs.unwrap_or(0.0));
        experiment.duration_secs.unwrap_or_else(|| run_secs(family, experiment, point, ops, scale).max(paced))
    };
    runs * experiment.points.iter().map(one).sum::<f64>()
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
        "mariadb-cli" | "mysql-cli" => 335.0,
        "redis-cli" => 65.0,
        _ => 300.0,
    }
}

/// Measured µs of one more key inside one batched request, where a tenth of a request
/// (the default) is far off: the command-line clients, whose request is a process pipe's
/// round trip but whose keys are a few bytes of one statement each. Wall time per key of
/// insert-find's insert-all and find at 10 sizes from 10,000 to 100,000 keys (6 runs each,
/// 6.6 million keys; 2026-11-28, this 2-core machine): mariadb-cli 63 µs (its `mariadb`
/// process works about 5 s per 50,000-key statement outside the timed request), redis-cli
/// 2.8 µs. (Requests alone: 335 and 65 µs.)
fn batched_key_micros(family: &str) -> Option<f64> {
    match family {
        "mariadb-cli" | "mysql-cli" => Some(63.0),
        "redis-cli" => Some(2.8),
        _ => None,
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
        _ if point.batched && point.batch > 1 => batched_key_micros(family).unwrap_or(0.1 * request) + request / point.batch as f64,
        _ => request,
    };
    // Two cores: more clients overlap their waits, up to about twice the throughput.
    let parallel = (point.clients as f64).clamp(1.0, 2.0);
    ops as f64 * per_op / parallel / 1e6
}

/// Where one run happens and what it runs: the target (its name and system family), the
/// experiment (and its index in the plan), its op stream and point, and the rows of the
/// data it runs over.
pub struct RunOf<'a> {
    pub target: &'a str,
    pub family: &'a str,
    pub index: usize,
    pub experiment: &'a Experiment,
    pub stream: &'a OpStream,
    pub point: &'a Point,
    pub data_rows: u64,
}

/// Seconds of one run (`at`): its `--duration`, or its work at the target's measured costs
/// (`--calibrate`) or else its family's typical ones (at least its time at a fixed rate);
/// under `--precision` at most its cap, but never less than its slowest single request.
/// The progress display starts from these and corrects them with the time the finished
/// points took.
pub fn one_run_secs(plan: &Plan, at: &RunOf<'_>) -> f64 {
    one_run_secs_with(plan, at, plan.costs.as_deref())
}

fn one_run_secs_with(plan: &Plan, at: &RunOf<'_>, costs: Option<&CostModel>) -> f64 {
    let scale = match &plan.data {
        crate::data::DataSpec::Tpch { scale } => *scale,
        _ => 0.0,
    };
    let ops = at.stream.ops_at(at.point);
    // A fixed rate paces the run: it lasts at least its ops at that rate (and at least
    // `--quick`'s shortest run).
    let paced = at.point.rate.map_or(0.0, |r| ops as f64 / r.ops_per_sec()).max(at.experiment.min_run_secs.unwrap_or(0.0));
    let measured = costs.and_then(|c| c.cost(at.target, at.index));
    let uncapped = match (at.experiment.duration_secs, measured) {
        (Some(secs), _) => secs,
        (None, Some(cost)) => cost.secs(cost::work(at.experiment, at.point, ops, at.data_rows)).max(paced),
        (None, None) => run_secs(at.family, at.experiment, at.point, ops, scale).max(paced),
    };
    match plan.precision_of(at.experiment) {
        Some(p) => uncapped.min(p.max_time_secs.max(measured.map_or(0.0, |c| c.slowest_request_us / 1e6))),
        None => uncapped,
    }
}

/// The plan's expected duration per target, from the measured costs when `--calibrate`
/// took them; under `--precision` each capped run counts at most its cap.
pub fn estimate(plan: &Plan) -> Estimate {
    estimate_with(plan, plan.costs.as_deref())
}

/// The estimate from the families' typical costs only, as it was before any calibration.
pub fn estimate_fixed(plan: &Plan) -> Estimate {
    estimate_with(plan, None)
}

fn estimate_with(plan: &Plan, costs: Option<&CostModel>) -> Estimate {
    let dataset = Dataset::new(&plan.data, plan.seed);
    let rows: u64 = (0..dataset.tables.len()).map(|t| dataset.initial_rows(t)).sum();
    let streams: Vec<OpStream> =
        plan.experiments.iter().enumerate().map(|(i, e)| OpStream::new(e, i, &dataset, plan.seed, e.warmup + e.runs)).collect();
    let mut estimate = Estimate { per_target: Vec::new(), capped_runs: Vec::new(), uncapped_secs: 0.0 };
    for (name, family) in families(plan) {
        let load_us = costs.and_then(|c| c.load_us_per_row.get(&name).copied()).unwrap_or_else(|| load_micros(&family));
        let load = rows as f64 * load_us / 1e6;
        let mut secs = load;
        estimate.uncapped_secs += load;
        for (index, (e, stream)) in plan.experiments.iter().zip(&streams).enumerate().filter(|(i, _)| plan.runs_unit(&name, *i)) {
            let capped = plan.precision_of(e).is_some();
            for point in &e.points {
                let runs = (e.warmup + e.runs) as u64;
                let at = RunOf { target: &name, family: &family, index, experiment: e, stream, point, data_rows: rows };
                let one = one_run_secs_with(plan, &at, costs);
                let overhead = costs.map_or(0.0, |c| c.point_overhead_secs);
                secs += runs as f64 * one + overhead;
                estimate.uncapped_secs += overhead;
                if capped {
                    let slowest = costs.and_then(|c| c.cost(&name, index)).map_or(0.0, |c| c.slowest_request_us / 1e6);
                    let uncapped = match plan.precision_of(e) {
                        Some(p) if one >= p.max_time_secs => f64::INFINITY,
                        _ => one,
                    };
                    estimate.capped_runs.push(CappedRun { count: runs, uncapped_secs: uncapped, slowest_request_secs: slowest });
                } else {
                    estimate.uncapped_secs += runs as f64 * one;
                }
            }
        }
        estimate.per_target.push((name, secs));
    }
    estimate
}

/// The share of a budget the plan is fitted into: the rest is room for what no estimate
/// counts (connecting, cleaning up, a loaded machine).
const BUDGET_SHARE: f64 = 0.9;

/// `--budget`: the cap of every run the stopping rule applies to (`--max-time`) so that
/// the plan's estimate fits `budget_secs`: the longest cap at which the runs that reach it,
/// each counted at least one slowest request, and the work no cap shortens fit
/// (`--budget` implies a stopping rule: see `stopping::resolve`). With measured costs
/// (`plan.costs`) the cap goes to `plan.calibrated_cap_secs` and the resolved plan (its
/// hash) stays as it was. Returns the line that says what the budget buys.
pub fn fit_budget(plan: &mut Plan, budget_secs: f64) -> Result<String> {
    let Some(precision) = plan.precision else {
        return Err(Error::usage("--budget needs a stopping rule: add --precision 2%"));
    };
    let asked = *plan.budget_asked.get_or_insert(precision);
    plan.calibrated_cap_secs = None;
    let resolved = plan.precision;
    plan.precision = Some(asked);
    let before = estimate(plan);
    plan.precision = resolved;
    let room = budget_secs * BUDGET_SHARE - plan.costs.as_ref().map_or(0.0, |c| c.calibration_secs);
    let total_at = |cap: f64| before.uncapped_secs + before.capped_runs.iter().map(|r| r.secs_at(cap)).sum::<f64>();
    let calibrated = plan.costs.is_some();
    let runs: u64 = before.capped_runs.iter().map(|r| r.count).sum();
    let fits = |cap: f64| total_at(cap) <= room;
    let cap = if fits(asked.max_time_secs) {
        asked.max_time_secs
    } else if !fits(MIN_RUN_SECS) {
        return Err(Error::usage(format!(
            "--budget {}: too short for this plan ({} of loading and fixed-size work, {runs} runs of at least {MIN_RUN_SECS} s): give at least {}, or fewer targets, experiments or points",
            human(budget_secs),
            human(before.uncapped_secs),
            human(total_at(MIN_RUN_SECS) / BUDGET_SHARE)
        )));
    } else {
        // The longest cap that fits: the total grows with the cap.
        let (mut lo, mut hi) = (MIN_RUN_SECS, asked.max_time_secs);
        for _ in 0..60 {
            let mid = (lo + hi) / 2.0;
            if fits(mid) { lo = mid } else { hi = mid }
        }
        lo
    };
    match calibrated {
        true => plan.calibrated_cap_secs = Some(cap),
        false => plan.precision = Some(stopping::Precision { max_time_secs: cap, ..asked }),
    }
    let costs = if calibrated { "measured costs" } else { "typical costs" };
    if cap >= asked.max_time_secs {
        return Ok(format!(
            "budget {}: the plan fits ({} estimated from {costs}) with runs capped at {}; each stops once its throughput is known to ±{:.1}%",
            human(budget_secs),
            human(total_at(cap)),
            human(cap),
            asked.target * 100.0
        ));
    }
    Ok(format!(
        "budget {}: each of the {runs} runs gets at most {} ({} estimated from {costs}); it stops sooner once its throughput is known to ±{:.1}%, and one that reaches {} first is flagged not converged with the precision it reached",
        human(budget_secs),
        human(cap),
        human(total_at(cap)),
        asked.target * 100.0,
        human(cap)
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
    let at_most = if plan.precision.is_some() { " at most" } else { "" };
    let Some(costs) = &plan.costs else {
        let mut out = format!(
            "estimated duration{at_most}: {} (rough: typical per-op costs on a 2-core machine; real runs depend on the hardware and its load)\n",
            human(estimate.total())
        );
        for (name, secs) in &estimate.per_target {
            out.push_str(&format!("  {name:<20} {}\n", human(*secs)));
        }
        return out;
    };
    let fixed = estimate_fixed(plan);
    let mut out = format!(
        "estimated duration{at_most}: {} (calibrated: costs measured by a {} sample on this machine; typical costs said {})\n",
        human(estimate.total()),
        human(costs.calibration_secs),
        human(fixed.total())
    );
    for (name, secs) in &estimate.per_target {
        let typical = fixed.per_target.iter().find(|(n, _)| n == name).map_or(0.0, |(_, s)| *s);
        out.push_str(&format!("  {name:<20} {:<10} (typical costs: {})\n", human(*secs), human(typical)));
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

    /// Every (target, experiment) of `p` at the same measured cost.
    fn measured(p: &Plan, cost: cost::Cost) -> CostModel {
        let mut model = CostModel { calibration_secs: 10.0, ..Default::default() };
        for name in p.target_names() {
            for i in 0..p.experiments.len() {
                model.costs.insert((name.clone(), i), cost);
            }
            model.load_us_per_row.insert(name, 1.0);
        }
        model
    }

    #[test]
    fn measured_costs_replace_the_typical_ones_and_extrapolate_over_widths() {
        let mut p = plan(RunOptions { experiments: Some(vec!["range-count".into()]), ..Default::default() });
        let fixed = estimate(&p);
        let cost = cost::Cost { request_us: 100.0, key_us: 2.0, slowest_request_us: 0.0 };
        p.costs = Some(std::sync::Arc::new(measured(&p, cost)));
        let calibrated = estimate(&p);
        assert_eq!(estimate_fixed(&p), fixed, "the typical estimate stays what it was");
        // Per target: 100,000 rows at 1 µs each, then every point's runs at 100 µs a request
        // and 2 µs a further key of its width (the echo floor's keys are one each).
        let points: f64 = p
            .experiments
            .iter()
            .flat_map(|e| e.points.iter().map(move |pt| (e, pt)))
            .map(|(e, pt)| {
                let extra_keys = pt.param.filter(|_| e.op.is_range()).map_or(0.0, |w| (w - 1) as f64);
                f64::from(e.warmup + e.runs) * e.ops_at(pt) as f64 * (100.0 + extra_keys * 2.0) / cost::parallelism(pt.clients) / 1e6
            })
            .sum();
        assert!(p.experiments.iter().any(|e| e.op.is_range() && e.points.iter().any(|pt| pt.param > Some(1))));
        for (name, secs) in &calibrated.per_target {
            assert!((secs - (0.1 + points)).abs() < 1e-6, "{name}: {secs} against {}", 0.1 + points);
        }
    }

    #[test]
    fn a_budget_refits_from_measured_costs_without_changing_the_plan_or_its_hash() {
        let mut p = plan(RunOptions { budget: Some("10m".into()), ..Default::default() });
        let (hash, precision) = (p.hash.clone(), p.precision);
        // Slow: 2 ms a request, one of 0.3 s.
        let cost = cost::Cost { request_us: 2000.0, key_us: 0.0, slowest_request_us: 300_000.0 };
        p.costs = Some(std::sync::Arc::new(measured(&p, cost)));
        let line = fit_budget(&mut p, 600.0).unwrap();
        assert!(line.contains("from measured costs"), "{line}");
        assert_eq!((p.hash.clone(), p.precision), (hash, precision), "the resolved plan stays");
        let cap = p.calibrated_cap_secs.unwrap();
        assert!(cap >= MIN_RUN_SECS && cap < precision.unwrap().max_time_secs, "{cap}");
        let capped = p.experiments.iter().find(|e| p.precision_of(e).is_some()).unwrap();
        assert_eq!(p.precision_of(capped).unwrap().max_time_secs, cap);
        // The estimate fits 90 % of the budget less the sample's 10 s, each capped run
        // counted at least one slowest request.
        let after = estimate(&p);
        assert!(after.total() <= 600.0 * BUDGET_SHARE - 10.0 + 1e-6, "{}", after.total());
        assert!(after.capped_runs.iter().all(|r| r.secs_at(cap) >= r.count as f64 * r.uncapped_secs.min(0.3)), "{after:?}");
        // Measured costs too high for any cap are refused with what would do.
        let e = fit_budget(&mut p, 20.0).unwrap_err().to_string();
        assert!(e.contains("too short") && e.contains("give at least"), "{e}");
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
