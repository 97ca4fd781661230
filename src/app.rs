//! Command dispatch: parses arguments, runs the chosen command, prints results and the
//! one-line error, and maps every outcome to an exit code. The only place that prints.

use crate::adapter::lease::Holder;
use crate::adapter::probe;
use crate::cli::{Cli, Command, GenCommand, RunArgs};
use crate::error::{Error, Result};
use crate::plan::{self, RunOptions};
use crate::report;
use crate::runner::stopping::Activity;
use crate::runner::workers::Role;
use crate::runner::{self, Cancel, RunContext, StopCause};
use crate::servers;
use clap::{FromArgMatches, Parser};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;

mod command_line;

/// Runs dbsweep with these arguments (the first is the program name); returns the exit
/// code. Errors are printed as one line on stderr.
pub fn main<I: IntoIterator<Item = OsString>>(args: I) -> i32 {
    let args: Vec<OsString> = args.into_iter().collect();
    let parsed = command_line::command().try_get_matches_from(&args).and_then(|m| Ok((Cli::from_arg_matches(&m)?, m)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand)
            {
                let _ = e.print();
                return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { 2 } else { 0 };
            }
            eprintln!("dbsweep: {}", one_line_usage_error(&e.to_string()));
            return 2;
        }
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            // The scylla driver logs each server-side warning (e.g. a batch above Cassandra's 5 KiB
            // warning threshold) per request: thousands of lines during a load, for batch sizes
            // dbsweep chose deliberately and records in the target's settings.
            tracing_subscriber::EnvFilter::try_from_env("DBSWEEP_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,scylla=error")),
        )
        .try_init();
    let recorded = command_line::with_env_flags(&args, &matches);
    let command_line: Vec<String> = recorded.iter().map(|a| crate::adapter::url::redact_text(&a.to_string_lossy())).collect();
    match dispatch(cli.command, command_line, &args[1..]) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("dbsweep: {}", e.to_string().replace('\n', " "));
            e.exit_code()
        }
    }
}

/// clap's error as one line: its first line, with the possible values and its tip ("a
/// similar argument exists: '--clients'") when it gives them, and where to read more.
fn one_line_usage_error(clap_text: &str) -> String {
    let lines: Vec<&str> = clap_text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let first = lines.first().copied().unwrap_or("bad arguments").trim_start_matches("error: ");
    let first = match lines.iter().find(|l| l.starts_with("[possible values: ")) {
        Some(values) => format!("{first} {values}"),
        None => first.to_string(),
    };
    match lines.iter().find_map(|l| l.strip_prefix("tip: ")) {
        Some(tip) => format!("{first} ({tip}; see dbsweep --help)"),
        None => format!("{first} (see dbsweep --help)"),
    }
}

/// `raw_args`: the arguments after the program name, as given (local workers get them).
fn dispatch(command: Command, command_line: Vec<String>, raw_args: &[OsString]) -> Result<()> {
    match command {
        Command::Run(args) => run(args, command_line, raw_args),
        Command::Studies => {
            for (name, _) in plan::BUILT_IN {
                let study = plan::load_study(name)?;
                println!("{name:<18} {}", study.description);
            }
            Ok(())
        }
        Command::Targets { format } => targets(format),
        Command::Gen(GenCommand::Keys { n, seed, value_bytes, out }) => {
            if n == 0 {
                return Err(Error::usage("gen keys: N must be at least 1"));
            }
            use crate::data::pairs::{PairGen, PairValue};
            let values = match value_bytes {
                Some(bytes) => PairGen::new(seed, PairValue::Text, bytes),
                None => PairGen::new(seed, PairValue::Int, 0),
            };
            let text = crate::data::keys::to_csv(n, seed, &values);
            match out {
                Some(path) => {
                    let path = if path.parent().is_some_and(|p| p.as_os_str().is_empty()) { PathBuf::from(".").join(path) } else { path };
                    report::write_atomic(&path, text.as_bytes())
                }
                None => {
                    print!("{text}");
                    Ok(())
                }
            }
        }
        Command::Compare { dirs, format, min_effect } => {
            let min_effect = plan::stopping::parse_fraction("--min-effect", &min_effect)?;
            let reports = dirs.iter().map(|d| report::load(d)).collect::<Result<Vec<_>>>()?;
            let names: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
            print!("{}", report::compare::Comparison::new(&names, &reports, min_effect).render(format));
            Ok(())
        }
        Command::Merge { dirs, out } => merge(dirs, out, command_line),
        Command::Completions { shell } => command_line::print_completions(shell),
        Command::Man { dir } => command_line::man_pages(dir.as_deref()),
        Command::Report { dir } => {
            let mut report = report::load(&dir)?;
            report::exports::write_all(&dir, &mut report)?;
            report::write_all(&dir, &report)?;
            print!("{}", report::console::render(&report));
            println!("\nre-rendered {} and {} in {} from {}", report::RESULTS_CSV, report::REPORT_HTML, dir.display(), report::REPORT_JSON);
            Ok(())
        }
    }
}

