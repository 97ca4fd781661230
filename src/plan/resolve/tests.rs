//! Unit tests of `plan::resolve`.

use super::*;
use crate::plan::BUILT_IN;
use crate::plan::FLOOR_EXPERIMENT;
use crate::workload::experiment::Point;

#[test]
fn hlog_interval_defaults_to_a_second_zero_turns_it_off_and_nonsense_is_refused() {
    let plan = |secs: Option<f64>| resolve(&RunOptions { hlog_interval: secs, ..Default::default() });
    assert_eq!(plan(None).unwrap().hlog_interval, Some(std::time::Duration::from_secs(1)));
    assert_eq!(plan(Some(0.25)).unwrap().hlog_interval, Some(std::time::Duration::from_millis(250)));
    assert_eq!(plan(Some(0.0)).unwrap().hlog_interval, None);
    for bad in [-1.0, 0.0001, f64::NAN, f64::INFINITY, 1e9] {
        let e = plan(Some(bad)).err().unwrap_or_else(|| panic!("{bad} accepted"));
        assert!(e.to_string().contains("--hlog-interval must be 0"), "{bad}: {e}");
    }
}

#[test]
fn a_rate_list_is_a_sweep_axis_of_every_experiment_but_the_echo_floor() {
    let opts = |rate: Vec<f64>| RunOptions { rate: Some(rate), clients: Some(vec![1, 2]), ..Default::default() };
    let plan = resolve(&opts(vec![2000.0, 500.0, 2000.0])).unwrap();
    let asked = |rates: &[f64]| rates.iter().map(|r| Rate::new(*r).unwrap()).collect::<Vec<_>>();
    assert_eq!(plan.rates, asked(&[500.0, 2000.0]), "ascending, each once");
    assert_eq!(plan.to_json()["rate"], serde_json::json!([500.0, 2000.0]));
    for e in &plan.experiments {
        if e.name == FLOOR_EXPERIMENT {
            assert!(e.points.iter().all(|p| p.rate.is_none()), "the echo floor is a closed-loop round trip");
            continue;
        }
        let base: Vec<Point> = e.points.iter().map(|p| Point { rate: None, ..*p }).collect();
        for (i, p) in e.points.iter().enumerate() {
            assert_eq!(p.rate, Some(asked(&[500.0, 2000.0])[i % 2]), "{}: {:?}", e.name, e.points);
            assert_eq!(base[i], base[i - i % 2], "each point at each rate in turn: {:?}", e.points);
        }
    }
    assert!(resolve(&RunOptions::default()).unwrap().experiments.iter().flat_map(|e| &e.points).all(|p| p.rate.is_none()));
    for bad in [0.0, -5.0, f64::NAN, f64::INFINITY] {
        let e = resolve(&opts(vec![100.0, bad])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().starts_with("--rate must be positive numbers of ops per second"), "{e}");
    }
    let e = resolve(&RunOptions { study: Some("in-memory".into()), rate: Some(vec![100.0]), ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("leave out --rate"), "{e}");
}

#[test]
fn built_in_studies_parse_and_resolve() {
    for (name, _) in BUILT_IN {
        let plan = resolve(&RunOptions { study: Some(name.to_string()), ..Default::default() }).unwrap();
        assert!(!plan.experiments.is_empty());
        assert_eq!(plan.targets[0].name, "nodb");
    }
}

/// The targets a run of `study` measures with these `--target`s, `--spawn`s and
/// `--with-study-targets`, in order (spawned servers' targets as they will be named).
fn targets_of(study: &str, targets: &[&str], spawn: &[&str], with_study_targets: bool) -> Vec<String> {
    let opts = RunOptions {
        study: Some(study.into()),
        targets: targets.iter().map(|t| t.to_string()).collect(),
        spawn: spawn.iter().map(|s| s.to_string()).collect(),
        with_study_targets,
        ..Default::default()
    };
    resolve(&opts).unwrap().target_names()
}

#[test]
fn a_run_measures_the_systems_named_beside_the_no_db_ceiling() {
    let embedded = ["nodb", "sqlite", "duckdb", "monetdb", "redb"];
    assert_eq!(targets_of("embedded", &[], &[], false), embedded, "no flags: the study's targets");
    assert_eq!(targets_of("embedded", &[], &[], true), embedded, "nothing named: --with-study-targets changes nothing");
    assert_eq!(
        targets_of("embedded", &[], &["postgres", "redis", "mariadb"], false),
        ["nodb", "pg-row", "pg-hstore", "pg-jsonb", "redis", "mariadb"],
        "--spawn only"
    );
    assert_eq!(targets_of("embedded", &["lite=sqlite:", "duck=duckdb:"], &[], false), ["nodb", "lite", "duck"], "--target only");
    assert_eq!(targets_of("ycsb", &["lite=sqlite:"], &["redis", "ledisdb"], false), ["nodb", "lite", "redis", "ledisdb"], "both");
    assert_eq!(
        targets_of("ycsb", &["lite=sqlite:"], &["redis"], true),
        ["nodb", "sqlite", "duckdb", "redb", "lite", "redis"],
        "--with-study-targets: the study's, then those named"
    );
    assert_eq!(
        targets_of("embedded", &["ceiling=nodb:", "lite=sqlite:"], &[], false),
        ["ceiling", "lite"],
        "a NO-DB target given is the ceiling"
    );
    // A paper study's `--spawn all`: the systems its paper compares (`spawn_all`, and
    // its engines marked `paper`), none of its other engines.
    assert_eq!(targets_of("in-memory", &[], &["all"], false), ["nodb", "redis", "memcached", "ferretdb", "cassandra", "h2"]);
    assert_eq!(
        targets_of("insert-find", &[], &["all"], false),
        ["nodb", "mariadb", "mariadb-cli", "redis", "redis-cli"],
        "with the study's command-line clients of the servers named"
    );
    assert_eq!(
        targets_of("kv-vs-relational", &[], &["all"], false),
        ["nodb", "monetdb", "pg-row", "pg-hstore", "pg-jsonb", "redis", "hyper"]
    );
    let e = resolve(&RunOptions { targets: vec!["sqlite=sqlite:".into()], with_study_targets: true, ..Default::default() }).unwrap_err();
    assert_eq!(e.to_string(), "target name 'sqlite' is used twice; name targets with --target NAME=URL");
}

#[test]
fn the_description_says_what_ran() {
    let plan = |targets: &[&str], spawn: &[&str], with_study_targets: bool| {
        let opts = RunOptions {
            targets: targets.iter().map(|t| t.to_string()).collect(),
            spawn: spawn.iter().map(|s| s.to_string()).collect(),
            with_study_targets,
            ..Default::default()
        };
        resolve(&opts).unwrap()
    };
    let study = load_study(DEFAULT_STUDY).unwrap();
    assert_eq!(plan(&[], &[], false).description, study.description, "the study's targets: the study's own words");
    let servers = plan(&[], &["postgres", "redis", "mariadb"], false);
    assert_eq!(servers.description, "The embedded study's experiments on postgres, redis and mariadb, with the NO-DB ceiling");
    assert_eq!(servers.to_json()["description"], servers.description.as_str(), "saved in the report's plan");
    assert_eq!(
        plan(&["lite=sqlite:"], &["redis"], true).description,
        "The embedded study's experiments on lite and redis, and on its own sqlite, duckdb, monetdb and redb, with the NO-DB ceiling"
    );
    assert_eq!(plan(&["nodb"], &[], false).description, "The embedded study's experiments on the NO-DB ceiling alone");
}

#[test]
fn spawn_all_starts_the_servers_each_study_names() {
    let spawned = |study: &str| {
        let opts = RunOptions { study: Some(study.into()), spawn: vec!["all".into()], ..Default::default() };
        resolve(&opts).unwrap().spawn
    };
    // A paper study's `all` is the paper's systems (stand-ins where they cannot run here).
    use ServerKind::*;
    assert_eq!(spawned("ycsb"), [Redis, LedisDb]);
    assert_eq!(spawned("insert-find"), [Mariadb, Redis]);
    assert_eq!(spawned("in-memory"), [Redis, Memcached, FerretDb, Cassandra, H2]);
    assert_eq!(spawned("kv-vs-relational"), [Postgres, Redis, Hyper]);
    // ... with the paper's embedded engine, and none of the study's other engines.
    let opts = RunOptions { study: Some("kv-vs-relational".into()), spawn: vec!["all".into()], ..Default::default() };
    let names: Vec<String> = resolve(&opts).unwrap().targets.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["nodb", "monetdb"]);
    let opts = RunOptions { study: Some("kv-vs-relational".into()), spawn: vec!["redis".into()], ..Default::default() };
    let names: Vec<String> = resolve(&opts).unwrap().targets.iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, ["nodb"], "a named server alone is what the user named");
    let opts = RunOptions { study: Some("ycsb".into()), spawn: vec!["ledisdb".into()], ..Default::default() };
    assert_eq!(resolve(&opts).unwrap().spawn, vec![ServerKind::LedisDb]);
}

