//! `dbsweep run`: the plan from the options (or a resumed run's saved command), `--dry-run`,
//! this process's role among workers, the async runtime and signals, the spawned servers
//! around the run, the calibration sample, and the results printed at the end. Must not
//! measure anything itself: `runner` does.

use super::outcome::{finish, short_of_precision};
use super::preview::{announcement, budget_text};
use super::say;
use super::signals::{abandoned, watch_signals};
use super::spawned::{blame_dead_servers, start_servers, stop_servers};
use super::workers::gather_workers;
use crate::adapter::lease::Holder;
use crate::base::secret::Token;
use crate::cli::{Cli, Command};
use crate::error::{Error, Result};
use crate::plan::{self, RunOptions};
use crate::report;
use crate::runner::stopping::Activity;
use crate::runner::workers::Role;
use crate::runner::{self, Cancel, RunContext};
use clap::Parser;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `dbsweep run`: `raw_args` are the arguments after the program name, as given (local
/// workers get them); `command_line` is the command as the report records it.
pub(super) fn run(args: RunOptions, command_line: Vec<String>, raw_args: &[OsString]) -> Result<()> {
    let args = match &args.resume {
        Some(dir) if resumes_alone(&command_line) => saved_run_args(dir, &args)?,
        _ => args,
    };
    let mut plan = plan::resolve(&args)?;
    for w in &plan.warnings {
        eprint!("{}", report::console::fit(&format!("dbsweep: warning: {w}\n"), report::console::width()));
    }
    let role = Role::resolve(args.workers, args.worker, args.coordinator.clone(), args.listen.clone(), |k| std::env::var(k).ok())?;
    if let Some(role) = &role {
        runner::workers::check_count(role)?;
        runner::workers::check_plan(&plan)?;
        // A worker sees only its share of a run's ops: `--quick`'s shortest run, which
        // ends on the run's total, is left to one process; workers' runs do their ops.
        plan.experiments.iter_mut().for_each(|e| e.min_run_secs = None);
        if args.resume.is_some() {
            return Err(Error::usage("--resume and --workers together: resume the run in one process"));
        }
    }
    let resume = args.resume.as_deref().map(|dir| runner::resume::Resume::open(dir, &plan)).transpose()?;
    // Computed before servers are spawned (they become targets of the plan), printed by
    // the run once its leases are taken: a refused run stays a one-line refusal.
    let announcement = announcement(&plan);
    let calibration = match (calibrates(&args, &plan, role.is_some()), args.dry_run) {
        (false, true) => return say(&format!("{}{announcement}", budget_text(&plan))),
        (false, false) => Calibration::None,
        (true, false) => Calibration::First,
        (true, true) => Calibration::Only,
    };
    let token = match &role {
        Some(role) => Some(runner::workers::token(role, Token::from_environment(|k| std::env::var(k).ok())?)?),
        None => None,
    };
    sweep_leftovers(&plan);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))?;
    let (cancel, activity, abandon) = (Cancel::default(), Activity::default(), Arc::new(tokio::sync::Notify::new()));
    if let (Some(Role::Worker { index, count, coordinator }), Some(token)) = (&role, &token) {
        // A worker prints nothing and writes nothing: the coordinator reports.
        return runtime.block_on(async {
            let watcher = watch_signals(cancel.clone(), activity.clone(), abandon.clone());
            let served = runner::workers::worker::serve(&plan, *index, *count, coordinator, token.clone(), &cancel).await;
            watcher.abort();
            served
        });
    }
    let ctx = run_context(&args, &plan, command_line, &cancel, &activity, announcement)?;
    let watched = runtime.block_on(async {
        let watcher = watch_signals(cancel.clone(), activity.clone(), abandon.clone());
        let workers = role.as_ref().zip(token);
        let run = run_with_servers(&mut plan, ctx, &activity, workers, raw_args, resume, calibration);
        // A second signal abandons the cleanup: dropping the run kills the spawned servers.
        let result = tokio::select! {
            result = run => result,
            () = abandon.notified() => Err(abandoned(&cancel, &activity)),
        };
        watcher.abort();
        result
    });
    // Embedded clients or loads still blocked in a call after a stop are not waited for.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    let Some((report, dir)) = watched? else { return Ok(()) };
    say(&results_text(&report, &dir))?;
    finish(&report)
}

