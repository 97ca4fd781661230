//! From raw options (CLI flags and TOML study files) to a validated `Plan`, in one place.
//!
//! Owns the study file format, the built-in studies, defaults, `--quick`, and every
//! cross-field check; each error names the flag or key that fixes it. Must not open
//! connections or touch the file system beyond reading the study file.

use crate::adapter::TargetUrl;
use crate::adapter::lease::Namespace;
use crate::base::table::{ColumnType, TableId};
use crate::data::{DataSpec, Dataset, RecordCounts};
use crate::error::{Error, Result};
use crate::servers::{ServerKind, SpawnOptions};

/// One round of spawned servers: a label for their targets' names (`None` when only one
/// data root is used) and where they keep their data.
pub type SpawnRound = (Option<String>, SpawnOptions);
use crate::workload::experiment::{Experiment, ExperimentOp, Point};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;

pub mod ycsb;
pub mod ycsb_properties;

/// Built-in studies: (name, TOML text). Each file is also an example of the format.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("embedded", include_str!("studies/embedded.toml")),
    ("kv-vs-relational", include_str!("studies/kv-vs-relational.toml")),
    ("insert-find", include_str!("studies/insert-find.toml")),
    ("ycsb", include_str!("studies/ycsb.toml")),
    ("in-memory", include_str!("studies/in-memory.toml")),
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
    /// The servers `--spawn all` starts for this study (names as for `--spawn`); absent =
    /// every kind dbsweep can start.
    #[serde(default)]
    pub spawn_all: Option<Vec<String>>,
    /// A lifecycle study: for each size N, every run starts from an empty table and runs
    /// the experiments in order (write all N, read, delete, fetch all), reading memory
    /// before and after each (see `Experiment::lifecycle`).
    #[serde(default)]
    pub lifecycle: bool,
    /// URL options appended to the targets of spawned servers, by server name (`--spawn`
    /// names): what the study's paper sent where it differs from the adapter's default,
    /// e.g. `cassandra = "affected=plain"` for plain DELETEs.
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
    /// Overrides applied by `--quick`.
    #[serde(default)]
    pub quick: Option<QuickOverrides>,
}

/// Two lines for a reader of the report: the paper's measurement and dbsweep's.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StudyMethod {
    /// What the paper measured, and how.
    pub paper: String,
    /// How dbsweep measures, where it differs from the paper.
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

/// Parses `100,1000,10000` and ranges `100:100000:100` (start:end:step), mixed freely.
pub fn parse_sizes(text: &str) -> std::result::Result<Vec<u64>, String> {
    let mut out = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let nums: Vec<u64> = part
            .split(':')
            .map(|n| n.trim().parse::<u64>().map_err(|_| format!("'{part}' is not a size or start:end:step range")))
            .collect::<std::result::Result<_, _>>()?;
        match nums[..] {
            [n] => out.push(n),
            [start, end, step] if step > 0 && start <= end => out.extend((start..=end).step_by(step as usize)),
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
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuickOverrides {
    pub ops: Option<u64>,
    pub rows: Option<u64>,
    pub scale: Option<f64>,
    pub runs: Option<u32>,
    pub clients: Option<Vec<usize>>,
    pub batch: Option<Vec<usize>>,
    pub widths: Option<Vec<u64>>,
    pub sizes: Option<SizeList>,
}

/// Raw command-line options for `run`, before validation.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// A built-in study name or a path to a TOML file.
    pub study: Option<String>,
    /// `NAME=URL` (or a bare URL/scheme, named after its scheme).
    pub targets: Vec<String>,
    pub experiments: Option<Vec<String>>,
    pub clients: Option<Vec<usize>>,
    pub batch: Option<Vec<usize>>,
    pub widths: Option<Vec<u64>>,
    /// `--sizes`: sizes list or ranges, e.g. `100:100000:100`.
    pub sizes: Option<String>,
    pub batch_clients: Option<usize>,
    pub range_clients: Option<usize>,
    pub runs: Option<u32>,
    pub warmup: Option<u32>,
    pub ops: Option<u64>,
    /// `--rows`: rows of kv data, or YCSB record counts (a list sweeps them).
    pub rows: Option<Vec<u64>>,
    pub scale: Option<f64>,
    pub seed: Option<u64>,
    pub out: Option<PathBuf>,
    pub quick: bool,
    /// `-P FILE`: YCSB workload files, later ones overriding earlier ones.
    pub ycsb_files: Vec<PathBuf>,
    /// `-p key=value`: YCSB properties, overriding the files.
    pub ycsb_properties: Vec<String>,
    /// Per-op timeout in seconds.
    pub timeout_secs: Option<f64>,
    /// Fixed-rate (open-loop) runs at this many ops/s in total.
    pub rate: Option<f64>,
    /// Throwaway servers to start (`postgres,redis` or `all`); their targets are added.
    pub spawn: Vec<String>,
    /// Where spawned servers keep their data (e.g. a tmpfs or a disk): `DIR` or
    /// `LABEL=DIR`; several make storage a sweep axis (each server runs once per root).
    pub data_roots: Vec<String>,
    /// `--namespace NAME`: run in `dbsweep_NAME` instead of `dbsweep`, side by side with
    /// other runs on the same servers.
    pub namespace: Option<String>,
}

/// One target of a plan.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    pub name: String,
    pub url: TargetUrl,
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
    /// Fixed-rate runs at this many ops/s in total; `None`: closed loop (max throughput).
    pub rate: Option<f64>,
    /// Systems of the study that cannot run here, with the reason.
    pub unavailable: Vec<(String, String)>,
    /// Servers to start for this run; their targets are added when they are up.
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
}