fn run(args: RunArgs, command_line: Vec<String>, raw_args: &[OsString]) -> Result<()> {
    let args = match &args.resume {
        Some(dir) if resumes_alone(&command_line) => saved_run_args(dir, &args)?,
        _ => args,
    };
    let opts = RunOptions {
        study: args.study,
        targets: args.targets,
        experiments: args.experiments,
        clients: args.clients,
        batch: args.batch,
        widths: args.widths,
        sizes: args.sizes,
        batch_clients: args.batch_clients,
        range_clients: args.range_clients,
        runs: args.runs,
        warmup: args.warmup,
        ops: args.ops,
        duration: args.duration,
        rows: args.rows,
        scale: args.scale,
        seed: args.seed,
        out: args.resume.clone().or(args.out),
        quick: args.quick,
        timeout_secs: args.timeout,
        hlog_interval_secs: args.hlog_interval,
        rate: args.rate,
        durability: args.durability,
        spawn: args.spawn,
        data_roots: args.data_roots,
        namespace: args.namespace,
        ycsb_files: args.ycsb_files,
        ycsb_properties: args.ycsb_properties,
        shard: args.shard,
        precision: args.precision,
        max_ops: args.max_ops,
        max_time: args.max_time,
        budget: args.budget,
    };
    let mut plan = plan::resolve(&opts)?;
    for w in &plan.warnings {
        eprintln!("dbsweep: warning: {w}");
    }
    let role = Role::resolve(args.workers, args.worker, args.coordinator.clone(), |k| std::env::var(k).ok())?;
    if role.is_some() {
        runner::workers::check_plan(&plan)?;
        if args.resume.is_some() {
            return Err(Error::usage("--resume and --workers together: resume the run in one process"));
        }
    }
    let resume = args.resume.as_deref().map(|dir| runner::resume::Resume::open(dir, &plan)).transpose()?;
    // Computed before servers are spawned (they become targets of the plan), printed by
    // the run once its leases are taken: a refused run stays a one-line refusal.
    let announcement = announcement(&plan);
    if args.dry_run {
        print_budget(&plan);
        print!("{announcement}");
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))?;
    let cancel = Cancel::default();
    let activity = Activity::default();
    let abandon = Arc::new(tokio::sync::Notify::new());
    if let Some(Role::Worker { index, count, coordinator }) = &role {
        // A worker prints nothing and writes nothing: the coordinator reports.
        return runtime.block_on(async {
            let watcher = watch_signals(cancel.clone(), activity.clone(), abandon.clone());
            let served = runner::workers::worker::serve(&plan, *index, *count, coordinator, &cancel).await;
            watcher.abort();
            served
        });
    }
    let ctx = RunContext {
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
        extra_settings: BTreeMap::new(),
        server_pids: BTreeMap::new(),
        holder: Holder::this_process(),
        workers: None,
        on_leases_taken: Some(Box::new(move || print!("{announcement}"))),
    };
    let watched = runtime.block_on(async {
        let watcher = watch_signals(cancel.clone(), activity.clone(), abandon.clone());
        let run = run_with_servers(&mut plan, ctx, &activity, role.as_ref(), raw_args, resume);
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
    let (report, dir) = watched?;
    print!("{}", report::console::render(&report));
    println!("\nresults: {}/{{{},{},{}}}", dir.display(), report::REPORT_JSON, report::RESULTS_CSV, report::REPORT_HTML);
    finish(&report)
}

/// Worker 0 of a run with workers: listens (on `listen`'s port on every address, or a free
/// loopback port), starts the local workers when asked to, and waits until every worker
/// has joined.
async fn gather_workers(
    plan: &plan::Plan,
    ctx: &RunContext,
    count: usize,
    listen: Option<&str>,
    spawn_local: bool,
    raw_args: &[OsString],
) -> Result<(runner::workers::coordinator::Coordinator, Option<runner::workers::local::LocalWorkers>)> {
    let bind = match listen {
        Some(address) => {
            let port = address
                .rsplit_once(':')
                .and_then(|(_, p)| p.parse::<u16>().ok())
                .ok_or_else(|| Error::usage(format!("--coordinator {address}: write HOST:PORT, e.g. --coordinator node1:7070")))?;
            format!("0.0.0.0:{port}")
        }
        None => "127.0.0.1:0".to_string(),
    };
    let listener =
        tokio::net::TcpListener::bind(&bind).await.map_err(|e| Error::runtime(format!("the coordinator cannot listen on {bind}: {e}")))?;
    let address = match listen {
        Some(address) => address.to_string(),
        None => listener.local_addr().map_err(|e| Error::runtime(e.to_string()))?.to_string(),
    };
    let local = if spawn_local { Some(runner::workers::local::start(count, &address, raw_args)?) } else { None };
    let targets = plan.targets.iter().map(|t| (t.name.clone(), t.url.clone())).collect();
    let coordinator = runner::workers::coordinator::Coordinator::gather(
        listener,
        count,
        &plan.hash,
        targets,
        ctx.holder.clone(),
        plan.timeout_secs,
        ctx.cancel.clone(),
    )
    .await?;
    Ok((coordinator, local))
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
fn saved_run_args(dir: &std::path::Path, given: &RunArgs) -> Result<RunArgs> {
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
            Ok(args)
        }
        _ => Err(Error::usage(format!("{shown} does not hold a `dbsweep run` command: give the run's arguments again with --resume"))),
    }
}

