//! The findings of one report, computed once for the console and report.html: per
//! experiment, the targets ranked by throughput at its headline point (by response time
//! p99 at a fixed rate, where every target is asked the same throughput), each one's
//! distance from the leader with a 95 % interval (`uncertainty`'s model: run-to-run
//! variance moderated across the report's points, plus drift) and what that interval lets
//! one say — behind, tied, or too few samples to rank, with the fix — and the flags that
//! void or weaken a standing; then
//! a relative-performance table across experiments (each target's time relative to the
//! fastest, and their geometric mean), as ClickBench summarises a benchmark.
//! Owns what is found, not how it is printed; must not read anything but a saved report.

use super::format::{micros, point_label, rate};
use super::model::{Flag, PointResult, Report};
use super::uncertainty::{Call, LogEstimate, Model, RatioInterval, VariancePart, median, run_response_p99s, run_throughputs, too_few_hint};
use crate::base::durability::{self, Durability};
use serde::Serialize;
use std::collections::BTreeMap;

/// The experiment every study runs first to measure the client's own ceiling; it ranks
/// nothing.
const ECHO_FLOOR: &str = "echo-floor";
/// Confidence of each standing's interval (one ranking per experiment, not a screen of
/// every point as in `compare`).
const FINDINGS_CONFIDENCE: f64 = 0.95;

/// How a standing's caveat starts when the data cannot rank it against the leader.
pub const TOO_FEW_SAMPLES: &str = "too few samples to rank";

/// The system of the client-ceiling target.
const NO_DATABASE: &str = "nodb";

/// One target's place in one experiment.
#[derive(Debug, Clone, Serialize)]
pub struct Standing {
    pub target: String,
    /// Median ok ops/s of the measured runs; `None` when void or not measured.
    pub ops_per_sec: Option<f64>,
    /// Fixed-rate headline points: the response time p99 (from each op's intended start)
    /// of the measured runs together, in µs, which ranks them; `None` at a closed loop.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_p99_us: Option<f64>,
    /// How many times this target's throughput the leader's is (at a fixed rate: how many
    /// times the leader's response p99 this target's is), with its interval; `None` for the
    /// leader, without a value, or without two runs on both sides.
    pub behind: Option<RatioInterval>,
    /// The leader's median throughput over this target's, or this target's response p99
    /// over the leader's (1 for the leader).
    pub behind_estimate: Option<f64>,
    /// What the interval lets one say against the leader: `different` (behind), `tied`,
    /// or `too_few_samples` (the data cannot rank them); `None` for the leader or without
    /// an interval.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call: Option<Call>,
    /// With `too_few_samples` (or without an interval): the runs it has and how to get
    /// enough ("2 runs of 40 ms each; use --runs 5 or --duration 10s").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub too_few: Option<String>,
    /// What voids or weakens this standing, in words ("VOID: 3 failed requests").
    pub caveats: Vec<String>,
}

impl Standing {
    /// Ranked by (has a value).
    fn ranked(&self, by: RankedBy) -> bool {
        match by {
            RankedBy::Throughput => self.ops_per_sec.is_some(),
            RankedBy::ResponseP99 => self.response_p99_us.is_some(),
        }
    }

    /// The standing's value in words: "8.4k/s (1.20x slower)", "8.3k/s (tied)", "2.1k/s
    /// (1.4x slower?)" (too few samples: its caveats say why), "response p99 5.42ms at
    /// 2.0k/s (220x slower)", "no result".
    pub fn value(&self) -> String {
        let slower = match (self.behind_estimate, self.call) {
            (Some(_), Some(Call::Tied)) => " (tied)".to_string(),
            (Some(r), Some(Call::TooFewSamples)) if r > 1.0 => format!(" ({} slower?)", times(r)),
            (Some(_), Some(Call::TooFewSamples)) => " (?)".to_string(),
            (Some(r), _) if r > 1.0 => format!(" ({} slower)", times(r)),
            _ => String::new(),
        };
        match (self.response_p99_us, self.ops_per_sec) {
            (Some(p99), Some(v)) => format!("response p99 {} at {}/s{slower}", micros(p99), rate(v)),
            (None, Some(v)) => format!("{}/s{slower}", rate(v)),
            _ => "no result".into(),
        }
    }
}

