//! From raw options (CLI flags and TOML study files) to a validated `Plan`, in one place.
//!
//! Owns the study file format, the built-in studies, defaults, `--quick`, and every
//! cross-field check; each error names the flag or key that fixes it. Must not open
//! connections or touch the file system beyond reading the study file.
//!
//! This module holds the formats (study file, the plan); `options` holds `run`'s options
//! as clap parses them, `targets` the plan's typed targets (spawned servers' included),
//! `resolve` turns the options into a plan step by step, `experiments` resolves the
//! study's experiments, and `ycsb` reads YCSB's `-P`/`-p` properties.

use crate::adapter::lease::Namespace;
use crate::base::durability::Durability;
use crate::data::{DataSpec, Dataset};
use crate::error::{Error, Result};
use crate::servers::{ServerKind, SpawnOptions};
use crate::workload::experiment::{Experiment, ExperimentOp, Rate};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub mod bounds;
pub mod cost;
pub mod custom;
mod duration;
pub mod estimate;
mod experiments;
pub mod method;
pub mod options;
mod resolve;
pub mod script;
pub mod shard;
pub mod stopping;
mod targets;
pub mod ycsb;
pub mod ycsb_properties;

pub use options::RunOptions;
pub use resolve::{defaults, resolve, spawn_all, unavailable_systems};
pub use targets::{TargetOrigin, TargetSpec, parse_target};

/// One round of spawned servers: a label for their targets' names (`None` when only one
/// data root is used) and where they keep their data.
pub type SpawnRound = (Option<String>, SpawnOptions);

/// Built-in studies: (name, TOML text). Each file is also an example of the format.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("embedded", include_str!("studies/embedded.toml")),
    ("kv-vs-relational", include_str!("studies/kv-vs-relational.toml")),
    ("insert-find", include_str!("studies/insert-find.toml")),
    ("ycsb", include_str!("studies/ycsb.toml")),
    ("in-memory", include_str!("studies/in-memory.toml")),
    ("pgbench", include_str!("studies/pgbench.toml")),
];

/// The experiment every run starts with: each target's echo round trip.
pub const FLOOR_EXPERIMENT: &str = "echo-floor";

/// The default study when none is named.
pub const DEFAULT_STUDY: &str = "embedded";

/// A study file as written (TOML). Unknown keys are errors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StudyFile {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: Option<u64>,
    #[serde(default)]
    pub ops: Option<u64>,
    /// Time-based runs: every run lasts this long (`"30s"`, `"2m"`, `"500ms"`) instead of
    /// doing `ops` ops; `--ops` on the command line overrides it, `--duration` replaces it.
    #[serde(default)]
    pub duration: Option<String>,
    #[serde(default)]
    pub runs: Option<u32>,
    #[serde(default)]
    pub warmup: Option<u32>,
    #[serde(default)]
    pub clients: Option<Vec<usize>>,
    #[serde(default)]
    pub batch: Option<Vec<usize>>,
    /// Clients used for range experiments (the study used 8).
    #[serde(default)]
    pub range_clients: Option<usize>,
    /// Clients used for the batch sweep (the studies used 1).
    #[serde(default)]
    pub batch_clients: Option<usize>,
    #[serde(default)]
    pub widths: Option<Vec<u64>>,
    /// Data sizes for the sizes sweeps (`[100, 1000]`, or a range string "100:100000:100").
    #[serde(default)]
    pub sizes: Option<SizeList>,
    pub data: DataSpec,
    #[serde(default)]
    pub targets: Vec<TargetEntry>,
    pub experiments: Vec<ExperimentEntry>,
    /// Systems the study compares that cannot run here; reported with the reason.
    #[serde(default)]
    pub unavailable: Vec<String>,
    /// The servers `--spawn all` starts for this study (names as for `--spawn`): a paper
    /// study's are the paper's systems (with its targets marked `paper`); absent = every
    /// kind dbsweep can start.
    #[serde(default)]
    pub spawn_all: Option<Vec<String>>,
    /// A lifecycle study: for each size N, every run starts from an empty table and runs
    /// the experiments in order (write all N, read, delete, fetch all), reading memory
    /// before and after each (see `Experiment::lifecycle`).
    #[serde(default)]
    pub lifecycle: bool,
    /// URL options appended to the targets of spawned servers, by server name (`--spawn`
    /// names; a server's command-line client target by its name, `redis-cli`): what the
    /// study's paper sent where it differs from the adapter's default, e.g. `cassandra =
    /// "affected=plain"` for plain DELETEs.
    #[serde(default)]
    pub spawn_target_options: BTreeMap<String, String>,
    /// What the study's paper measured and how dbsweep's measurement differs, shown at the
    /// top of the report.
    #[serde(default)]
    pub method: Option<StudyMethod>,
    /// When the run spawns MariaDB or Redis, also benchmark them through their command-line
    /// clients (`mysql-cli://`, `redis-cli://`) next to the library drivers.
    #[serde(default)]
    pub cli_clients: bool,
    /// The durability every target that has a setting for it runs at (`none`, `periodic`,
    /// `commit`; `--durability` overrides); absent: each system's default.
    #[serde(default)]
    pub durability: Option<String>,
    /// Overrides applied by `--quick`.
    #[serde(default)]
    pub quick: Option<SizeOverrides>,
    /// A paper study's own sizes and repeats, applied by `--paper`; present (even empty,
    /// when the defaults are the paper's) in exactly the studies that reproduce a paper.
    #[serde(default)]
    pub paper: Option<SizeOverrides>,
}

