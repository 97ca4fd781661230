//! What a run does to its targets around the measurements: prepare them and load the
//! initial rows, load the next record count, and at the end remove what the run created
//! and give its leases back. Must not measure anything.

use super::progress::Progress;
use super::settle::{self, Settling};
use super::{RunContext, step, stopping};
use crate::adapter::Target;
use crate::adapter::lease::Leases;
use crate::base::custom::CustomOp;
use crate::base::op::Op;
use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::plan::Plan;
use std::collections::BTreeMap;
use std::sync::Arc;

/// What preparing and loading the targets left behind.
#[derive(Default)]
pub(super) struct Setup {
    /// The targets that need cleaning up.
    pub prepared: Vec<Arc<dyn Target>>,
    /// How long each spawned server took to go quiet after its load.
    pub settled: BTreeMap<String, Settling>,
    /// The seconds each target's load took.
    pub loaded: BTreeMap<String, f64>,
}

/// Prepares every target, runs the custom experiments' setup statements of its family
/// (`setups`), and loads its initial rows, into `setup`. A stop request ends a
/// load early (its row stream dries up), so even an engine whose load blocks its thread
/// returns promptly.
pub(super) async fn prepare_and_load(
    plan: &Plan,
    targets: &[Arc<dyn Target>],
    (dataset, setups): (&Dataset, &[Arc<CustomOp>]),
    progress: &mut Progress,
    setup: &mut Setup,
    ctx: &RunContext,
) -> Result<()> {
    step(progress, ctx, "generating the data".into());
    // Off the async threads, so a stop request is answered while it runs.
    let (data, cancel) = (dataset.clone(), ctx.cancel.flag());
    let generated = tokio::task::spawn_blocking(move || data.prepare(&cancel))
        .await
        .map_err(|e| Error::runtime(format!("generating the data failed: {e}")))?;
    if ctx.cancel.is_stopped() {
        return Ok(());
    }
    generated?;
    for t in targets {
        let name = &t.info().name;
        step(progress, ctx, format!("preparing {name}"));
        t.prepare(&dataset.tables).await?;
        if t.info().system != "nodb" {
            ctx.activity.holds_data(name);
        }
        setup.prepared.push(t.clone());
        run_setups(t, setups, dataset).await?;
        let began = std::time::Instant::now();
        load_tables(t.as_ref(), dataset, progress, ctx).await?;
        setup.loaded.insert(name.clone(), began.elapsed().as_secs_f64());
        if ctx.cancel.is_stopped() {
            return Ok(());
        }
        if let Some(settling) = settle_after_load(plan, name, progress, ctx).await {
            setup.settled.insert(name.clone(), settling);
        }
    }
    Ok(())
}

/// The setup statements each custom experiment has for `target`'s family, in order, on a
/// connection of their own, before the load (the NO-DB ceiling has none to run).
async fn run_setups(target: &Arc<dyn Target>, setups: &[Arc<CustomOp>], dataset: &Dataset) -> Result<()> {
    let info = target.info();
    let runs = |s: &&Arc<CustomOp>| info.capabilities.statements.is_some_and(|f| s.runs_on(f));
    for setup in setups.iter().filter(runs) {
        let values = crate::workload::custom::CustomDraws::new(setup.clone(), dataset).values(&crate::base::rng::Stream::new(0, 0), 0);
        let mut conn = target.connect().await?;
        conn.execute(&Op::Custom { op: setup.clone(), values })
            .await
            .map_err(|e| Error::runtime(format!("{}: {} failed: {}", info.name, setup.name, e.message)))?;
    }
    Ok(())
}

/// Waits for a spawned server to go quiet after its load (see [`settle`]); `None` for a
/// server dbsweep did not start (its processes are not ours to watch), when the run does
/// not wait (`RunContext::settle_after_load`) or on a stop.
async fn settle_after_load(plan: &Plan, name: &str, progress: &Progress, ctx: &RunContext) -> Option<Settling> {
    let pgid = plan.spawned_server(name).filter(|_| ctx.settle_after_load)?.pid;
    step(progress, ctx, format!("waiting for {name} to settle after loading"));
    settle::until_quiet(pgid, settle::LIMIT, &ctx.cancel).await
}