/// `dbsweep merge`: joins shard run directories into `out` (new or empty), prints the
/// merged tables and fails (exit 1) as `run` does when the result is incomplete or void.
fn merge(dirs: Vec<PathBuf>, out: Option<PathBuf>, command_line: Vec<String>) -> Result<()> {
    let parts = dirs.into_iter().map(|d| report::load(&d).map(|r| (d, r))).collect::<Result<Vec<_>>>()?;
    let mut merged = runner::merge::merge(parts, command_line)?;
    let out = out.unwrap_or_else(|| {
        let stamp = report::environment::stamp(std::time::SystemTime::now());
        PathBuf::from("dbsweep-runs").join(format!("{}-merged-{stamp}", merged.study))
    });
    // Claimed atomically, as `run` claims its --out.
    let mut dir = report::RunDir::claim(&out)?;
    report::exports::write_all(dir.path(), &mut merged)?;
    report::write_all(dir.path(), &merged)?;
    dir.keep();
    print!("{}", report::console::render(&merged));
    println!(
        "\nmerged {} run directories: {}/{{{},{},{}}}",
        merged.merged_from.len(),
        out.display(),
        report::REPORT_JSON,
        report::RESULTS_CSV,
        report::REPORT_HTML
    );
    finish(&merged)
}

/// The exit status of a finished report: an error (exit 1) naming why it is incomplete
/// and which points are void.
fn finish(report: &report::model::Report) -> Result<()> {
    let mut failures = Vec::new();
    if !report.complete {
        failures.push(format!("run incomplete: {}", report.incomplete_reason.as_deref().unwrap_or_default()));
    }
    if let Some(voided) = voided_points(report) {
        failures.push(voided);
    }
    if let Some(wrong) = wrong_answers(report) {
        failures.push(wrong);
    }
    if !failures.is_empty() {
        return Err(Error::runtime(failures.join("; ")));
    }
    Ok(())
}