/// Two lines for a reader of the report: the paper's measurement and dbsweep's.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StudyMethod {
    /// What the paper measured, and how.
    pub paper: String,
    /// How dbsweep measures, where it differs from the paper. `{runs}` (in either line)
    /// becomes the runs the plan does, e.g. "3 runs after a warm-up" (`method::runs_clause`):
    /// write "median and min-max of {runs}" rather than a count `--quick` or `--runs` changes.
    pub dbsweep: String,
}

/// One `--data-root` directory: spawned servers keep their data under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataRoot {
    /// Appended to the spawned targets' names when several roots are swept (`mariadb-tmpfs`).
    pub label: String,
    pub path: PathBuf,
}

impl DataRoot {
    /// `DIR` or `LABEL=DIR`; without a label, the path's components joined by `-`.
    pub fn parse(text: &str) -> Result<DataRoot> {
        let (label, path) = match text.split_once('=') {
            Some((label, path)) => (label.trim().to_string(), path.trim()),
            None => {
                let derived: Vec<String> = std::path::Path::new(text.trim())
                    .components()
                    .filter_map(|c| match c {
                        std::path::Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
                        _ => None,
                    })
                    .collect();
                (derived.join("-"), text.trim())
            }
        };
        let label: String = label.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
        if path.is_empty() || label.is_empty() {
            return Err(Error::usage(format!("--data-root: '{text}' is not DIR or LABEL=DIR")));
        }
        Ok(DataRoot { label, path: PathBuf::from(path) })
    }
}

/// Sizes as a list or a `start:end:step` range.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum SizeList {
    List(Vec<u64>),
    Text(String),
}

impl SizeList {
    fn resolve(&self, what: &str) -> Result<Vec<u64>> {
        match self {
            SizeList::List(v) => Ok(v.clone()),
            SizeList::Text(t) => parse_sizes(t).map_err(|e| Error::usage(format!("{what}: {e}"))),
        }
    }
}

/// The most sizes a sweep takes: a thousand times the insert-find paper's full sweep. Each
/// is a point of its own, with its runs.
pub const MAX_SIZES: u64 = 1_000_000;

/// Parses `100,1000,10000` and ranges `100:100000:100` (start:end:step), mixed freely; at
/// most `MAX_SIZES` in all (counted before a range is expanded).
pub fn parse_sizes(text: &str) -> std::result::Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let nums: Vec<u64> = part
            .split(':')
            .map(|n| n.trim().parse::<u64>().map_err(|_| format!("'{part}' is not a size or start:end:step range")))
            .collect::<std::result::Result<_, _>>()?;
        match nums[..] {
            [_] if out.len() as u64 >= MAX_SIZES => return Err(format!("more than {MAX_SIZES} sizes; a sweep takes at most {MAX_SIZES}")),
            [n] => out.push(n),
            [start, end, step] if step > 0 && start <= end => {
                let count = (end - start) / step + 1;
                if out.len() as u64 + count > MAX_SIZES {
                    return Err(format!("'{part}' makes {count} sizes; a sweep takes at most {MAX_SIZES}: raise the step"));
                }
                out.extend((start..=end).step_by(usize::try_from(step).unwrap_or(usize::MAX)))
            }
            _ => return Err(format!("'{part}': a range is start:end:step with step > 0 and start <= end")),
        }
    }
    if out.is_empty() {
        return Err("no sizes given".into());
    }
    Ok(out)
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TargetEntry {
    pub name: String,
    pub url: String,
    /// One of the paper's systems (a paper study's embedded engine, e.g. MonetDB in
    /// kv-vs-relational): it runs with `--spawn all` (the paper's systems) too.
    #[serde(default)]
    pub paper: bool,
}