impl Plan {
    /// The rounds of spawned servers: one per data root (the default temporary directory
    /// when none was given).
    pub fn spawn_rounds(&self) -> Vec<SpawnRound> {
        match self.data_roots.as_slice() {
            [] => vec![(None, SpawnOptions::default())],
            [one] => vec![(None, SpawnOptions { data_root: Some(one.path.clone()) })],
            many => many.iter().map(|r| (Some(r.label.clone()), SpawnOptions { data_root: Some(r.path.clone()) })).collect(),
        }
    }

    /// The plan as saved in reports: URLs redacted.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
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
            "rate": self.rate,
            "spawn": self.spawn.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "data_roots": self.data_roots,
            "method": self.method,
            "cli_clients": self.cli_clients,
            "lifecycle": self.lifecycle,
            "namespace": self.namespace.name(),
            "spawn_target_options": self.spawn_target_options,
        })
    }

    /// The URL of a spawned server's target with the study's options for that server.
    pub fn spawned_target_url(&self, server: ServerKind, url: &str) -> String {
        match self.spawn_target_options.get(server.name()) {
            Some(options) => format!("{url}{}{options}", if url.contains('?') { '&' } else { '?' }),
            None => url.to_string(),
        }
    }
}

/// Finds and parses a study: a built-in name or a TOML file path.
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
                "unknown study '{name_or_path}'; built-in studies: {} (see `dbsweep studies`), or pass a .toml file",
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

fn positive_list<T: PartialOrd + Default + Copy + std::fmt::Display>(flag: &str, values: &[T]) -> Result<()> {
    if values.is_empty() {
        return Err(Error::usage(format!("{flag} needs at least one value")));
    }
    if let Some(v) = values.iter().find(|v| **v <= T::default()) {
        return Err(Error::usage(format!("{flag} values must be positive, got {v}")));
    }
    Ok(())
}

/// Parses `NAME=URL`, or a bare URL named after its scheme.
pub fn parse_target(text: &str) -> Result<TargetSpec> {
    let (name, url) = match text.split_once('=') {
        Some((name, url)) if !name.contains(':') && !name.contains('/') => (name.trim().to_string(), url),
        _ => (String::new(), text),
    };
    let url = TargetUrl::parse(url)?;
    let name = if name.is_empty() { url.scheme().to_string() } else { name };
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(Error::usage(format!("target name '{name}' must be letters, digits, '-' or '_' (use --target NAME=URL)")));
    }
    Ok(TargetSpec { name, url })
}

/// Resolves an experiment's table and column names against the data set.
fn resolve_columns(e: &ExperimentEntry, dataset: &Dataset) -> Result<(TableId, usize, usize)> {
    let tables: Vec<&str> = dataset.tables.iter().map(|t| t.name.as_str()).collect();
    let table = match &e.table {
        Some(name) => dataset.table_id(name).ok_or_else(|| {
            Error::usage(format!("experiment '{}': unknown table '{name}'; the data set has: {}", e.name, tables.join(", ")))
        })?,
        None => 0,
    };
    let def = &dataset.tables[table];
    let column_named = |key: &str, name: &str| {
        def.column_index(name).ok_or_else(|| {
            let cols: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
            Error::usage(format!("experiment '{}': {key} '{name}' is not a column of {}; it has: {}", e.name, def.name, cols.join(", ")))
        })
    };
    let column = match &e.column {
        Some(name) => column_named("column", name)?,
        None => def.indexed.first().copied().unwrap_or(0),
    };
    if e.op.is_range() && !def.indexed.contains(&column) {
        return Err(Error::usage(format!(
            "experiment '{}': range column '{}' of {} has no secondary index",
            e.name, def.columns[column].name, def.name
        )));
    }
    let max_column = match &e.max_column {
        Some(name) => column_named("max_column", name)?,
        None => (1..def.columns.len())
            .find(|c| !def.indexed.contains(c) && matches!(def.columns[*c].ty, ColumnType::Float | ColumnType::Decimal | ColumnType::Int))
            .unwrap_or(0),
    };
    Ok((table, column, max_column))
}

