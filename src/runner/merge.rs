//! `dbsweep merge`: joins the run directories of one plan's shards into one report, as if
//! one process had run the plan. Every point's runs, histograms and counts are kept as
//! saved (each (target, experiment) unit ran in exactly one shard); what compares targets
//! with each other (the NO-DB ceiling, answers across systems) is computed again over all
//! of them, since a shard saw only its own.
//!
//! Owns the checks that parts belong together (plan hash, shard count, no point twice) and
//! that each part is what its run wrote for its shard of the plan (its seal, its saved plan
//! against its hash, every point against the plan: owner, runs, ops), and the order of the
//! merged points. Must not write files or print; `app` does.

use super::measured_in_some_round;
use super::summary::{DIFFER_FROM, flag_client_bound, flag_differing_answers, summarize};
use crate::base::secret::Token;
use crate::base::shard::Shard;
use crate::error::{Error, Result};
use crate::plan::shard::{SavedPlan, plan_hash};
use crate::plan::stopping::Precision;
use crate::report::model::{Flag, MergedPart, PointResult, PointStatus, PointSummary, Report};
use crate::workload::experiment::{Experiment, Point};
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::PathBuf;

/// How an older dbsweep's warning of runs too widely spread to rank ended.
const OLD_SPREAD_WARNING: &str = "too wide to rank against ";

/// Joins `parts` (run directories and their reports) into one report whose command is
/// `command`. Bad input (parts of different plans, a shard or a point twice, a part whose
/// seal, plan or points do not check out; with `token`, a part not signed with it) is a
/// usage error naming the directory and what is wrong: nothing is merged from it.
pub fn merge(parts: Vec<(PathBuf, Report)>, command: Vec<String>, token: Option<&Token>) -> Result<Report> {
    let parts = check_parts(parts)?;
    let plan = verify(&parts, token)?;
    let first = &parts[0].1;

    let mut merged = first.clone();
    merged.command = command;
    merged.shard = None;
    merged.targets = Vec::new();
    merged.unavailable = Vec::new();
    merged.points = Vec::new();
    merged.warnings = Vec::new();
    merged.merged_from = Vec::new();
    merged.timing = None;
    // A shard's resumptions are its own (its directory's report keeps them).
    merged.resumed = Vec::new();
    // The merged plan lists every part's targets; the seal is each part's own.
    merged.planned_targets = None;
    merged.seal = None;
    let mut plan_targets: Vec<serde_json::Value> = Vec::new();
    let mut seen_points: BTreeSet<(String, String, String)> = BTreeSet::new();
    for (dir, part) in &parts {
        for t in &part.targets {
            if !merged.targets.iter().any(|m| m.name == t.name) {
                merged.targets.push(t.clone());
            }
        }
        for t in part.plan["targets"].as_array().into_iter().flatten() {
            if !plan_targets.iter().any(|p| p["name"] == t["name"]) {
                plan_targets.push(t.clone());
            }
        }
        for u in &part.unavailable {
            if !merged.unavailable.contains(u) {
                merged.unavailable.push(u.clone());
            }
        }
        // A warning every part has (the plan's) once; the others with their shard.
        let label = part.shard.map(|s| format!("shard {s}")).unwrap_or_else(|| dir.display().to_string());
        // Older dbsweeps warned of runs too widely spread to rank against the targets of
        // their own shard only; the findings now judge that over every part's points.
        for w in part.warnings.iter().filter(|w| !w.contains(OLD_SPREAD_WARNING)) {
            let everywhere = parts.iter().all(|(_, r)| r.warnings.contains(w));
            let line = if everywhere { w.clone() } else { format!("{label}: {w}") };
            if !merged.warnings.contains(&line) {
                merged.warnings.push(line);
            }
        }
        for p in &part.points {
            let key = (p.experiment.clone(), p.target.clone(), serde_json::to_string(&p.point).unwrap_or_default());
            if !seen_points.insert(key) {
                return Err(Error::usage(format!(
                    "merge: {} / {} at {:?} is in more than one directory ({} among them); pass each shard once",
                    p.experiment,
                    p.target,
                    p.point,
                    dir.display()
                )));
            }
            merged.points.push(p.clone());
        }
        merged.started_at = merged.started_at.clone().min(part.started_at.clone());
        merged.finished_at = match (&merged.finished_at, &part.finished_at) {
            (Some(a), Some(b)) => Some(a.clone().max(b.clone())),
            _ => None,
        };
        merged.merged_from.push(MergedPart {
            dir: dir.display().to_string(),
            shard: part.shard,
            command: part.command.clone(),
            hostname: part.environment.hostname.clone(),
            started_at: part.started_at.clone(),
            finished_at: part.finished_at.clone(),
            complete: part.complete,
            incomplete_reason: part.incomplete_reason.clone(),
            points: part.points.len(),
        });
    }
    if let Some(targets) = merged.plan.get_mut("targets") {
        *targets = serde_json::Value::Array(plan_targets);
    }
    order_points(&mut merged, &plan.experiments, &plan.record_counts);
    reflag(&mut merged.points);

    let mut missing_reasons = Vec::new();
    if let Some(count) = parts[0].1.shard.map(|s| s.count) {
        let present: BTreeSet<usize> = parts.iter().filter_map(|(_, r)| r.shard.map(|s| s.index)).collect();
        let missing: Vec<String> = (0..count).filter(|i| !present.contains(i)).map(|i| Shard { index: i, count }.to_string()).collect();
        if !missing.is_empty() {
            missing_reasons.push(format!("shard{} {} not merged", if missing.len() == 1 { "" } else { "s" }, missing.join(", ")));
        }
    }
    for (dir, part) in parts.iter().filter(|(_, r)| !r.complete) {
        missing_reasons.push(format!("{} incomplete: {}", dir.display(), part.incomplete_reason.as_deref().unwrap_or("no reason saved")));
    }
    merged.complete = missing_reasons.is_empty();
    merged.incomplete_reason = (!merged.complete).then(|| missing_reasons.join("; "));
    Ok(merged)
}