/// Which sweep a point belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Sweep {
    /// clients 1..N, one op per request.
    Clients,
    /// one client, batch sizes (batch 1 measured unbatched and as a batch of one).
    Batch,
    /// range widths with `range_clients` clients.
    Widths,
    /// one point: one client, one op per request (analytic queries).
    Single,
    /// data sizes N with one client: inserts/deletes of N keys in ONE request; multi-gets
    /// of N keys per request.
    Sizes,
    /// data sizes N with one client: inserts/deletes of N keys, one key per request.
    SizesEach,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExperimentEntry {
    pub name: String,
    pub op: ExperimentOp,
    pub sweep: Vec<Sweep>,
    /// Ops per run for this experiment (default: the study's `ops`).
    #[serde(default)]
    pub ops: Option<u64>,
    /// The table (default: the data set's first table).
    #[serde(default)]
    pub table: Option<String>,
    /// Range ops: the indexed column (default: the table's first indexed column).
    #[serde(default)]
    pub column: Option<String>,
    /// Range MAX: the column to maximize (default: the first unindexed numeric column).
    #[serde(default)]
    pub max_column: Option<String>,
    /// YCSB experiments: a core workload letter (`a`..`f`) or a YCSB workload file path.
    #[serde(default)]
    pub workload: Option<String>,
    /// Measured runs for this experiment (default: the study's `runs`).
    #[serde(default)]
    pub runs: Option<u32>,
    /// Warm-up runs for this experiment (default: the study's `warmup`).
    #[serde(default)]
    pub warmup: Option<u32>,
    /// Custom operations (`op = "custom"`, see `custom`): the parameters, by name.
    #[serde(default)]
    pub params: BTreeMap<String, custom::ParamEntry>,
    /// Custom operations: the SQL statement (pgbench's `:name` placeholders).
    #[serde(default)]
    pub sql: Option<String>,
    /// Custom operations: the SQL statement as one dialect spells it, by dialect.
    #[serde(default)]
    pub sql_dialects: BTreeMap<String, String>,
    /// Custom operations: the Redis command, one argument per item (`${name}` placeholders).
    #[serde(default)]
    pub redis: Option<Vec<String>>,
    /// Custom operations: the Memcached command, one argument per item (`${name}`
    /// placeholders).
    #[serde(default)]
    pub memcached: Option<Vec<String>>,
    /// Custom operations: the MongoDB command document (`${name}` placeholders).
    #[serde(default)]
    pub mongodb: Option<toml::Table>,
    /// Custom operations: the CQL statement (`${name}` placeholders, bound as values).
    #[serde(default)]
    pub cql: Option<String>,
    /// Custom operations: whether its statements only read (answers compared); default:
    /// as their first words say.
    #[serde(default)]
    pub reads: Option<bool>,
    /// Custom operations: statements run once per target before loading.
    #[serde(default)]
    pub setup: Option<custom::SetupEntry>,
}

/// The settings `--quick` (a study's `[quick]`) or `--paper` (its `[paper]`) replace;
/// flags still override them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeOverrides {
    pub ops: Option<u64>,
    pub rows: Option<u64>,
    pub scale: Option<f64>,
    pub runs: Option<u32>,
    pub clients: Option<Vec<usize>>,
    pub batch: Option<Vec<usize>>,
    pub widths: Option<Vec<u64>>,
    pub sizes: Option<SizeList>,
    /// Only these experiments (`--experiments` still chooses): a paper's reported scope,
    /// where the study adds experiments of dbsweep's own.
    pub experiments: Option<Vec<String>>,
}

