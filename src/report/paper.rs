//! The papers behind the built-in paper studies, as data, and a run's verdict on each of
//! their findings.
//!
//! Each paper study has a file beside its study file (`src/plan/studies/<study>.paper.toml`,
//! embedded here) that holds the paper's published numbers as printed, or the ordering its
//! text states, with their conditions and their place in the paper, and maps every
//! finding to dbsweep's counterpart point: experiment, targets, param, clients, batch.
//! After a run, `PaperVerdicts::of` compares each finding with the same point of the
//! report — the throughput ratio with `uncertainty`'s interval (the findings' model:
//! run-to-run variance moderated across the report, plus drift), or the client's memory
//! change with its noise rule — and calls it reproduced, differs or not comparable, with
//! a one-line reason; what the run did not measure is named with the command that would.
//! The trends the papers' texts state (along threads, records, batch size, range width)
//! are judged after the findings, on a fitted slope over the run's points (`trend`).
//! Owns the papers' data and the verdict rules; must not read anything but a saved report
//! and must not print (console and html render `PaperVerdicts`).

use super::model::{PointResult, PointStatus, Report};
use super::summary::times;
use super::uncertainty::{Call, Model, RatioInterval, VariancePart, too_few_hint};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Confidence of each verdict's interval, as the findings' rankings.
const CONFIDENCE: f64 = 0.95;

/// What a run says of one finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictKind {
    /// Same direction, and within the stated factor where the paper gives numbers.
    Reproduced,
    /// The opposite direction, or beyond the factor.
    Differs,
    /// A stand-in or missing system, a different quantity, a point not run, not measured
    /// or void, or data that cannot rank the systems.
    NotComparable,
}

impl VerdictKind {
    pub fn text(self) -> &'static str {
        match self {
            VerdictKind::Reproduced => "reproduced",
            VerdictKind::Differs => "differs",
            VerdictKind::NotComparable => "not comparable",
        }
    }
}

/// One finding's verdict, as report.json holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    /// The finding's id in the paper file.
    pub finding: String,
    pub claim: String,
    /// Where in the paper.
    pub source: String,
    pub conditions: String,
    /// dbsweep's counterpart: "experiment c=.. b=.. n=..", and the targets.
    pub point: String,
    pub targets: Vec<String>,
    /// The paper's side in short ("Redis (HDD) 0.0518 < MySQL (HDD) 2.1234 s (41.0x)").
    pub paper: String,
    /// dbsweep's side in short ("redis-cli 1.52x faster than mariadb-cli (95 % 1.40x-1.65x)"),
    /// empty when nothing was measured.
    pub dbsweep: String,
    pub verdict: VerdictKind,
    /// Why, in one line.
    pub reason: String,
    /// The point was not run here: this finding waits for the command in
    /// `PaperVerdicts::judge_with`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub not_run: bool,
}

/// Every finding of the study's paper, judged on one report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PaperVerdicts {
    /// The paper's title and authors.
    pub paper: String,
    /// The file in dbsweep's source tree that holds its findings.
    pub source: String,
    pub verdicts: Vec<Verdict>,
    /// When some findings' points were not run: the command that would run them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_with: Option<String>,
}

impl PaperVerdicts {
    /// The verdicts of the report's study's paper; `None` for a study without one.
    pub fn of(report: &Report) -> Option<PaperVerdicts> {
        let paper = Paper::of_study(&report.study)?;
        let findings = paper.findings();
        let mut judge = Judge { report, paper: &paper, model: Model::throughput(&report.points), missing: Missing::default() };
        let mut verdicts: Vec<Verdict> = findings.iter().map(|f| judge.verdict(f)).collect();
        verdicts.extend(paper.trends.iter().map(|t| judge.trend(t)));
        Some(PaperVerdicts {
            paper: paper.title.clone(),
            source: format!("src/plan/studies/{}.paper.toml", paper.study),
            judge_with: judge.missing.command(&paper),
            verdicts,
        })
    }

    pub fn count(&self, kind: VerdictKind) -> usize {
        self.verdicts.iter().filter(|v| v.verdict == kind).count()
    }

