//! Side-by-side comparison of saved runs (`dbsweep compare A B [C...]`): per experiment,
//! target and point, each run's median throughput, p50 and p99, their ratios to the first
//! run, and whether a throughput difference is significant — Welch's t interval on the
//! logarithms of the measured runs' throughputs (few runs, unequal spreads), plus a minimum
//! effect size so that run-to-run drift on a busy machine is not called a difference.
//! Also says where the runs are not comparable (plans, versions, hosts, data).
//! Renders text, markdown, CSV or JSON from saved reports only; must not run anything.

use super::console::{micros, point_label, rate, write_table};
use super::model::{PointResult, Report};
use crate::base::measurement::RunMeasurement;
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};
use std::fmt::Write as _;

/// Confidence of the interval on each ratio. `compare` tests every point of two runs at
/// once: at 95 % a perfectly modelled A/A comparison would still call 5 % of its points
/// different by construction (it did, 5 of 85, on a quiet machine); at 99 % that is 1 %,
/// which leaves room for the model's own error.
const CONFIDENCE: f64 = 0.99;

/// How `compare` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Json,
}

/// One saved run as the comparison names it.
#[derive(Debug, Serialize)]
pub struct RunInfo {
    pub name: String,
    pub study: String,
    pub started_at: String,
    pub seed: u64,
    pub dbsweep_version: String,
    pub hostname: String,
}

/// Whether a compared point differs from the baseline's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The interval excludes 1 and the ratio is at least the minimum effect above 1.
    Faster,
    Slower,
    /// The interval includes 1, or the ratio is within the minimum effect.
    NoDifference,
    /// One side has a single measured run: no spread, no test.
    TooFewRuns,
    /// One side has no throughput (errors, missing rows, not measured).
    NoThroughput,
    /// The point is not in this run, or not in the baseline.
    Missing,
}

impl Verdict {
    fn text(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoDifference => "~",
            Verdict::TooFewRuns => "1 run",
            Verdict::NoThroughput => "void",
            Verdict::Missing => "missing",
        }
    }
}

/// One point of one run.
#[derive(Debug, Serialize)]
pub struct Cell {
    /// Median ok ops/s of the measured runs; `None`: void, not measured or missing.
    pub ops_per_sec: Option<f64>,
    pub measured_runs: usize,
    pub p50_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// This run's median throughput over the baseline's (none for the baseline itself).
    pub ratio: Option<f64>,
    /// The interval of the ratio of geometric means at `CONFIDENCE`.
    pub ratio_low: Option<f64>,
    pub ratio_high: Option<f64>,
    pub p50_ratio: Option<f64>,
    pub p99_ratio: Option<f64>,
    /// `None` for the baseline.
    pub verdict: Option<Verdict>,
    /// Why the point has no throughput, when it has none.
    pub note: Option<String>,
    /// The runs' log difference to the baseline, tested once every point is known.
    #[serde(skip)]
    log_difference: Option<LogDifference>,
}

/// One point across the runs, baseline first.
#[derive(Debug, Serialize)]
pub struct Row {
    pub experiment: String,
    pub target: String,
    pub point: String,
    pub cells: Vec<Cell>,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub runs: Vec<RunInfo>,
    pub method: String,
    pub confidence: f64,
    pub min_effect: f64,
    /// What makes the runs less comparable (plans, versions, hosts, data, incomplete runs).
    pub warnings: Vec<String>,
    pub rows: Vec<Row>,
}

