//! The papers' data: each paper study's file (`src/plan/studies/<study>.paper.toml`,
//! embedded here) as loaded — the published numbers and orderings, their conditions and
//! places in the paper, the stand-ins, and each finding's counterpart point in a run.
//! Owns parsing and looking up that data; must not judge a run (`paper` does).

use super::super::model::PointResult;
use super::like;
use super::trend::TrendSpec;
use crate::base::span;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The paper files: (study, TOML text).
pub const PAPERS: &[(&str, &str)] = &[
    ("insert-find", include_str!("../../plan/studies/insert-find.paper.toml")),
    ("in-memory", include_str!("../../plan/studies/in-memory.paper.toml")),
    ("ycsb", include_str!("../../plan/studies/ycsb.paper.toml")),
    ("kv-vs-relational", include_str!("../../plan/studies/kv-vs-relational.paper.toml")),
];

/// One paper, as its file holds it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Paper {
    /// The built-in study that reproduces it.
    pub study: String,
    /// Title, authors and year.
    pub title: String,
    /// The paper's text in the seeds directory: the file whose name starts with this.
    pub seed: String,
    /// A finding with numbers is reproduced when dbsweep's ratio is within this factor of
    /// the paper's (either way); a finding may state its own.
    pub within: f64,
    /// The flag that sets a point's `param` (`--sizes`, `--rows`, `--widths`).
    pub param_flag: String,
    /// The paper's scale factor, where its data has one (TPC-H): a run at another says so.
    #[serde(default)]
    pub scale: Option<f64>,
    /// dbsweep targets that stand in for a system of the paper: their findings are not
    /// comparable.
    #[serde(default)]
    pub stand_ins: Vec<StandIn>,
    /// Systems of the paper that cannot run here.
    #[serde(default)]
    pub unavailable: Vec<StandIn>,
    /// `--spawn` names of targets whose name is not their server's (`redis-cli = "redis"`;
    /// "all" for a study target that `--spawn all` keeps, such as the embedded MonetDB).
    #[serde(default)]
    pub spawn: BTreeMap<String, String>,
    /// The paper's numeric tables, each giving one finding per column.
    #[serde(default)]
    pub tables: Vec<Table>,
    #[serde(default)]
    pub findings: Vec<FindingSpec>,
    /// The trends its text states (`trend`): judged after the findings.
    #[serde(default)]
    pub trends: Vec<TrendSpec>,
}

/// A target that is not the paper's system (or a system not here), and why.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandIn {
    /// dbsweep's target name.
    pub target: String,
    /// The paper's system.
    pub paper: String,
    pub reason: String,
}

/// What a finding compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Quantity {
    /// Time of the operation (lower is better); dbsweep's counterpart is the throughput
    /// at the same point.
    Time,
    /// Throughput (higher is better).
    Throughput,
    /// Memory change over the operation (lower is better); dbsweep's counterpart is the
    /// client's resident memory change (the paper's metric in kind).
    ClientMemory,
    /// Time of the operation as the server reports it (`?timing=server`), per request.
    ServerTime,
    /// Time of one cold call: the first request of a fresh connection.
    ColdCall,
    /// The server's memory growth over the operation (PSS of its process group).
    ServerMemory,
}

impl Quantity {
    pub(super) fn lower_is_better(self) -> bool {
        !matches!(self, Quantity::Throughput)
    }
}

/// Where a finding is measured in dbsweep.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PointSpec {
    pub experiment: String,
    /// Size, width or record count; `None`: the experiment has none.
    #[serde(default)]
    pub param: Option<u64>,
    /// Clients (threads); 1 when not given.
    #[serde(default)]
    pub clients: Option<usize>,
    /// A batched point of this batch size; `None`: one op per request, or one request of
    /// the whole `param` (a size sent in one request).
    #[serde(default)]
    pub batch: Option<usize>,
}

impl PointSpec {
    pub(super) fn clients(&self) -> usize {
        self.clients.unwrap_or(1)
    }

    pub(super) fn matches(&self, p: &PointResult) -> bool {
        p.experiment == self.experiment
            && self.param.is_none_or(|v| p.point.param == Some(v))
            && p.point.clients == self.clients()
            && match self.batch {
                Some(b) => p.point.batched && p.point.batch == b,
                // Unbatched, or one request of the whole size (insert-find's insert-all).
                None => !p.point.batched || self.param.is_some_and(|n| p.point.batch as u64 == n),
            }
            && p.point.rate.is_none()
    }

    /// "insert-all n=100000", "workload-a c=8 n=1000", "get-orders b=100".
    pub fn label(&self) -> String {
        let mut label = self.experiment.clone();
        if self.clients() != 1 {
            label.push_str(&format!(" c={}", self.clients()));
        }
        if let Some(b) = self.batch {
            label.push_str(&format!(" b={b}"));
        }
        if let Some(v) = self.param {
            label.push_str(&format!(" n={v}"));
        }
        label
    }
}

/// One system of a finding, in the paper's order (best first).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// The system as the paper names it ("Redis (HDD)").
    pub system: String,
    /// dbsweep's target for it.
    pub target: String,
    /// The paper's number as printed ("0.0518"), if it gives one.
    #[serde(default)]
    pub value: Option<String>,
    /// Text that identifies the table line the number is on ("Insertion (via Command
    /// Line)"); the seed test finds the number there.
    #[serde(default)]
    pub line: Option<String>,
}