/// Starts the spawned servers (killed again, directories removed, at an error or a
/// signal), adds their targets to the plan, runs it, and stops the servers.
async fn run_with_servers(
    plan: &mut plan::Plan,
    ctx: RunContext,
    activity: &Activity,
    role: Option<&Role>,
    raw_args: &[OsString],
    resume: Option<runner::resume::Resume>,
) -> Result<(report::model::Report, PathBuf)> {
    let cancel = ctx.cancel.clone();
    let mut servers = Vec::new();
    let names = plan.target_names();
    for (label, options) in plan.spawn_rounds() {
        // A shard starts only the servers whose targets it runs.
        let kinds: Vec<servers::ServerKind> =
            plan.spawn.iter().copied().filter(|kind| spawned_in_shard(plan, &names, *kind, label.as_deref())).collect();
        if kinds.is_empty() {
            continue;
        }
        activity.doing(format!("starting the servers ({})", kinds.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")));
        // Each round's servers are up before the next round starts; at an error or a
        // signal the starts under way are killed and waited for (directories removed).
        let Some(round) = servers::spawn_all_until(&kinds, &options, cancel.stopped()).await? else {
            return Err(cancel.cause().cloned().unwrap_or(StopCause::CtrlC).into_error(None));
        };
        round.iter().for_each(|s| activity.server_started(&s.kind().to_string()));
        servers.extend(round.into_iter().map(|s| (label.clone(), s)));
    }
    let mut ctx = ctx;
    for (label, server) in &servers {
        let mut targets = server.targets();
        if plan.cli_clients {
            targets.extend(server.client_targets());
        }
        for (name, url) in targets {
            let name = plan::Plan::spawned_target_name(label.as_deref(), &name, |n| plan.targets.iter().any(|t| t.name == n));
            let url = plan.spawned_target_url(server.kind(), &url);
            plan.targets.push(plan::parse_target(&format!("{name}={url}"))?);
            let mut settings: BTreeMap<String, String> =
                server.settings().iter().map(|(k, v)| (format!("server.{k}"), v.clone())).collect();
            settings.insert("server.spawned".into(), "true".into());
            settings.insert("server.version".into(), server.version().to_string());
            ctx.extra_settings.insert(name.clone(), settings);
            ctx.server_pids.insert(name, server.pid());
        }
    }
    if let Some(work) = plan.shard.clone() {
        plan.targets.retain(|t| work.has_target(&t.name));
    }
    let mut local_workers = None;
    if let Some(Role::Coordinator { count, listen, spawn_local }) = role {
        let (coordinator, local) = gather_workers(plan, &ctx, *count, listen.as_deref(), *spawn_local, raw_args).await?;
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
    for (_, server) in servers {
        // Throwaway servers of a stopped run are killed (dropped, directories removed): a
        // graceful shutdown would first write out data nobody keeps.
        if cancel.is_stopped() {
            continue;
        }
        activity.doing(format!("stopping the spawned {} server", server.kind()));
        if let Err(e) = server.stop().await {
            tracing::warn!("stopping a spawned server: {e}");
        }
    }
    result
}

/// A run that failed while a spawned server was dead failed because of that server: exit 1
/// (never "fix the URL") with the last lines of the server's log.
fn blame_dead_servers<'a>(e: Error, servers: impl Iterator<Item = &'a mut servers::Server>) -> Error {
    let dead: Vec<String> = servers
        .filter_map(|s| {
            let tail = s.died()?;
            Some(format!("the spawned {} server (pid {}) died during the run; the last lines of its log:\n{tail}", s.kind(), s.pid()))
        })
        .collect();
    if dead.is_empty() {
        return e;
    }
    Error::runtime(format!("{e}\n{}", dead.join("\n")))
}

/// Turns Ctrl-C (SIGINT) and SIGTERM into a stop request with its cause and says what the
/// run was doing and what stopping still does; the run then ends like any interruption
/// (partial results saved, servers and directories removed). A second signal of either
/// kind abandons that cleanup. The handlers are in place when this returns (not when the
/// watching task first runs), so a signal that comes at once, while servers start, is
/// already a stop request rather than the default kill.
fn watch_signals(cancel: Cancel, activity: Activity, abandon: Arc<tokio::sync::Notify>) -> tokio::task::JoinHandle<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate())) else {
        tracing::warn!("cannot watch for Ctrl-C and SIGTERM; they will end dbsweep without cleanup");
        return tokio::spawn(async {});
    };
    tokio::spawn(async move {
        let again = tokio::select! {
            _ = int.recv() => {
                cancel.stop(StopCause::CtrlC);
                "press Ctrl-C again"
            }
            _ = term.recv() => {
                cancel.stop(StopCause::Sigterm);
                "send SIGTERM again"
            }
        };
        eprintln!("\ndbsweep: {}", activity.stopping_message(again));
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        abandon.notify_one();
    })
}