impl Comparison {
    /// Compares `reports[1..]` with `reports[0]`. Every point of every run gets a row: the
    /// baseline's points in order, then those only later runs have.
    pub fn new(names: &[String], reports: &[Report], min_effect: f64) -> Comparison {
        let runs = names
            .iter()
            .zip(reports)
            .map(|(name, r)| RunInfo {
                name: name.clone(),
                study: r.study.clone(),
                started_at: r.started_at.clone(),
                seed: r.seed,
                dbsweep_version: r.dbsweep_version.clone(),
                hostname: r.environment.hostname.clone(),
            })
            .collect();
        let mut keys: Vec<PointKey> = Vec::new();
        for p in reports.iter().flat_map(|r| &r.points) {
            let key = PointKey::of(p);
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
        let mut rows: Vec<Row> = keys
            .iter()
            .map(|key| {
                let found: Vec<Option<&PointResult>> = reports.iter().map(|r| r.points.iter().find(|p| PointKey::of(p) == *key)).collect();
                let any = found.iter().flatten().next().expect("every key comes from a point");
                Row {
                    experiment: key.experiment.clone(),
                    target: key.target.clone(),
                    point: point_label(any),
                    cells: found.iter().enumerate().map(|(i, p)| cell(found[0], *p, i == 0)).collect(),
                }
            })
            .collect();
        for run in 1..reports.len() {
            let differences: Vec<LogDifference> = rows.iter().filter_map(|r| r.cells[run].log_difference).collect();
            let common = common_variance(&differences);
            for c in rows.iter_mut().map(|r| &mut r.cells[run]).filter(|c| c.log_difference.is_some()) {
                let interval = c.log_difference.expect("filtered").interval(common, CONFIDENCE);
                c.ratio_low = Some(interval.low);
                c.ratio_high = Some(interval.high);
                c.verdict = Some(interval.verdict(min_effect));
            }
        }
        Comparison {
            runs,
            method: format!(
                "Welch's t interval ({:.0} %) on the logarithms of the measured runs' throughputs, widened by the spread all points of the two runs share (random effects; from {MIN_POINTS_FOR_COMMON_SPREAD} points on: the variance of their log ratios around the median); a difference is significant when the interval excludes 1 and the ratio differs from 1 by at least {}",
                CONFIDENCE * 100.0,
                percent(min_effect)
            ),
            confidence: CONFIDENCE,
            min_effect,
            warnings: warnings(names, reports),
            rows,
        }
    }

    pub fn render(&self, format: Format) -> String {
        match format {
            Format::Json => serde_json::to_string_pretty(self).expect("a comparison serializes") + "\n",
            Format::Csv => self.csv(),
            Format::Text => self.table(false),
            Format::Markdown => self.table(true),
        }
    }

    fn header(&self) -> Vec<String> {
        let mut head: Vec<String> = ["experiment", "target", "point"].iter().map(|s| s.to_string()).collect();
        for (i, run) in self.runs.iter().enumerate() {
            if i == 0 {
                head.extend([format!("{} ops/s", run.name), "p50".into(), "p99".into()]);
            } else {
                head.extend([
                    format!("{} ops/s", run.name),
                    "ratio".into(),
                    format!("{:.0}% interval", CONFIDENCE * 100.0),
                    "".into(),
                    "p50 x".into(),
                    "p99 x".into(),
                ]);
            }
        }
        head
    }

    fn table(&self, markdown: bool) -> String {
        let mut out = String::new();
        let base = &self.runs[0];
        let _ = writeln!(out, "baseline: {} ({}, seed {}, {})", base.name, base.study, base.seed, base.started_at);
        for run in &self.runs[1..] {
            let _ = writeln!(out, "compared: {} ({}, seed {}, {})", run.name, run.study, run.seed, run.started_at);
        }
        for w in &self.warnings {
            let _ = writeln!(out, "WARNING: {w}");
        }
        let _ = writeln!(
            out,
            "ratio = run / baseline median ops/s (p50 x, p99 x: latency ratios, lower is faster); {}; '~' = no significant difference\n",
            self.method
        );
        let mut lines: Vec<Vec<String>> = vec![self.header()];
        for row in &self.rows {
            let mut line = vec![row.experiment.clone(), row.target.clone(), row.point.clone()];
            for (i, c) in row.cells.iter().enumerate() {
                let ops = match (c.ops_per_sec, &c.note) {
                    (Some(v), _) => format!("{}/s", rate(v)),
                    (None, Some(note)) => note.clone(),
                    (None, None) => "-".into(),
                };
                if i == 0 {
                    line.extend([ops, latency(c.p50_us), latency(c.p99_us)]);
                } else {
                    line.extend([
                        ops,
                        c.ratio.map_or("-".into(), |r| format!("{r:.2}x")),
                        match (c.ratio_low, c.ratio_high) {
                            (Some(lo), Some(hi)) => format!("[{lo:.2}, {hi:.2}]"),
                            _ => "-".into(),
                        },
                        c.verdict.map_or("", Verdict::text).to_string(),
                        c.p50_ratio.map_or("-".into(), |r| format!("{r:.2}")),
                        c.p99_ratio.map_or("-".into(), |r| format!("{r:.2}")),
                    ]);
                }
            }
            lines.push(line);
        }
        if markdown {
            for (n, line) in lines.iter().enumerate() {
                let cells: Vec<String> = line.iter().map(|c| c.replace('|', "\\|")).collect();
                let _ = writeln!(out, "| {} |", cells.join(" | "));
                if n == 0 {
                    let _ = writeln!(out, "|{}", "---|".repeat(line.len()));
                }
            }
            return out;
        }
        write_table(&mut out, &lines);
        out
    }

    /// One line per point and run (long format, for pandas): the baseline's lines have no
    /// ratio.
    fn csv(&self) -> String {
        let mut out = String::from(
            "experiment,target,point,run,ops_per_sec,measured_runs,p50_us,p99_us,ratio,ratio_low,ratio_high,verdict,p50_ratio,p99_ratio,note\n",
        );
        let num = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v}"));
        for row in &self.rows {
            for (run, c) in self.runs.iter().zip(&row.cells) {
                let verdict = c.verdict.map(|v| serde_json::to_value(v).expect("a verdict serializes").as_str().unwrap_or("").to_string());
                let fields = [
                    row.experiment.clone(),
                    row.target.clone(),
                    row.point.clone(),
                    run.name.clone(),
                    num(c.ops_per_sec),
                    c.measured_runs.to_string(),
                    num(c.p50_us),
                    num(c.p99_us),
                    num(c.ratio),
                    num(c.ratio_low),
                    num(c.ratio_high),
                    verdict.unwrap_or_default(),
                    num(c.p50_ratio),
                    num(c.p99_ratio),
                    c.note.clone().unwrap_or_default(),
                ];
                let quoted: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                let _ = writeln!(out, "{}", quoted.join(","));
            }
        }
        out
    }
}

