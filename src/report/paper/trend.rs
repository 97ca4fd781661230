//! The papers' trend claims ("SSDB pulls ahead with more threads", "H2's reads slow as the
//! data grows") judged on a run's points along one axis (threads, records, batch size,
//! range width): a weighted least-squares slope of the log throughput (or of the log ratio
//! of two targets' throughputs) against the log of the axis, its interval from the points'
//! own (`uncertainty`'s model: run-to-run variance moderated across the report, plus one
//! typical run's drift per point), stated as the fitted change from the axis's first
//! measured value to its last. A trend is called only when that interval says so: it
//! grows or falls when the interval excludes 1, it is flat when the interval lies within
//! `uncertainty::TIED_WITHIN` either way. Memory changes have no interval: no trend is
//! called from them.
//! Owns the trend rule and its words; must not read anything but a saved report.

use super::{CONFIDENCE, Judge, Missing, Verdict, VerdictKind, unusable};
use crate::base::span;
use crate::report::model::PointResult;
use crate::report::summary::times;
use crate::report::uncertainty::{LogEstimate, RatioInterval, TIED_WITHIN, VariancePart, too_few_hint};
use serde::Deserialize;

/// The axis a trend runs along.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// Clients (the papers' threads).
    Clients,
    /// The point's `param`: records, keys, range width.
    Param,
    /// Batch size (batched points).
    Batch,
}

/// Which way the paper says the trend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    Grows,
    Falls,
    Flat,
}

/// What a trend follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrendQuantity {
    /// The target's throughput, or with `versus` its throughput over the other's (its
    /// lead).
    Throughput,
    /// Time per operation: the inverse of throughput.
    Time,
    /// Memory change over the operation (server PSS growth): listed, never called.
    Memory,
}

/// One system of a trend: the paper's name and dbsweep's target.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrendSide {
    pub system: String,
    pub target: String,
}

/// A trend the paper's text states, as its file holds it (`[[trends]]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TrendSpec {
    pub id: String,
    pub claim: String,
    pub source: String,
    pub conditions: String,
    /// The paper's words, verbatim (checked against the seed text).
    pub quote: String,
    pub experiment: String,
    pub axis: Axis,
    /// The axis values the paper measured: the points a run needs (the command names the
    /// missing ones); the fit uses every measured value between the first and the last.
    pub values: Vec<u64>,
    /// The coordinates held fixed: `param` when the axis is not it, `clients` (1 when not
    /// given) when the axis is not clients, `batch` for batched points.
    #[serde(default)]
    pub param: Option<u64>,
    #[serde(default)]
    pub clients: Option<usize>,
    #[serde(default)]
    pub batch: Option<usize>,
    pub quantity: TrendQuantity,
    pub direction: Direction,
    pub of: TrendSide,
    /// With a second system, the trend is of `of`'s lead over it (throughput ratio).
    #[serde(default)]
    pub versus: Option<TrendSide>,
    #[serde(default)]
    pub by_construction: Option<String>,
}