/// The warning for a server that was still busy when the wait for quiet ended.
pub(super) fn still_busy(name: &str, settling: &Settling) -> Option<String> {
    (!settling.quiet).then(|| format!("{name}: {}; its first runs may measure the load's background work", settling.describe()))
}

/// Loads `dataset`'s initial rows into every table of `target`, checking each table got
/// all its rows. A stop request ends it early (the row stream dries up), without error.
async fn load_tables(target: &dyn Target, dataset: &Dataset, progress: &Progress, ctx: &RunContext) -> Result<()> {
    let name = &target.info().name;
    for (id, table) in dataset.tables.iter().enumerate() {
        let n = dataset.initial_rows(id);
        step(progress, ctx, format!("loading {n} rows of {} into {name}", table.name));
        let rows = stopping::until_stopped(dataset.initial(id), ctx.cancel.flag());
        let loaded = target.load(table, rows).await.map_err(|e| lost_while_loading(target, &table.name, e))?;
        if ctx.cancel.is_stopped() {
            return Ok(());
        }
        if loaded != n {
            return Err(Error::runtime(format!("{name}: loaded {loaded} of {n} rows into {}", table.name)));
        }
    }
    Ok(())
}

/// A load failing with `Unreachable` after `prepare` reached the server: the server went
/// away mid-run, a run failure (exit 1) rather than a URL to fix (exit 2).
fn lost_while_loading(target: &dyn Target, table: &str, e: Error) -> Error {
    match e {
        Error::Unreachable { detail, .. } => Error::runtime(format!(
            "{}: the server went away while loading {table} (it had answered while preparing): {detail}",
            target.info().name
        )),
        other => other,
    }
}

/// Ends this run's use of its targets: stops renewing the leases, removes what the run
/// created (unless `keep_data`) wherever its lease is still its own, and gives the leases
/// back. After a stop request the spawned servers' data is not removed: they are killed
/// with their directories, data and all. Returns warnings for the report.
pub(super) async fn release_targets(
    plan: &Plan,
    targets: &[Arc<dyn Target>],
    leases: &Leases,
    renewal: tokio::task::JoinHandle<()>,
    keep_data: bool,
    ctx: &RunContext,
) -> Vec<String> {
    renewal.abort();
    let _ = renewal.await;
    // A last renewal tells whether another run took a namespace over meanwhile.
    let mut warnings = leases.renew_all().await;
    let stopping = ctx.cancel.is_stopped();
    for t in targets {
        let name = &t.info().name;
        if keep_data || (stopping && plan.spawned_server(name).is_some()) {
            ctx.activity.data_released(name);
            continue;
        }
        if !leases.still_ours(t) {
            warnings.push(format!("{name}: not cleaned up: another dbsweep run holds its namespace now"));
        } else {
            ctx.activity.doing(format!("removing dbsweep's data from {name}"));
            if let Err(e) = t.cleanup().await {
                tracing::warn!("cleanup of {name} failed: {e}");
            }
        }
        ctx.activity.data_released(name);
    }
    ctx.activity.doing("giving back the run's leases");
    leases.release_all().await;
    warnings
}

/// Replaces every target's data with `dataset` (the next YCSB record count): its tables
/// are dropped and recreated by `prepare` and loaded again. A target that fails is skipped
/// from then on.
pub(super) async fn reload(
    plan: &Plan,
    targets: &[Arc<dyn Target>],
    dataset: &Dataset,
    failed_targets: &mut BTreeMap<String, String>,
    progress: &mut Progress,
    warnings: &mut Vec<String>,
    ctx: &RunContext,
) {
    for t in targets {
        let name = t.info().name.clone();
        if failed_targets.contains_key(&name) || ctx.cancel.is_stopped() {
            continue;
        }
        let result = async {
            t.prepare(&dataset.tables).await?;
            load_tables(t.as_ref(), dataset, progress, ctx).await
        }
        .await;
        if result.is_ok()
            && let Some(settling) = settle_after_load(plan, &name, progress, ctx).await
        {
            warnings.extend(still_busy(&name, &settling));
        }
        if let Err(e) = result {
            warnings.push(format!("{name}: loading the next record count failed: {e}"));
            failed_targets.insert(name.clone(), format!("{name} could not load the next record count"));
        }
    }
}
