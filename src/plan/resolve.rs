//! `resolve`: raw options and a study file become one validated `Plan`, as a few named
//! steps in a fixed order (each step decides one part of the plan and returns the first
//! error it finds, naming the flag or key that fixes it).
//!
//! Owns the precedence of settings (flags, then YCSB's `-P`/`-p`, then `--quick`, then the
//! study file, then the defaults) and the run-wide checks; the experiments' own checks live
//! in `experiments`; the machine's limits are `bounds`'. Must not open connections or touch
//! the file system beyond reading the study, YCSB workload files and `--sql-file`.

use super::experiments::{self, ExperimentScope};
use super::method::and_list;
use super::{
    DEFAULT_STUDY, DataRoot, Plan, RunOptions, SizeOverrides, StudyFile, TargetOrigin, TargetSpec, load_study, parse_sizes, parse_target,
    shard, stopping, ycsb,
};
use super::{bounds, duration, estimate, method};
use crate::adapter::TargetUrl;
use crate::adapter::lease::Namespace;
use crate::base::durability::Durability;
use crate::data::{DataSpec, RecordCounts};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use crate::workload::experiment::{Experiment, Rate};

/// Validates raw options against a study and resolves everything into a plan, its numbers
/// bounded by what this machine can hold and do.
pub fn resolve(opts: &RunOptions) -> Result<Plan> {
    resolve_with(opts, &bounds::Machine::here())
}

/// `resolve` on `machine`.
pub(super) fn resolve_with(opts: &RunOptions, machine: &bounds::Machine) -> Result<Plan> {
    let StudyWithYcsb { study, ycsb, from_ycsb, mut warnings } = study_with_ycsb(opts)?;
    let preset = preset_overrides(opts, &study)?;
    let precision = stopping::resolve(stopping::StopFlags {
        precision: opts.precision.as_deref(),
        max_ops: opts.max_ops,
        max_time: opts.max_time.as_deref(),
        budget: opts.budget.is_some(),
        runs: opts.runs,
    })?;
    let duration_secs = duration::resolve(opts, &study)?;
    let settings = run_settings(opts, &study, &preset, &from_ycsb)?;
    let axes = sweep_axes(opts, &study, &preset, &from_ycsb)?;
    let timeout_secs = op_timeout(opts)?;
    let hlog_interval = hlog_interval(opts)?;
    let spawn = spawned_servers(opts, &study)?;
    let data_roots = data_roots(opts, &spawn)?;
    let durability = durability(opts, &study)?;
    let rows = opts.rows.clone().or(from_ycsb.records.clone());
    let mut data = sized_data(opts, &study, &preset, rows.as_deref(), machine)?;
    let targets = plan_targets(opts, &study)?;
    let description = run_description(opts, &study, &targets, &spawn, &data_roots);
    let script = super::script::resolve_script(opts, &study, &data, settings.seed)?;
    let scope = ExperimentScope {
        study: &study,
        only: opts.experiments.as_deref().or(preset.experiments.as_deref()),
        settings: &settings,
        axes: &axes,
        data: &data,
        ycsb: ycsb.as_ref(),
        records_fixed: rows.is_some() || preset.rows.is_some(),
        script: script.as_ref(),
    };
    let (mut experiments, record_rounds) = experiments::resolve_experiments(&scope, &mut warnings)?;
    clients_within_ops(&experiments)?;
    custom_statements_run(&experiments, &targets, &spawn)?;
    run_lengths(opts, &mut experiments, duration_secs, precision.is_some(), settings.ops, &mut warnings)?;
    let unavailable = unavailable_systems(&study)?;
    if let DataSpec::Ycsb { recordcount, .. } = &mut data
        && !record_rounds.is_empty()
    {
        *recordcount = RecordCounts::from_list(&record_rounds);
    }

    let mut plan = Plan {
        study: study.name,
        description,
        seed: settings.seed,
        runs: settings.runs,
        warmup: settings.warmup,
        data,
        targets,
        experiments,
        out: opts.resume.clone().or(opts.out.clone()), // a resumed run continues in its directory
        quick: opts.quick,
        timeout_secs,
        hlog_interval,
        rates: axes.rates.clone(),
        durability,
        spawn,
        data_roots,
        method: study.method,
        cli_clients: study.cli_clients,
        unavailable,
        lifecycle: study.lifecycle,
        namespace: Namespace::new(opts.namespace.as_deref())?,
        spawn_target_options: study.spawn_target_options,
        warnings,
        shard: None,
        precision,
        budget_note: None,
        budget_secs: None,
        budget_asked: None,
        calibrated_cap_secs: None,
        costs: None,
        servers_joined: false,
        hash: String::new(),
        planned_targets: serde_json::Value::Null,
    };
    fit_to_limits(&mut plan, opts, machine)?;
    Ok(plan)
}