    /// "12 findings: 3 reproduced, 2 differ, 7 not comparable".
    pub fn tally(&self) -> String {
        format!(
            "{} findings: {} reproduced, {} differ{}, {} not comparable",
            self.verdicts.len(),
            self.count(VerdictKind::Reproduced),
            self.count(VerdictKind::Differs),
            if self.count(VerdictKind::Differs) == 1 { "s" } else { "" },
            self.count(VerdictKind::NotComparable)
        )
    }

    /// "5 findings were not judged: their points were not run; `dbsweep run ...` would run
    /// them", when some were not.
    pub fn not_run_text(&self) -> Option<String> {
        let n = self.verdicts.iter().filter(|v| v.not_run).count();
        let command = self.judge_with.as_ref()?;
        Some(format!(
            "{n} finding{} could not be judged: {} not run here; `{command}` would run {}",
            if n == 1 { "" } else { "s" },
            if n == 1 { "its point was" } else { "their points were" },
            if n == 1 { "it" } else { "them" }
        ))
    }
}

/// What the run would need to judge the findings it could not: the command's parts.
#[derive(Debug, Default)]
struct Missing {
    spawn: BTreeSet<String>,
    params: BTreeSet<u64>,
    clients: BTreeSet<usize>,
    batches: BTreeSet<usize>,
    experiments: BTreeSet<String>,
}

impl Missing {
    fn absorb(&mut self, other: Missing) {
        self.spawn.extend(other.spawn);
        self.params.extend(other.params);
        self.clients.extend(other.clients);
        self.batches.extend(other.batches);
        self.experiments.extend(other.experiments);
    }

    fn command(&self, paper: &Paper) -> Option<String> {
        let list = |v: &BTreeSet<u64>| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        let mut parts = vec![format!("dbsweep run {}", paper.study)];
        if self.spawn.contains("all") {
            parts.push("--spawn all".to_string());
        } else if !self.spawn.is_empty() {
            parts.push(format!("--spawn {}", self.spawn.iter().cloned().collect::<Vec<_>>().join(",")));
        }
        if !self.experiments.is_empty() {
            parts.push(format!("--experiments {}", self.experiments.iter().cloned().collect::<Vec<_>>().join(",")));
        }
        if !self.params.is_empty() {
            parts.push(format!("{} {}", paper.param_flag, list(&self.params)));
        }
        if !self.clients.is_empty() {
            parts.push(format!("--clients {}", list(&self.clients.iter().map(|c| *c as u64).collect())));
        }
        if !self.batches.is_empty() {
            parts.push(format!("--batch {}", list(&self.batches.iter().map(|c| *c as u64).collect())));
        }
        (parts.len() > 1).then(|| parts.join(" "))
    }
}

/// A system of a finding with its measured point, once looked up.
struct Side<'a> {
    entry: &'a Entry,
    value: Option<f64>,
    point: Option<&'a PointResult>,
}

/// How one adjacent pair of the paper's order came out.
enum Pair {
    /// dbsweep's order agrees: the better's advantage and its interval (throughput) or the
    /// two medians' ratio (memory, no interval); `beyond`: outside the stated factor.
    Agrees {
        text: String,
        beyond: Option<String>,
    },
    Reversed {
        text: String,
    },
    CannotRank {
        text: String,
    },
    /// The paper has them equal: no direction to check.
    PaperTie,
    NotMeasured {
        text: String,
        not_run: bool,
    },
}

struct Judge<'a> {
    report: &'a Report,
    paper: &'a Paper,
    model: Model,
    missing: Missing,
}

