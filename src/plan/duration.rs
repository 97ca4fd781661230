//! Time-based runs (`--duration 30s`, the study key `duration`): every warm-up and measured
//! run of every point lasts the duration, with as many ops as its clients send by then.
//!
//! Owns which value applies (flags over the study file, `--ops` over the study's duration),
//! its bounds, and which plans cannot run by time, each refused with the reason and the fix.
//! Must not measure anything: the runner's clients stop at the deadline
//! (`runner::client`), the op stream gives every run enough ops (`OpStream::seqs_per_run`).

use super::stopping::parse_duration;
use super::{RunOptions, StudyFile};
use crate::error::{Error, Result};
use crate::workload::experiment::{Experiment, ExperimentOp};

/// The longest run `--duration` takes (a week): beyond it a typo, not a soak test.
const MAX_DURATION_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// The shortest: one timer tick on a loaded machine is already a large share of less.
const MIN_DURATION_SECS: f64 = 0.01;

/// The run length of the plan in seconds: `--duration`, else the study's `duration`
/// unless `--ops` replaces it; `None` is the fixed-ops mode.
pub(super) fn resolve(opts: &RunOptions, study: &StudyFile) -> Result<Option<f64>> {
    let (flag, text) = match (&opts.duration, &study.duration) {
        (Some(_), _) if opts.ops.is_some() => {
            return Err(Error::usage("--ops and --duration both say how long a run is: give one"));
        }
        (Some(text), _) => ("--duration", text),
        (None, Some(_)) if opts.ops.is_some() => return Ok(None),
        (None, Some(text)) => ("study key duration", text),
        (None, None) => return Ok(None),
    };
    let secs = parse_duration(flag, text)?;
    if !(MIN_DURATION_SECS..=MAX_DURATION_SECS).contains(&secs) {
        return Err(Error::usage(format!("{flag} '{text}': give a duration from 10ms to 7 days, e.g. 30s")));
    }
    if opts.precision.is_some() || opts.budget.is_some() {
        return Err(Error::usage("--duration fixes each run's length, --precision and --budget end runs at a precision: give one"));
    }
    Ok(Some(secs))
}

/// Makes every experiment time-based. One that cannot run by time is refused, with the
/// reason and the fix, when `-e` named it; otherwise it is left out with a warning (a
/// study's delete experiments should not keep `--duration` from running the rest), unless
/// nothing but the echo floor would be left.
pub(super) fn apply(secs: f64, experiments: &mut Vec<Experiment>, named: bool, warnings: &mut Vec<String>) -> Result<()> {
    let refused: Vec<(String, &str)> = experiments.iter().filter_map(|e| Some((e.name.clone(), refusal(e)?))).collect();
    let measured = experiments.iter().filter(|e| e.name != super::FLOOR_EXPERIMENT).count();
    if let Some((name, why)) = refused.first()
        && (named || refused.len() == measured)
    {
        return Err(Error::usage(format!("--duration: experiment {name} {why}; leave it out with -e or run it with --ops")));
    }
    if !refused.is_empty() {
        let mut reasons: Vec<&str> = refused.iter().map(|(_, why)| *why).collect();
        reasons.dedup();
        let left_out: Vec<String> = reasons
            .iter()
            .map(|why| {
                let names: Vec<&str> = refused.iter().filter(|(_, w)| w == why).map(|(name, _)| name.as_str()).collect();
                format!("{} ({why})", names.join(", "))
            })
            .collect();
        warnings.push(format!("--duration leaves out {}; run them with --ops", left_out.join(", ")));
        experiments.retain(|e| refusal(e).is_none());
    }
    for e in experiments.iter_mut() {
        e.duration_secs = Some(secs);
    }
    Ok(())
}

/// How long every run of a `--quick` plan lasts at least: its ops, then more until this
/// long has passed. 300 ops of a fast read take about a tenth of a millisecond, where one
/// scheduler tick on a shared machine moves a run's throughput by half. Measured on this
/// 2-core machine (release build, load 1.5, three A/A pairs of the default study): runs of
/// 300 ops left the median compare interval 1.7x-2.4x wide, at least 10 ms 1.8x-2.0x, at
/// least 30 ms 1.6x-1.7x (the run took 13 s instead of 9 s).
pub const QUICK_MIN_RUN_SECS: f64 = 0.03;