impl TrendSpec {
    fn axis_words(&self) -> &'static str {
        match self.axis {
            Axis::Clients => "clients",
            Axis::Param => "size",
            Axis::Batch => "batch size",
        }
    }

    /// What follows "from 1 to 8": "clients", "in size", "in batch size".
    fn axis_unit(&self) -> &'static str {
        match self.axis {
            Axis::Clients => "clients",
            Axis::Param => "in size",
            Axis::Batch => "in batch size",
        }
    }

    /// "workload-a n=1000 c=1..8", "read-one n=1,000..1,000,000".
    pub fn label(&self) -> String {
        let (first, last) = (self.first(), self.last());
        let range = |tag: &str| format!("{tag}={}..{}", span::count(first), span::count(last));
        let mut parts = vec![self.experiment.clone()];
        match self.axis {
            Axis::Clients => parts.push(range("c")),
            _ if self.clients.unwrap_or(1) != 1 => parts.push(format!("c={}", self.clients.unwrap_or(1))),
            _ => {}
        }
        match self.axis {
            Axis::Batch => parts.push(range("b")),
            _ => parts.extend(self.batch.map(|b| format!("b={b}"))),
        }
        match self.axis {
            Axis::Param => parts.push(range("n")),
            _ => parts.extend(self.param.map(|n| format!("n={n}"))),
        }
        parts.join(" ")
    }

    fn first(&self) -> u64 {
        self.values.iter().copied().min().unwrap_or(0)
    }

    fn last(&self) -> u64 {
        self.values.iter().copied().max().unwrap_or(0)
    }

    /// The point's value on the axis, when it is a point of this trend.
    pub(super) fn on_axis(&self, p: &PointResult) -> Option<u64> {
        if p.experiment != self.experiment || p.point.rate.is_some() {
            return None;
        }
        let batched = match (self.axis, self.batch) {
            (Axis::Batch, _) => p.point.batched,
            (_, Some(b)) => p.point.batched && p.point.batch == b,
            // Unbatched, or one request of the whole size (insert-find's insert-all).
            (Axis::Param, None) => !p.point.batched || p.point.param == Some(p.point.batch as u64),
            (_, None) => !p.point.batched,
        };
        let clients = self.axis == Axis::Clients || p.point.clients == self.clients.unwrap_or(1);
        let param = self.axis == Axis::Param || self.param.is_none_or(|n| p.point.param == Some(n));
        if !(batched && clients && param) {
            return None;
        }
        let x = match self.axis {
            Axis::Clients => p.point.clients as u64,
            Axis::Param => p.point.param?,
            Axis::Batch => p.point.batch as u64,
        };
        (self.first()..=self.last()).contains(&x).then_some(x)
    }

    /// "SSDB's lead over Redis grows with clients", "H2's time per op grows with size".
    fn paper_text(&self) -> String {
        let what = match (&self.versus, self.quantity) {
            (Some(v), _) => format!("{}'s lead over {}", self.of.system, v.system),
            (None, TrendQuantity::Throughput) => format!("{}'s throughput", self.of.system),
            (None, TrendQuantity::Time) => format!("{}'s time per op", self.of.system),
            (None, TrendQuantity::Memory) => format!("{}'s memory change", self.of.system),
        };
        let how = match self.direction {
            Direction::Grows => "grows",
            Direction::Falls => "falls",
            Direction::Flat => "stays flat",
        };
        format!("{what} {how} with {} ({}..{})", self.axis_words(), span::count(self.first()), span::count(self.last()))
    }
}

/// One axis value's estimate: the log of the trend's quantity and its variance parts.
struct Step {
    at: u64,
    x: f64,
    y: f64,
    parts: Vec<VariancePart>,
}

/// The fitted change from the first measured axis value to the last, with its interval.
pub(super) struct Fit {
    pub interval: RatioInterval,
    pub first: u64,
    pub last: u64,
    pub points: usize,
}

/// Weighted least squares of `y` on ln `x`, each step weighted by the inverse of its
/// variance; the change over the axis is exp(slope * ln(last / first)), its variance each
/// step's part scaled by its coefficient in the slope (Welch-Satterthwaite degrees of
/// freedom in `RatioInterval::of`).
fn fit(steps: &[Step]) -> Option<Fit> {
    let (first, last) = (steps.first()?.at, steps.last()?.at);
    if steps.len() < 2 || first == last {
        return None;
    }
    let variance = |s: &Step| s.parts.iter().map(|p| p.variance).sum::<f64>();
    let weights: Vec<f64> = steps.iter().map(|s| 1.0 / variance(s).max(1e-12)).collect();
    let total: f64 = weights.iter().sum();
    let mean_x = steps.iter().zip(&weights).map(|(s, w)| w * s.x).sum::<f64>() / total;
    let mean_y = steps.iter().zip(&weights).map(|(s, w)| w * s.y).sum::<f64>() / total;
    let sxx: f64 = steps.iter().zip(&weights).map(|(s, w)| w * (s.x - mean_x).powi(2)).sum();
    if sxx <= 0.0 {
        return None;
    }
    let span = (last as f64 / first as f64).ln();
    let coefficients: Vec<f64> = steps.iter().zip(&weights).map(|(s, w)| w * (s.x - mean_x) / sxx * span).collect();
    let change: f64 = steps.iter().zip(&coefficients).map(|(s, c)| c * (s.y - mean_y)).sum();
    let parts: Vec<VariancePart> = steps
        .iter()
        .zip(&coefficients)
        .flat_map(|(s, c)| s.parts.iter().map(move |p| VariancePart { variance: p.variance * c * c, ..*p }))
        .collect();
    Some(Fit { interval: RatioInterval::of(change, &parts, CONFIDENCE), first, last, points: steps.len() })
}