impl<'a> Judge<'a> {
    fn verdict(&mut self, f: &'a FindingSpec) -> Verdict {
        let unit = f.unit.as_deref().map(|u| format!(" {u}")).unwrap_or_default();
        let sides: Vec<Side> = f
            .order
            .iter()
            .map(|e| Side {
                entry: e,
                value: e.value.as_deref().and_then(|v| self.paper.value_of(f, v)),
                point: self.report.points.iter().find(|p| p.target == e.target && f.at.matches(p)),
            })
            .collect();
        let paper_text = paper_side(&sides, f.quantity, &unit);
        let within = f.within.unwrap_or(self.paper.within);
        let mut verdict = Verdict {
            finding: f.id.clone(),
            claim: f.claim.clone(),
            source: f.source.clone(),
            conditions: f.conditions.clone(),
            point: f.at.label(),
            targets: f.order.iter().map(|e| e.target.clone()).collect(),
            paper: paper_text,
            dbsweep: String::new(),
            verdict: VerdictKind::NotComparable,
            reason: String::new(),
            not_run: false,
        };
        // Stand-ins and systems not here are left out of the judgement, and named.
        let mut left_out: Vec<String> = Vec::new();
        let judged: Vec<&Side> = sides
            .iter()
            .filter(|s| match self.paper.stand_in(&s.entry.target).or_else(|| self.paper.unavailable(&s.entry.target)) {
                Some(why) => {
                    left_out.push(format!("{} left out ({})", why.paper, why.reason));
                    false
                }
                None => true,
            })
            .collect();
        // What dbsweep measured of every measured pair, stand-ins included, for the reader.
        let measured: Vec<String> = sides
            .windows(2)
            .filter_map(|w| match self.pair(&f.at, f.quantity, &w[0], &w[1], within, false) {
                Pair::Agrees { text, .. } | Pair::Reversed { text } | Pair::CannotRank { text } => Some(text),
                _ => None,
            })
            .collect();
        verdict.dbsweep = measured.join("; ");
        let left_out_text = (!left_out.is_empty()).then(|| left_out.join("; "));
        let scale = self.scale_note();
        let with_notes = |reason: String| {
            let mut parts = vec![reason];
            parts.extend(left_out_text.clone());
            parts.extend(scale.clone());
            parts.extend(f.by_construction.clone());
            parts.join("; ")
        };
        if judged.len() < 2 {
            // The left-out systems are the reason.
            verdict.reason = with_notes(String::new()).trim_start_matches("; ").to_string();
            return verdict;
        }
        let pairs: Vec<Pair> = judged.windows(2).map(|w| self.pair(&f.at, f.quantity, w[0], w[1], within, true)).collect();
        let reversed = pairs.iter().find_map(|p| if let Pair::Reversed { text } = p { Some(text.clone()) } else { None });
        let beyond = pairs.iter().find_map(|p| if let Pair::Agrees { beyond: Some(b), .. } = p { Some(b.clone()) } else { None });
        let cannot = pairs.iter().find_map(|p| if let Pair::CannotRank { text } = p { Some(text.clone()) } else { None });
        let not_measured = pairs.iter().find_map(|p| match p {
            Pair::NotMeasured { text, not_run } => Some((text.clone(), *not_run)),
            _ => None,
        });
        let agreed: Vec<&str> =
            pairs.iter().filter_map(|p| if let Pair::Agrees { text, .. } = p { Some(text.as_str()) } else { None }).collect();
        let (kind, reason) = if let Some(text) = reversed {
            (VerdictKind::Differs, format!("the opposite order here: {text}"))
        } else if let Some(text) = beyond {
            (VerdictKind::Differs, text)
        } else if let Some(text) = cannot {
            (VerdictKind::NotComparable, format!("the data cannot rank them: {text}"))
        } else if let Some((text, not_run)) = not_measured {
            verdict.not_run = not_run;
            (VerdictKind::NotComparable, text)
        } else if agreed.is_empty() {
            (VerdictKind::NotComparable, "the paper has them equal: no order to check".into())
        } else {
            let factor = if sides.iter().filter(|s| s.value.is_some()).count() >= 2 {
                format!(", within {} of the paper's ratio", times(within))
            } else {
                String::new()
            };
            (VerdictKind::Reproduced, format!("the paper's order{factor}"))
        };
        verdict.verdict = kind;
        verdict.reason = with_notes(reason);
        verdict
    }