/// How this process hosts the run (see `RunContext`); `announcement` is printed once the
/// run's leases are taken.
fn run_context(
    args: &RunOptions,
    plan: &plan::Plan,
    command_line: Vec<String>,
    cancel: &Cancel,
    activity: &Activity,
    announcement: String,
) -> Result<RunContext> {
    Ok(RunContext {
        command: command_line,
        cancel: cancel.clone(),
        activity: activity.clone(),
        show_progress: !args.no_progress,
        runs_root: PathBuf::from("dbsweep-runs"),
        unavailable: plan
            .unavailable
            .iter()
            .map(|(system, reason)| report::model::Unavailable { system: system.clone(), reason: reason.clone() })
            .collect(),
        keep_data: args.keep_data,
        settle_after_load: true,
        holder: Holder::this_process(),
        workers: None,
        report_token: Token::from_environment(|k| std::env::var(k).ok())?,
        on_leases_taken: Some(print_later(announcement)),
    })
}

/// Prints `text` when called; a failed write (stdout is a file on a full disk) must not
/// stop the run.
fn print_later(text: String) -> Box<dyn Fn() + Send + Sync> {
    Box::new(move || {
        if let Err(e) = say(&report::console::fit(&text, report::console::width())) {
            tracing::warn!("{e}");
        }
    })
}

/// What a finished run prints: its tables, how long it took, the points short of their
/// precision, and where its files are.
fn results_text(report: &report::model::Report, dir: &Path) -> String {
    let files = [report::REPORT_JSON, report::RESULTS_CSV, report::RESULTS_OPS_CSV, report::REPORT_HTML].join(",");
    let paths = report::console::fit(&format!("\nresults: {}/{{{files}}}\n", dir.display()), report::console::width());
    let mut timing = report.timing.as_ref().map(timing_lines).unwrap_or_default();
    if let Some(short) = short_of_precision(report) {
        timing.push_str(&format!("{short}\n"));
    }
    format!("{}{timing}{paths}", report::console::render(report))
}

/// Starts the spawned servers (killed again, directories removed, at an error or a
/// signal), adds their targets to the plan, times the calibration sample (`calibration`),
/// runs the plan, and stops the servers. `None`: only the sample ran (`--dry-run
/// --calibrate`), and its estimate was printed.
async fn run_with_servers(
    plan: &mut plan::Plan,
    mut ctx: RunContext,
    activity: &Activity,
    workers: Option<(&Role, Arc<Token>)>,
    raw_args: &[OsString],
    resume: Option<runner::resume::Resume>,
    calibration: Calibration,
) -> Result<Option<(report::model::Report, PathBuf)>> {
    let cancel = ctx.cancel.clone();
    let mut servers = start_servers(plan, &cancel, activity).await?;
    plan.join_servers(servers.iter().map(|(label, server)| (label.clone(), server.spawned())).collect())?;
    if calibration != Calibration::None {
        let announcement = calibrate(plan, &ctx, activity).await?;
        if calibration == Calibration::Only {
            say(&report::console::fit(&announcement, report::console::width()))?;
            stop_servers(servers, &cancel, activity).await;
            return Ok(None);
        }
        ctx.on_leases_taken = Some(print_later(announcement));
    }
    let mut local_workers = None;
    if let Some((Role::Coordinator { count, listen, spawn_local }, token)) = workers {
        let (coordinator, local) = gather_workers(plan, &ctx, *count, listen.as_deref(), *spawn_local, token, raw_args).await?;
        ctx.workers = Some(Arc::new(coordinator));
        local_workers = local;
    }
    let result = runner::execute(plan, &ctx, resume).await.map_err(|e| blame_dead_servers(e, servers.iter_mut().map(|(_, s)| s)));
    if let Some(coordinator) = &ctx.workers {
        coordinator.finish().await;
    }
    if let Some(local) = local_workers {
        for warning in local.wait().await {
            tracing::warn!("{warning}");
        }
    }
    stop_servers(servers, &cancel, activity).await;
    result.map(Some)
}