/// Validates raw options against a study and resolves everything into a plan.
pub fn resolve(opts: &RunOptions) -> Result<Plan> {
    let (study_name, ycsb_files) = ycsb::study_and_files(opts.study.as_deref(), &opts.ycsb_files, !opts.ycsb_properties.is_empty());
    let mut study = load_study(study_name.as_deref().unwrap_or(DEFAULT_STUDY))?;
    let ycsb_cli = ycsb::CommandLine::read(&ycsb_files, &opts.ycsb_properties)?;
    let mut warnings: Vec<String> = Vec::new();
    let mut from_ycsb = ycsb::ClientOverrides::default();
    if let Some(cli) = &ycsb_cli {
        ycsb::adapt_study(&mut study, cli)?;
        from_ycsb = ycsb::client_overrides(cli, opts.rows.as_ref(), opts.ops, opts.clients.as_ref(), opts.rate)?;
        warnings.extend(cli.applied.warnings.iter().cloned());
    }
    let quick = if opts.quick { study.quick.clone().unwrap_or_default() } else { QuickOverrides::default() };

    let seed = opts.seed.or(study.seed).unwrap_or(42);
    let runs = opts.runs.or(quick.runs).or(study.runs).unwrap_or(3);
    let warmup = opts.warmup.or(study.warmup).unwrap_or(1);
    if runs == 0 {
        return Err(Error::usage("--runs must be at least 1"));
    }
    let cli_ops = opts.ops.or(from_ycsb.ops);
    let ops = cli_ops.or(quick.ops).or(study.ops).unwrap_or(50_000);
    if ops == 0 {
        return Err(Error::usage("--ops must be at least 1"));
    }
    let clients = opts
        .clients
        .clone()
        .or(from_ycsb.clients.clone())
        .or(quick.clients.clone())
        .or(study.clients.clone())
        .unwrap_or_else(|| vec![1, 2, 4, 8]);
    positive_list("--clients", &clients)?;
    let batch = opts.batch.clone().or(quick.batch.clone()).or(study.batch.clone()).unwrap_or_else(|| vec![1, 10, 100, 1000]);
    positive_list("--batch", &batch)?;
    let widths = opts.widths.clone().or(quick.widths.clone()).or(study.widths.clone()).unwrap_or_else(|| vec![1, 10, 100, 1000]);
    positive_list("--widths", &widths)?;
    let sizes = match (&opts.sizes, &quick.sizes, &study.sizes) {
        (Some(t), _, _) => parse_sizes(t).map_err(|e| Error::usage(format!("--sizes: {e}")))?,
        (None, Some(q), _) => q.resolve("quick.sizes")?,
        (None, None, Some(s)) => s.resolve("sizes")?,
        _ => vec![100, 1000, 10_000],
    };
    positive_list("--sizes", &sizes)?;
    let range_clients = opts.range_clients.or(study.range_clients).unwrap_or(8);
    let batch_clients = opts.batch_clients.or(study.batch_clients).unwrap_or(1);
    positive_list("--range-clients", &[range_clients])?;
    positive_list("--batch-clients", &[batch_clients])?;
    let timeout_secs = opts.timeout_secs.unwrap_or(60.0);
    if !(timeout_secs > 0.0) {
        return Err(Error::usage("--timeout must be a positive number of seconds"));
    }

    for name in study.spawn_target_options.keys() {
        name.parse::<ServerKind>().map_err(|e: Error| Error::usage(format!("study '{}': spawn_target_options: {e}", study.name)))?;
    }
    let all_kinds: Vec<ServerKind> = match &study.spawn_all {
        None => ServerKind::ALL.to_vec(),
        Some(names) => names
            .iter()
            .map(|n| n.parse().map_err(|e: Error| Error::usage(format!("study '{}': spawn_all: {e}", study.name))))
            .collect::<Result<_>>()?,
    };
    let mut spawn: Vec<ServerKind> = Vec::new();
    for name in &opts.spawn {
        let kinds: Vec<ServerKind> = if name.trim() == "all" { all_kinds.clone() } else { vec![name.parse()?] };
        for k in kinds {
            if !spawn.contains(&k) {
                spawn.push(k);
            }
        }
    }
    if !opts.data_roots.is_empty() && spawn.is_empty() {
        return Err(Error::usage("--data-root only applies to spawned servers; add --spawn"));
    }
    let data_roots: Vec<DataRoot> = opts.data_roots.iter().map(|r| DataRoot::parse(r)).collect::<Result<_>>()?;
    for (i, r) in data_roots.iter().enumerate() {
        if data_roots[..i].iter().any(|o| o.label == r.label) {
            return Err(Error::usage(format!("--data-root: label '{}' is used twice; name the roots with LABEL=DIR", r.label)));
        }
    }
    if let Some(rate) = opts.rate
        && !(rate > 0.0 && rate.is_finite())
    {
        return Err(Error::usage("--rate must be a positive number of ops per second"));
    }
    let rate = opts.rate.or(from_ycsb.rate.flatten());
    let mut data = study.data.clone();
    let rows = opts.rows.clone().or(from_ycsb.records.clone());
    if let Some(list) = &rows {
        positive_list("--rows", list)?;
        if list.len() > 1 && !matches!(data, DataSpec::Ycsb { .. }) {
            return Err(Error::usage("a list of --rows sweeps YCSB record counts; this study's data takes one row count"));
        }
    }
    let single_rows = rows.as_ref().map(|r| r[0]);
    match (&data, single_rows, opts.scale) {
        (DataSpec::Tpch { .. }, Some(_), _) => return Err(Error::usage("--rows applies to kv data; TPC-H data is sized with --scale")),
        (DataSpec::Kv { .. } | DataSpec::Pairs { .. }, _, Some(_)) => {
            return Err(Error::usage("--scale applies to TPC-H data; kv data is sized with --rows"));
        }
        (DataSpec::Pairs { .. }, Some(_), _) if study.lifecycle => {
            return Err(Error::usage("--rows does not apply to a lifecycle study; it sizes its table with --sizes"));
        }
        _ => {}
    }
    match &mut data {
        DataSpec::Kv { rows, payload_bytes } => {
            if let Some(r) = single_rows.or(quick.rows) {
                *rows = r;
            }
            if *rows == 0 {
                return Err(Error::usage("--rows must be at least 1"));
            }
            if *payload_bytes > 1 << 20 {
                return Err(Error::usage("data.payload_bytes must be at most 1048576"));
            }
        }
        DataSpec::Pairs { rows, value_bytes, empty_table, .. } => {
            if let Some(r) = single_rows.or(quick.rows) {
                *rows = r;
            }
            if *value_bytes > 1 << 20 {
                return Err(Error::usage("data.value_bytes must be at most 1048576"));
            }
            if let Some(name) = empty_table
                && (name == "pairs" || name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            {
                return Err(Error::usage(format!(
                    "data.empty_table '{name}' must be letters, digits or '_' and differ from the store table 'pairs'"
                )));
            }
        }
        DataSpec::Ycsb { recordcount, insertorder, fieldcount, .. } => {
            if let Some(r) = rows.clone().or(quick.rows.map(|r| vec![r])) {
                *recordcount = RecordCounts::from_list(&r);
            }
            if recordcount.to_vec().contains(&0) || recordcount.to_vec().is_empty() || *fieldcount == 0 {
                return Err(Error::usage("data.recordcount and data.fieldcount must be at least 1"));
            }
            if crate::data::ycsb::InsertOrder::parse(insertorder).is_none() {
                return Err(Error::usage(format!("data.insertorder must be hashed or ordered, got '{insertorder}'")));
            }
            if let Some(Err(e)) = data.ycsb_shape() {
                return Err(Error::usage(format!("data: {e}")));
            }
        }
        DataSpec::Tpch { scale } => {
            if let Some(s) = opts.scale.or(quick.scale) {
                *scale = s;
            }
            crate::data::tpch::check_scale(*scale).map_err(|e| Error::usage(format!("--scale: {e}")))?
        }
    }

    let mut targets: Vec<TargetSpec> = if opts.targets.is_empty() {
        study.targets.iter().map(|t| parse_target(&format!("{}={}", t.name, t.url))).collect::<Result<_>>()?
    } else {
        opts.targets.iter().map(|t| parse_target(t)).collect::<Result<_>>()?
    };
    // The NO-DB ceiling is measured in every run, with the same settings.
    if !targets.iter().any(|t| t.url.scheme() == "nodb") {
        targets.insert(0, parse_target("nodb=nodb:")?);
    }
    for (i, t) in targets.iter().enumerate() {
        if targets[..i].iter().any(|o| o.name == t.name) {
            return Err(Error::usage(format!("target name '{}' is used twice; name targets with --target NAME=URL", t.name)));
        }
    }

    let dataset = Dataset::new(&data, seed);
    let known: Vec<&str> = study.experiments.iter().map(|e| e.name.as_str()).collect();
    if let Some(filter) = &opts.experiments
        && let Some(bad) = filter.iter().find(|f| !known.contains(&f.as_str()))
    {
        return Err(Error::usage(format!("unknown experiment '{bad}' in --experiments; study '{}' has: {}", study.name, known.join(", "))));
    }
    let mut experiments = Vec::new();
    let records_fixed = rows.is_some() || (opts.quick && quick.rows.is_some());
    let mut record_rounds: Vec<u64> = Vec::new();
    if let Some(e) = study.experiments.iter().find(|e| e.name == FLOOR_EXPERIMENT) {
        return Err(Error::usage(format!("experiment name '{}' is reserved for the echo floor every run measures", e.name)));
    }
    for e in &study.experiments {
        if opts.experiments.as_ref().is_some_and(|f| !f.contains(&e.name)) {
            continue;
        }
        if e.sweep.is_empty() {
            return Err(Error::usage(format!("experiment '{}' needs a sweep (clients, batch or widths)", e.name)));
        }
        let workload = match (e.op, &e.workload) {
            (ExperimentOp::Ycsb, Some(w)) => Some(ycsb::resolve_workload(&e.name, w, ycsb_cli.as_ref(), &data)?),
            (ExperimentOp::Ycsb, None) => {
                return Err(Error::usage(format!(
                    "experiment '{}': op = \"ycsb\" needs workload = \"a\"..\"f\" or a workload file",
                    e.name
                )));
            }
            (_, Some(_)) => return Err(Error::usage(format!("experiment '{}': `workload` only applies to op = \"ycsb\"", e.name))),
            (_, None) => None,
        };
        for w in workload.iter().flat_map(|w| &w.warnings) {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        // YCSB data: every experiment runs at each record count (its workload file's, unless
        // --rows, -p recordcount or --quick say otherwise), recorded as the point's `param`.
        let records: Vec<u64> = match (&data, workload.as_ref().and_then(|w| w.records)) {
            (DataSpec::Ycsb { .. }, Some(n)) if !records_fixed => vec![n],
            (DataSpec::Ycsb { recordcount, .. }, _) => recordcount.to_vec(),
            _ => Vec::new(),
        };
        if !records.is_empty() && e.sweep.iter().any(|s| !matches!(s, Sweep::Clients | Sweep::Single)) {
            return Err(Error::usage(format!(
                "experiment '{}': a study of YCSB data sweeps clients (threads) and record counts only (sweep = [\"clients\"])",
                e.name
            )));
        }
        let mut points: Vec<Point> = Vec::new();
        let mut add = |p: Point| {
            if !points.contains(&p) {
                points.push(p);
            }
        };
        for sweep in &e.sweep {
            match sweep {
                Sweep::Clients => clients.iter().for_each(|&c| add(Point { clients: c, batch: 1, batched: false, param: None })),
                Sweep::Batch => {
                    add(Point { clients: batch_clients, batch: 1, batched: false, param: None });
                    batch.iter().for_each(|&b| add(Point { clients: batch_clients, batch: b, batched: true, param: None }));
                }
                Sweep::Single => add(Point { clients: 1, batch: 1, batched: false, param: None }),
                Sweep::Sizes => sizes.iter().for_each(|&n| {
                    let one_request = e.op.writes() && !study.lifecycle;
                    add(Point { clients: 1, batch: if one_request { n as usize } else { 1 }, batched: one_request, param: Some(n) })
                }),
                Sweep::SizesEach => {
                    if !e.op.writes() {
                        return Err(Error::usage(format!("experiment '{}': sizes_each is for insert and delete", e.name)));
                    }
                    sizes.iter().for_each(|&n| add(Point { clients: 1, batch: 1, batched: false, param: Some(n) }))
                }
                Sweep::Widths => {
                    if !e.op.is_range() {
                        return Err(Error::usage(format!("experiment '{}': the widths sweep is only for range ops", e.name)));
                    }
                    widths.iter().for_each(|&w| add(Point { clients: range_clients, batch: 1, batched: false, param: Some(w) }));
                }
            }
        }
        if !records.is_empty() {
            points = records.iter().flat_map(|&n| points.iter().map(move |p| Point { param: Some(n), ..*p })).collect();
            for n in &records {
                if !record_rounds.contains(n) {
                    record_rounds.push(*n);
                }
            }
        }
        if e.op.is_range() && points.iter().any(|p| p.param.is_none()) {
            return Err(Error::usage(format!("experiment '{}': range ops sweep widths only (sweep = [\"widths\"])", e.name)));
        }
        if study.lifecycle {
            check_lifecycle_experiment(e, study.experiments.first().map(|f| f.name == e.name).unwrap_or(false))?;
        }
        let sized = !study.lifecycle && e.op.writes() && e.sweep.iter().any(|s| matches!(s, Sweep::Sizes | Sweep::SizesEach));
        if sized && e.sweep.iter().any(|s| !matches!(s, Sweep::Sizes | Sweep::SizesEach)) {
            return Err(Error::usage(format!("experiment '{}': sizes sweeps cannot be mixed with other sweeps", e.name)));
        }
        let exp_ops = match e.op.query() {
            _ if sized => sizes.iter().copied().max().unwrap_or(1),
            // Analytic queries: one query per run unless the experiment says otherwise.
            Some(_) => e.ops.unwrap_or(1),
            None if cli_ops.is_some() || opts.quick => ops,
            None => e.ops.or(workload.as_ref().and_then(|w| w.ops)).unwrap_or(ops),
        };
        let (table, column, max_column) = resolve_columns(e, &dataset)?;
        // The study reads each table with batches no larger than the table, so that no key
        // repeats within a batch.
        if e.op == ExperimentOp::Get && !study.lifecycle {
            let rows = dataset.initial_rows(table);
            points.retain(|p| p.batch as u64 <= rows && p.clients as u64 <= rows.max(1) * 64);
        }
        let exp_runs = if opts.runs.is_some() { runs } else { e.runs.unwrap_or(runs) };
        let exp_warmup = if opts.warmup.is_some() { warmup } else { e.warmup.unwrap_or(warmup) };
        if exp_runs == 0 {
            return Err(Error::usage(format!("experiment '{}': runs must be at least 1", e.name)));
        }
        experiments.push(Experiment {
            name: e.name.clone(),
            op: e.op,
            workload: e.workload.clone(),
            time_limit_secs: workload.as_ref().and_then(|w| w.time_limit_secs),
            ycsb: workload.map(|w| w.workload),
            sized,
            lifecycle: study.lifecycle,
            table,
            column,
            max_column,
            ops: exp_ops,
            runs: exp_runs,
            warmup: exp_warmup,
            points,
        });
    }
    // The transport floor: every run measures each target's no-work round trip (`SELECT 1`,
    // `ECHO`, `version`) with one client, so results can be read as time above it.
    experiments.insert(
        0,
        Experiment {
            name: FLOOR_EXPERIMENT.into(),
            op: ExperimentOp::Echo,
            workload: None,
            ycsb: None,
            time_limit_secs: None,
            sized: false,
            lifecycle: false,
            table: 0,
            column: 0,
            max_column: 0,
            ops: if opts.quick { 300 } else { 2000 },
            runs: 3,
            warmup: 1,
            points: vec![Point { clients: 1, batch: 1, batched: false, param: None }],
        },
    );
    let mut unavailable = Vec::new();
    for system in &study.unavailable {
        let entry = crate::adapter::registry::SYSTEMS.iter().find(|s| s.system == system.as_str());
        match entry.and_then(|e| e.unavailable) {
            Some(why) => unavailable.push((system.clone(), why.to_string())),
            None => {
                return Err(Error::usage(format!("study '{}': '{system}' in `unavailable` is not a known unavailable system", study.name)));
            }
        }
    }
    if let DataSpec::Ycsb { recordcount, .. } = &mut data
        && !record_rounds.is_empty()
    {
        *recordcount = RecordCounts::from_list(&record_rounds);
    }
    if experiments.is_empty() {
        return Err(Error::usage("no experiments selected; check --experiments"));
    }

    Ok(Plan {
        study: study.name,
        description: study.description,
        seed,
        runs,
        warmup,
        data,
        targets,
        experiments,
        out: opts.out.clone(),
        quick: opts.quick,
        timeout_secs,
        rate,
        spawn,
        data_roots,
        method: study.method.clone(),
        cli_clients: study.cli_clients,
        unavailable,
        lifecycle: study.lifecycle,
        namespace: Namespace::new(opts.namespace.as_deref())?,
        spawn_target_options: study.spawn_target_options,
        warnings,
    })
}

/// A lifecycle study's experiments: sizes sweeps of one client, one op per request,
/// starting with the insert that fills the empty table.
fn check_lifecycle_experiment(e: &ExperimentEntry, first: bool) -> Result<()> {
    if e.sweep != [Sweep::Sizes] {
        return Err(Error::usage(format!("experiment '{}': a lifecycle study sweeps sizes only (sweep = [\"sizes\"])", e.name)));
    }
    let allowed = [ExperimentOp::Insert, ExperimentOp::Get, ExperimentOp::MultiGet, ExperimentOp::Delete, ExperimentOp::FetchAll];
    if !allowed.contains(&e.op) {
        return Err(Error::usage(format!(
            "experiment '{}': a lifecycle study runs insert, get, multi_get, delete and fetch_all only",
            e.name
        )));
    }
    if first != (e.op == ExperimentOp::Insert) {
        return Err(Error::usage(format!(
            "experiment '{}': a lifecycle study starts with exactly one insert experiment (it fills the empty table)",
            e.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_studies_parse_and_resolve() {
        for (name, _) in BUILT_IN {
            let plan = resolve(&RunOptions { study: Some(name.to_string()), ..Default::default() }).unwrap();
            assert!(!plan.experiments.is_empty());
            assert_eq!(plan.targets[0].name, "nodb");
        }
    }

    #[test]
    fn in_memory_sends_plain_cassandra_deletes_to_spawned_servers_only() {
        let plan = resolve(&RunOptions { study: Some("in-memory".into()), ..Default::default() }).unwrap();
        assert_eq!(plan.spawned_target_url(ServerKind::Cassandra, "cassandra://127.0.0.1:9"), "cassandra://127.0.0.1:9?affected=plain");
        assert_eq!(plan.spawned_target_url(ServerKind::Redis, "redis://127.0.0.1:9"), "redis://127.0.0.1:9");
        let kv = resolve(&RunOptions { study: Some("kv-vs-relational".into()), ..Default::default() }).unwrap();
        assert_eq!(kv.spawned_target_url(ServerKind::Cassandra, "cassandra://h:9/ks?x=1"), "cassandra://h:9/ks?x=1");
        let with = |options: &str| {
            let mut plan = plan.clone();
            plan.spawn_target_options.insert("postgres".into(), options.into());
            plan.spawned_target_url(ServerKind::Postgres, "postgres://h:9/db?layout=hstore")
        };
        assert_eq!(with("a=b"), "postgres://h:9/db?layout=hstore&a=b");
    }

    #[test]
    fn spawn_all_starts_the_servers_each_study_names() {
        let spawned = |study: &str| {
            let opts = RunOptions { study: Some(study.into()), spawn: vec!["all".into()], ..Default::default() };
            resolve(&opts).unwrap().spawn
        };
        let ycsb = spawned("ycsb");
        assert!(ycsb.contains(&ServerKind::Redis) && ycsb.contains(&ServerKind::LedisDb), "{ycsb:?}");
        assert!(spawned("insert-find").contains(&ServerKind::LedisDb));
        assert!(spawned("in-memory").contains(&ServerKind::FerretDb));
        let kv = spawned("kv-vs-relational");
        assert!(kv.contains(&ServerKind::Redis) && !kv.contains(&ServerKind::LedisDb) && !kv.contains(&ServerKind::FerretDb), "{kv:?}");
        let opts = RunOptions { study: Some("ycsb".into()), spawn: vec!["ledisdb".into()], ..Default::default() };
        assert_eq!(resolve(&opts).unwrap().spawn, vec![ServerKind::LedisDb]);
    }

    #[test]
    fn batch_sweep_measures_batch_one_both_ways() {
        let plan = resolve(&RunOptions { batch: Some(vec![1, 10]), clients: Some(vec![1, 2]), ..Default::default() }).unwrap();
        let insert = plan.experiments.iter().find(|e| e.op == ExperimentOp::Insert).unwrap();
        let ones: Vec<_> = insert.points.iter().filter(|p| p.clients == 1 && p.batch == 1).collect();
        assert_eq!(ones.len(), 2, "{:?}", insert.points);
        assert!(ones.iter().any(|p| p.batched) && ones.iter().any(|p| !p.batched));
    }

    #[test]
    fn cli_overrides_win_and_bad_values_name_the_flag() {
        let plan = resolve(&RunOptions { ops: Some(123), runs: Some(2), seed: Some(5), ..Default::default() }).unwrap();
        assert!(plan.experiments.iter().filter(|e| e.name != FLOOR_EXPERIMENT).all(|e| e.ops == 123));
        assert_eq!(plan.experiments[0].name, FLOOR_EXPERIMENT);
        assert_eq!((plan.runs, plan.seed), (2, 5));
        let err = resolve(&RunOptions { clients: Some(vec![0]), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("--clients"), "{err}");
        let err = resolve(&RunOptions { study: Some("nope".into()), ..Default::default() }).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.to_string().contains("embedded"), "{err}");
        let err = resolve(&RunOptions { experiments: Some(vec!["bogus".into()]), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("bogus"));
    }

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
    fn lifecycle_studies_start_with_an_insert_and_sweep_sizes() {
        let plan = resolve(&RunOptions { study: Some("in-memory".into()), quick: true, ..Default::default() }).unwrap();
        assert!(plan.lifecycle);
        let phases: Vec<&Experiment> = plan.experiments.iter().filter(|e| e.lifecycle).collect();
        assert_eq!(phases.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["write-all", "read-one", "delete-one", "fetch-all"]);
        for e in &phases {
            let sizes: Vec<Option<u64>> = e.points.iter().map(|p| p.param).collect();
            assert_eq!(sizes, [Some(1000), Some(10000)], "{}", e.name);
            assert!(e.points.iter().all(|p| p.clients == 1 && p.batch == 1 && !p.batched), "one op per request");
        }
        assert!(!plan.experiments[0].lifecycle, "the echo floor runs first, as always");

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.toml");
        let study = |experiments: &str| format!("name = \"x\"\nlifecycle = true\n[data]\nkind = \"pairs\"\n{experiments}");
        let phase =
            |name: &str, op: &str, sweep: &str| format!("[[experiments]]\nname = \"{name}\"\nop = \"{op}\"\nsweep = [\"{sweep}\"]\n");
        for (text, needle) in [
            (study(&(phase("r", "get", "sizes") + &phase("w", "insert", "sizes"))), "starts with exactly one insert"),
            (study(&phase("w", "insert", "clients")), "sweeps sizes only"),
            (study(&(phase("w", "insert", "sizes") + &phase("q", "range_count", "sizes"))), "runs insert, get"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = resolve(&RunOptions { study: Some(path.display().to_string()), ..Default::default() }).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains(needle), "{err}");
        }
        let err = resolve(&RunOptions { study: Some("in-memory".into()), rows: Some(vec![5]), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("--sizes"), "{err}");
    }

    #[test]
    fn sizes_parse_lists_and_ranges() {
        assert_eq!(parse_sizes("100,1000").unwrap(), vec![100, 1000]);
        assert_eq!(parse_sizes("100:500:100, 1000").unwrap(), vec![100, 200, 300, 400, 500, 1000]);
        assert_eq!(parse_sizes("100:100000:100").unwrap().len(), 1000);
        assert!(parse_sizes("100:50:10").is_err());
        assert!(parse_sizes("1:9:0").is_err());
        assert!(parse_sizes("x").is_err());
        let err =
            resolve(&RunOptions { study: Some("insert-find".into()), sizes: Some("7:3:1".into()), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("--sizes"), "{err}");
    }

    #[test]
    fn insert_find_uses_the_papers_table_and_keys() {
        use crate::data::pairs::{KeyOrder, PairValue};
        let plan = resolve(&RunOptions { study: Some("insert-find".into()), ..Default::default() }).unwrap();
        let DataSpec::Pairs { value, keys, rows, empty_table, .. } = &plan.data else { panic!("{:?}", plan.data) };
        assert_eq!((*value, *keys, *rows, empty_table.as_deref()), (PairValue::Int, KeyOrder::Shuffled, 100_000, Some("pairs_new")));
        let table = |name: &str| plan.experiments.iter().find(|e| e.name == name).unwrap().table;
        assert_eq!((table("insert-all"), table("insert-each"), table("find")), (1, 1, 0));
        assert!(plan.cli_clients);
        assert!(plan.method.as_ref().is_some_and(|m| m.paper.contains("TIME") && m.dbsweep.contains("end to end")));
        let full = resolve(&RunOptions { study: Some("insert-find".into()), sizes: Some("100:100000:100".into()), ..Default::default() });
        assert_eq!(full.unwrap().experiments[1].points.len(), 1000);
    }

    #[test]
    fn data_roots_are_labelled_sweeps_of_spawned_servers() {
        let opts = |roots: &[&str], spawn: &[&str]| RunOptions {
            study: Some("insert-find".into()),
            data_roots: roots.iter().map(|r| r.to_string()).collect(),
            spawn: spawn.iter().map(|r| r.to_string()).collect(),
            ..Default::default()
        };
        let plan = resolve(&opts(&["tmpfs=/dev/shm/x", "/var/tmp/y"], &["redis"])).unwrap();
        let labels: Vec<&str> = plan.data_roots.iter().map(|r| r.label.as_str()).collect();
        assert_eq!(labels, ["tmpfs", "var-tmp-y"]);
        let rounds = plan.spawn_rounds();
        assert_eq!(rounds.len(), 2);
        assert_eq!(rounds[1].0.as_deref(), Some("var-tmp-y"));
        assert_eq!(rounds[1].1.data_root.as_deref(), Some(std::path::Path::new("/var/tmp/y")));
        let single = resolve(&opts(&["/var/tmp/y"], &["redis"])).unwrap().spawn_rounds();
        assert_eq!(single.len(), 1);
        assert_eq!(single[0].0, None, "one root: targets keep their plain names");
        for (roots, spawn, needle) in [
            (vec!["a=/x", "a=/y"], vec!["redis"], "used twice"),
            (vec!["/x"], vec![], "add --spawn"),
            (vec!["=/x"], vec!["redis"], "LABEL=DIR"),
        ] {
            let err = resolve(&opts(&roots, &spawn)).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn targets_parse_with_names_and_redact() {
        let t = parse_target("pg=postgres://u:hunter2@127.0.0.1:5432/db").unwrap();
        assert_eq!(t.name, "pg");
        assert!(!format!("{:?}", t).contains("hunter2"));
        assert_eq!(parse_target("sqlite:/tmp/x.db").unwrap().name, "sqlite");
        assert_eq!(parse_target("pg=postgres://:1/x").unwrap_err().exit_code(), 2);
    }
}