/// How long each experiment's runs last: `--duration`, `--quick`'s shortest run, and the
/// runs `--precision` needs.
fn run_lengths(
    opts: &RunOptions,
    experiments: &mut Vec<Experiment>,
    duration_secs: Option<f64>,
    precision: bool,
    ops_cap: u64,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if let Some(secs) = duration_secs {
        duration::apply(secs, experiments, opts.experiments.is_some(), warnings)?;
    }
    if opts.quick && opts.ops.is_none() && duration_secs.is_none() && !precision && opts.budget.is_none() {
        duration::apply_quick_min_run(experiments);
    }
    if precision {
        for e in experiments.iter_mut().filter(|e| stopping::Precision::applies_to(e)) {
            e.runs = e.runs.max(stopping::MIN_PRECISION_RUNS);
            // The echo floor's own few ops could never show a precision: it gets the cap.
            if e.name == super::FLOOR_EXPERIMENT {
                e.ops = e.ops.max(ops_cap);
            }
        }
    }
    Ok(())
}

/// Checks the plan against this machine and `--paper`'s 8 hours, fits it to `--budget`,
/// states its method, hashes it and selects `--shard`'s part.
fn fit_to_limits(plan: &mut Plan, opts: &RunOptions, machine: &bounds::Machine) -> Result<()> {
    // Before anything walks the plan's rows or ops (the budget's estimate does).
    bounds::check_plan(plan, machine)?;
    if opts.paper && opts.budget.is_none() {
        let secs = estimate::estimate(plan).total() * shard_share(plan, opts.shard.as_deref())?;
        if secs > PAPER_MAX_SECS {
            let parts = (secs / PAPER_MAX_SECS).ceil() as u64;
            return Err(Error::usage(format!(
                "--paper: {} at the paper's sizes is estimated at {} here, over 8 h: run a part (--experiments, --sizes, or --shard 0/{parts} .. {}/{parts} on several machines), or cap it with --budget 8h where its runs can stop early",
                plan.study,
                estimate::human(secs),
                parts - 1
            )));
        }
    }
    if let Some(budget) = &opts.budget {
        let secs = stopping::parse_duration("--budget", budget)?;
        plan.budget_note = Some(estimate::fit_budget(plan, secs)?);
        plan.budget_secs = Some(secs);
    }
    // After --budget, which may shorten the runs the method lines state.
    plan.method = method::fill(plan.method.take(), &plan.experiments, plan.precision, &plan.data);
    let hashed = plan.to_json();
    plan.hash = shard::plan_hash(&hashed);
    plan.planned_targets = hashed["targets"].clone();
    if let Some(text) = &opts.shard {
        plan.shard = Some(shard::select(&plan.work_units(), shard::parse(text)?));
    }
    Ok(())
}

/// The share of the plan's estimated time that `--shard I/N` runs here (1 without it).
fn shard_share(plan: &Plan, shard_flag: Option<&str>) -> Result<f64> {
    let Some(text) = shard_flag else { return Ok(1.0) };
    let units = plan.work_units();
    let chosen = shard::select(&units, shard::parse(text)?);
    let total: u64 = units.iter().map(|u| u.weight).sum();
    let here: u64 = units
        .iter()
        .filter(|u| match u.experiment {
            Some(i) => chosen.runs(&u.target, i, false),
            None => chosen.runs_lifecycle(&u.target),
        })
        .map(|u| u.weight)
        .sum();
    Ok(here as f64 / total.max(1) as f64)
}