/// What a fitted change says of the paper's direction.
pub(super) fn call(direction: Direction, i: &RatioInterval) -> (VerdictKind, &'static str) {
    let flat = i.low >= 1.0 / TIED_WITHIN && i.high <= TIED_WITHIN;
    let grows = i.low > 1.0;
    let falls = i.high < 1.0;
    match direction {
        Direction::Grows if grows => (VerdictKind::Reproduced, "it grows here too"),
        Direction::Falls if falls => (VerdictKind::Reproduced, "it falls here too"),
        Direction::Grows if falls => (VerdictKind::Differs, "it falls here"),
        Direction::Falls if grows => (VerdictKind::Differs, "it grows here"),
        Direction::Grows | Direction::Falls if flat => (VerdictKind::Differs, "flat here"),
        Direction::Flat if flat => (VerdictKind::Reproduced, "flat here too"),
        Direction::Flat if i.low > TIED_WITHIN || i.high < 1.0 / TIED_WITHIN => (VerdictKind::Differs, "not flat here"),
        _ => (VerdictKind::NotComparable, "the data cannot tell"),
    }
}

impl<'a> Judge<'a> {
    pub(super) fn trend(&mut self, t: &TrendSpec) -> Verdict {
        let mut targets = vec![t.of.target.clone()];
        targets.extend(t.versus.as_ref().map(|v| v.target.clone()));
        let mut verdict = Verdict {
            finding: t.id.clone(),
            claim: t.claim.clone(),
            source: t.source.clone(),
            conditions: t.conditions.clone(),
            point: t.label(),
            targets: targets.clone(),
            paper: t.paper_text(),
            dbsweep: String::new(),
            verdict: VerdictKind::NotComparable,
            reason: String::new(),
            not_run: false,
        };
        let left_out: Vec<String> = targets
            .iter()
            .filter_map(|target| self.paper.stand_in(target).or_else(|| self.paper.unavailable(target)))
            .map(|why| format!("{} left out ({})", why.paper, why.reason))
            .collect();
        let mut notes: Vec<String> = left_out.clone();
        notes.extend(self.scale_note());
        notes.extend(t.by_construction.clone());
        let finish = |mut v: Verdict, kind: VerdictKind, reason: String| {
            v.verdict = if left_out.is_empty() { kind } else { VerdictKind::NotComparable };
            v.reason = std::iter::once(reason).filter(|r| !r.is_empty()).chain(notes.iter().cloned()).collect::<Vec<_>>().join("; ");
            v
        };
        let (steps, skipped) = self.steps(t);
        let measured: Vec<u64> = steps.iter().map(|(x, _)| *x).collect();
        if t.quantity == TrendQuantity::Memory {
            verdict.dbsweep = self.memory_text(t, &measured);
            let reason = "memory changes have no interval here (medians of the runs; a JVM's memory follows its garbage collector): no trend is called from them";
            return finish(verdict, VerdictKind::NotComparable, reason.into());
        }
        let missing: Vec<u64> = t.values.iter().copied().filter(|x| !measured.contains(x)).collect();
        let steps: Vec<Step> = steps.into_iter().filter_map(|(_, s)| s).collect();
        let skipped_text = (!skipped.is_empty()).then(|| format!("{} left out: {}", skipped.len(), skipped.join("; ")));
        let absent = targets.iter().any(|target| !self.report.targets.iter().any(|i| &i.name == target));
        let Some(fit) = fit(&steps) else {
            let reason = if !missing.is_empty() || absent {
                verdict.not_run = left_out.is_empty();
                self.trend_not_run(t, &missing, left_out.is_empty())
            } else {
                let hint = self.too_few(t);
                format!("fewer than two usable points on the axis{}{hint}", skipped_text.map(|s| format!(" ({s})")).unwrap_or_default())
            };
            return finish(verdict, VerdictKind::NotComparable, reason);
        };
        verdict.dbsweep = self.fit_text(t, &fit);
        let (kind, words) = call(t.direction, &fit.interval);
        let mut reason = match kind {
            VerdictKind::NotComparable => format!("{words}: {}", self.too_few(t).trim_start_matches("; ")),
            _ => words.to_string(),
        };
        if !missing.is_empty() && left_out.is_empty() {
            reason.push_str(&format!(" (over {}; the paper's {} not run)", measured_list(&measured), measured_list(&missing)));
        }
        if let Some(s) = skipped_text {
            reason.push_str(&format!(" ({s})"));
        }
        finish(verdict, kind, reason)
    }