/// What an experiment's targets are ranked by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RankedBy {
    /// Median ok ops/s, higher first.
    Throughput,
    /// At a fixed rate: response time p99 from each op's intended start, lower first.
    ResponseP99,
}

/// One experiment's ranking.
#[derive(Debug, Clone, Serialize)]
pub struct ExperimentFinding {
    pub experiment: String,
    pub op: String,
    pub ranked_by: RankedBy,
    /// The point the ranking is at (`c=8 b=1`): the one most targets measured, the
    /// heaviest of those.
    pub point: String,
    /// Fastest first; void and unmeasured targets last.
    pub standings: Vec<Standing>,
}

impl ExperimentFinding {
    /// The headline in words: "sqlite is 75x faster than duckdb (95 % interval 72-78x)".
    pub fn sentence(&self) -> String {
        let ranked: Vec<&Standing> = self.standings.iter().filter(|s| s.ranked(self.ranked_by)).collect();
        let (is, faster) = match self.ranked_by {
            RankedBy::Throughput => ("is", "faster than"),
            RankedBy::ResponseP99 => ("answers", "sooner at p99 than"),
        };
        match ranked.as_slice() {
            [] => "no target has a valid result".into(),
            [only] => format!("only {} has a valid result", only.target),
            // The medians' ratio, as in the standings; the interval is the runs' geometric means'.
            [leader, second, ..] => {
                let (a, b) = (&leader.target, &second.target);
                match (second.behind.filter(|_| second.call.is_some()), second.behind_estimate) {
                    (Some(i), Some(r)) => match (second.call, i.text()) {
                        (Some(Call::Different), Some(interval)) => {
                            format!("{a} {is} {} {faster} {b} (95 % interval {interval})", times(r))
                        }
                        (Some(Call::Tied), Some(interval)) => {
                            format!("{a} and {b} are tied ({} apart, 95 % interval {interval})", times(r))
                        }
                        (_, interval) => format!(
                            "{a} and {b} cannot be ranked: {} apart{}, too few samples ({})",
                            times(r),
                            interval.map(|i| format!(", 95 % interval {i}")).unwrap_or_default(),
                            second.too_few.as_deref().unwrap_or("more runs needed")
                        ),
                    },
                    (None, Some(r)) => {
                        format!("{a} {is} {} {faster} {b}, not tested: {}", times(r), second.too_few.as_deref().unwrap_or("no interval"))
                    }
                    (_, None) => format!("{a} leads"),
                }
            }
        }
    }
}

/// A target's geometric mean of its relative times across experiments.
#[derive(Debug, Clone, Serialize)]
pub struct Overall {
    pub target: String,
    /// Geometric mean of "times the fastest's time" over the experiments it has a value in.
    pub geometric_mean: Option<f64>,
    /// Its 95 % interval from the runs' spreads (normal approximation on the logarithms).
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Experiments it has a value in, of all ranked.
    pub experiments_with_value: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Findings {
    pub experiments: Vec<ExperimentFinding>,
    /// Targets in report order (the relative table's columns).
    pub targets: Vec<String>,
    pub overall: Vec<Overall>,
    /// When the database targets do not all force the same to disk: a sentence that says
    /// which does what (a target that syncs less does less work per commit).
    pub durability_note: Option<String>,
}

impl Findings {
    pub fn of(report: &Report) -> Findings {
        let targets: Vec<String> = report
            .targets
            .iter()
            .filter(|t| t.system != NO_DATABASE)
            .map(|t| t.name.clone())
            .chain(report.points.iter().filter(|p| p.system != NO_DATABASE).map(|p| p.target.clone()))
            .fold(Vec::new(), |mut seen, t| {
                if !seen.contains(&t) {
                    seen.push(t);
                }
                seen
            });
        let mut names: Vec<&str> = Vec::new();
        for p in &report.points {
            if p.experiment != ECHO_FLOOR && !names.contains(&p.experiment.as_str()) {
                names.push(&p.experiment);
            }
        }
        let models = Models::of(&report.points);
        let experiments: Vec<ExperimentFinding> = names
            .into_iter()
            .filter_map(|name| {
                let points: Vec<&PointResult> = report.points.iter().filter(|p| p.experiment == name && p.system != NO_DATABASE).collect();
                finding(name, &points, &models)
            })
            .collect();
        let overall = targets.iter().map(|t| overall(t, &experiments)).collect();
        Findings { experiments, targets, overall, durability_note: durability_note(report) }
    }

