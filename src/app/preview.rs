//! What a run says before it measures anything: `--dry-run`'s sizes of the plan, and the
//! announcement (estimated duration, what `--budget` chose, hints) printed once the run's
//! leases are taken. Must not start or open anything.

use crate::plan;
use std::fmt::Write as _;

/// `--dry-run`: the plan's size, per experiment and in total, without running anything.
pub(super) fn budget_text(plan: &plan::Plan) -> String {
    let mut out = String::new();
    let names: Vec<String> = plan.target_names().into_iter().filter(|n| plan.shard.as_ref().is_none_or(|w| w.has_target(n))).collect();
    let targets = names.len();
    let _ = writeln!(
        out,
        "study {} ({}), seed {}, data {}",
        plan.study,
        plan.description,
        plan.seed,
        serde_json::to_string(&plan.data).unwrap_or_default()
    );
    let _ = writeln!(out, "targets ({targets}): {}", names.join(", "));
    if let Some(work) = &plan.shard {
        let _ =
            writeln!(out, "shard {}: {} of the plan's {} work units (plan {})", work.shard, work.len(), plan.work_units().len(), plan.hash);
    }
    let budget = plan.budget();
    if let Some(secs) = plan.duration_secs() {
        // Time-based runs: their ops are whatever the clients send in the time.
        let _ = writeln!(out, "{:<28} {:>6} {:>5} {:>16}", "experiment", "points", "runs", "time per target");
        let runs: Vec<u64> = budget.iter().map(|b| b.points as u64 * u64::from(b.runs)).collect();
        for (b, runs) in budget.iter().zip(&runs) {
            let _ = writeln!(out, "{:<28} {:>6} {:>5} {:>16}", b.name, b.points, b.runs, plan::estimate::human(*runs as f64 * secs));
        }
        let per_target = runs.iter().sum::<u64>() as f64 * secs;
        let _ = writeln!(
            out,
            "total: {} runs of {} per target, {} over {targets} targets (plus loading the data into each)",
            runs.iter().sum::<u64>(),
            crate::base::span::words(secs),
            plan::estimate::human(per_target * targets as f64)
        );
        return out;
    }
    let _ = writeln!(out, "{:<28} {:>6} {:>5} {:>16}", "experiment", "points", "runs", "ops per target");
    for b in &budget {
        let _ = writeln!(out, "{:<28} {:>6} {:>5} {:>16}", b.name, b.points, b.runs, b.ops);
    }
    let per_target: u64 = budget.iter().map(|b| b.ops).sum();
    let _ = writeln!(
        out,
        "total: {per_target} ops per target, {} ops over {targets} targets (plus loading the data into each)",
        per_target * targets as u64
    );
    out
}

/// What a run says before any work starts (after its leases are taken) and what
/// `--dry-run` adds: the estimated duration per target and in total, what `--budget`
/// chose, how to name servers when the kv-vs-relational study has none, and (on a terminal)
/// how to shorten a run estimated above 10 minutes. Asks nothing.
pub(super) fn announcement(plan: &plan::Plan) -> String {
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
            "no server targets: this runs kv-vs-relational on the in-process engines only; run it on servers instead with --spawn all (or --target NAME=URL; --with-study-targets keeps the engines beside them), or try --quick first\n",
        );
    }
    if estimate.total() > estimate::LONG_RUN_SECS && std::io::stdout().is_terminal() {
        lines.push_str(&format!("this run is long; {}\n", estimate::shorten_hint(plan)));
    }
    lines
}
