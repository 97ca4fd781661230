//! Side-by-side comparison of saved runs (`dbsweep compare A B [C...]`): per experiment,
//! target and point, each run's median throughput, p50 and p99, their ratios to the first
//! run, and whether a throughput difference is significant: the interval of the ratio of
//! the runs' geometric means from `uncertainty`'s model (each point's run-to-run variance
//! moderated across all points of its report), widened by the drift the two reports'
//! common points show (they ran minutes or days apart), plus a minimum effect size so that
//! a small drift is not called a difference. Also says where the runs are not comparable
//! (plans, versions, hosts, data).
//! Renders text, markdown, CSV or JSON from saved reports only; must not run anything.

use super::console::{micros, point_label, rate, write_table};
use super::model::{PointResult, Report};
use super::uncertainty::{Call, LogEstimate, Model, RatioInterval, VariancePart, median, run_throughputs};
use crate::base::measurement::RunMeasurement;
use serde::Serialize;
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
    /// The interval includes 1 and is narrow, or the ratio is within the minimum effect.
    NoDifference,
    /// The interval includes 1 and is too wide to tell: more or longer runs would.
    TooFewSamples,
    /// One side has a single measured run and no other point lends it a spread: no test.
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
            Verdict::TooFewSamples => "?",
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
    /// This point's and the baseline's estimates, tested once every point is known.
    #[serde(skip)]
    estimates: Option<(LogEstimate, LogEstimate)>,
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
        let models: Vec<Model> = reports.iter().map(|r| Model::throughput(&r.points)).collect();
        let mut rows: Vec<Row> = keys
            .iter()
            .map(|key| {
                let found: Vec<Option<&PointResult>> = reports.iter().map(|r| r.points.iter().find(|p| PointKey::of(p) == *key)).collect();
                let any = found.iter().flatten().next().expect("every key comes from a point");
                let base = found[0].map(|p| (p, &models[0]));
                Row {
                    experiment: key.experiment.clone(),
                    target: key.target.clone(),
                    point: point_label(any),
                    cells: found.iter().zip(&models).enumerate().map(|(i, (p, model))| cell(base, p.map(|p| (p, model)), i == 0)).collect(),
                }
            })
            .collect();
        for run in 1..reports.len() {
            let pairs: Vec<(LogEstimate, LogEstimate)> = rows.iter().filter_map(|r| r.cells[run].estimates).collect();
            let intervals = intervals(&pairs, models[0].drift() + models[run].drift());
            for (c, interval) in rows.iter_mut().map(|r| &mut r.cells[run]).filter(|c| c.estimates.is_some()).zip(intervals) {
                c.ratio_low = Some(interval.low);
                c.ratio_high = Some(interval.high);
                c.verdict = Some(verdict(interval, min_effect));
            }
        }
        Comparison {
            runs,
            method: format!(
                "{:.0} % interval of the ratio of the runs' geometric means: each point's run-to-run variance moderated across all points of its report (empirical Bayes, Smyth 2004), floored by the runs' own batch-means noise, plus the drift the two reports' common points show (robust: the spread of their log ratios around the median, less their own variance), the whole scaled so that the common points' central standardized differences spread as a standard normal (Efron's empirical null; with fewer than {MIN_POINTS_FOR_DRIFT} common points: one typical run's variance per report for the drift, no scaling); a difference is significant when the interval excludes 1 and the ratio differs from 1 by at least {}; '?' when the interval is too wide to tell",
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

fn run_latencies(p: &PointResult, pick: fn(&RunMeasurement, &PointResult) -> Option<f64>) -> Vec<f64> {
    p.measured_runs().iter().filter_map(|r| pick(r, p)).collect()
}

fn cell(base: Option<(&PointResult, &Model)>, this: Option<(&PointResult, &Model)>, is_baseline: bool) -> Cell {
    let Some((p, model)) = this else {
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
            estimates: None,
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
        estimates: None,
    };
    if is_baseline {
        return c;
    }
    let Some((base, base_model)) = base else {
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
        c.estimates = base_model.throughput_of(base).zip(model.throughput_of(p));
        c.verdict = c.estimates.is_none().then_some(Verdict::TooFewRuns);
    }
    c
}

/// Significant when the interval excludes 1 and the estimate is at least `min_effect` away
/// from 1 (either way, on the ratio's own scale); an interval that includes 1 is too few
/// samples when it is wide (`uncertainty::TIED_WITHIN`).
fn verdict(interval: RatioInterval, min_effect: f64) -> Verdict {
    match interval.call() {
        Call::Different if interval.estimate >= 1.0 + min_effect => Verdict::Faster,
        Call::Different if interval.estimate <= 1.0 / (1.0 + min_effect) => Verdict::Slower,
        Call::Different | Call::Tied => Verdict::NoDifference,
        Call::TooFewSamples => Verdict::TooFewSamples,
    }
}

/// The interval of each pair's ratio (this report's estimate over the baseline's). Each
/// pair's variance is its two estimates' plus the drift the pairs share (`drift`). With
/// enough pairs the variances are then calibrated by Efron's empirical null ("Large-Scale
/// Simultaneous Hypothesis Testing: The Choice of a Null Hypothesis", JASA 99, 2004): the
/// pairs' standardized differences around their median should spread as a standard normal;
/// the robust scale of their spread (1.4826 x MAD) multiplies every standard error, which
/// corrects a model whose variances are too small or too large for these two reports, with
/// the degrees of freedom of that scale (many points) instead of each point's few runs.
fn intervals(pairs: &[(LogEstimate, LogEstimate)], fallback_drift: f64) -> Vec<RatioInterval> {
    let drift = drift(pairs, fallback_drift);
    let parts = |(a, b): &(LogEstimate, LogEstimate)| [VariancePart::from(*a), VariancePart::from(*b), drift];
    if pairs.len() < MIN_POINTS_FOR_DRIFT {
        return pairs.iter().map(|p| RatioInterval::of(p.1.mean - p.0.mean, &parts(p), CONFIDENCE)).collect();
    }
    let variance = |p: &(LogEstimate, LogEstimate)| parts(p).iter().map(|v| v.variance).sum::<f64>();
    let differences: Vec<f64> = pairs.iter().map(|(a, b)| b.mean - a.mean).collect();
    let center = median(&differences).unwrap_or(0.0);
    let standardized: Vec<f64> =
        pairs.iter().zip(&differences).filter(|(p, _)| variance(p) > 0.0).map(|(p, d)| ((d - center) / variance(p).sqrt()).abs()).collect();
    let scale = median(&standardized).map_or(1.0, |mad| 1.4826 * mad).max(f64::MIN_POSITIVE);
    let degrees_of_freedom = (MAD_EFFICIENCY * (pairs.len() - 1) as f64).max(1.0);
    pairs
        .iter()
        .zip(&differences)
        .map(|(p, d)| RatioInterval::of(*d, &[VariancePart { variance: scale.powi(2) * variance(p), degrees_of_freedom }], CONFIDENCE))
        .collect()
}

/// Fewest common points from which the drift between two reports is estimated.
const MIN_POINTS_FOR_DRIFT: usize = 8;
/// The efficiency of the median absolute deviation against the standard deviation for
/// normal data (Rousseeuw and Croux 1993): a MAD from n values is worth about 0.37 n
/// values' variance.
const MAD_EFFICIENCY: f64 = 0.37;

/// The variance by which two reports' common points moved apart beyond their own noise (a
/// random effect: the runs of one point follow each other within seconds, the two reports
/// are minutes or days apart on a machine whose load and state drift). Robust, so that the
/// points that really changed do not count as drift: (1.4826 x the median absolute
/// deviation of the log ratios around their median)^2, less the points' median own
/// variance. A uniform change (all points 2x) is not drift; more than half of the points
/// changing differently would be. With fewer than `MIN_POINTS_FOR_DRIFT` common points:
/// `fallback` (one typical run's variance per report).
fn drift(pairs: &[(LogEstimate, LogEstimate)], fallback: f64) -> VariancePart {
    if pairs.len() < MIN_POINTS_FOR_DRIFT {
        return VariancePart { variance: fallback, degrees_of_freedom: 1e6 };
    }
    let logs: Vec<f64> = pairs.iter().map(|(a, b)| b.mean - a.mean).collect();
    let center = median(&logs).unwrap_or(0.0);
    let deviations: Vec<f64> = logs.iter().map(|x| (x - center).abs()).collect();
    let robust = (1.4826 * median(&deviations).unwrap_or(0.0)).powi(2);
    let own = median(&pairs.iter().map(|(a, b)| a.variance + b.variance).collect::<Vec<_>>()).unwrap_or(0.0);
    VariancePart { variance: (robust - own).max(0.0), degrees_of_freedom: (MAD_EFFICIENCY * (pairs.len() - 1) as f64).max(1.0) }
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
    fn a_small_but_certain_change_is_below_the_minimum_effect() {
        let certain = |ratio: f64| RatioInterval { estimate: ratio, low: ratio * 0.99, high: ratio * 1.01 };
        assert_eq!(verdict(certain(1.02), 0.05), Verdict::NoDifference);
        assert_eq!(verdict(certain(1.02), 0.01), Verdict::Faster);
        assert_eq!(verdict(certain(0.5), 0.05), Verdict::Slower);
        assert_eq!(verdict(RatioInterval { estimate: 1.3, low: 0.5, high: 3.0 }, 0.05), Verdict::TooFewSamples);
        assert_eq!(verdict(RatioInterval { estimate: 1.01, low: 0.95, high: 1.07 }, 0.05), Verdict::NoDifference);
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

    /// Two synthetic reports of `points` points with `runs` runs each. A point's runs
    /// spread by a standard deviation between 3 % and 30 % (points differ, as short and
    /// long runs do); each report puts every point in a time slot of its own that moves it
    /// by a factor of sd 10 % (load, caches, CPU frequency: drift), and `changed(i)`
    /// multiplies point i's true throughput in the second report. The intervals and
    /// verdicts of the second against the first.
    fn compared(points: usize, runs: usize, changed: impl Fn(usize) -> f64) -> Vec<(RatioInterval, Verdict)> {
        compared_with(points, runs, changed).0
    }

    /// `compared`, and the width of the interval an oracle that knew every variance would
    /// give the median point.
    fn compared_with(points: usize, runs: usize, changed: impl Fn(usize) -> f64) -> (Vec<(RatioInterval, Verdict)>, f64) {
        let spread = |i: usize| 0.03 * 10f64.powf((i % 5) as f64 / 4.0);
        let oracle = (2.0 * 0.10f64.powi(2) + 2.0 * spread(2).powi(2) / runs as f64).sqrt();
        let oracle_width = (2.0 * 2.576 * oracle).exp();
        let mut normal = Normals(7);
        let mut report = |factor: &dyn Fn(usize) -> f64| -> Vec<Vec<f64>> {
            (0..points)
                .map(|i| {
                    let slot = normal.next(0.10);
                    (0..runs).map(|_| 1000.0 * factor(i) * (slot + normal.next(spread(i))).exp()).collect()
                })
                .collect()
        };
        let (a, b) = (report(&|_| 1.0), report(&changed));
        let (model_a, model_b) = (Model::fit(a.iter().map(Vec::as_slice)), Model::fit(b.iter().map(Vec::as_slice)));
        let pairs: Vec<(LogEstimate, LogEstimate)> =
            a.iter().zip(&b).map(|(a, b)| (model_a.estimate(a, 0.0).unwrap(), model_b.estimate(b, 0.0).unwrap())).collect();
        let verdicts = intervals(&pairs, model_a.drift() + model_b.drift()).into_iter().map(|i| (i, verdict(i, 0.05))).collect();
        (verdicts, oracle_width)
    }

    fn called(v: &[(RatioInterval, Verdict)]) -> usize {
        v.iter().filter(|(_, v)| matches!(v, Verdict::Faster | Verdict::Slower)).count()
    }

    #[test]
    fn drift_between_reports_is_not_a_difference_and_intervals_stay_narrow() {
        for runs in [2, 3] {
            let (aa, oracle_width) = compared_with(100, runs, |_| 1.0);
            assert!(called(&aa) <= 5, "{runs} runs: an A/A comparison calls at most 5 % of 100 points: {}", called(&aa));
            let widths: Vec<f64> = aa.iter().map(|(i, _)| i.width()).collect();
            let median_width = median(&widths).unwrap();
            // Within a third of the oracle's interval on the log scale; Welch's t on each
            // point's own 2 runs would be about 25 times as wide.
            assert!(
                median_width.ln() <= 1.34 * oracle_width.ln(),
                "{runs} runs: median interval {median_width:.2}x wide, oracle {oracle_width:.2}x"
            );
        }
    }

    #[test]
    fn real_changes_stay_visible_beside_the_drift() {
        // A tenth of the points 4x faster, one in twenty 4x slower: each is called, as it went.
        let changed = |i: usize| match i % 20 {
            0 | 10 => 4.0,
            5 => 0.25,
            _ => 1.0,
        };
        for runs in [2, 3] {
            let v = compared(100, runs, changed);
            for (i, (interval, verdict)) in v.iter().enumerate() {
                let expected = match changed(i) {
                    r if r > 1.0 => Some(Verdict::Faster),
                    r if r < 1.0 => Some(Verdict::Slower),
                    _ => None,
                };
                if let Some(expected) = expected {
                    assert_eq!(*verdict, expected, "{runs} runs, point {i}: {interval:?}");
                }
            }
            assert!(called(&v) <= 15 + 5, "{runs} runs: few unchanged points called: {}", called(&v));
        }
        // Every point 4x slower: the drift is the spread around the common change, not the
        // change itself, so every point stays slower.
        let all = compared(60, 3, |_| 0.25);
        assert!(all.iter().all(|(_, v)| *v == Verdict::Slower), "{all:?}");
    }

    #[test]
    fn without_enough_common_points_the_drift_is_one_typical_run_per_report() {
        let e = |mean: f64| LogEstimate { mean, variance: 0.001, degrees_of_freedom: 5.0, runs: 2 };
        let few = drift(&[(e(0.0), e(0.1)); 3], 0.02);
        assert_eq!(few.variance, 0.02);
        let many: Vec<(LogEstimate, LogEstimate)> = (0..20).map(|i| (e(0.0), e(if i % 2 == 0 { 0.2 } else { -0.2 }))).collect();
        let robust = drift(&many, 0.02);
        // MAD 0.2 around a median of 0: (1.4826 * 0.2)^2 less the own 0.002.
        assert!((robust.variance - ((1.4826f64 * 0.2).powi(2) - 0.002)).abs() < 1e-9, "{robust:?}");
    }
}