    /// A target's time relative to the fastest in one experiment (1 = fastest).
    pub fn relative(finding: &ExperimentFinding, target: &str) -> Option<f64> {
        let s = finding.standings.iter().find(|s| s.target == target)?;
        s.ops_per_sec?;
        s.behind_estimate
    }

    /// The relative table's cell: "1.00" for the fastest, "3.10x", "void" (measured, no
    /// valid result) or "-" (not measured).
    pub fn relative_text(finding: &ExperimentFinding, target: &str) -> String {
        match Findings::relative(finding, target) {
            Some(r) if r <= 1.0 => "1.00".into(),
            Some(r) => times(r),
            None if finding.standings.iter().any(|s| s.target == target) => "void".into(),
            None => "-".into(),
        }
    }
}

impl Overall {
    /// "3.10x (2.90x-3.30x)", without the interval when there is none, "-" without a value.
    pub fn text(&self) -> String {
        match (self.geometric_mean, self.low, self.high) {
            (Some(g), Some(lo), Some(hi)) if hi > lo && hi / lo <= super::uncertainty::WIDEST_SHOWN => {
                format!("{} ({}-{})", times(g), times(lo), times(hi))
            }
            (Some(g), _, _) => times(g),
            (None, _, _) => "-".into(),
        }
    }
}

/// "3.1x", "75x", "1.00x": three significant digits where they matter.
pub fn times(ratio: f64) -> String {
    let digits = if ratio >= 0.9995 || ratio <= 0.0 {
        super::format::three_significant_decimals(ratio)
    } else {
        (2 - ratio.log10().floor() as i32).clamp(2, 6) as usize
    };
    format!("{ratio:.digits$}x")
}

/// The ranking of `points` (one experiment) at their headline point; `models` hold the
/// report's throughput and response-p99 variances.
fn finding(experiment: &str, points: &[&PointResult], models: &Models) -> Option<ExperimentFinding> {
    let headline = headline(points)?;
    let ranked_by = if headline.point.rate.is_some() { RankedBy::ResponseP99 } else { RankedBy::Throughput };
    let at: Vec<&PointResult> = points.iter().copied().filter(|p| same_point(p, headline)).collect();
    // Each standing with its score (higher is better: ops/s, or 1 / response p99) and the
    // estimate of its log score, so one ratio and interval serve both rankings.
    let mut standings: Vec<Scored> = at
        .iter()
        .map(|p| {
            let throughputs = run_throughputs(p);
            let response_p99_us = match ranked_by {
                RankedBy::ResponseP99 if !throughputs.is_empty() => {
                    p.summary.as_ref().and_then(|s| s.response_latency.as_ref()).map(|l| l.p99_us).filter(|us| *us > 0.0)
                }
                _ => None,
            };
            let standing = Standing {
                target: p.target.clone(),
                ops_per_sec: median(&throughputs),
                response_p99_us,
                behind: None,
                behind_estimate: None,
                call: None,
                too_few: None,
                caveats: caveats(p),
            };
            let (score, estimate) = match ranked_by {
                RankedBy::Throughput => (standing.ops_per_sec, models.throughput.throughput_of(p)),
                RankedBy::ResponseP99 => {
                    let inverse: Vec<f64> = run_response_p99s(p).iter().map(|us| 1.0 / us).collect();
                    (response_p99_us.map(|us| 1.0 / us), models.response_p99.estimate(&inverse, 0.0))
                }
            };
            Scored { standing, score, estimate, seconds: p.run_seconds().map(|s| s.median) }
        })
        .collect();
    standings.sort_by(|a, b| match (a.score, b.score) {
        (Some(a), Some(b)) => b.total_cmp(&a),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let drift = match ranked_by {
        RankedBy::Throughput => models.throughput.drift(),
        RankedBy::ResponseP99 => models.response_p99.drift(),
    };
    let (leader_score, leader_estimate) = (standings[0].score, standings[0].estimate);
    for (i, Scored { standing: s, score, estimate, seconds }) in standings.iter_mut().enumerate() {
        let (Some(this), Some(leader)) = (*score, leader_score) else { continue };
        s.behind_estimate = Some(leader / this);
        if i == 0 {
            continue;
        }
        match (*estimate, leader_estimate) {
            (Some(this), Some(leader)) => {
                // Each side's run-to-run noise and, for each, one typical run's drift: the
                // two were measured at different times.
                let parts = [this.into(), leader.into(), VariancePart { variance: 2.0 * drift, degrees_of_freedom: 1e6 }];
                let interval = RatioInterval::of(leader.mean - this.mean, &parts, FINDINGS_CONFIDENCE);
                s.behind = Some(interval);
                s.call = Some(interval.call());
                if interval.call() == Call::TooFewSamples {
                    s.too_few = Some(too_few_hint(this.runs.min(leader.runs), *seconds));
                }
            }
            (this, _) => s.too_few = Some(too_few_hint(this.map_or(1, |e| e.runs), *seconds)),
        }
    }
    // The fix is in the headline sentence and in `too_few`; the caveat only marks it.
    let leader = standings[0].standing.target.clone();
    for s in standings.iter_mut().skip(1).map(|s| &mut s.standing) {
        if s.too_few.is_some() && s.behind_estimate.is_some() {
            s.caveats.push(format!("{TOO_FEW_SAMPLES} against {leader}"));
        }
    }
    Some(ExperimentFinding {
        experiment: experiment.to_string(),
        op: headline.op.name().to_string(),
        ranked_by,
        point: point_label(&headline.point, headline.op),
        standings: standings.into_iter().map(|s| s.standing).collect(),
    })
}

/// A standing while it is ranked: its score (higher is better), the estimate of its log
/// score, and its runs' median length (for the hint when it cannot be ranked).
struct Scored {
    standing: Standing,
    score: Option<f64>,
    estimate: Option<LogEstimate>,
    seconds: Option<f64>,
}

/// The report's variance models: throughput, and the inverse response p99 that ranks
/// fixed-rate points.
struct Models {
    throughput: Model,
    response_p99: Model,
}

impl Models {
    fn of(points: &[PointResult]) -> Models {
        let inverse: Vec<Vec<f64>> = points.iter().map(|p| run_response_p99s(p).iter().map(|us| 1.0 / us).collect()).collect();
        Models { throughput: Model::throughput(points), response_p99: Model::fit(inverse.iter().map(Vec::as_slice)) }
    }
}

fn same_point(a: &PointResult, b: &PointResult) -> bool {
    a.point == b.point
}

/// The point most targets have a throughput at; of those, the last in plan order (the
/// most clients, the largest batch or size: the heaviest load measured).
fn headline<'a>(points: &[&'a PointResult]) -> Option<&'a PointResult> {
    // Targets with a throughput per point, counted in one pass (sweeps have thousands).
    let mut valid: std::collections::HashMap<_, usize> = std::collections::HashMap::new();
    for q in points.iter().filter(|q| !run_throughputs(q).is_empty()) {
        *valid.entry(q.point).or_default() += 1;
    }
    let mut best: Option<(&PointResult, usize)> = None;
    for p in points {
        let n = valid.get(&p.point).copied().unwrap_or(0);
        if best.is_none_or(|(_, most)| n >= most) {
            best = Some((p, n));
        }
    }
    best.map(|(p, _)| p)
}