/// Parts sorted by shard, after checking they can be merged: the same plan hash, the same
/// shard count, every shard once.
fn check_parts(mut parts: Vec<(PathBuf, Report)>) -> Result<Vec<(PathBuf, Report)>> {
    if parts.is_empty() {
        return Err(Error::usage("merge: name the run directories to join"));
    }
    for (dir, r) in &parts {
        if r.plan_hash.is_none() {
            return Err(Error::usage(format!(
                "merge: {} has no plan hash (written by an older dbsweep); run its shard again with this dbsweep",
                dir.display()
            )));
        }
    }
    let (first_dir, first) = &parts[0];
    for (dir, r) in &parts[1..] {
        if r.plan_hash != first.plan_hash {
            return Err(Error::usage(format!(
                "merge: {} (plan {}) and {} (plan {}) ran different plans; merge only shards of one plan (same study, flags, seed and targets)",
                first_dir.display(),
                first.plan_hash.as_deref().unwrap_or_default(),
                dir.display(),
                r.plan_hash.as_deref().unwrap_or_default()
            )));
        }
        if r.shard.map(|s| s.count) != first.shard.map(|s| s.count) {
            let describe = |s: Option<Shard>| s.map_or("the whole plan".to_string(), |s| format!("shard {s}"));
            return Err(Error::usage(format!(
                "merge: {} holds {} but {} holds {}; merge shards of one split (the same --shard I/N count)",
                first_dir.display(),
                describe(first.shard),
                dir.display(),
                describe(r.shard)
            )));
        }
    }
    parts.sort_by_key(|(_, r)| r.shard.map(|s| s.index));
    let mut by_shard: BTreeMap<usize, &PathBuf> = BTreeMap::new();
    for (dir, r) in &parts {
        if let Some(s) = r.shard
            && let Some(other) = by_shard.insert(s.index, dir)
        {
            return Err(Error::usage(format!(
                "merge: {} and {} both hold shard {s}; pass each shard once",
                other.display(),
                dir.display()
            )));
        }
    }
    Ok(parts)
}

/// Checks that each part is what its run wrote for its shard of the plan, before anything
/// is joined: its seal (with `token`, an HMAC made with that token), its saved plan against
/// its plan hash and its seed against the plan's, and every point against the plan (see
/// `check_points`). The first thing wrong is a usage error naming the directory. Returns
/// the plan, as every part saved it.
fn verify(parts: &[(PathBuf, Report)], token: Option<&Token>) -> Result<SavedPlan> {
    let mut first = None;
    for (dir, part) in parts {
        let refuse = |what: String| Error::usage(format!("merge: {}: {what}; it is not merged", dir.display()));
        crate::report::seal::check(part, token).map_err(|what| refuse(format!("report.json {what}")))?;
        let plan = SavedPlan::read(&hashed_plan(part).map_err(refuse)?).map_err(refuse)?;
        if part.seed != plan.seed {
            return Err(refuse(format!("its seed {} is not its plan's seed {}", part.seed, plan.seed)));
        }
        check_points(part, &plan).map_err(refuse)?;
        first.get_or_insert(plan);
    }
    Ok(first.expect("check_parts refuses an empty list"))
}

