//! Side-by-side comparison of saved runs (`dbsweep compare A B [C...]`): per experiment,
//! target and point, each run's median throughput, p50 and p99, their ratios to the first
//! run, and whether a throughput difference is significant: the interval of the ratio of
//! the runs' geometric means from `uncertainty`'s model (each point's run-to-run variance
//! moderated across all points of its report), widened by the drift the two reports'
//! common points show (they ran minutes or days apart), plus a minimum effect size so that
//! a small drift is not called a difference. Also says where the runs are not comparable
//! (plans, versions, hosts, data).
//! Renders text, markdown, CSV or JSON from saved reports only; must not run anything.

use super::format::{micros, point_label, rate, write_table};
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
                    point: point_label(&any.point, any.op),
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
                "{:.0} % interval of the ratio of the runs' geometric means: each point's run-to-run variance moderated across all points of its report (empirical Bayes, Smyth 2004), floored by the runs' own batch-means noise, or, when larger, the drift the two reports' common points show at that run length (robust: the median absolute deviation of their log ratios, a Theil-Sen line over the log run length), scaled so that the common points' standardized differences spread at least as a standard normal at their centre, with Student's t at {NULL_TAIL_DF} degrees of freedom for benchmark noise's heavy tails (Efron's empirical null; with fewer than {MIN_POINTS_FOR_DRIFT} common points: own variances plus one typical run's per report); a difference is significant when the interval excludes 1 and the ratio differs from 1 by at least {}; '?' when the interval is too wide to tell",
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
    us.map_or("-".into(), micros)
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

/// The interval of each pair's ratio (this report's estimate over the baseline's).
///
/// With enough pairs (`MIN_POINTS_FOR_DRIFT`), in the manner of Efron's empirical null
/// ("Large-Scale Simultaneous Hypothesis Testing: The Choice of a Null Hypothesis", JASA
/// 99, 2004), the pairs themselves say how far an unchanged point moves between the two
/// reports: each pair's variance is the larger of its two estimates' own and the drift
/// its run length shows (`drift_trend`: runs of 50 µs moved 0.30 in log between two
/// quick runs on a quiet 2-core machine, runs of 10 ms and more 0.06); the standardized
/// differences around their median are then scaled to spread as a standard normal at
/// their centre (1.4826 x MAD; never narrowed), and the interval is Student's t with `NULL_TAIL_DF`
/// degrees of freedom: benchmark noise has heavier tails than a normal's.
/// With fewer pairs: each side's own variance plus one typical run's per report, and the
/// Welch-Satterthwaite degrees of freedom.
fn intervals(pairs: &[(LogEstimate, LogEstimate)], fallback_drift: f64) -> Vec<RatioInterval> {
    let differences: Vec<f64> = pairs.iter().map(|(a, b)| b.mean - a.mean).collect();
    if pairs.len() < MIN_POINTS_FOR_DRIFT {
        let drift = VariancePart { variance: fallback_drift, degrees_of_freedom: 1e6 };
        return pairs
            .iter()
            .zip(&differences)
            .map(|((a, b), d)| RatioInterval::of(*d, &[(*a).into(), (*b).into(), drift], CONFIDENCE))
            .collect();
    }
    let center = median(&differences).unwrap_or(0.0);
    let log_seconds: Vec<Option<f64>> = pairs.iter().map(|(a, b)| run_seconds(a, b).map(f64::ln)).collect();
    let drift = drift_trend(&differences, &log_seconds, center);
    let variances: Vec<f64> = pairs.iter().zip(&log_seconds).map(|((a, b), s)| (a.variance + b.variance).max(drift(*s))).collect();
    let standardized: Vec<f64> =
        differences.iter().zip(&variances).filter(|(_, v)| **v > 0.0).map(|(d, v)| ((d - center) / v.sqrt()).abs()).collect();
    // Only ever widened: a model whose variances look too large for these two reports keeps them.
    let scale = median(&standardized).map_or(1.0, |mad| 1.4826 * mad).max(1.0);

    let degrees_of_freedom = NULL_TAIL_DF.min((MAD_EFFICIENCY * (pairs.len() - 2) as f64).max(1.0));
    differences
        .iter()
        .zip(&variances)
        .map(|(d, v)| RatioInterval::of(*d, &[VariancePart { variance: scale.powi(2) * v, degrees_of_freedom }], CONFIDENCE))
        .collect()
}