/// `--quick` without `--ops`, `--duration`, `--precision` or `--budget` (each of which says
/// how long a run is, exactly): every experiment that
/// could run by time lasts at least `QUICK_MIN_RUN_SECS` per run. The others (deletes,
/// sizes, lifecycle phases, YCSB with inserts) keep their fixed ops, and so does an
/// experiment of one request per run (insert-find's find: the paper timed one).
pub(super) fn apply_quick_min_run(experiments: &mut [Experiment]) {
    for e in experiments.iter_mut().filter(|e| e.ops > 1 && refusal(e).is_none()) {
        e.min_run_secs = Some(QUICK_MIN_RUN_SECS);
    }
}

/// Why `experiment` cannot run for a duration, if it cannot. Reads repeat over the data and
/// inserts write fresh keys for as long as a run lasts; an analytic query runs again and
/// again until the deadline.
fn refusal(experiment: &Experiment) -> Option<&'static str> {
    if experiment.lifecycle {
        return Some("is a lifecycle phase, a fixed amount of work by definition");
    }
    if experiment.sized {
        return Some("sweeps sizes, a fixed op count per point");
    }
    if experiment.op == ExperimentOp::Delete {
        return Some("deletes keys loaded before each run, which a run of unknown length could run out of");
    }
    if let Some(workload) = &experiment.ycsb {
        if workload.insertproportion > 0.0 {
            return Some("is a YCSB workload with inserts, whose key choice follows the count of ops sent as in YCSB");
        }
        if experiment.time_limit_secs.is_some() {
            return Some("has maxexecutiontime, YCSB's own limit on a run's time");
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::plan::{RunOptions, resolve};

    fn plan_with(opts: RunOptions) -> crate::error::Result<crate::plan::Plan> {
        resolve(&opts)
    }

    #[test]
    fn a_duration_makes_every_experiment_time_based_and_is_recorded() {
        let plan = plan_with(RunOptions { duration: Some("500ms".into()), ..Default::default() }).unwrap();
        assert!(plan.experiments.iter().all(|e| e.duration_secs == Some(0.5)));
        assert_eq!(plan.duration_secs(), Some(0.5));
        assert_eq!(plan.to_json()["duration_secs"], 0.5);
        let fixed = plan_with(RunOptions::default()).unwrap();
        assert_eq!(fixed.duration_secs(), None);
        assert!(fixed.to_json().get("duration_secs").is_none(), "fixed-ops plans (and their hashes) stay as they were");
        assert!(!fixed.to_json()["experiments"][0].as_object().unwrap().contains_key("duration_secs"));
        assert_ne!(plan.hash, fixed.hash);
        // Shards share the plan out by time: every run of every point weighs its 500 ms.
        let get = plan.experiments.iter().position(|e| e.name == "get").unwrap();
        let unit = plan.work_units().into_iter().find(|u| u.experiment == Some(get)).unwrap();
        let e = &plan.experiments[get];
        assert_eq!(unit.weight, 500 * e.points.len() as u64 * u64::from(e.warmup + e.runs));
    }

    #[test]
    fn experiments_of_fixed_work_not_named_are_left_out_with_a_warning() {
        let plan =
            plan_with(RunOptions { study: Some("kv-vs-relational".into()), duration: Some("1s".into()), ..Default::default() }).unwrap();
        let names: Vec<&str> = plan.experiments.iter().map(|e| e.name.as_str()).collect();
        assert!(
            !names.iter().any(|n| n.starts_with("delete")) && names.contains(&"insert-orders") && names.contains(&"tpch-q3"),
            "{names:?}"
        );
        let warning = plan.warnings.iter().find(|w| w.starts_with("--duration leaves out")).expect("a warning says what was left out");
        assert!(warning.starts_with("--duration leaves out delete-orders, delete-lineitem (deletes keys"), "{warning}");
    }

    #[test]
    fn a_duration_is_refused_with_ops_precision_or_budget_and_out_of_bounds() {
        let with = |opts: RunOptions| plan_with(RunOptions { duration: Some("2s".into()), ..opts }).unwrap_err();
        for (e, needle) in [
            (with(RunOptions { ops: Some(100), ..Default::default() }), "--ops and --duration"),
            (with(RunOptions { precision: Some("2%".into()), runs: Some(3), ..Default::default() }), "--precision"),
            (with(RunOptions { budget: Some("1h".into()), ..Default::default() }), "--budget"),
        ] {
            assert_eq!(e.exit_code(), 2);
            assert!(e.to_string().contains(needle) && !e.to_string().contains('\n'), "{e}");
        }
        for bad in ["0", "0s", "-3s", "soon", "5ms", "8d", "1000h"] {
            let e = plan_with(RunOptions { duration: Some(bad.into()), ..Default::default() }).unwrap_err();
            assert!(e.to_string().starts_with(&format!("--duration '{bad}'")), "{bad}: {e}");
        }
    }

    #[test]
    fn experiments_of_fixed_work_are_refused_by_name() {
        let refused = |study: &str, experiments: Option<Vec<String>>| {
            let opts = RunOptions { study: Some(study.into()), experiments, duration: Some("1s".into()), ..Default::default() };
            plan_with(opts).unwrap_err().to_string()
        };
        let lifecycle = refused("in-memory", None);
        assert!(lifecycle.contains("lifecycle phase") && lifecycle.contains("-e"), "{lifecycle}");
        assert!(refused("insert-find", Some(vec!["insert-all".into()])).contains("sweeps sizes"));
        let deletes = refused("kv-vs-relational", Some(vec!["get-region".into(), "delete-orders".into()]));
        assert!(deletes.contains("experiment delete-orders deletes keys"), "{deletes}");
        let ycsb_d = RunOptions {
            study: Some("ycsb".into()),
            ycsb_properties: vec!["insertproportion=0.05".into(), "readproportion=0.95".into()],
            experiments: Some(vec!["workload-c".into()]),
            duration: Some("1s".into()),
            ..Default::default()
        };
        assert!(plan_with(ycsb_d).unwrap_err().to_string().contains("YCSB workload with inserts"));
    }

    #[test]
    fn ops_on_the_command_line_replace_the_study_duration() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timed.toml");
        std::fs::write(
            &path,
            "name = \"timed\"\nduration = \"2m\"\n[data]\nkind = \"kv\"\nrows = 10\n[[experiments]]\nname = \"get\"\nop = \"get\"\nsweep = [\"clients\"]\n",
        )
        .unwrap();
        let study = Some(path.display().to_string());
        let timed = plan_with(RunOptions { study: study.clone(), ..Default::default() }).unwrap();
        assert_eq!(timed.duration_secs(), Some(120.0));
        let flag = plan_with(RunOptions { study: study.clone(), duration: Some("3s".into()), ..Default::default() }).unwrap();
        assert_eq!(flag.duration_secs(), Some(3.0));
        let fixed = plan_with(RunOptions { study, ops: Some(10), clients: Some(vec![1]), ..Default::default() }).unwrap();
        assert_eq!((fixed.duration_secs(), fixed.experiments[1].ops), (None, 10));
    }

    #[test]
    fn quick_runs_last_at_least_a_shortest_length_where_they_can_run_by_time() {
        let quick = plan_with(RunOptions { quick: true, ..Default::default() }).unwrap();
        let at_least = |p: &crate::plan::Plan, name: &str| p.experiments.iter().find(|e| e.name == name).unwrap().min_run_secs;
        for name in ["echo", "insert", "get", "range-count"] {
            assert_eq!(at_least(&quick, name), Some(super::QUICK_MIN_RUN_SECS), "{name}");
        }
        assert_eq!(at_least(&quick, "delete"), None, "deletes run out of loaded keys: their ops stay fixed");
        assert!(quick.to_json()["experiments"].as_array().unwrap().iter().any(|e| e["min_run_secs"] == super::QUICK_MIN_RUN_SECS));
        // Only --quick, and not where another rule says how long a run lasts.
        for opts in [
            RunOptions::default(),
            RunOptions { quick: true, duration: Some("1s".into()), ..Default::default() },
            RunOptions { quick: true, precision: Some("2%".into()), ..Default::default() },
            RunOptions { quick: true, ops: Some(300), ..Default::default() },
        ] {
            let plan = plan_with(opts).unwrap();
            assert!(plan.experiments.iter().all(|e| e.min_run_secs.is_none()));
            assert!(!plan.to_json().to_string().contains("min_run_secs"));
        }
        // One request per run (insert-find's find, as its paper timed) stays one request.
        let paper = plan_with(RunOptions { study: Some("insert-find".into()), quick: true, ..Default::default() }).unwrap();
        assert_eq!(at_least(&paper, "find"), None);
        assert_eq!(at_least(&paper, "insert-all"), None, "sizes are fixed work");
    }
}