/// What a run of the built-in or file study `name` takes for each flag not given, as
/// (`run` flag id, value) for `run --help`: the study's values, else dbsweep's defaults.
pub fn defaults(name: &str) -> Result<Vec<(&'static str, String)>> {
    let study = load_study(name)?;
    let none = (RunOptions::default(), SizeOverrides::default(), ycsb::ClientOverrides::default());
    let settings = run_settings(&none.0, &study, &none.1, &none.2)?;
    let axes = sweep_axes(&none.0, &study, &none.1, &none.2)?;
    let list = |values: &[String]| values.join(",");
    let own_ops: Vec<String> = study.experiments.iter().filter_map(|e| Some(format!("{} {}", e.name, e.ops?))).collect();
    let ops = match own_ops.as_slice() {
        [] => settings.ops.to_string(),
        own => format!("{}; {}", settings.ops, own.join(", ")),
    };
    let mut values = vec![
        ("runs", settings.runs.to_string()),
        ("warmup", settings.warmup.to_string()),
        ("ops", ops),
        ("seed", settings.seed.to_string()),
        ("clients", list(&axes.clients.iter().map(usize::to_string).collect::<Vec<_>>())),
        ("batch", list(&axes.batch.iter().map(usize::to_string).collect::<Vec<_>>())),
        ("widths", list(&axes.widths.iter().map(u64::to_string).collect::<Vec<_>>())),
        ("range_clients", axes.range_clients.to_string()),
        ("batch_clients", axes.batch_clients.to_string()),
    ];
    match &study.data {
        DataSpec::Kv { rows, .. } | DataSpec::Pairs { rows, .. } => values.push(("rows", rows.to_string())),
        DataSpec::Tpch { scale } | DataSpec::Pgbench { scale } => values.push(("scale", scale.to_string())),
        DataSpec::Ycsb { recordcount, .. } => {
            values.push(("rows", list(&recordcount.to_vec().iter().map(u64::to_string).collect::<Vec<_>>())))
        }
    }
    Ok(values)
}

/// The study as adapted by YCSB's `-P`/`-p`, and what those properties set for the client.
struct StudyWithYcsb {
    study: StudyFile,
    /// The `-P`/`-p` properties, when any were given.
    ycsb: Option<ycsb::CommandLine>,
    /// Record counts, ops, threads and rate the properties set (each clashes with its flag).
    from_ycsb: ycsb::ClientOverrides,
    /// Properties accepted but not honoured.
    warnings: Vec<String>,
}

/// Loads the study (`-P` alone means the ycsb study) and applies YCSB's properties to it.
fn study_with_ycsb(opts: &RunOptions) -> Result<StudyWithYcsb> {
    let (study_name, ycsb_files) = ycsb::study_and_files(opts.study.as_deref(), &opts.ycsb_files, !opts.ycsb_properties.is_empty());
    let default_study = if super::script::named(opts) { super::script::SCRIPT_STUDY } else { DEFAULT_STUDY };
    let mut study = load_study(study_name.as_deref().unwrap_or(default_study))?;
    if super::script::named(opts) {
        super::script::adapt_study(&mut study);
    }
    let ycsb = ycsb::CommandLine::read(&ycsb_files, &opts.ycsb_properties)?;
    let mut warnings = Vec::new();
    let mut from_ycsb = ycsb::ClientOverrides::default();
    if let Some(cli) = &ycsb {
        ycsb::adapt_study(&mut study, cli)?;
        from_ycsb = ycsb::client_overrides(cli, opts.rows.as_ref(), opts.ops, opts.clients.as_ref(), opts.rate.as_deref())?;
        warnings.extend(cli.applied.warnings.iter().cloned());
    }
    Ok(StudyWithYcsb { study, ycsb, from_ycsb, warnings })
}

/// The run-wide numbers every experiment starts from.
pub(super) struct RunSettings {
    pub seed: u64,
    /// Measured runs per point.
    pub runs: u32,
    /// Warm-up runs per point.
    pub warmup: u32,
    /// Ops per run.
    pub ops: u64,
    /// `--runs` was given: it overrides every experiment's own `runs`.
    pub runs_fixed: bool,
    /// `--warmup` was given: it overrides every experiment's own `warmup`.
    pub warmup_fixed: bool,
    /// `--ops`, YCSB's `operationcount` or `--quick` set the ops: they override every
    /// experiment's own `ops` (analytic queries excepted).
    pub ops_fixed: bool,
    /// `--quick`: the echo floor runs fewer ops too.
    pub quick: bool,
}

/// The longest a `--paper` run may be estimated at without `--budget`: one night here
/// (8 h, as its refusal says).
pub const PAPER_MAX_SECS: f64 = 8.0 * 3600.0;

