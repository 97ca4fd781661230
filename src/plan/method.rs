//! The study's method lines as the plan runs them: `{runs}` in a study's `[method]` texts
//! becomes the runs each point actually does (how many, after how many warm-ups, how long
//! or until what precision), so what `--quick`, `--runs`, `--warmup`, `--duration`,
//! `--precision` and `--budget` chose is what the report's method box says; `{scale}`
//! becomes the TPC-H scale factor the plan loads (`--quick`, `--scale`).
//!
//! Owns that clause's wording. Must not decide any runs: it reads the resolved experiments.

use super::stopping::Precision;
use super::{FLOOR_EXPERIMENT, StudyMethod, estimate};
use crate::data::DataSpec;
use crate::workload::experiment::Experiment;

/// Where a study's `[method]` text states the runs: "median and min-max of {runs}".
pub const RUNS_PLACEHOLDER: &str = "{runs}";

/// Where a study's `[method]` text states the TPC-H scale it loads: "SF {scale}".
pub const SCALE_PLACEHOLDER: &str = "{scale}";

/// `method` with `{runs}` replaced by the runs of `experiments` (see `runs_clause`) and
/// `{scale}` by the scale factor of `data` (TPC-H plans).
pub(super) fn fill(
    method: Option<StudyMethod>,
    experiments: &[Experiment],
    precision: Option<Precision>,
    data: &DataSpec,
) -> Option<StudyMethod> {
    let clause = runs_clause(experiments, precision);
    let scale = match data {
        DataSpec::Tpch { scale } => format!("{scale}"),
        _ => "(no TPC-H data)".to_string(),
    };
    let filled = |text: String| text.replace(RUNS_PLACEHOLDER, &clause).replace(SCALE_PLACEHOLDER, &scale);
    method.map(|m| StudyMethod { paper: filled(m.paper), dbsweep: filled(m.dbsweep) })
}

/// The runs of the study's experiments (the echo floor, dbsweep's own, left out): those of
/// most experiments, then any others by name, e.g. "3 runs after a warm-up (tpch-q1 and
/// tpch-q6: 5 runs after a warm-up)", "2 runs of 30 s without a warm-up", "3 runs after a
/// warm-up, each stopped once its throughput is known to ±2 % (at the latest at its op cap
/// or after 2m 00s)".
pub fn runs_clause(experiments: &[Experiment], precision: Option<Precision>) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for e in experiments.iter().filter(|e| e.name != FLOOR_EXPERIMENT) {
        let runs = runs_of(e, precision);
        match groups.iter_mut().find(|(text, _)| *text == runs) {
            Some((_, names)) => names.push(&e.name),
            None => groups.push((runs, vec![&e.name])),
        }
    }
    // The most common runs first (the first of equals); the others name their experiments.
    let Some(main) = groups.iter().enumerate().max_by_key(|(i, (_, names))| (names.len(), std::cmp::Reverse(*i))).map(|(i, _)| i) else {
        return String::new();
    };
    let (text, _) = groups.remove(main);
    let others: Vec<String> = groups.iter().map(|(runs, names)| format!("{}: {runs}", and_list(names))).collect();
    match others.as_slice() {
        [] => text,
        others => format!("{text} ({})", others.join("; ")),
    }
}

/// "3 runs after a warm-up", with their length (`--duration`, `--quick`'s shortest) or
/// stopping rule (`--precision`).
fn runs_of(e: &Experiment, precision: Option<Precision>) -> String {
    let runs = if e.runs == 1 { "1 run".to_string() } else { format!("{} runs", e.runs) };
    let length = match (e.duration_secs, e.min_run_secs) {
        (Some(secs), _) => format!(" of {}", crate::base::span::words(secs)),
        (None, Some(secs)) => format!(" of at least {}", crate::base::span::words(secs)),
        (None, None) => String::new(),
    };
    let warmup = match e.warmup {
        0 => "without a warm-up".to_string(),
        1 => "after a warm-up".to_string(),
        n => format!("after {n} warm-ups"),
    };
    let stop = match precision.filter(|_| Precision::applies_to(e)) {
        Some(p) => format!(
            ", each stopped once its throughput is known to ±{} (at the latest at its op cap or after {})",
            percent(p.target),
            estimate::human(p.max_time_secs)
        ),
        None => String::new(),
    };
    format!("{runs}{length} {warmup}{stop}")
}

/// "2 %", "0.5 %".
fn percent(fraction: f64) -> String {
    let text = format!("{:.2}", fraction * 100.0);
    format!("{} %", text.trim_end_matches('0').trim_end_matches('.'))
}