#[test]
fn cli_overrides_win_and_bad_values_name_the_flag() {
    let plan = resolve(&RunOptions { ops: Some(123), runs: Some(2), seed: Some(5), ..Default::default() }).unwrap();
    assert!(plan.experiments.iter().filter(|e| e.name != FLOOR_EXPERIMENT).all(|e| e.ops == 123));
    assert_eq!(plan.experiments[0].name, FLOOR_EXPERIMENT);
    assert_eq!((plan.runs, plan.seed), (2, 5));
    let err = resolve(&RunOptions { clients: Some(vec![0]), ..Default::default() }).unwrap_err();
    assert!(err.to_string().contains("--clients"), "{err}");
    let err = resolve(&RunOptions { clients: Some(vec![1, 100_000]), ..Default::default() }).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--clients 100000 is more than the 1024 clients one process runs; use at most 1024 and --workers N for more"
    );
    let err = resolve(&RunOptions { clients: Some(vec![64]), ops: Some(10), ..Default::default() }).unwrap_err();
    assert!(err.to_string().contains("64 clients but only 10 ops per run; lower --clients or raise --ops to at least 64"), "{err}");
    resolve(&RunOptions { clients: Some(vec![10]), ops: Some(10), ..Default::default() }).unwrap();
    let err = resolve(&RunOptions { study: Some("nope".into()), ..Default::default() }).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("embedded"), "{err}");
    let err = resolve(&RunOptions { experiments: Some(vec!["bogus".into()]), ..Default::default() }).unwrap_err();
    assert!(err.to_string().contains("bogus"));
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
fn paper_runs_the_papers_sizes_and_is_refused_when_longer_than_a_night() {
    let paper = |study: &str, more: RunOptions| resolve(&RunOptions { study: Some(study.into()), paper: true, ..more });
    // insert-find: the paper's 1,000 sizes, 5 repeats, of what it reported at every N
    // (insertion in one query, and find): within a night here.
    let whole = paper("insert-find", RunOptions::default()).unwrap();
    let names: Vec<&str> = whole.experiments.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["echo-floor", "insert-all", "find"]);
    assert_eq!(whole.experiments[1].points.len(), 1000);
    assert!(crate::plan::estimate::estimate(&whole).total() <= PAPER_MAX_SECS);
    // One key per query at every N as well, which the paper defined but did not report:
    // far over 8 h here, refused with the estimate.
    let each = RunOptions { experiments: Some(vec!["insert-each".into()]), ..Default::default() };
    let refused = paper("insert-find", each).unwrap_err();
    assert_eq!(refused.exit_code(), 2);
    assert!(refused.to_string().contains("estimated at") && refused.to_string().contains("over 8 h"), "{refused}");
    // With the paper's servers and their command-line clients it is just over a night;
    // each half, as the refusal suggests, fits.
    let servers = || RunOptions { spawn: vec!["all".into()], ..Default::default() };
    let whole = paper("insert-find", servers()).unwrap_err();
    assert!(whole.to_string().contains("--shard 0/2 .. 1/2"), "{whole}");
    for half in ["0/2", "1/2"] {
        paper("insert-find", RunOptions { shard: Some(half.into()), ..servers() }).unwrap();
    }
    // A part of it fits: its sizes are the flag's, its repeats the paper's.
    let part = paper("insert-find", RunOptions { sizes: Some("100:300:100".into()), ..Default::default() }).unwrap();
    let insert_all = part.experiments.iter().find(|e| e.name == "insert-all").unwrap();
    assert_eq!(insert_all.points.iter().map(|p| p.param.unwrap()).collect::<Vec<_>>(), [100, 200, 300]);
    assert_eq!(insert_all.runs, 5);
    // Where the defaults are the paper's, --paper is the default plan.
    let ycsb = paper("ycsb", RunOptions::default()).unwrap();
    assert_eq!(ycsb.hash, resolve(&RunOptions { study: Some("ycsb".into()), ..Default::default() }).unwrap().hash);
    // A study of no paper says so.
    let none = paper("embedded", RunOptions::default()).unwrap_err();
    assert!(none.to_string().contains("reproduces no paper"), "{none}");
    let both = paper("ycsb", RunOptions { quick: true, ..Default::default() }).unwrap_err();
    assert_eq!(both.exit_code(), 2);
}