/// Times the calibration sample on the plan's targets (spawned servers included), after
/// printing the estimate from typical costs as every run does, and estimates (and fits a
/// `--budget`) from the measured costs; returns the announcement with the calibrated
/// estimate.
async fn calibrate(plan: &mut plan::Plan, ctx: &RunContext, activity: &Activity) -> Result<String> {
    let typical = report::console::fit(&announcement(plan), report::console::width());
    say(&format!("{typical}calibrating: timing a short sample of each target and experiment to estimate from measured costs\n"))?;
    activity.doing("timing the calibration sample".to_string());
    plan.costs = Some(Arc::new(runner::calibrate::calibrate(plan, ctx).await?));
    if let Some(budget) = plan.budget_secs {
        plan.budget_note = Some(plan::estimate::fit_budget(plan, budget)?);
    }
    Ok(announcement(plan))
}

/// Removes the scratch, worker and spawned-server directories that dbsweep processes left
/// behind when they died without cleaning up (kill -9), from the temporary directory and the
/// plan's data roots (`base::scratch::sweep`: only marked directories of processes that are
/// gone).
fn sweep_leftovers(plan: &plan::Plan) {
    let roots = std::iter::once(std::env::temp_dir()).chain(plan.data_roots.iter().map(|r| r.path.clone()));
    for root in roots {
        for dir in crate::base::scratch::sweep(&root) {
            tracing::info!("removed {}, left behind by a dbsweep process that is gone", dir.display());
        }
    }
}

/// Whether the command line is `run --resume DIR` with nothing that shapes the plan (only
/// `--no-progress` beside it): the run's saved command then gives the plan.
fn resumes_alone(command_line: &[String]) -> bool {
    let mut rest = command_line.iter().skip_while(|a| *a != "run").skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--resume" => {
                rest.next();
            }
            "--no-progress" => {}
            a if a.starts_with("--resume=") => {}
            _ => return false,
        }
    }
    true
}

/// The arguments of the run saved in `dir` (its command line), to resume it with `given`'s
/// display options.
fn saved_run_args(dir: &Path, given: &RunOptions) -> Result<RunOptions> {
    let saved = report::load(dir)?;
    let shown = dir.join(report::REPORT_JSON);
    let shown = shown.display();
    if saved.command.iter().any(|a| a.contains("***")) {
        return Err(Error::usage(format!(
            "the command saved in {shown} had its passwords removed: give the run's arguments again with --resume"
        )));
    }
    match Cli::try_parse_from(&saved.command).map(|cli| cli.command) {
        Ok(Command::Run(mut args)) => {
            args.out = None;
            args.resume = given.resume.clone();
            args.no_progress = given.no_progress;
            Ok(*args)
        }
        _ => Err(Error::usage(format!("{shown} does not hold a `dbsweep run` command: give the run's arguments again with --resume"))),
    }
}

/// Whether a run times a calibration sample first: with `--calibrate`, or by default when
/// the estimate from typical costs is long or a `--budget` is to be fitted; never for a
/// smoke run, time-based runs (their length is known), a resumed run, one with workers, or
/// a `--dry-run` without `--calibrate` (which starts nothing).
fn calibrates(args: &RunOptions, plan: &plan::Plan, workers: bool) -> bool {
    if workers || args.resume.is_some() {
        return false;
    }
    if args.dry_run {
        return args.calibrate;
    }
    let long = || plan::estimate::estimate(plan).total() > plan::estimate::LONG_RUN_SECS;
    args.calibrate || (!plan.quick && plan.duration_secs().is_none() && (plan.budget_secs.is_some() || long()))
}

/// Whether `run_with_servers` times a calibration sample: not, before the run, or only
/// that (`--dry-run --calibrate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Calibration {
    None,
    First,
    Only,
}

/// The lines after a run's results: how long it took against its estimates, and which
/// points `--budget` left short of their precision or did not run.
fn timing_lines(timing: &report::model::Timing) -> String {
    use plan::estimate::human;
    let calibrated = match (timing.estimated_calibrated_secs, timing.calibration_secs) {
        (Some(secs), Some(sample)) => format!("{} from measured costs (a {} sample before the run), ", human(secs), human(sample)),
        _ => String::new(),
    };
    let budget = timing.budget_secs.map(|b| format!("; budget {}", human(b))).unwrap_or_default();
    format!(
        "\ntook {} (estimated {calibrated}{} from typical costs){budget}\n",
        human(timing.real_secs),
        human(timing.estimated_fixed_secs)
    )
}