/// The error of a run whose cleanup a second signal abandoned: the first stop's cause and
/// what was left behind.
fn abandoned(cancel: &Cancel, activity: &Activity) -> Error {
    let left = activity.abandoned_message();
    match cancel.cause() {
        Some(StopCause::Sigterm) => Error::Terminated(format!("terminated by SIGTERM; {left}")),
        Some(StopCause::Failure(why)) => Error::runtime(format!("{why}; {left}")),
        Some(StopCause::CtrlC) | None => Error::Interrupted(format!("interrupted; {left}")),
    }
}

/// Names the void points of a run (errors or missing rows), the first few in full.
fn voided_points(report: &report::model::Report) -> Option<String> {
    named_points(
        report,
        report::model::PointResult::is_void,
        "void (failed requests or missing rows; no throughput published, results saved and flagged)",
    )
}

/// Names the points whose answers differ from the reference or the other systems'.
fn wrong_answers(report: &report::model::Report) -> Option<String> {
    named_points(
        report,
        |p| p.flags.iter().any(|f| matches!(f, report::model::Flag::AnswerMismatch { .. })),
        "answered wrongly (ANSWER MISMATCH: results saved and flagged)",
    )
}

/// "N points WHAT: the first few in full" for the points `select` picks; `None` for none.
fn named_points(report: &report::model::Report, select: fn(&report::model::PointResult) -> bool, what: &str) -> Option<String> {
    const NAMED: usize = 5;
    let named: Vec<String> = report
        .points
        .iter()
        .filter(|p| select(p))
        .map(|p| format!("{} / {} / {}", p.experiment, p.target, report::console::point_label(p)))
        .collect();
    if named.is_empty() {
        return None;
    }
    let more = if named.len() > NAMED { format!(" and {} more", named.len() - NAMED) } else { String::new() };
    Some(format!(
        "{} point{} {what}: {}{more}",
        named.len(),
        if named.len() == 1 { "" } else { "s" },
        named[..named.len().min(NAMED)].join(", ")
    ))
}

/// Whether a shard runs anything on one of the targets server `kind` gets in the spawn
/// round labelled `label` (`names`: the plan's target names, `Plan::target_names`).
fn spawned_in_shard(plan: &plan::Plan, names: &[String], kind: servers::ServerKind, label: Option<&str>) -> bool {
    let Some(work) = &plan.shard else { return true };
    let clients = kind.client_target_name().filter(|_| plan.cli_clients);
    kind.target_names().into_iter().chain(clients).any(|name| {
        let plain = match label {
            Some(label) => format!("{name}-{label}"),
            None => name,
        };
        [plain.clone(), format!("{plain}-spawned")].iter().any(|n| names.contains(n) && work.has_target(n))
    })
}

/// `--dry-run`: the plan's size, per experiment and in total, without running anything.
fn print_budget(plan: &plan::Plan) {
    let names: Vec<String> = plan.target_names().into_iter().filter(|n| plan.shard.as_ref().is_none_or(|w| w.has_target(n))).collect();
    let targets = names.len();
    println!(
        "study {} ({}), seed {}, data {}",
        plan.study,
        plan.description,
        plan.seed,
        serde_json::to_string(&plan.data).unwrap_or_default()
    );
    println!("targets ({targets}): {}", names.join(", "));
    if let Some(work) = &plan.shard {
        println!("shard {}: {} of the plan's {} work units (plan {})", work.shard, work.len(), plan.work_units().len(), plan.hash);
    }
    let budget = plan.budget();
    if let Some(secs) = plan.duration_secs() {
        // Time-based runs: their ops are whatever the clients send in the time.
        println!("{:<28} {:>6} {:>5} {:>16}", "experiment", "points", "runs", "time per target");
        let runs: Vec<u64> = budget.iter().map(|b| b.points as u64 * u64::from(b.runs)).collect();
        for (b, runs) in budget.iter().zip(&runs) {
            println!("{:<28} {:>6} {:>5} {:>16}", b.name, b.points, b.runs, plan::estimate::human(*runs as f64 * secs));
        }
        let per_target = runs.iter().sum::<u64>() as f64 * secs;
        println!(
            "total: {} runs of {} per target, {} over {targets} targets (plus loading the data into each)",
            runs.iter().sum::<u64>(),
            report::console::run_length(secs),
            plan::estimate::human(per_target * targets as f64)
        );
        return;
    }
    println!("{:<28} {:>6} {:>5} {:>16}", "experiment", "points", "runs", "ops per target");
    for b in &budget {
        println!("{:<28} {:>6} {:>5} {:>16}", b.name, b.points, b.runs, b.ops);
    }
    let per_target: u64 = budget.iter().map(|b| b.ops).sum();
    println!(
        "total: {per_target} ops per target, {} ops over {targets} targets (plus loading the data into each)",
        per_target * targets as u64
    );
}