    /// Each measured axis value (in order) with its step, `None` when its points cannot
    /// be used; and why those were left out.
    fn steps(&self, t: &TrendSpec) -> (Vec<(u64, Option<Step>)>, Vec<String>) {
        let point_of = |target: &str, x: u64| self.report.points.iter().find(|p| p.target == target && t.on_axis(p) == Some(x));
        let mut xs: Vec<u64> = self.report.points.iter().filter(|p| p.target == t.of.target).filter_map(|p| t.on_axis(p)).collect();
        xs.sort_unstable();
        xs.dedup();
        let drift = VariancePart { variance: self.model.drift(), degrees_of_freedom: 1e6 };
        let mut skipped = Vec::new();
        let mut steps = Vec::new();
        for x in xs {
            let sides: Vec<(&str, Option<&PointResult>)> = std::iter::once(t.of.target.as_str())
                .chain(t.versus.as_ref().map(|v| v.target.as_str()))
                .map(|s| (s, point_of(s, x)))
                .collect();
            let mut y = 0.0;
            let mut parts = Vec::new();
            let mut usable = true;
            for (i, (target, point)) in sides.iter().enumerate() {
                let estimate: Option<LogEstimate> = match point {
                    None => {
                        skipped.push(format!("{target} has no point at {}", span::count(x)));
                        None
                    }
                    Some(p) => match unusable(p) {
                        Some(why) => {
                            skipped.push(format!("{target} at {} {why}", span::count(x)));
                            None
                        }
                        None => self.model.throughput_of(p),
                    },
                };
                let Some(e) = estimate else {
                    usable = false;
                    break;
                };
                y += if i == 0 { e.mean } else { -e.mean };
                parts.push(e.into());
                parts.push(drift);
            }
            if t.quantity == TrendQuantity::Time && t.versus.is_none() {
                y = -y;
            }
            steps.push((x, usable.then_some(Step { at: x, x: (x as f64).ln(), y, parts })));
        }
        (steps, skipped)
    }

    /// "redis's time per op ×6.80 from 1,000 to 1,000,000 (95 % 3.1x-15x), 4 points".
    fn fit_text(&self, t: &TrendSpec, fit: &Fit) -> String {
        let what = match (&t.versus, t.quantity) {
            (Some(v), _) => format!("{}'s lead over {}", t.of.target, v.target),
            (None, TrendQuantity::Time) => format!("{}'s time per op", t.of.target),
            _ => format!("{}'s throughput", t.of.target),
        };
        let i = &fit.interval;
        let shown = i.text().map(|s| format!(" (95 % {s})")).unwrap_or_else(|| " (95 % interval wider than 100x)".into());
        format!(
            "{what} changes {} from {} to {} {}{shown}, fitted over {} points",
            times(i.estimate),
            span::count(fit.first),
            span::count(fit.last),
            t.axis_unit(),
            fit.points
        )
    }