/// The validated, resolved description of a run. Serialized (without secrets) into every
/// report.
#[derive(Debug, Clone)]
pub struct Plan {
    pub study: String,
    pub description: String,
    pub seed: u64,
    pub runs: u32,
    pub warmup: u32,
    pub data: DataSpec,
    pub targets: Vec<TargetSpec>,
    pub experiments: Vec<Experiment>,
    pub out: Option<PathBuf>,
    pub quick: bool,
    pub timeout_secs: f64,
    /// The interval of the latency-over-time histograms of measured runs (`.hlog`);
    /// `None`: not kept.
    pub hlog_interval: Option<std::time::Duration>,
    /// The fixed rates every experiment's points run at (the echo floor and lifecycle
    /// phases excepted), ascending; empty: closed loop (max throughput).
    pub rates: Vec<Rate>,
    /// The durability asked of every target that has a setting for it; `None`: each
    /// system's default.
    pub durability: Option<Durability>,
    /// Systems of the study that cannot run here, with the reason.
    pub unavailable: Vec<(String, String)>,
    /// Servers to start for this run; their targets join `targets` when they are up.
    pub spawn: Vec<ServerKind>,
    /// Where spawned servers keep their data; each server runs once per root. Empty: the
    /// system's temporary directory.
    pub data_roots: Vec<DataRoot>,
    /// See `StudyFile::method`.
    pub method: Option<StudyMethod>,
    /// See `StudyFile::cli_clients`.
    pub cli_clients: bool,
    /// See `StudyFile::lifecycle`.
    pub lifecycle: bool,
    /// dbsweep's namespace in every shared target.
    pub namespace: Namespace,
    /// See `StudyFile::spawn_target_options`.
    pub spawn_target_options: BTreeMap<String, String>,
    /// Properties accepted but not honoured (YCSB files and `-p`), one line each.
    pub warnings: Vec<String>,
    /// `--shard I/N`: the work units this process runs; `None`: all of them.
    pub shard: Option<shard::ShardWork>,
    /// `--precision`: runs stop at a precision (within their caps); `None`: every run does
    /// all of its ops.
    pub precision: Option<stopping::Precision>,
    /// `--budget`: what the budget buys (the cap it chose), for the user.
    pub budget_note: Option<String>,
    /// `--budget` in seconds: the run stops issuing requests when it is spent.
    pub budget_secs: Option<f64>,
    /// `--budget`: the stopping rule asked for, before the budget capped its runs.
    pub budget_asked: Option<stopping::Precision>,
    /// `--budget` refitted from measured costs: the cap of every capped run (the resolved
    /// `precision`, which the hash covers, stays as resolved).
    pub calibrated_cap_secs: Option<f64>,
    /// `--calibrate`: the targets' measured costs, once the sample ran; the estimate uses
    /// them (not part of the plan's JSON or hash: they differ from machine to machine).
    pub costs: Option<std::sync::Arc<cost::CostModel>>,
    /// The spawned servers are up and their targets are in `targets` (the run sets it):
    /// `target_names` then names the targets as they are.
    pub servers_joined: bool,
    /// `shard::plan_hash` of the resolved plan before servers are spawned: equal in every
    /// shard (and worker) of one plan.
    pub hash: String,
    /// The `targets` of the JSON that `hash` hashes (`to_json` before servers are spawned
    /// and a shard keeps only its own targets): reports save it, so that the saved plan can
    /// be checked against its hash.
    pub planned_targets: serde_json::Value,
}

impl Plan {
    /// The rounds of spawned servers: one per data root (the default temporary directory
    /// when none was given).
    pub fn spawn_rounds(&self) -> Vec<SpawnRound> {
        // The servers allow the busiest point's clients at once (see `runner::connections`).
        let clients = self.experiments.iter().flat_map(|e| e.points.iter().map(|p| p.clients)).max();
        match self.data_roots.as_slice() {
            [] => vec![(None, SpawnOptions { data_root: None, durability: self.durability, clients })],
            [one] => vec![(None, SpawnOptions { data_root: Some(one.path.clone()), durability: self.durability, clients })],
            many => many
                .iter()
                .map(|r| (Some(r.label.clone()), SpawnOptions { data_root: Some(r.path.clone()), durability: self.durability, clients }))
                .collect(),
        }
    }