/// A part's saved plan as its hash was computed (with the plan's own targets, before
/// spawned servers joined and its shard kept its own), once it hashes to the hash the part
/// claims: an edited plan, or another plan's part with the hash edited to match, does not.
fn hashed_plan(part: &Report) -> std::result::Result<serde_json::Value, String> {
    let Some(targets) = &part.planned_targets else {
        return Err("its report has no planned targets (written by an older dbsweep): run its shard again with this dbsweep".into());
    };
    let mut plan = part.plan.clone();
    let Some(map) = plan.as_object_mut() else { return Err("its saved plan is not a JSON object".into()) };
    map.insert("targets".into(), targets.clone());
    let claimed = part.plan_hash.as_deref().unwrap_or_default();
    let actual = plan_hash(&plan);
    if actual != claimed {
        return Err(format!("its saved plan hashes to {actual}, not to its plan hash {claimed} (the plan or its hash was edited)"));
    }
    Ok(plan)
}

/// Checks a part's points against the plan: each of a target and an experiment of the plan,
/// at one of the experiment's points, in a unit the part's shard owns (`SavedPlan::owners`),
/// with the planned runs and ops (`check_runs`); and a part that says it is complete holds
/// every point of its units.
fn check_points(part: &Report, plan: &SavedPlan) -> std::result::Result<(), String> {
    let shard = part.shard.unwrap_or(Shard { index: 0, count: 1 });
    let owners = plan.owners(shard.count);
    if let Some(t) = part.targets.iter().find(|t| !plan.targets.contains(&t.name)) {
        return Err(format!("it lists target {}, which is not in its plan", t.name));
    }
    let mut present: HashSet<(usize, &str, Point)> = HashSet::new();
    for p in &part.points {
        let what = format!("{} / {} / {}", p.experiment, p.target, crate::report::format::point_label(&p.point, p.op));
        let Some(ei) = plan.experiments.iter().position(|e| e.name == p.experiment) else {
            return Err(format!("it holds {what}, of an experiment not in its plan"));
        };
        let e = &plan.experiments[ei];
        if !plan.targets.contains(&p.target) {
            return Err(format!("it holds {what}, for a target not in its plan"));
        }
        if !e.points.contains(&p.point) || p.op != e.op.kind() {
            return Err(format!("it holds {what}, a point its plan does not have"));
        }
        let owner = owners[&plan.unit_key(&p.target, ei)];
        if owner != shard.index {
            return Err(format!("it holds {what}, which shard {} runs", Shard { index: owner, count: shard.count }));
        }
        check_runs(p, e, plan).map_err(|wrong| format!("{what}: {wrong}"))?;
        if !summary_fits_runs(p) {
            return Err(format!("{what}: its summary (throughput, latency) is not what its runs give"));
        }
        present.insert((ei, &p.target, p.point));
    }
    if !part.complete {
        return Ok(());
    }
    for (ei, e) in plan.experiments.iter().enumerate() {
        let points = e.points.iter().filter(|p| e.lifecycle || measured_in_some_round(p, &plan.record_counts));
        for point in points {
            for target in plan.targets.iter().filter(|t| owners[&plan.unit_key(t, ei)] == shard.index) {
                if !present.contains(&(ei, target.as_str(), *point)) {
                    let label = crate::report::format::point_words(point, e.op.kind());
                    return Err(format!("it says it is complete but has no result for {} / {target} / {label}", e.name));
                }
            }
        }
    }
    Ok(())
}