fn csv_field(text: &str) -> String {
    if text.contains([',', '"', '\n']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_string() }
}

fn percent(fraction: f64) -> String {
    format!("{} %", (fraction * 1000.0).round() / 10.0)
}

fn latency(us: Option<f64>) -> String {
    us.map_or("-".into(), |us| micros(us))
}

/// A point's identity across runs.
#[derive(Debug, Clone, PartialEq)]
struct PointKey {
    experiment: String,
    target: String,
    /// With its rate.
    point: crate::workload::experiment::Point,
}

impl PointKey {
    fn of(p: &PointResult) -> PointKey {
        PointKey { experiment: p.experiment.clone(), target: p.target.clone(), point: p.point }
    }
}

/// The measured runs' ok throughputs; empty when the point is void.
pub(crate) fn run_throughputs(p: &PointResult) -> Vec<f64> {
    if p.is_void() {
        return Vec::new();
    }
    p.measured_runs().iter().filter(|r| r.seconds > 0.0 && r.ok_ops > 0).map(|r| r.ok_ops as f64 / r.seconds).collect()
}

fn run_latencies(p: &PointResult, pick: fn(&RunMeasurement, &PointResult) -> Option<f64>) -> Vec<f64> {
    p.measured_runs().iter().filter_map(|r| pick(r, p)).collect()
}

pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    Some(if v.len() % 2 == 0 { (v[mid - 1] + v[mid]) / 2.0 } else { v[mid] })
}