    /// "at SF 0.01, the paper's SF 1" when the run's TPC-H scale differs from the paper's.
    fn scale_note(&self) -> Option<String> {
        let paper = self.paper.scale?;
        let ran = self.report.plan.get("data")?.get("scale")?.as_f64()?;
        (ran != paper).then(|| format!("at SF {ran}, the paper's SF {paper}"))
    }

    /// The pair (`better` first in the paper's order) at the finding's point. `record`:
    /// note what a missing point needs for the command.
    fn pair(&mut self, at: &PointSpec, quantity: Quantity, better: &Side, worse: &Side, within: f64, record: bool) -> Pair {
        let (a, b) = (&better.entry.target, &worse.entry.target);
        if let (Some(x), Some(y)) = (better.value, worse.value)
            && x == y
        {
            return Pair::PaperTie;
        }
        let (pa, pb) = match (better.point, worse.point) {
            (Some(pa), Some(pb)) => (pa, pb),
            _ => {
                let gone: Vec<&str> =
                    [(a, better.point), (b, worse.point)].iter().filter(|(_, p)| p.is_none()).map(|(t, _)| t.as_str()).collect();
                return self.not_measured(at, &gone, record);
            }
        };
        for p in [pa, pb] {
            if let Some(why) = unusable(p) {
                return Pair::NotMeasured { text: format!("{} {why}", p.target), not_run: false };
            }
        }
        // The paper's ratio: how many times better `better` is.
        let paper_ratio = match (better.value, worse.value) {
            (Some(x), Some(y)) if x > 0.0 && y > 0.0 => Some(if quantity.lower_is_better() { y / x } else { x / y }),
            _ => None,
        };
        let (ratio, text) = match quantity {
            Quantity::Time | Quantity::Throughput => {
                let (Some(ea), Some(eb)) = (self.model.throughput_of(pa), self.model.throughput_of(pb)) else {
                    let runs = pa.measured_runs().len().min(pb.measured_runs().len());
                    return Pair::CannotRank {
                        text: format!("{a} and {b}: too few samples ({})", too_few_hint(runs, pa.run_seconds().map(|s| s.median))),
                    };
                };
                let drift = VariancePart { variance: 2.0 * self.model.drift(), degrees_of_freedom: 1e6 };
                let interval = RatioInterval::of(ea.mean - eb.mean, &[ea.into(), eb.into(), drift], CONFIDENCE);
                let shown = |i: &RatioInterval| i.text().map(|t| format!(" (95 % {t})")).unwrap_or_default();
                match interval.call() {
                    Call::Different if interval.estimate > 1.0 => {
                        (interval.estimate, format!("{a} {} faster than {b}{}", times(interval.estimate), shown(&interval)))
                    }
                    Call::Different => {
                        let flipped =
                            RatioInterval { estimate: 1.0 / interval.estimate, low: 1.0 / interval.high, high: 1.0 / interval.low };
                        return Pair::Reversed { text: format!("{b} {} faster than {a}{}", times(flipped.estimate), shown(&flipped)) };
                    }
                    Call::Tied => {
                        return Pair::CannotRank {
                            text: format!(
                                "{a} and {b} tied, {} apart{}",
                                times(interval.estimate.max(1.0 / interval.estimate)),
                                shown(&interval)
                            ),
                        };
                    }
                    Call::TooFewSamples => {
                        let hint = too_few_hint(ea.runs.min(eb.runs), pa.run_seconds().map(|s| s.median));
                        return Pair::CannotRank {
                            text: format!(
                                "{a} and {b} {} apart, too few samples ({hint})",
                                times(interval.estimate.max(1.0 / interval.estimate))
                            ),
                        };
                    }
                }
            }
            _ => match like::compare(quantity, (a, pa), (b, pb)) {
                Ok(judged) => judged,
                Err(pair) => return pair,
            },
        };
        let beyond = match paper_ratio {
            Some(p) if ratio.is_finite() && (ratio / p > within || p / ratio > within) => Some(format!(
                "the paper's order, but {a} is {} better than {b} here against {} in the paper: beyond the stated {}",
                times(ratio),
                times(p),
                times(within)
            )),
            _ => None,
        };
        Pair::Agrees { text, beyond }
    }