/// "Durability differs: commit (fsync at every commit) — duckdb, sqlite; none — redis. ..."
/// when the database targets' `durability` settings state different levels (or some state
/// none); `None` when they agree.
fn durability_note(report: &Report) -> Option<String> {
    let mut by_level: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for t in report.targets.iter().filter(|t| t.system != NO_DATABASE) {
        let stated = t.settings.get(durability::SETTING).or_else(|| t.settings.get("server.durability"));
        let level = stated.and_then(|s| Durability::of_setting(s)).map_or("unknown".to_string(), |d| d.to_string());
        by_level.entry(level).or_default().push(&t.name);
    }
    if by_level.len() < 2 {
        return None;
    }
    // Strongest first: commit, periodic, none, unknown.
    let order = |level: &str| Durability::parse(level).map_or(0, |d| d as usize + 1);
    let mut levels: Vec<(String, Vec<&str>)> = by_level.into_iter().collect();
    levels.sort_by_key(|(level, _)| std::cmp::Reverse(order(level)));
    let groups: Vec<String> = levels.iter().map(|(level, names)| format!("{level} — {}", names.join(", "))).collect();
    Some(format!(
        "Durability differs: {}. A target that forces less to disk does less work per commit; each target's durability setting says what it does, and --durability sets one level for every target that has it.",
        groups.join("; ")
    ))
}