    /// The plan as saved in reports: URLs redacted.
    pub fn to_json(&self) -> serde_json::Value {
        let mut plan = serde_json::json!({
            "study": self.study,
            "description": self.description,
            "seed": self.seed,
            "runs": self.runs,
            "warmup": self.warmup,
            "data": self.data,
            "targets": self.targets.iter().map(|t| serde_json::json!({"name": t.name, "url": t.url.redacted()})).collect::<Vec<_>>(),
            "experiments": self.experiments,
            "quick": self.quick,
            "timeout_secs": self.timeout_secs,
            "hlog_interval_secs": self.hlog_interval.map(|d| d.as_secs_f64()),
            "rate": match self.rates.as_slice() {
                [] => serde_json::Value::Null,
                rates => serde_json::json!(rates),
            },
            "durability": self.durability,
            "spawn": self.spawn.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "data_roots": self.data_roots,
            "method": self.method,
            "cli_clients": self.cli_clients,
            "lifecycle": self.lifecycle,
            "namespace": self.namespace.name(),
            "spawn_target_options": self.spawn_target_options,
        });
        // Only present under --precision, so the fixed-ops mode's plans (and hashes) stay.
        if let Some(precision) = &self.precision {
            plan["precision"] = serde_json::json!(precision);
        }
        // Likewise only under --duration (each experiment also carries it).
        if let Some(secs) = self.duration_secs() {
            plan["duration_secs"] = serde_json::json!(secs);
        }
        plan
    }

    /// `--duration`: how long every run lasts, in seconds; `None`: runs do a number of ops.
    pub fn duration_secs(&self) -> Option<f64> {
        self.experiments.iter().find_map(|e| e.duration_secs)
    }

    /// The stopping rule of `experiment`'s runs (see `stopping::Precision::applies_to`).
    pub fn precision_of(&self, experiment: &Experiment) -> Option<stopping::Precision> {
        let precision = self.precision.filter(|_| stopping::Precision::applies_to(experiment))?;
        Some(match self.calibrated_cap_secs {
            Some(cap) => stopping::Precision { max_time_secs: cap, ..precision },
            None => precision,
        })
    }

    /// Every target the run will have, in order: the plan's, then each spawned server's
    /// (round by round), named as they will be once the servers are up.
    pub fn target_names(&self) -> Vec<String> {
        self.target_families().into_iter().map(|(name, _)| name).collect()
    }

    /// `target_names` with each target's system family (its URL's scheme, a spawned
    /// server's kind, `cli` for a command-line client).
    pub fn target_families(&self) -> Vec<(String, String)> {
        let user = self.targets.iter().map(|t| (t.name.clone(), t.url.scheme().to_string())).collect();
        if self.servers_joined {
            return user;
        }
        let labels: Vec<Option<String>> = self.spawn_rounds().into_iter().map(|(label, _)| label).collect();
        shard::target_families(user, &self.spawn, &labels, self.cli_clients)
    }

    /// The plan's work units for `--shard` (`shard::work_units`).
    pub fn work_units(&self) -> Vec<shard::WorkUnit> {
        let scale = match &self.data {
            DataSpec::Tpch { scale } => *scale,
            _ => 0.0,
        };
        shard::work_units(&self.target_families(), &self.experiments, scale)
    }

    /// Whether this process runs `experiment` (index in the plan) on `target`: always,
    /// unless `--shard` gave that unit to another shard.
    pub fn runs_unit(&self, target: &str, experiment: usize) -> bool {
        let lifecycle = self.experiments.get(experiment).is_some_and(|e| e.lifecycle);
        self.shard.as_ref().is_none_or(|w| w.runs(target, experiment, lifecycle))
    }
}

/// What one experiment of a plan asks of each target.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentBudget {
    pub name: String,
    pub points: usize,
    /// Warm-up plus measured runs per point.
    pub runs: u32,
    /// Ops per target over all points and runs.
    pub ops: u64,
}

impl Plan {
    /// The ops each experiment sends to each target (for `--dry-run` and progress).
    pub fn budget(&self) -> Vec<ExperimentBudget> {
        let dataset = Dataset::new(&self.data, self.seed);
        self.experiments
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let runs = e.warmup + e.runs;
                let stream = crate::workload::experiment::OpStream::new(e, i, &dataset, self.seed, runs);
                let per_run: u64 = e.points.iter().map(|p| stream.ops_at(p)).sum();
                ExperimentBudget { name: e.name.clone(), points: e.points.len(), runs, ops: per_run * runs as u64 }
            })
            .collect()
    }
}