    /// A pair with a target that has no result at the point: why, and (when `record`)
    /// what the command needs to run it.
    fn not_measured(&mut self, at: &PointSpec, targets: &[&str], record: bool) -> Pair {
        let absent: Vec<&str> = targets.iter().copied().filter(|t| !self.report.targets.iter().any(|i| i.name == *t)).collect();
        let mut needs: Vec<String> = Vec::new();
        if !absent.is_empty() {
            let mut spawn: Vec<String> =
                absent.iter().map(|t| self.paper.spawn.get(*t).cloned().unwrap_or_else(|| t.to_string())).collect();
            spawn.dedup();
            if record {
                self.missing.spawn.extend(spawn.iter().cloned());
            }
            needs.push(format!("--spawn {} ({} not a target of this run)", spawn.join(","), absent.join(" and ")));
        }
        let of_experiment: Vec<&PointResult> = self.report.points.iter().filter(|p| p.experiment == at.experiment).collect();
        if of_experiment.is_empty() {
            needs.push(format!("experiment {}", at.experiment));
            if record {
                self.missing.experiments.insert(at.experiment.clone());
            }
        } else {
            if let Some(v) = at.param.filter(|v| !of_experiment.iter().any(|p| p.point.param == Some(*v))) {
                needs.push(format!("{} {v}", self.paper.param_flag));
                if record {
                    self.missing.params.insert(v);
                }
            }
            if !of_experiment.iter().any(|p| p.point.clients == at.clients()) {
                needs.push(format!("--clients {}", at.clients()));
                if record {
                    self.missing.clients.insert(at.clients());
                }
            }
            if let Some(b) = at.batch.filter(|b| !of_experiment.iter().any(|p| p.point.batched && p.point.batch == *b)) {
                needs.push(format!("--batch {b}"));
                if record {
                    self.missing.batches.insert(b);
                }
            }
        }
        if needs.is_empty() {
            let have = if targets.len() == 1 { "has" } else { "have" };
            return Pair::NotMeasured { text: format!("{} {have} no result at this point", targets.join(" and ")), not_run: false };
        }
        Pair::NotMeasured { text: format!("not run: this point needs {}", needs.join(", ")), not_run: true }
    }
}

/// Why a measured point cannot be compared, or `None`.
fn unusable(p: &PointResult) -> Option<String> {
    match &p.status {
        PointStatus::NotSupported { reason } => return Some(format!("does not support it ({reason})")),
        PointStatus::Incomplete { reason } => return Some(format!("did not finish it ({reason})")),
        PointStatus::Measured => {}
    }
    p.is_void().then(|| "is void (failed requests or missing rows)".to_string())
}

/// "Redis (HDD) 0.0518 < MySQL (HDD) 2.1234 s (41.0x)" (times: lower first), or the order
/// without numbers, best first: "SSDB > Redis".
fn paper_side(sides: &[Side], quantity: Quantity, unit: &str) -> String {
    let with_values = sides.iter().all(|s| s.value.is_some());
    if !with_values {
        return sides.iter().map(|s| s.entry.system.as_str()).collect::<Vec<_>>().join(" > ");
    }
    let listed: Vec<String> = sides.iter().map(|s| format!("{} {}", s.entry.system, s.entry.value.as_deref().unwrap_or(""))).collect();
    let between = if quantity.lower_is_better() { " < " } else { " > " };
    let ends = (sides.first().and_then(|s| s.value), sides.last().and_then(|s| s.value));
    let ratio = match ends {
        (Some(x), Some(y)) if x > 0.0 && y > 0.0 && sides.len() == 2 => format!(" ({})", times((y / x).max(x / y))),
        _ => String::new(),
    };
    format!("{}{unit}{ratio}", listed.join(between))
}

mod data;
mod like;
mod trend;

pub use data::*;
pub use trend::{Axis, Direction, TrendQuantity, TrendSide, TrendSpec};

#[cfg(test)]
mod tests;