/// What a run says before any work starts (after its leases are taken) and what
/// `--dry-run` adds: the estimated duration per target and in total, what `--budget`
/// chose, how to add servers when the kv-vs-relational study has none, and (on a terminal)
/// how to shorten a run estimated above 10 minutes. Asks nothing.
fn announcement(plan: &plan::Plan) -> String {
    use plan::estimate;
    use std::io::IsTerminal;
    let estimate = estimate::estimate(plan);
    let mut lines = estimate::describe(plan, &estimate);
    if let Some(note) = &plan.budget_note {
        lines.push_str(&format!("{note}\n"));
    }
    let no_servers = plan.spawn.is_empty() && plan.targets.iter().all(|t| t.url.host().is_none());
    if plan.study == "kv-vs-relational" && no_servers {
        lines.push_str(
            "no server targets: this runs kv-vs-relational on the in-process engines only; add servers with --spawn all (or --target NAME=URL), or try --quick first\n",
        );
    }
    if estimate.total() > estimate::LONG_RUN_SECS && std::io::stdout().is_terminal() {
        lines.push_str(&format!("this run is long; {}\n", estimate::shorten_hint(plan)));
    }
    lines
}

/// `dbsweep targets`: what `probe::probe_all` found, as text or JSON.
fn targets(format: probe::Format) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))?;
    let systems = runtime.block_on(probe::probe_all())?;
    if format == probe::Format::Json {
        let json = serde_json::json!({ "systems": systems });
        println!("{}", serde_json::to_string_pretty(&json).map_err(|e| Error::runtime(format!("cannot write the JSON: {e}")))?);
        return Ok(());
    }
    let indent = " ".repeat(26 + 1 + 11 + 1 + 13 + 1);
    println!("{:<26} {:<11} {:<13} version / why not", "URL", "system", "status");
    for s in &systems {
        let detail = s.version.as_deref().or(s.reason.as_deref()).unwrap_or_default();
        println!("{:<26} {:<11} {:<13} {detail}", s.scheme, s.system, s.status.word());
        if !s.files.is_empty() {
            let files: Vec<String> = s.files.iter().map(|f| f.display().to_string()).collect();
            println!("{indent}found: {}", files.join(", "));
        }
        println!("{indent}{}", s.description);
        if let Some(caps) = &s.capabilities {
            let ops: Vec<&str> = caps.ops.iter().map(|k| k.name()).collect();
            let queries: Vec<String> = caps.queries.iter().map(|q| format!("{q:?}")).collect();
            println!("{indent}ops: {}{}", ops.join(" "), if caps.native_batch { "; native batches" } else { "" });
            if !queries.is_empty() {
                println!("{indent}queries: {}", queries.join(" "));
            }
        }
    }
    if systems.iter().any(|s| s.status == probe::Status::NotInstalled && s.spawn.is_some()) {
        println!("\nnot installed: --spawn cannot start that server here; one you run yourself can still be named with --target NAME=URL");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use report::model::{Flag, Report};

    fn golden() -> Report {
        serde_json::from_str(include_str!("../tests/golden/report.json")).unwrap()
    }

    #[test]
    fn a_wrong_answer_fails_the_run_and_names_the_point() {
        let mut report = golden();
        assert!(finish(&report).is_ok(), "the golden run is clean");
        report.points[5].flags.push(Flag::AnswerMismatch { detail: "differs".into() });
        let err = finish(&report).unwrap_err();
        assert_eq!(err.exit_code(), 1);
        let p = &report.points[5];
        let text = err.to_string();
        assert!(text.starts_with("1 point answered wrongly (ANSWER MISMATCH"), "{text}");
        assert!(text.contains(&format!("{} / {}", p.experiment, p.target)), "{text}");
    }
}