fn cell(base: Option<&PointResult>, this: Option<&PointResult>, is_baseline: bool) -> Cell {
    let Some(p) = this else {
        return Cell {
            ops_per_sec: None,
            measured_runs: 0,
            p50_us: None,
            p99_us: None,
            ratio: None,
            ratio_low: None,
            ratio_high: None,
            p50_ratio: None,
            p99_ratio: None,
            verdict: (!is_baseline).then_some(Verdict::Missing),
            note: Some("not in this run".into()),
            log_difference: None,
        };
    };
    let throughputs = run_throughputs(p);
    let p50s = run_latencies(p, |r, p| r.service.get(&p.op).map(|l| l.p50_us));
    let p99s = run_latencies(p, |r, p| r.service.get(&p.op).map(|l| l.p99_us));
    let note = if p.is_void() {
        Some("VOID (errors or missing rows)".to_string())
    } else if throughputs.is_empty() {
        Some("no result".to_string())
    } else {
        None
    };
    let mut c = Cell {
        ops_per_sec: median(&throughputs),
        measured_runs: p.measured_runs().len(),
        p50_us: median(&p50s),
        p99_us: median(&p99s),
        ratio: None,
        ratio_low: None,
        ratio_high: None,
        p50_ratio: None,
        p99_ratio: None,
        verdict: None,
        note,
        log_difference: None,
    };
    if is_baseline {
        return c;
    }
    let Some(base) = base else {
        c.verdict = Some(Verdict::Missing);
        return c;
    };
    let base_throughputs = run_throughputs(base);
    let ratio_of = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    };
    c.ratio = ratio_of(c.ops_per_sec, median(&base_throughputs));
    c.p50_ratio = ratio_of(c.p50_us, median(&run_latencies(base, |r, p| r.service.get(&p.op).map(|l| l.p50_us))));
    c.p99_ratio = ratio_of(c.p99_us, median(&run_latencies(base, |r, p| r.service.get(&p.op).map(|l| l.p99_us))));
    if c.ratio.is_none() {
        c.verdict = Some(Verdict::NoThroughput);
    } else {
        c.log_difference = welch(&base_throughputs, &throughputs);
        c.verdict = c.log_difference.is_none().then_some(Verdict::TooFewRuns);
    }
    c
}

/// An interval for the ratio of two samples' geometric means.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioInterval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// The ratio of `b`'s geometric mean to `a`'s with its Welch interval at `confidence`;
/// `None` unless both have at least two positive values.
pub(crate) fn ratio_interval(a: &[f64], b: &[f64], confidence: f64) -> Option<RatioInterval> {
    welch(a, b).map(|d| d.interval(SharedVariance::NONE, confidence))
}

impl RatioInterval {
    /// Significant when the interval excludes 1 and the estimate is at least `min_effect`
    /// away from 1 (either way, on the ratio's own scale).
    fn verdict(self, min_effect: f64) -> Verdict {
        let excludes_one = self.low > 1.0 || self.high < 1.0;
        if excludes_one && self.estimate >= 1.0 + min_effect {
            Verdict::Faster
        } else if excludes_one && self.estimate <= 1.0 / (1.0 + min_effect) {
            Verdict::Slower
        } else {
            Verdict::NoDifference
        }
    }
}

/// The difference of two samples' mean logarithms (b's less a's), with its Welch
/// variance and degrees of freedom.
#[derive(Debug, Clone, Copy, PartialEq)]
struct LogDifference {
    difference: f64,
    variance: f64,
    degrees_of_freedom: f64,
}

impl LogDifference {
    /// The interval of the ratio b/a, its variance widened by the points' shared variance
    /// (see `SharedVariance`); Student's t with the Welch-Satterthwaite degrees of freedom
    /// of the sum (the shared part is estimated from many points, so it adds many).
    fn interval(self, shared: SharedVariance, confidence: f64) -> RatioInterval {
        let variance = self.variance + shared.variance;
        let tails = self.variance.powi(2) / self.degrees_of_freedom + shared.variance.powi(2) / shared.degrees_of_freedom.max(1.0);
        let degrees_of_freedom = if tails > 0.0 { variance.powi(2) / tails } else { self.degrees_of_freedom };
        let half = match StudentsT::new(0.0, 1.0, degrees_of_freedom) {
            Ok(t) if variance > 0.0 => t.inverse_cdf(0.5 + confidence / 2.0) * variance.sqrt(),
            _ => 0.0,
        };
        let d = self.difference;
        RatioInterval { estimate: d.exp(), low: (d - half).exp(), high: (d + half).exp() }
    }
}