/// The study's `[quick]` values under `--quick`, its `[paper]` values under `--paper`
/// (a study without `[paper]` reproduces no paper: refused), else none.
fn preset_overrides(opts: &RunOptions, study: &StudyFile) -> Result<SizeOverrides> {
    if opts.quick && opts.paper {
        return Err(Error::usage("--quick and --paper ask for different sizes: give one"));
    }
    if opts.paper {
        return study.paper.clone().ok_or_else(|| {
            Error::usage(format!(
                "--paper: study {} reproduces no paper; the paper studies are insert-find, in-memory, ycsb and kv-vs-relational",
                study.name
            ))
        });
    }
    Ok(if opts.quick { study.quick.clone().unwrap_or_default() } else { SizeOverrides::default() })
}

fn run_settings(opts: &RunOptions, study: &StudyFile, preset: &SizeOverrides, from_ycsb: &ycsb::ClientOverrides) -> Result<RunSettings> {
    let runs = opts.runs.or(preset.runs).or(study.runs).unwrap_or(3);
    if runs == 0 {
        return Err(Error::usage("--runs must be at least 1"));
    }
    if opts.ops.is_some() && opts.max_ops.is_some() {
        return Err(Error::usage("--ops and --max-ops: give one (under --precision, --max-ops caps each run's ops)"));
    }
    let cli_ops = opts.max_ops.or(opts.ops).or(from_ycsb.ops);
    let ops = cli_ops.or(preset.ops).or(study.ops).unwrap_or(50_000);
    if ops == 0 {
        return Err(Error::usage("--ops must be at least 1"));
    }
    Ok(RunSettings {
        seed: opts.seed.or(study.seed).unwrap_or(42),
        runs,
        warmup: opts.warmup.or(study.warmup).unwrap_or(1),
        ops,
        runs_fixed: opts.runs.is_some(),
        warmup_fixed: opts.warmup.is_some(),
        ops_fixed: cli_ops.is_some() || opts.quick || preset.ops.is_some(),
        quick: opts.quick,
    })
}

/// What the sweeps range over.
pub(super) struct SweepAxes {
    pub clients: Vec<usize>,
    pub batch: Vec<usize>,
    pub widths: Vec<u64>,
    pub sizes: Vec<u64>,
    /// Clients of the widths sweep.
    pub range_clients: usize,
    /// Clients of the batch sweep.
    pub batch_clients: usize,
    /// Fixed rates each point runs at (empty: closed loop).
    pub rates: Vec<Rate>,
}

fn sweep_axes(opts: &RunOptions, study: &StudyFile, preset: &SizeOverrides, from_ycsb: &ycsb::ClientOverrides) -> Result<SweepAxes> {
    let clients = opts
        .clients
        .clone()
        .or(from_ycsb.clients.clone())
        .or(preset.clients.clone())
        .or(study.clients.clone())
        .unwrap_or_else(|| vec![1, 2, 4, 8]);
    client_counts("--clients", &clients)?;
    let batch = opts.batch.clone().or(preset.batch.clone()).or(study.batch.clone()).unwrap_or_else(|| vec![1, 10, 100, 1000]);
    positive_list("--batch", &batch)?;
    let widths = opts.widths.clone().or(preset.widths.clone()).or(study.widths.clone()).unwrap_or_else(|| vec![1, 10, 100, 1000]);
    positive_list("--widths", &widths)?;
    let sizes = match (&opts.sizes, &preset.sizes, &study.sizes) {
        (Some(t), _, _) => parse_sizes(t).map_err(|e| Error::usage(format!("--sizes: {e}")))?,
        (None, Some(q), _) => q.resolve(if opts.paper { "paper.sizes" } else { "preset.sizes" })?,
        (None, None, Some(s)) => s.resolve("sizes")?,
        _ => vec![100, 1000, 10_000],
    };
    positive_list("--sizes", &sizes)?;
    let range_clients = opts.range_clients.or(study.range_clients).unwrap_or(8);
    let batch_clients = opts.batch_clients.or(study.batch_clients).unwrap_or(1);
    client_counts("--range-clients", &[range_clients])?;
    client_counts("--batch-clients", &[batch_clients])?;
    let rates = fixed_rates(opts, from_ycsb)?;
    if !rates.is_empty() && study.lifecycle {
        return Err(Error::usage(format!(
            "--rate: the {} study's phases run back to back as fast as they can; leave out --rate",
            study.name
        )));
    }
    Ok(SweepAxes { clients, batch, widths, sizes, range_clients, batch_clients, rates })
}

