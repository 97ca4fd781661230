//! A study's experiment entries become the plan's `Experiment`s: which ones run, the points
//! of their sweeps, their ops, runs, table and columns, and the echo floor every run starts
//! with.
//!
//! Owns the experiments' cross-field checks (each error names the experiment and the key
//! that fixes it). Must not read flags or the study file itself: `resolve` hands it the
//! run's settings and sweep axes.

use super::resolve::{RunSettings, SweepAxes};
use super::{ExperimentEntry, FLOOR_EXPERIMENT, StudyFile, Sweep, ycsb};
use crate::base::table::{ColumnType, TableId};
use crate::data::{DataSpec, Dataset};
use crate::error::{Error, Result};
use crate::workload::experiment::{Experiment, ExperimentOp, Point};

/// What the experiments are resolved against.
pub(super) struct ExperimentScope<'a> {
    pub study: &'a StudyFile,
    /// `--experiments`: only these run.
    pub only: Option<&'a [String]>,
    pub settings: &'a RunSettings,
    pub axes: &'a SweepAxes,
    /// The data as sized for this run.
    pub data: &'a DataSpec,
    /// YCSB's `-P`/`-p` properties, when given.
    pub ycsb: Option<&'a ycsb::CommandLine>,
    /// The YCSB record counts were set by `--rows`, `-p recordcount` or `--quick`; a
    /// workload file's own count does not replace them.
    pub records_fixed: bool,
    /// The script of `script` experiments (`--sql-file`, `--builtin`).
    pub script: Option<&'a std::sync::Arc<crate::base::script::Script>>,
}

/// The selected experiments, the echo floor first, and the YCSB record counts they sweep
/// (in order of first use). Workload warnings are added to `warnings` once each.
pub(super) fn resolve_experiments(scope: &ExperimentScope, warnings: &mut Vec<String>) -> Result<(Vec<Experiment>, Vec<u64>)> {
    let study = scope.study;
    let known: Vec<&str> = study.experiments.iter().map(|e| e.name.as_str()).collect();
    if let Some(only) = scope.only
        && let Some(bad) = only.iter().find(|f| !known.contains(&f.as_str()))
    {
        return Err(Error::usage(format!("unknown experiment '{bad}' in --experiments; study '{}' has: {}", study.name, known.join(", "))));
    }
    if let Some(e) = study.experiments.iter().find(|e| e.name == FLOOR_EXPERIMENT) {
        return Err(Error::usage(format!("experiment name '{}' is reserved for the echo floor every run measures", e.name)));
    }
    let dataset = Dataset::new(scope.data, scope.settings.seed);
    let mut experiments = vec![floor_experiment(scope.settings.quick)];
    let mut record_rounds: Vec<u64> = Vec::new();
    for e in &study.experiments {
        if scope.only.is_some_and(|only| !only.contains(&e.name)) {
            continue;
        }
        experiments.push(experiment(scope, e, &dataset, warnings, &mut record_rounds)?);
    }
    Ok((experiments, record_rounds))
}

/// A custom experiment's operation, checked; other experiments may not carry its keys.
fn custom_op(e: &ExperimentEntry, dataset: &Dataset, lifecycle: bool) -> Result<Option<std::sync::Arc<crate::base::custom::CustomOp>>> {
    if e.op != ExperimentOp::Custom {
        let custom_keys = !e.params.is_empty()
            || e.sql.is_some()
            || e.redis.is_some()
            || e.memcached.is_some()
            || e.mongodb.is_some()
            || e.cql.is_some()
            || e.reads.is_some()
            || e.setup.is_some();
        if custom_keys || !e.sql_dialects.is_empty() {
            return Err(Error::usage(format!(
                "experiment '{}': params, sql, sql_dialects, redis, memcached, mongodb, cql, reads and setup belong to op = \"custom\"",
                e.name
            )));
        }
        return Ok(None);
    }
    if lifecycle {
        return Err(Error::usage(format!("experiment '{}': a lifecycle study has no custom operations", e.name)));
    }
    super::custom::resolve(e, dataset).map(|op| Some(std::sync::Arc::new(op))).map_err(Error::usage)
}