/// A finding as its file states it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FindingSpec {
    pub id: String,
    /// The finding in words.
    pub claim: String,
    /// Where in the paper: table or figure, section, page.
    pub source: String,
    /// The paper's conditions: systems, operation, N or scale, threads, what was timed.
    pub conditions: String,
    /// Words of the paper that state it, verbatim (checked against the seed text).
    #[serde(default)]
    pub quote: Option<String>,
    /// The heading of the table its numbers are in ("TABLE I"), for the seed test.
    #[serde(default)]
    pub table: Option<String>,
    pub quantity: Quantity,
    #[serde(default)]
    pub unit: Option<String>,
    /// Overrides the paper's `within`.
    #[serde(default)]
    pub within: Option<f64>,
    /// What a method choice decides about this finding, named in its reason.
    #[serde(default)]
    pub by_construction: Option<String>,
    /// dbsweep measures the paper's own quantity too: the finding is judged on it, and
    /// again on `quantity`, labelled (`like::split`).
    #[serde(default)]
    pub like_for_like: Option<Quantity>,
    pub at: PointSpec,
    /// The paper's order, best first.
    pub order: Vec<Entry>,
}

/// A numeric table of the paper: a row per system, a column per point.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// How the paper heads it ("Table 3"): the seed test finds it by this.
    pub name: String,
    pub caption: String,
    pub source: String,
    pub conditions: String,
    pub quantity: Quantity,
    pub unit: String,
    /// The counterpart experiment; each column is its `param`.
    pub experiment: String,
    pub columns: Vec<u64>,
    /// The table prints thousands with a dot ("14.638" for 14,638).
    #[serde(default)]
    pub dot_thousands: bool,
    #[serde(default)]
    pub within: Option<f64>,
    #[serde(default)]
    pub by_construction: Option<String>,
    /// See `FindingSpec::like_for_like`.
    #[serde(default)]
    pub like_for_like: Option<Quantity>,
    pub rows: Vec<TableRow>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRow {
    pub system: String,
    pub target: String,
    /// The cells as printed, one per column.
    pub cells: Vec<String>,
}

impl Paper {
    /// Every paper file, parsed.
    pub fn all() -> Vec<Paper> {
        PAPERS.iter().map(|(study, text)| Paper::parse(text).unwrap_or_else(|e| panic!("{study}.paper.toml: {e}"))).collect()
    }

    pub fn parse(text: &str) -> Result<Paper, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// The paper of a built-in study.
    pub fn of_study(study: &str) -> Option<Paper> {
        PAPERS.iter().find(|(s, _)| *s == study).and_then(|(_, text)| Paper::parse(text).ok())
    }

    /// Every finding: the stated ones, then one per column of each table (the systems in
    /// the table's order of that column, best first; ties keep the table's row order);
    /// one with a like-for-like quantity as two (`like::split`).
    pub fn findings(&self) -> Vec<FindingSpec> {
        self.stated_findings().iter().flat_map(like::split).collect()
    }

    fn stated_findings(&self) -> Vec<FindingSpec> {
        let mut out = self.findings.clone();
        for t in &self.tables {
            for (i, column) in t.columns.iter().enumerate() {
                let mut order: Vec<(f64, Entry)> = t
                    .rows
                    .iter()
                    .filter_map(|r| {
                        let text = r.cells.get(i)?;
                        let value = number(text, t.dot_thousands)?;
                        Some((value, Entry { system: r.system.clone(), target: r.target.clone(), value: Some(text.clone()), line: None }))
                    })
                    .collect();
                let sign = if t.quantity.lower_is_better() { 1.0 } else { -1.0 };
                order.sort_by(|a, b| (sign * a.0).total_cmp(&(sign * b.0)));
                let listed: Vec<String> = order.iter().map(|(_, e)| format!("{} {}", e.system, e.value.as_deref().unwrap_or(""))).collect();
                let slug = t.name.to_lowercase().replace(' ', "-");
                out.push(FindingSpec {
                    id: format!("{slug}-n{column}"),
                    claim: format!("{} at {}: {} {}", t.caption.trim_end_matches('.'), span::count(*column), listed.join(", "), t.unit),
                    source: t.source.clone(),
                    conditions: t.conditions.clone(),
                    quote: None,
                    table: Some(t.name.clone()),
                    quantity: t.quantity,
                    unit: Some(t.unit.clone()),
                    within: t.within,
                    by_construction: t.by_construction.clone(),
                    like_for_like: t.like_for_like,
                    at: PointSpec { experiment: t.experiment.clone(), param: Some(*column), clients: None, batch: None },
                    order: order.into_iter().map(|(_, e)| e).collect(),
                });
            }
        }
        out
    }

    /// Parses a printed number of this paper's tables ("2.1234", "14.638" with dots as
    /// thousands).
    pub fn value_of(&self, finding: &FindingSpec, text: &str) -> Option<f64> {
        let dots = finding.table.as_ref().and_then(|name| self.tables.iter().find(|t| &t.name == name)).is_some_and(|t| t.dot_thousands);
        number(text, dots)
    }

    pub(super) fn stand_in(&self, target: &str) -> Option<&StandIn> {
        self.stand_ins.iter().find(|s| s.target == target)
    }

    pub(super) fn unavailable(&self, target: &str) -> Option<&StandIn> {
        self.unavailable.iter().find(|s| s.target == target)
    }
}

fn number(text: &str, dot_thousands: bool) -> Option<f64> {
    let plain = if dot_thousands { text.replace('.', "") } else { text.to_string() };
    plain.trim().parse().ok()
}