/// Finds and parses a study: a built-in name or a TOML file path.
pub fn load_study(name_or_path: &str) -> Result<StudyFile> {
    let (origin, text) = match BUILT_IN.iter().find(|(n, _)| *n == name_or_path) {
        Some((_, text)) => (format!("built-in study '{name_or_path}'"), text.to_string()),
        None if name_or_path.ends_with(".toml") || std::path::Path::new(name_or_path).exists() => {
            let text =
                std::fs::read_to_string(name_or_path).map_err(|e| Error::usage(format!("cannot read study file {name_or_path}: {e}")))?;
            (name_or_path.to_string(), text)
        }
        None => {
            let known: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
            return Err(Error::usage(format!(
                "unknown study '{name_or_path}'{}; built-in studies: {} (see `dbsweep studies`), or pass a .toml file",
                crate::base::suggest::did_you_mean(name_or_path, known.iter().copied()),
                known.join(", ")
            )));
        }
    };
    toml::from_str(&text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        let at = e.span().map(|s| {
            let line = text[..s.start.min(text.len())].lines().count().max(1);
            format!(" (line {line})")
        });
        Error::usage(format!("{origin}{}: {msg}", at.unwrap_or_default()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_type_errors_are_one_line_with_location() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        std::fs::write(&path, "name = \"x\"\nops = \"many\"\n[data]\nkind = \"kv\"\nrows = 10\n[[experiments]]\nname = \"e\"\nop = \"echo\"\nsweep = [\"clients\"]\n").unwrap();
        let err = resolve(&RunOptions { study: Some(path.display().to_string()), ..Default::default() }).unwrap_err();
        let text = err.to_string();
        assert_eq!(err.exit_code(), 2);
        assert!(!text.contains('\n'), "{text}");
        assert!(text.contains("line 2"), "{text}");
    }

    #[test]
    fn sizes_parse_lists_and_ranges() {
        assert_eq!(parse_sizes("100,1000").unwrap(), vec![100, 1000]);
        assert_eq!(parse_sizes("100:500:100, 1000").unwrap(), vec![100, 200, 300, 400, 500, 1000]);
        assert_eq!(parse_sizes("100:100000:100").unwrap().len(), 1000);
        assert!(parse_sizes("100:50:10").is_err());
        assert!(parse_sizes("1:9:0").is_err());
        assert!(parse_sizes("x").is_err());
        let e = parse_sizes("1:99999999999999:1").unwrap_err();
        assert_eq!(e, "'1:99999999999999:1' makes 99999999999999 sizes; a sweep takes at most 1000000: raise the step");
        assert!(parse_sizes("1:1000000:1").is_ok() && parse_sizes("1:1000000:1,5").is_err());
        let err =
            resolve(&RunOptions { study: Some("insert-find".into()), sizes: Some("7:3:1".into()), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("--sizes"), "{err}");
    }

    #[test]
    fn shards_split_the_spawned_targets_and_share_one_plan_hash() {
        let opts = |shard: Option<&str>, out: Option<&str>, seed: u64| RunOptions {
            study: Some("in-memory".into()),
            spawn: vec!["redis".into(), "postgres".into()],
            with_study_targets: true,
            shard: shard.map(str::to_string),
            out: out.map(PathBuf::from),
            seed: Some(seed),
            ..Default::default()
        };
        let whole = resolve(&opts(None, None, 1)).unwrap();
        assert_eq!(whole.target_names(), ["nodb", "sqlite", "duckdb", "redb", "redis", "pg-row", "pg-hstore", "pg-jsonb"]);
        // A lifecycle study: per target the echo floor, and the lifecycle as one unit.
        let units = whole.work_units();
        assert_eq!(units.len(), 16);
        assert_eq!(units.iter().filter(|u| u.experiment.is_none()).count(), 8);
        let shards: Vec<Plan> = (0..2).map(|i| resolve(&opts(Some(&format!("{i}/2")), Some("/x"), 1)).unwrap()).collect();
        assert!(shards.iter().all(|s| s.hash == whole.hash), "--shard and --out are not part of the plan");
        assert_ne!(resolve(&opts(None, None, 2)).unwrap().hash, whole.hash, "the seed is");
        for name in whole.target_names() {
            let owners = shards.iter().filter(|s| s.shard.as_ref().unwrap().has_target(&name)).count();
            assert!(owners >= 1, "{name}");
        }
        let lifecycle = whole.experiments.iter().position(|e| e.lifecycle).unwrap();
        for name in whole.target_names() {
            assert_eq!(shards.iter().filter(|s| s.runs_unit(&name, lifecycle)).count(), 1, "{name}'s lifecycle runs once");
        }
        assert!(whole.runs_unit("redis", lifecycle), "without --shard every unit runs");
    }
}