    /// The runs a trend whose interval cannot tell would need.
    fn too_few(&self, t: &TrendSpec) -> String {
        let runs = self.report.points.iter().find(|p| p.target == t.of.target && t.on_axis(p).is_some());
        runs.map(|p| format!("; {}", too_few_hint(p.measured_runs().len(), p.run_seconds().map(|s| s.median)))).unwrap_or_default()
    }

    /// "not run: this trend needs --clients 1,2,4,8", noted for the command when `record`
    /// (not for a stand-in's trend, which no run can judge).
    fn trend_not_run(&mut self, t: &TrendSpec, missing: &[u64], record: bool) -> String {
        let mut noted = Missing::default();
        let absent: Vec<String> = std::iter::once(&t.of)
            .chain(t.versus.as_ref())
            .filter(|s| !self.report.targets.iter().any(|i| i.name == s.target))
            .map(|s| self.paper.spawn.get(&s.target).cloned().unwrap_or_else(|| s.target.clone()))
            .collect();
        let mut needs = Vec::new();
        if !absent.is_empty() {
            needs.push(format!("--spawn {}", absent.join(",")));
            noted.spawn.extend(absent);
        }
        if !self.report.points.iter().any(|p| p.experiment == t.experiment) {
            needs.push(format!("experiment {}", t.experiment));
            noted.experiments.insert(t.experiment.clone());
        } else if needs.is_empty() {
            // The experiment ran on these targets, not at the axis values: the run to
            // judge it covers them all.
            let flag = match t.axis {
                Axis::Clients => {
                    noted.clients.extend(t.values.iter().map(|v| *v as usize));
                    "--clients".to_string()
                }
                Axis::Param => {
                    noted.params.extend(t.values.iter().copied());
                    self.paper.param_flag.clone()
                }
                Axis::Batch => {
                    noted.batches.extend(t.values.iter().map(|v| *v as usize));
                    "--batch".to_string()
                }
            };
            needs.push(format!("{flag} {}", t.values.iter().map(u64::to_string).collect::<Vec<_>>().join(",")));
        }
        if record {
            self.missing.absorb(noted);
        }
        format!("not run: this trend needs {} (measured here: {})", needs.join(", "), measured_list_or_none(missing, &t.values))
    }

    /// The server's memory growth at each measured axis value: "h2 server memory 1.2 / 3.4 /
    /// 60.1 MiB at 1,000 / 10,000 / 100,000".
    fn memory_text(&self, t: &TrendSpec, measured: &[u64]) -> String {
        let values: Vec<String> = measured
            .iter()
            .map(|x| {
                let p = self.report.points.iter().find(|p| p.target == t.of.target && t.on_axis(p) == Some(*x));
                match p.and_then(|p| p.summary.as_ref()).and_then(|s| s.memory.as_ref()).map(|m| m.server()) {
                    Some(crate::report::model::MemoryDelta::Bytes(v)) => format!("{:.1}", v / 1048576.0),
                    Some(crate::report::model::MemoryDelta::Missing) | None => "-".into(),
                    _ => "< noise".into(),
                }
            })
            .collect();
        if values.is_empty() {
            return String::new();
        }
        format!("{} server memory {} MiB at {}", t.of.target, values.join(" / "), measured_list(measured))
    }
}

/// "1,000 / 10,000".
fn measured_list(values: &[u64]) -> String {
    values.iter().map(|v| span::count(*v)).collect::<Vec<_>>().join(" / ")
}

/// The paper's values that were measured, or "none".
fn measured_list_or_none(missing: &[u64], all: &[u64]) -> String {
    let measured: Vec<u64> = all.iter().copied().filter(|v| !missing.contains(v)).collect();
    if measured.is_empty() { "none".into() } else { measured_list(&measured) }
}