/// What voids or weakens a standing, in words.
fn caveats(p: &PointResult) -> Vec<String> {
    let mut out = Vec::new();
    for f in &p.flags {
        let text = match f {
            Flag::Errors { count, .. } => format!("VOID: {count} failed request{}", if *count == 1 { "" } else { "s" }),
            Flag::MissingRows { count } => format!("VOID: {count} missing row{}", if *count == 1 { "" } else { "s" }),
            Flag::AnswerMismatch { .. } => "WRONG ANSWER: timing void".to_string(),
            Flag::WorkerShare { .. } => "VOID: a worker's result did not fit its share".to_string(),
            Flag::ClientBound { share } => format!("client-bound ({:.0} % of the client's ceiling): may be faster", share * 100.0),
            Flag::NotConverged { asked, .. } => format!("not converged to ±{:.1} %", asked * 100.0),
            Flag::Retried { count } => format!("{count} retried request{}", if *count == 1 { "" } else { "s" }),
            Flag::Incomplete => "incomplete".to_string(),
            Flag::NotSupported => "not supported".to_string(),
            Flag::MissedRate { .. } => super::format::missed_rate(f).unwrap_or_default(),
            Flag::WideSpread { spread, overlaps } => {
                format!("runs spread ±{:.0} %, too wide to rank against {}", spread * 100.0, overlaps.join(", "))
            }
        };
        out.push(text);
    }
    if p.is_void() {
        // Nothing weakens what is void: only why it is.
        out.retain(|c| c.starts_with("VOID") || c.starts_with("WRONG") || c == "incomplete");
        if out.is_empty() {
            out.push("VOID".to_string());
        }
    }
    out
}

/// A target's geometric mean of relative times, its interval from the runs' spreads.
fn overall(target: &str, experiments: &[ExperimentFinding]) -> Overall {
    let mut logs = Vec::new();
    let mut variance = 0.0;
    let mut every_interval = true;
    for e in experiments {
        let Some(s) = e.standings.iter().find(|s| s.target == target && s.ops_per_sec.is_some()) else { continue };
        let Some(ratio) = s.behind_estimate else { continue };
        logs.push(ratio.ln());
        match s.behind {
            // The leader's own ratio is exactly 1: no variance.
            Some(i) if i.high > i.low => variance += ((i.high.ln() - i.low.ln()) / (2.0 * 1.959_964)).powi(2),
            Some(_) => {}
            None => every_interval = ratio == 1.0 && every_interval,
        }
    }
    if logs.is_empty() {
        return Overall { target: target.into(), geometric_mean: None, low: None, high: None, experiments_with_value: 0 };
    }
    let k = logs.len() as f64;
    let center = logs.iter().sum::<f64>() / k;
    let half = 1.959_964 * (variance / (k * k)).sqrt();
    let (low, high) = if every_interval { (Some((center - half).exp()), Some((center + half).exp())) } else { (None, None) };
    Overall { target: target.into(), geometric_mean: Some(center.exp()), low, high, experiments_with_value: logs.len() }
}

#[cfg(test)]
mod tests;