/// The degrees of freedom of the Student's t that compared points' standardized
/// differences follow when nothing changed. Measured over 15 A/A pairs of six `--quick`
/// runs (debug build, 30 ms runs, this shared 2-core machine at load 1-1.3; 1,275 points):
/// 10.2 % of them lay beyond 2.576 (a normal's 1 %), 5.7 % beyond 4 and 2.1 % beyond 6.
/// One of the six runs caught a spell in which every 2- and 4-client read of redb and
/// MonetDB ran at half speed, both runs of each point agreeing. At 5 degrees of freedom
/// the pairs called 5.6 % of their points at 99 % (12 of 85 in the worst pair); at 3, 2.3 %
/// (7 of 85), still every point of a real 10x change (redb's synced writes against
/// `--durability none`, against each of the six), with median intervals 1.35x-1.98x wide
/// between undisturbed runs and up to 4.3x with the disturbed one.
const NULL_TAIL_DF: f64 = 3.0;

/// The run length both points of a pair were measured with (the longer median).
fn run_seconds(a: &LogEstimate, b: &LogEstimate) -> Option<f64> {
    match (a.run_seconds, b.run_seconds) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

/// How far an unchanged point moves between two reports, as a variance, by the log of its
/// run length: the median absolute deviation of the differences from their `center`,
/// (robustly) log-linear in the log run length. The pairs are cut into up to ten bins of
/// equal count by run length; each bin's median log length and median log deviation make
/// one point of a Theil-Sen slope (the median of the slopes between bins whose run lengths
/// differ at least twofold, at most 0); the line goes through the median of all points.
/// Without run lengths, or all within a factor of two: one deviation for all.
fn drift_trend(differences: &[f64], log_seconds: &[Option<f64>], center: f64) -> impl Fn(Option<f64>) -> f64 + use<> {
    let log_deviation = |d: f64| (d - center).abs().max(1e-9).ln();
    let overall = median(&differences.iter().map(|d| log_deviation(*d)).collect::<Vec<_>>()).unwrap_or(f64::NEG_INFINITY);
    let mut known: Vec<(f64, f64)> = differences.iter().zip(log_seconds).filter_map(|(d, s)| s.map(|s| (s, log_deviation(*d)))).collect();
    known.sort_by(|a, b| a.0.total_cmp(&b.0));
    let count = (known.len() / MIN_POINTS_FOR_DRIFT).clamp(1, 10);
    let bins: Vec<(f64, f64)> = (0..count)
        .filter_map(|i| {
            let bin = &known[i * known.len() / count..(i + 1) * known.len() / count];
            Some((median(&bin.iter().map(|p| p.0).collect::<Vec<_>>())?, median(&bin.iter().map(|p| p.1).collect::<Vec<_>>())?))
        })
        .collect();
    let slopes: Vec<f64> = bins
        .iter()
        .enumerate()
        .flat_map(|(i, a)| bins[i + 1..].iter().filter(|b| b.0 >= a.0 + MIN_LOG_LENGTH_STEP).map(move |b| (b.1 - a.1) / (b.0 - a.0)))
        .collect();
    // Never rising with the run length (a longer run averages more of the machine's
    // moods), and placed by every point, not by the bins: points that really changed
    // share run lengths (a system's writes), and could fill a bin of their own.
    let line = median(&slopes).map(|slope| {
        let slope = slope.min(0.0);
        let intercept = median(&known.iter().map(|(x, y)| y - slope * x).collect::<Vec<_>>()).unwrap_or(overall);
        (slope, intercept)
    });
    move |log_seconds: Option<f64>| {
        let log_deviation = match (line, log_seconds) {
            (Some((slope, intercept)), Some(s)) => intercept + slope * s,
            _ => overall,
        };
        (1.4826 * log_deviation.exp()).powi(2)
    }
}

/// Bins whose median run lengths differ by less than this (in log: a factor of two) make no
/// slope: `--quick` runs mostly last their 30 ms, and between bins at 30.0 and 30.2 ms
/// the slope is noise divided by almost nothing, which once tilted the line so far that
/// every interval of a pair was 60x wide.
const MIN_LOG_LENGTH_STEP: f64 = std::f64::consts::LN_2;

/// Fewest common points from which the drift between two reports is estimated.
const MIN_POINTS_FOR_DRIFT: usize = 8;
/// The efficiency of the median absolute deviation against the standard deviation for
/// normal data (Rousseeuw and Croux 1993): a MAD from n values is worth about 0.37 n
/// values' variance.
const MAD_EFFICIENCY: f64 = 0.37;

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
mod tests;