/// The variance of the log ratios that the points of two runs share (see
/// `common_variance`), with the degrees of freedom of its estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
struct SharedVariance {
    variance: f64,
    degrees_of_freedom: f64,
}

impl SharedVariance {
    const NONE: SharedVariance = SharedVariance { variance: 0.0, degrees_of_freedom: 1.0 };
}

/// Welch's test quantities for the logarithms of `b` against those of `a`; `None` unless
/// both have at least two positive values.
fn welch(a: &[f64], b: &[f64]) -> Option<LogDifference> {
    let logs = |v: &[f64]| -> Vec<f64> { v.iter().filter(|x| **x > 0.0 && x.is_finite()).map(|x| x.ln()).collect() };
    let (a, b) = (logs(a), logs(b));
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let variance = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    let (ma, mb) = (mean(&a), mean(&b));
    let (sa, sb) = (variance(&a, ma) / a.len() as f64, variance(&b, mb) / b.len() as f64);
    let tails = sa.powi(2) / (a.len() - 1) as f64 + sb.powi(2) / (b.len() - 1) as f64;
    let degrees_of_freedom = if tails > 0.0 { (sa + sb).powi(2) / tails } else { (a.len() + b.len() - 2) as f64 };
    Some(LogDifference { difference: mb - ma, variance: sa + sb, degrees_of_freedom })
}

/// Fewest tested points from which their shared spread is estimated.
const MIN_POINTS_FOR_COMMON_SPREAD: usize = 8;

/// The variance of the log ratios that the points of two runs share beyond their own runs'
/// spread (a random effect): the runs of one point follow each other within seconds, the
/// two runs being compared are minutes or days apart on a machine whose load and state
/// drift. Estimated over all tested points around their median log ratio — the larger of
/// the plain variance (it keeps the heavy tails that short runs have: an A/A comparison of
/// two `--quick` runs on a quiet machine had points 2.6x apart among 85) and the robust
/// (1.4826 x the median absolute deviation)^2 — less their median own variance. A uniform
/// change (all points 2x) stays one; a few points that really changed stay visible, many
/// widen the interval (conservative).
fn common_variance(differences: &[LogDifference]) -> SharedVariance {
    if differences.len() < MIN_POINTS_FOR_COMMON_SPREAD {
        return SharedVariance::NONE;
    }
    let logs: Vec<f64> = differences.iter().map(|d| d.difference).collect();
    let center = median(&logs).unwrap_or(0.0);
    let deviations: Vec<f64> = logs.iter().map(|x| (x - center).abs()).collect();
    let robust = (1.4826 * median(&deviations).unwrap_or(0.0)).powi(2);
    let plain = logs.iter().map(|x| (x - center).powi(2)).sum::<f64>() / (logs.len() - 1) as f64;
    let own = median(&differences.iter().map(|d| d.variance).collect::<Vec<_>>()).unwrap_or(0.0);
    SharedVariance { variance: (robust.max(plain) - own).max(0.0), degrees_of_freedom: (differences.len() - 1) as f64 }
}