/// "a", "a and b", "a, b and c".
pub(super) fn and_list<S: AsRef<str>>(items: &[S]) -> String {
    match items {
        [] => String::new(),
        [one] => one.as_ref().to_string(),
        [rest @ .., last] => format!("{} and {}", rest.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", "), last.as_ref()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{BUILT_IN, RunOptions, resolve};

    /// The `[method] dbsweep` line of the study `name`'s plan under `opts`, as saved in
    /// report.json (what the report's method box shows).
    fn dbsweep_line(name: &str, opts: RunOptions) -> String {
        let plan = resolve(&RunOptions { study: Some(name.into()), ..opts }).unwrap();
        plan.to_json()["method"]["dbsweep"].as_str().unwrap().to_string()
    }

    #[test]
    fn the_tpch_study_states_the_scale_it_loads() {
        let line = |opts: RunOptions| dbsweep_line("kv-vs-relational", opts);
        assert!(
            line(RunOptions { quick: true, ..Default::default() }).contains("SF 0.01 "),
            "{}",
            line(RunOptions { quick: true, ..Default::default() })
        );
        let scaled = line(RunOptions { quick: true, scale: Some(0.1), ..Default::default() });
        assert!(scaled.contains("SF 0.1 ") && !scaled.contains("SF 0.01"), "{scaled}");
    }

    #[test]
    fn every_built_in_study_states_the_runs_the_plan_does() {
        let quick = [
            ("embedded", "median and min-max of 2 runs of at least 30 ms after a warm-up (delete: 2 runs after a warm-up)."),
            ("kv-vs-relational", "median and min-max of 2 runs of at least 30 ms after a warm-up ("),
            ("insert-find", "median and min-max of 2 runs after a warm-up."),
            ("ycsb", "median and min-max of 2 runs of at least 30 ms after a warm-up"),
            ("in-memory", "median of 2 runs without a warm-up;"),
            ("pgbench", "median and min-max of 2 runs of at least 30 ms after a warm-up."),
        ];
        assert_eq!(
            quick.map(|(name, _)| name).to_vec(),
            BUILT_IN.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            "every built-in study"
        );
        for (name, said) in quick {
            let line = dbsweep_line(name, RunOptions { quick: true, ..Default::default() });
            assert!(line.contains(said), "{name} --quick: {line}");
            assert!(!line.contains("3 runs") && !line.contains(RUNS_PLACEHOLDER), "{name} --quick: {line}");
            let line = dbsweep_line(name, RunOptions { runs: Some(4), warmup: Some(2), ..Default::default() });
            assert!(line.contains("of 4 runs after 2 warm-ups") && !line.contains("5 runs"), "{name} --runs 4 --warmup 2: {line}");
        }
        assert!(dbsweep_line("embedded", RunOptions::default()).contains("median and min-max of 3 runs after a warm-up."));
        assert!(dbsweep_line("insert-find", RunOptions::default()).contains("median and min-max of 5 runs after a warm-up."));
        assert!(
            dbsweep_line("in-memory", RunOptions { runs: Some(1), ..Default::default() }).contains("median of 1 run without a warm-up;")
        );
    }

    #[test]
    fn time_based_and_precision_runs_say_how_long_they_last() {
        let line = dbsweep_line("embedded", RunOptions { duration: Some("1s".into()), ..Default::default() });
        assert!(line.contains("median and min-max of 3 runs of 1 s after a warm-up."), "{line}");
        let line = dbsweep_line("ycsb", RunOptions { quick: true, duration: Some("500ms".into()), ..Default::default() });
        assert!(line.contains("median and min-max of 2 runs of 500 ms after a warm-up;"), "{line}");
        let line = dbsweep_line("ycsb", RunOptions { precision: Some("0.5%".into()), max_time: Some("90s".into()), ..Default::default() });
        let said = "median and min-max of 3 runs after a warm-up, each stopped once its throughput is known to ±0.5 % (at the latest at its op cap or after 1m 30s);";
        assert!(line.contains(said), "{line}");
        // --precision asks for 3 runs at least, also of a --quick plan.
        let line = dbsweep_line("embedded", RunOptions { quick: true, precision: Some("2%".into()), ..Default::default() });
        assert!(line.contains("of 3 runs after a warm-up, each stopped once its throughput is known to ±2 % ("), "{line}");
    }

    #[test]
    fn runs_other_than_most_experiments_are_named() {
        let line = dbsweep_line("kv-vs-relational", RunOptions::default());
        assert!(line.contains("of 3 runs after a warm-up (tpch-q1, tpch-q6, tpch-q3 and tpch-q14: 5 runs after a warm-up);"), "{line}");
        // Only the queries: their runs are the plan's.
        let only = Some(vec!["tpch-q1".to_string(), "tpch-q6".to_string()]);
        let line = dbsweep_line("kv-vs-relational", RunOptions { experiments: only, ..Default::default() });
        assert!(line.contains("of 5 runs after a warm-up;"), "{line}");
        assert_eq!(and_list(&["a"]), "a");
        assert_eq!(and_list(&["a", "b", "c"]), "a, b and c");
        assert_eq!((percent(0.02), percent(0.005), percent(0.07)), ("2 %".into(), "0.5 %".into(), "7 %".into()));
    }
}