/// The transport floor: every run measures each target's no-work round trip (`SELECT 1`,
/// `ECHO`, `version`) with one client, so results can be read as time above it.
fn floor_experiment(quick: bool) -> Experiment {
    let point = Point { clients: 1, batch: 1, batched: false, param: None, rate: None };
    Experiment { runs: 3, warmup: 1, ..Experiment::single(FLOOR_EXPERIMENT, ExperimentOp::Echo, if quick { 300 } else { 2000 }, point) }
}

/// One experiment entry, checked and resolved; the YCSB record counts it sweeps are added
/// to `record_rounds`.
fn experiment(
    scope: &ExperimentScope,
    e: &ExperimentEntry,
    dataset: &Dataset,
    warnings: &mut Vec<String>,
    record_rounds: &mut Vec<u64>,
) -> Result<Experiment> {
    let (study, settings) = (scope.study, scope.settings);
    if e.sweep.is_empty() {
        return Err(Error::usage(format!("experiment '{}' needs a sweep (clients, batch or widths)", e.name)));
    }
    let workload = ycsb_workload(scope, e)?;
    for w in workload.iter().flat_map(|w| &w.warnings) {
        if !warnings.contains(w) {
            warnings.push(w.clone());
        }
    }
    let records = record_counts(scope, e, workload.as_ref())?;
    let mut points = sweep_points(e, scope.axes, study.lifecycle)?;
    if !records.is_empty() {
        points = records.iter().flat_map(|&n| points.iter().map(move |p| Point { param: Some(n), ..*p })).collect();
        for n in &records {
            if !record_rounds.contains(n) {
                record_rounds.push(*n);
            }
        }
    }
    if !scope.axes.rates.is_empty() {
        points = points.iter().flat_map(|p| scope.axes.rates.iter().map(move |&r| Point { rate: Some(r), ..*p })).collect();
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
    let ops = match e.op.query() {
        _ if sized => scope.axes.sizes.iter().copied().max().unwrap_or(1),
        // Analytic queries: one query per run unless the experiment says otherwise.
        Some(_) => e.ops.unwrap_or(1),
        None if settings.ops_fixed => settings.ops,
        None => e.ops.or(workload.as_ref().and_then(|w| w.ops)).unwrap_or(settings.ops),
    };
    let (table, column, max_column) = resolve_columns(e, dataset)?;
    // The study reads each table with batches no larger than the table, so that no key
    // repeats within a batch.
    if e.op == ExperimentOp::Get && !study.lifecycle {
        let rows = dataset.initial_rows(table);
        points.retain(|p| p.batch as u64 <= rows && p.clients as u64 <= rows.max(1).saturating_mul(64));
    }
    let runs = if settings.runs_fixed { settings.runs } else { e.runs.unwrap_or(settings.runs) };
    let warmup = if settings.warmup_fixed { settings.warmup } else { e.warmup.unwrap_or(settings.warmup) };
    if runs == 0 {
        return Err(Error::usage(format!("experiment '{}': runs must be at least 1", e.name)));
    }
    Ok(Experiment {
        name: e.name.clone(),
        op: e.op,
        workload: e.workload.clone(),
        script: if e.op == ExperimentOp::Script { scope.script.cloned() } else { None },
        custom: custom_op(e, dataset, study.lifecycle)?,
        time_limit_secs: workload.as_ref().and_then(|w| w.time_limit_secs),
        duration_secs: None,
        min_run_secs: None,
        ycsb: workload.map(|w| w.workload),
        sized,
        lifecycle: study.lifecycle,
        table,
        column,
        max_column,
        ops,
        runs,
        warmup,
        points,
    })
}

/// A YCSB experiment's workload (letter or file, with `-P`/`-p` applied); other ops take none.
fn ycsb_workload(scope: &ExperimentScope, e: &ExperimentEntry) -> Result<Option<ycsb::ResolvedWorkload>> {
    match (e.op, &e.workload) {
        (ExperimentOp::Ycsb, Some(w)) => Ok(Some(ycsb::resolve_workload(&e.name, w, scope.ycsb, scope.data)?)),
        (ExperimentOp::Ycsb, None) => {
            Err(Error::usage(format!("experiment '{}': op = \"ycsb\" needs workload = \"a\"..\"f\" or a workload file", e.name)))
        }
        (_, Some(_)) => Err(Error::usage(format!("experiment '{}': `workload` only applies to op = \"ycsb\"", e.name))),
        (_, None) => Ok(None),
    }
}

/// YCSB data: every experiment runs at each record count (its workload file's, unless
/// --rows, -p recordcount or --quick say otherwise), recorded as the point's `param`.
/// Empty for other data.
fn record_counts(scope: &ExperimentScope, e: &ExperimentEntry, workload: Option<&ycsb::ResolvedWorkload>) -> Result<Vec<u64>> {
    let records: Vec<u64> = match (scope.data, workload.and_then(|w| w.records)) {
        (DataSpec::Ycsb { .. }, Some(n)) if !scope.records_fixed => vec![n],
        (DataSpec::Ycsb { recordcount, .. }, _) => recordcount.to_vec(),
        _ => Vec::new(),
    };
    if !records.is_empty() && e.sweep.iter().any(|s| !matches!(s, Sweep::Clients | Sweep::Single)) {
        return Err(Error::usage(format!(
            "experiment '{}': a study of YCSB data sweeps clients (threads) and record counts only (sweep = [\"clients\"])",
            e.name
        )));
    }
    Ok(records)
}

/// The experiment's points over its sweeps, in order, each once.
fn sweep_points(e: &ExperimentEntry, axes: &SweepAxes, lifecycle: bool) -> Result<Vec<Point>> {
    let mut points: Vec<Point> = Vec::new();
    let mut add = |p: Point| {
        if !points.contains(&p) {
            points.push(p);
        }
    };
    let plain = |clients: usize, param: Option<u64>| Point { clients, batch: 1, batched: false, param, rate: None };
    for sweep in &e.sweep {
        match sweep {
            Sweep::Clients => axes.clients.iter().for_each(|&c| add(plain(c, None))),
            Sweep::Batch => {
                add(plain(axes.batch_clients, None));
                axes.batch
                    .iter()
                    .for_each(|&b| add(Point { clients: axes.batch_clients, batch: b, batched: true, param: None, rate: None }));
            }
            Sweep::Single => add(plain(1, None)),
            Sweep::Sizes => axes.sizes.iter().for_each(|&n| {
                let one_request = e.op.writes() && !lifecycle;
                add(Point { clients: 1, batch: if one_request { n as usize } else { 1 }, batched: one_request, param: Some(n), rate: None })
            }),
            Sweep::SizesEach => {
                if !e.op.writes() {
                    return Err(Error::usage(format!("experiment '{}': sizes_each is for insert and delete", e.name)));
                }
                axes.sizes.iter().for_each(|&n| add(plain(1, Some(n))))
            }
            Sweep::Widths => {
                if !e.op.is_range() {
                    return Err(Error::usage(format!("experiment '{}': the widths sweep is only for range ops", e.name)));
                }
                axes.widths.iter().for_each(|&w| add(plain(axes.range_clients, Some(w))));
            }
        }
    }
    Ok(points)
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
    use crate::plan::{RunOptions, resolve};
    use crate::workload::experiment::{Experiment, ExperimentOp};

    #[test]
    fn batch_sweep_measures_batch_one_both_ways() {
        let plan = resolve(&RunOptions { batch: Some(vec![1, 10]), clients: Some(vec![1, 2]), ..Default::default() }).unwrap();
        let insert = plan.experiments.iter().find(|e| e.op == ExperimentOp::Insert).unwrap();
        let ones: Vec<_> = insert.points.iter().filter(|p| p.clients == 1 && p.batch == 1).collect();
        assert_eq!(ones.len(), 2, "{:?}", insert.points);
        assert!(ones.iter().any(|p| p.batched) && ones.iter().any(|p| !p.batched));
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
}