/// The most clients a point may have: each is a connection (and, for some adapters, a
/// thread) of this one process; beyond this, split the load with `--workers`.
const MAX_CLIENTS: usize = 1024;

fn client_counts(flag: &str, values: &[usize]) -> Result<()> {
    positive_list(flag, values)?;
    match values.iter().find(|v| **v > MAX_CLIENTS) {
        Some(v) => Err(Error::usage(format!(
            "{flag} {v} is more than the {MAX_CLIENTS} clients one process runs; use at most {MAX_CLIENTS} and --workers N for more"
        ))),
        None => Ok(()),
    }
}

/// Every client of a point gets at least one op of each run (a client with none would
/// only open a connection), so no point may have more clients than its run has ops.
fn clients_within_ops(experiments: &[Experiment]) -> Result<()> {
    for e in experiments.iter().filter(|e| !e.sized) {
        if let Some(p) = e.points.iter().find(|p| p.clients as u64 > e.ops) {
            return Err(Error::usage(format!(
                "experiment {}: {} clients but only {} ops per run; lower --clients or raise --ops to at least {}",
                e.name, p.clients, e.ops, p.clients
            )));
        }
    }
    Ok(())
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

/// The interval of the latency-over-time histograms (`--hlog-interval`, default 1 s; 0: none).
fn hlog_interval(opts: &RunOptions) -> Result<Option<std::time::Duration>> {
    let secs = opts.hlog_interval.unwrap_or(1.0);
    if !(secs >= 0.001 || secs == 0.0) || !secs.is_finite() || secs > 86_400.0 {
        return Err(Error::usage("--hlog-interval must be 0 (no interval logs) or between 0.001 and 86400 seconds"));
    }
    Ok((secs > 0.0).then(|| std::time::Duration::from_secs_f64(secs)))
}

/// The per-op timeout in seconds (`--timeout`, default 60).
fn op_timeout(opts: &RunOptions) -> Result<f64> {
    let timeout_secs = opts.timeout.unwrap_or(60.0);
    if timeout_secs.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || timeout_secs > bounds::HORIZON_SECS {
        return Err(Error::usage(format!(
            "--timeout must be a positive number of seconds, at most {} (a week, the longest a plan may take)",
            bounds::HORIZON_SECS
        )));
    }
    Ok(timeout_secs)
}

/// The servers `--spawn` starts (`all`: the study's `spawn_all`), each once, in order.
/// Every custom experiment has a statement for some system of the run (see
/// `custom::check_families`): the systems of the targets named and of the servers spawned.
fn custom_statements_run(experiments: &[Experiment], targets: &[super::TargetSpec], spawn: &[ServerKind]) -> Result<()> {
    use crate::adapter::registry::{self, Needs, SYSTEMS};
    let family = |d: &registry::Declaration| {
        (d.system.to_string(), d.capabilities.statements.filter(|_| d.capabilities.ops.contains(crate::base::op::OpKind::Custom)))
    };
    let mut systems: Vec<_> = targets.iter().filter_map(|t| registry::check_scheme(&t.name, &t.url).ok()).map(family).collect();
    systems.extend(spawn.iter().flat_map(|kind| SYSTEMS.iter().filter(move |d| d.needs == Needs::Server(*kind))).map(family));
    for e in experiments {
        if let Some(op) = &e.custom {
            super::custom::check_families(&e.name, op, &systems).map_err(Error::usage)?;
        }
    }
    Ok(())
}

fn spawned_servers(opts: &RunOptions, study: &StudyFile) -> Result<Vec<ServerKind>> {
    for name in study.spawn_target_options.keys() {
        let server = name.strip_suffix("-cli").filter(|s| s.parse::<ServerKind>().is_ok_and(|k| k.client_target_name().is_some()));
        server
            .unwrap_or(name)
            .parse::<ServerKind>()
            .map_err(|e: Error| Error::usage(format!("study '{}': spawn_target_options: {e}", study.name)))?;
    }
    let all_kinds = spawn_all(study)?;
    let mut spawn: Vec<ServerKind> = Vec::new();
    for name in &opts.spawn {
        let kinds: Vec<ServerKind> = if name.trim() == "all" { all_kinds.clone() } else { vec![name.parse()?] };
        for k in kinds {
            if !spawn.contains(&k) {
                spawn.push(k);
            }
        }
    }
    Ok(spawn)
}

/// The servers `--spawn all` starts for `study`: its `spawn_all` (its paper's systems),
/// else every kind but the clusters.
pub fn spawn_all(study: &StudyFile) -> Result<Vec<ServerKind>> {
    match &study.spawn_all {
        // A cluster is one more deployment of a system, of several processes: named on its own.
        None => Ok(ServerKind::ALL.into_iter().filter(|k| !k.is_cluster()).collect()),
        Some(names) => {
            names.iter().map(|n| n.parse().map_err(|e: Error| Error::usage(format!("study '{}': spawn_all: {e}", study.name)))).collect()
        }
    }
}

/// `--data-root` directories, each with a label of its own; only for spawned servers.
fn data_roots(opts: &RunOptions, spawn: &[ServerKind]) -> Result<Vec<DataRoot>> {
    if !opts.data_roots.is_empty() && spawn.is_empty() {
        return Err(Error::usage("--data-root only applies to spawned servers; add --spawn"));
    }
    let data_roots: Vec<DataRoot> = opts.data_roots.iter().map(|r| DataRoot::parse(r)).collect::<Result<_>>()?;
    for (i, r) in data_roots.iter().enumerate() {
        if data_roots[..i].iter().any(|o| o.label == r.label) {
            return Err(Error::usage(format!("--data-root: label '{}' is used twice; name the roots with LABEL=DIR", r.label)));
        }
    }
    Ok(data_roots)
}

/// `--durability`, else the study's `durability`; `None`: each system's default.
fn durability(opts: &RunOptions, study: &StudyFile) -> Result<Option<Durability>> {
    let (text, source) = match (&opts.durability, &study.durability) {
        (Some(flag), _) => (flag, "--durability"),
        (None, Some(key)) => (key, "the study's durability"),
        (None, None) => return Ok(None),
    };
    Durability::parse(text)
        .map(Some)
        .ok_or_else(|| Error::usage(format!("{source} must be none, periodic or commit (fsync at every commit), got '{text}'")))
}

/// Fixed rates (`--rate`, or YCSB's `target`), ascending and each once; empty runs
/// closed loop.
fn fixed_rates(opts: &RunOptions, from_ycsb: &ycsb::ClientOverrides) -> Result<Vec<Rate>> {
    let asked = match &opts.rate {
        Some(list) => list.clone(),
        None => from_ycsb.rate.flatten().into_iter().collect(),
    };
    let mut rates = asked
        .iter()
        .map(|&r| {
            Rate::new(r).ok_or_else(|| {
                Error::usage(format!("--rate must be positive numbers of ops per second, got {}", crate::base::span::number(r)))
            })
        })
        .collect::<Result<Vec<Rate>>>()?;
    rates.sort_by(|a, b| a.ops_per_sec().total_cmp(&b.ops_per_sec()));
    rates.dedup();
    Ok(rates)
}

/// The study's data, sized by `--rows` (a list only for YCSB record counts), `--scale`
/// (TPC-H) or `--quick`, and checked.
fn sized_data(
    opts: &RunOptions,
    study: &StudyFile,
    preset: &SizeOverrides,
    rows: Option<&[u64]>,
    machine: &bounds::Machine,
) -> Result<DataSpec> {
    let mut data = study.data.clone();
    if let Some(list) = rows {
        positive_list("--rows", list)?;
        if list.len() > 1 && !matches!(data, DataSpec::Ycsb { .. }) {
            return Err(Error::usage("a list of --rows sweeps YCSB record counts; this study's data takes one row count"));
        }
    }
    let single_rows = rows.map(|r| r[0]);
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
            if let Some(r) = single_rows.or(preset.rows) {
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
            if let Some(r) = single_rows.or(preset.rows) {
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
            if let Some(r) = rows.map(<[u64]>::to_vec).or(preset.rows.map(|r| vec![r])) {
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
            if let Some(s) = opts.scale.or(preset.scale) {
                *scale = s;
            }
            crate::data::tpch::check_scale(*scale).map_err(|e| Error::usage(format!("--scale: {e}")))?
        }
        DataSpec::Pgbench { scale } => {
            if let Some(s) = opts.scale.or(preset.scale) {
                *scale = s;
            }
            if !(scale.is_finite() && *scale * crate::data::pgbench::ACCOUNTS_PER_SCALE >= 1.0 && *scale <= 100_000.0) {
                return Err(Error::usage(format!("--scale {scale}: pgbench data needs a scale from 0.00001 (one account) to 100000")));
            }
        }
    }
    // Before anything makes a record's columns.
    bounds::check_record(&data, machine)?;
    Ok(data)
}

/// Whether the user named the systems to run (`--target`, `--spawn`): then the run
/// measures those, and the study's own targets only with `--with-study-targets`.
fn names_targets(opts: &RunOptions) -> bool {
    !opts.targets.is_empty() || !opts.spawn.is_empty()
}

/// The plan's targets before spawned servers join: the study's unless the user named
/// systems (`--target`/`--spawn`; `--with-study-targets` keeps the study's too, `--spawn
/// all` the study's targets that are the paper's systems), then the
/// `--target`s, with the NO-DB ceiling first unless one is given; names are unique.
fn plan_targets(opts: &RunOptions, study: &StudyFile) -> Result<Vec<TargetSpec>> {
    let mut targets: Vec<TargetSpec> = Vec::new();
    let spawn_all = opts.spawn.iter().any(|s| s == "all");
    for t in &study.targets {
        if !names_targets(opts) || opts.with_study_targets || (spawn_all && t.paper) {
            targets.push(TargetSpec::new(t.name.clone(), TargetUrl::parse(&t.url)?, TargetOrigin::Study)?);
        }
    }
    for t in &opts.targets {
        targets.push(parse_target(t)?);
    }
    // The NO-DB ceiling is measured in every run, with the same settings.
    if !targets.iter().any(|t| t.url.scheme() == "nodb") {
        targets.insert(0, TargetSpec::ceiling());
    }
    for (i, t) in targets.iter().enumerate() {
        if targets[..i].iter().any(|o| o.name == t.name) {
            return Err(Error::usage(format!("target name '{}' is used twice; name targets with --target NAME=URL", t.name)));
        }
    }
    Ok(targets)
}

/// What the run measures, for the report's title and the console: the study's description
/// when it runs the study's targets, else the study's experiments on the systems the user
/// named (`--target` names, `--spawn` servers, in that order) and, with
/// `--with-study-targets`, its own.
fn run_description(opts: &RunOptions, study: &StudyFile, targets: &[TargetSpec], spawn: &[ServerKind], data_roots: &[DataRoot]) -> String {
    if !names_targets(opts) {
        return study.description.clone();
    }
    let systems_from = |origin: TargetOrigin| -> Vec<String> {
        targets.iter().filter(|t| t.origin == origin && t.url.scheme() != "nodb").map(|t| t.name.clone()).collect()
    };
    let mut named = systems_from(TargetOrigin::Named);
    let roots: Vec<&str> = data_roots.iter().map(|r| r.label.as_str()).collect();
    for kind in spawn {
        named.push(match roots.len() {
            0 | 1 => kind.name().to_string(),
            _ => format!("{} (on {})", kind.name(), and_list(&roots)),
        });
    }
    let own = if opts.with_study_targets { systems_from(TargetOrigin::Study) } else { Vec::new() };
    let systems = match (named.as_slice(), own.as_slice()) {
        ([], []) => return format!("The {} study's experiments on the NO-DB ceiling alone", study.name),
        (named, []) => and_list(named),
        ([], own) => format!("its own {}", and_list(own)),
        (named, own) => format!("{}, and on its own {}", and_list(named), and_list(own)),
    };
    format!("The {} study's experiments on {systems}, with the NO-DB ceiling", study.name)
}

/// The study's systems that cannot run here, each with the registry's reason.
pub fn unavailable_systems(study: &StudyFile) -> Result<Vec<(String, String)>> {
    let mut unavailable = Vec::new();
    for system in &study.unavailable {
        let entry = crate::adapter::registry::SYSTEMS.iter().find(|s| s.system == system.as_str());
        match entry.and_then(|e| e.unavailable()) {
            Some(why) => unavailable.push((system.clone(), why.to_string())),
            None => {
                return Err(Error::usage(format!("study '{}': '{system}' in `unavailable` is not a known unavailable system", study.name)));
            }
        }
    }
    Ok(unavailable)
}

#[cfg(test)]
mod tests;