/// What makes the runs less comparable than an A/A test on one machine.
fn warnings(names: &[String], reports: &[Report]) -> Vec<String> {
    let base = &reports[0];
    let mut out = Vec::new();
    for (name, r) in names.iter().zip(reports) {
        if !r.complete {
            out.push(format!(
                "{name} is incomplete ({}): its missing points are shown as missing",
                r.incomplete_reason.as_deref().unwrap_or("stopped")
            ));
        }
    }
    for (name, r) in names.iter().zip(reports).skip(1) {
        let differing = plan_differences(&base.plan, &r.plan);
        if !differing.is_empty() {
            out.push(format!(
                "{name} ran another plan than the baseline ({} differ): differences may be the plans', not the systems'",
                differing.join(", ")
            ));
        }
        if r.dbsweep_version != base.dbsweep_version || r.git_revision != base.git_revision {
            out.push(format!("{name} was run by another dbsweep ({} vs {})", version(r), version(base)));
        }
        let host =
            |r: &Report| (r.environment.hostname.clone(), r.environment.cpu_model.clone(), r.environment.cores, r.environment.memory_bytes);
        if host(r) != host(base) {
            out.push(format!(
                "{name} ran on another host or machine ({}, {} cores) than the baseline ({}, {} cores)",
                r.environment.hostname, r.environment.cores, base.environment.hostname, base.environment.cores
            ));
        }
    }
    out
}

fn version(r: &Report) -> String {
    match &r.git_revision {
        Some(rev) => format!("{} {rev}", r.dbsweep_version),
        None => r.dbsweep_version.clone(),
    }
}