/// Checks a point's runs against its plan: a measured point has the warm-up and measured
/// runs its experiment plans, in order, each finished; a point that is not (not supported,
/// incomplete) at most those. Each run does the ops its plan gives it: exactly, or at most
/// where a run may stop early (`--precision`, YCSB's `maxexecutiontime`, an unfinished run);
/// runs that last a duration (`--duration`) have no planned count, and a complete run
/// that lasts at least one (`--quick`) does at least its planned ops.
fn check_runs(p: &PointResult, e: &Experiment, plan: &SavedPlan) -> std::result::Result<(), String> {
    let planned_runs = (e.warmup + e.runs) as usize;
    let measured = matches!(p.status, PointStatus::Measured);
    if p.runs.len() > planned_runs || (measured && p.runs.len() != planned_runs) {
        return Err(format!("{} runs, where its plan has {planned_runs} ({} warm-up)", p.runs.len(), e.warmup));
    }
    let planned_ops = e.duration_secs.is_none().then(|| e.ops_at(&p.point));
    let may_stop_early = (plan.precision && Precision::applies_to(e)) || e.time_limit_secs.is_some();
    for (i, r) in p.runs.iter().enumerate() {
        let warmup = i < e.warmup as usize;
        if r.run as usize != i || r.warmup != warmup {
            return Err(format!(
                "its run {i} is saved as run {}{}, out of its plan's order",
                r.run,
                if r.warmup { " (warm-up)" } else { "" }
            ));
        }
        if measured && !r.complete {
            return Err(format!("its run {i} did not finish, yet the point is saved as measured"));
        }
        if let Some(planned) = planned_ops {
            let fits = match (r.complete && !may_stop_early, e.min_run_secs.is_some()) {
                (true, true) => r.ops >= planned,
                (true, false) => r.ops == planned,
                // An unfinished run that lasts at least a time may have gone past its ops.
                (false, true) => true,
                (false, false) => r.ops <= planned,
            };
            if !fits {
                return Err(format!("its run {i} did {} ops, where its plan has {planned}", r.ops));
            }
        }
    }
    Ok(())
}

/// Whether a point's summary is the one its runs give (`summary::summarize`), but for the
/// share of the NO-DB ceiling, which compares it with other targets and is computed again.
fn summary_fits_runs(p: &PointResult) -> bool {
    let without_share = |s: Option<PointSummary>| s.map(|s| PointSummary { client_share: None, ..s });
    without_share(summarize(p)) == without_share(p.summary.clone())
}

/// Puts the points in the order one process runs them: record-count rounds, experiments
/// and points in plan order, then lifecycle record counts with their phases; targets in
/// plan order within a point.
fn order_points(merged: &mut Report, experiments: &[Experiment], counts: &[u64]) {
    let target_index: BTreeMap<String, usize> = merged.targets.iter().enumerate().map(|(i, t)| (t.name.clone(), i)).collect();
    let key = |p: &PointResult| {
        let t = target_index.get(&p.target).copied().unwrap_or(usize::MAX);
        let Some((ei, e)) = experiments.iter().enumerate().find(|(_, e)| e.name == p.experiment) else {
            return (2, 0, 0, 0, t);
        };
        let pi = e.points.iter().position(|q| *q == p.point).unwrap_or(usize::MAX);
        if e.lifecycle {
            return (1, pi, ei, 0, t);
        }
        let round = match p.point.param {
            Some(n) if counts.len() > 1 => counts.iter().position(|&c| c == n).unwrap_or(0),
            _ => 0,
        };
        (0, round, ei, pi, t)
    };
    merged.points.sort_by_key(key);
}

/// Recomputes the flags that compare targets at one point (a shard compared only its own
/// targets): the share of the NO-DB ceiling and answers across systems. Flags about one
/// target (errors, missing rows, answers changed between its runs, the TPC-H reference
/// answer) stay as the shard saved them. `points` are in `order_points` order.
fn reflag(points: &mut [PointResult]) {
    let mut start = 0;
    while start < points.len() {
        let same = |p: &PointResult| p.experiment == points[start].experiment && p.point == points[start].point;
        let end = start + points[start..].iter().take_while(|p| same(p)).count();
        let group = &mut points[start..end];
        for r in group.iter_mut() {
            r.flags.retain(|f| match f {
                Flag::ClientBound { .. } | Flag::WideSpread { .. } => false,
                Flag::AnswerMismatch { detail } => !detail.starts_with(DIFFER_FROM),
                _ => true,
            });
            if let Some(s) = r.summary.as_mut() {
                s.client_share = None;
            }
        }
        flag_client_bound(group);
        flag_differing_answers(group);
        start = end;
    }
}