/// The plan's top-level settings that differ, besides the seed (an A/A comparison differs
/// only there) — `data` among them when the data sets differ.
fn plan_differences(a: &serde_json::Value, b: &serde_json::Value) -> Vec<String> {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return Vec::new() };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).filter(|k| k.as_str() != "seed").collect();
    keys.sort();
    keys.dedup();
    keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identical_spreads_are_no_difference_and_a_clear_gap_is_one() {
        let a = [100.0, 104.0, 98.0];
        let same = welch(&a, &[101.0, 97.0, 103.0]).unwrap().interval(SharedVariance::NONE, 0.95);
        assert!(same.low < 1.0 && same.high > 1.0, "{same:?}");
        assert_eq!(same.verdict(0.05), Verdict::NoDifference);
        let slower = welch(&a, &[50.0, 52.0, 49.0]).unwrap().interval(SharedVariance::NONE, 0.95);
        assert!((slower.estimate - 0.5).abs() < 0.02, "{slower:?}");
        assert_eq!(slower.verdict(0.05), Verdict::Slower);
        assert_eq!(welch(&[50.0, 52.0, 49.0], &a).unwrap().interval(SharedVariance::NONE, 0.95).verdict(0.05), Verdict::Faster);
        assert!(welch(&a, &[100.0]).is_none(), "one run has no spread");
    }

    #[test]
    fn a_small_but_certain_change_is_below_the_minimum_effect() {
        // 2 % faster with almost no spread: the interval excludes 1, the effect is too small.
        let i = welch(&[100.0, 100.1, 99.9], &[102.0, 102.1, 101.9]).unwrap().interval(SharedVariance::NONE, 0.95);
        assert!(i.low > 1.0, "{i:?}");
        assert_eq!(i.verdict(0.05), Verdict::NoDifference);
        assert_eq!(i.verdict(0.01), Verdict::Faster);
    }

    #[test]
    fn welch_matches_a_hand_computed_interval() {
        // logs of e^0, e^0.2 (mean 0.1, var 0.02) vs e^1, e^1.2 (mean 1.1, var 0.02):
        // se = sqrt(0.02/2 + 0.02/2) = sqrt(0.02); df = 2; t(0.975, 2) = 4.302653.
        let e = std::f64::consts::E;
        let i = welch(&[1.0, e.powf(0.2)], &[e, e.powf(1.2)]).unwrap().interval(SharedVariance::NONE, 0.95);
        let half = 4.302_653 * 0.02f64.sqrt();
        assert!((i.estimate.ln() - 1.0).abs() < 1e-9);
        assert!((i.low.ln() - (1.0 - half)).abs() < 1e-4, "{i:?}");
        assert!((i.high.ln() - (1.0 + half)).abs() < 1e-4, "{i:?}");
    }

    #[test]
    fn plans_that_differ_only_in_seed_are_the_same_plan() {
        let a = serde_json::json!({"seed": 1, "ops": 10, "data": {"rows": 5}});
        assert!(plan_differences(&a, &serde_json::json!({"seed": 2, "ops": 10, "data": {"rows": 5}})).is_empty());
        assert_eq!(plan_differences(&a, &serde_json::json!({"seed": 1, "ops": 20, "data": {"rows": 6}})), vec!["data", "ops"]);
    }

    /// Normal deviates from a fixed-seed generator (splitmix64 + Box-Muller): the same
    /// synthetic comparison on every test run.
    struct Normals(u64);

    impl Normals {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
        }
        fn next(&mut self, sd: f64) -> f64 {
            let (u, v) = (self.uniform().max(1e-12), self.uniform());
            sd * (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
        }
    }

    /// `points` compared points of 3 runs each: within a run's repeats the spread is 1 %,
    /// between the two runs each point drifts by a factor of sd 10 % (load, caches, CPU
    /// frequency), and `changed(i)` multiplies point i's true throughput in the second run.
    fn verdicts(points: usize, changed: impl Fn(usize) -> f64) -> Vec<Verdict> {
        let mut normal = Normals(7);
        let differences: Vec<LogDifference> = (0..points)
            .map(|i| {
                let drift = normal.next(0.10);
                let a: Vec<f64> = (0..3).map(|_| 1000.0 * normal.next(0.01).exp()).collect();
                let b: Vec<f64> = (0..3).map(|_| 1000.0 * changed(i) * (drift + normal.next(0.01)).exp()).collect();
                welch(&a, &b).unwrap()
            })
            .collect();
        let common = common_variance(&differences);
        differences.iter().map(|d| d.interval(common, CONFIDENCE).verdict(0.05)).collect()
    }

    #[test]
    fn drift_between_runs_is_not_a_difference() {
        let flagged = |v: &[Verdict]| v.iter().filter(|v| **v != Verdict::NoDifference).count();
        let aa = verdicts(60, |_| 1.0);
        assert!(flagged(&aa) <= 3, "an A/A comparison flags at most 5 % of 60 points: {aa:?}");
        // Without the shared variance the same data would flag most points.
        let mut normal = Normals(7);
        let naive = (0..60)
            .filter(|_| {
                let drift = normal.next(0.10);
                let a: Vec<f64> = (0..3).map(|_| 1000.0 * normal.next(0.01).exp()).collect();
                let b: Vec<f64> = (0..3).map(|_| 1000.0 * (drift + normal.next(0.01)).exp()).collect();
                welch(&a, &b).unwrap().interval(SharedVariance::NONE, CONFIDENCE).verdict(0.05) != Verdict::NoDifference
            })
            .count();
        assert!(naive > 20, "the drift is large enough to matter: {naive} of 60 flagged without it");
    }

    #[test]
    fn real_changes_stay_visible_beside_the_drift() {
        // Two points 3x faster among unchanged ones: both flagged, as faster, nothing else.
        let few = verdicts(40, |i| if i % 20 == 0 { 3.0 } else { 1.0 });
        for (i, v) in few.iter().enumerate() {
            assert_eq!(*v, if i % 20 == 0 { Verdict::Faster } else { Verdict::NoDifference }, "point {i}: {few:?}");
        }
        // A tenth of the points 3x faster: the shared variance grows with them (it is
        // conservative by design), yet most stay visible.
        let tenth = verdicts(40, |i| if i % 10 == 0 { 3.0 } else { 1.0 });
        let found = (0..40).step_by(10).filter(|i| tenth[*i] == Verdict::Faster).count();
        assert!(found >= 3, "{tenth:?}");
        // Every point 2x slower: the shared variance is about the spread around the common
        // change, not the change itself, so every point stays slower.
        let all = verdicts(40, |_| 0.5);
        assert!(all.iter().all(|v| *v == Verdict::Slower), "{all:?}");
        assert_eq!(common_variance(&[]), SharedVariance::NONE, "no points, no shared spread");
    }
}
