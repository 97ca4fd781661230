use super::*;
use crate::report::model::Flag;

/// Where the papers' texts are: `$DBSWEEP_SEEDS_DIR`, else the shared seeds directory.
fn seeds_dir() -> Option<std::path::PathBuf> {
    let dir = std::env::var_os("DBSWEEP_SEEDS_DIR").map(std::path::PathBuf::from).unwrap_or_else(|| "/work/shared/seeds".into());
    dir.is_dir().then_some(dir)
}

fn seed_text(dir: &std::path::Path, prefix: &str) -> String {
    let file = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| e.file_name().to_string_lossy().starts_with(&format!("{prefix}_")))
        .unwrap_or_else(|| panic!("no seed {prefix}_* in {}", dir.display()));
    std::fs::read_to_string(file.path()).unwrap()
}

/// Markup and emphasis removed, whitespace collapsed: "*delete*" and "<i>Redis</i>" read as
/// the words.
fn plain(text: &str) -> String {
    let text = text.replace("<i>", "").replace("</i>", "").replace('*', "");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The cells of the first line at or after the table heading `name` whose first cell is
/// `row` (markup removed).
fn table_line(seed: &str, name: &str, row: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = seed.lines().collect();
    let start = lines.iter().position(|l| plain(l).starts_with(&format!("{name} ")) || plain(l) == name)?;
    lines[start..].iter().map(|l| l.split('\t').map(plain).collect::<Vec<String>>()).find(|cells| cells.first().is_some_and(|c| c == row))
}

/// The column heads of a table whose first line names its columns (an empty first cell).
fn column_heads(seed: &str, name: &str) -> Vec<String> {
    let lines: Vec<&str> = seed.lines().collect();
    let Some(start) = lines.iter().position(|l| plain(l).starts_with(&format!("{name} ")) || plain(l) == name) else { return Vec::new() };
    lines[start..]
        .iter()
        .map(|l| l.split('\t').map(plain).collect::<Vec<String>>())
        .find(|c| c.len() > 1 && c[0].is_empty())
        .unwrap_or_default()
}

#[test]
fn every_paper_parses_and_its_findings_are_well_formed() {
    let papers = Paper::all();
    assert_eq!(papers.iter().map(|p| p.study.as_str()).collect::<Vec<_>>(), ["insert-find", "in-memory", "ycsb", "kv-vs-relational"]);
    for paper in &papers {
        let findings = paper.findings();
        assert!(findings.len() >= 12, "{}: {} findings", paper.study, findings.len());
        let mut ids: Vec<&str> = findings.iter().map(|f| f.id.as_str()).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "{}: finding ids are unique", paper.study);
        for f in &findings {
            assert!(f.order.len() >= 2, "{}: {} compares at least two systems", paper.study, f.id);
            for e in &f.order {
                if let Some(v) = &e.value {
                    assert!(paper.value_of(f, v).is_some(), "{}: {} has a number that does not parse: {v}", paper.study, f.id);
                }
            }
        }
    }
    // Dots group thousands in Table 3 only: 14.638 is 14,638 ms; 62.7 MB stays 62.7.
    let in_memory = Paper::of_study("in-memory").unwrap();
    let table3 = in_memory.findings().into_iter().find(|f| f.id == "table-3-n1000000").unwrap();
    assert_eq!(in_memory.value_of(&table3, "14.638"), Some(14638.0));
    assert_eq!(table3.order.iter().map(|e| e.target.as_str()).collect::<Vec<_>>(), ["memcached", "h2", "redis", "cassandra", "ferretdb"]);
    let table4 = in_memory.findings().into_iter().find(|f| f.id == "table-4-n1000000").unwrap();
    assert_eq!(in_memory.value_of(&table4, "62.7"), Some(62.7));
}

#[test]
fn every_number_and_quote_is_in_the_papers_text() {
    let Some(dir) = seeds_dir() else {
        println!("skipped: no seeds directory (set DBSWEEP_SEEDS_DIR to the papers' texts)");
        return;
    };
    let mut checked = 0;
    for paper in Paper::all() {
        let seed = seed_text(&dir, &paper.seed);
        let whole = plain(&seed);
        for t in &paper.tables {
            let heading = seed.lines().map(plain).find(|l| l.starts_with(&format!("{} ", t.name))).unwrap_or_default();
            assert!(heading.contains(&plain(&t.caption)), "{}: {} is headed {heading:?}, not {:?}", paper.study, t.name, t.caption);
            for row in &t.rows {
                let cells = table_line(&seed, &t.name, &row.system)
                    .unwrap_or_else(|| panic!("{}: no line {} in {}", paper.study, row.system, t.name));
                assert_eq!(cells[1..], row.cells[..], "{}: {} of {} as printed", paper.study, row.system, t.name);
                checked += row.cells.len();
            }
        }
        for f in &paper.findings {
            if let Some(quote) = &f.quote {
                assert!(whole.contains(&plain(quote)), "{}: {}'s quote is not in the paper: {quote:?}", paper.study, f.id);
            }
            for e in f.order.iter().filter(|e| e.value.is_some()) {
                let (table, line, value) = (f.table.as_deref().unwrap(), e.line.as_deref().unwrap(), e.value.as_deref().unwrap());
                let cells = table_line(&seed, table, line).unwrap_or_else(|| panic!("{}: no line {line:?} in {table}", paper.study));
                assert!(cells[1..].iter().any(|c| c == value), "{}: {} is not on {table}'s line {line:?}: {cells:?}", paper.study, value);
                // And in the system's column, where the table heads its columns by system.
                let header = column_heads(&seed, table);
                let system = e.system.split(',').next().unwrap();
                if let Some(column) = header.iter().position(|c| c == system) {
                    assert_eq!(cells[column], value, "{}: {}'s number is in the {system} column of {table}", paper.study, f.id);
                }
                checked += 1;
            }
        }
        for t in &paper.trends {
            assert!(whole.contains(&plain(&t.quote)), "{}: trend {}'s quote is not in the paper: {:?}", paper.study, t.id, t.quote);
        }
    }
    assert!(checked > 150, "every transcribed number was checked: {checked}");
}

#[test]
fn a_wrong_number_fails_the_seed_check() {
    let Some(dir) = seeds_dir() else {
        println!("skipped: no seeds directory (set DBSWEEP_SEEDS_DIR to the papers' texts)");
        return;
    };
    let seed = seed_text(&dir, "002");
    let cells = table_line(&seed, "TABLE I", "Insertion (via Command Line)").unwrap();
    assert!(cells.contains(&"2.1234".to_string()));
    assert!(!cells.contains(&"2.1243".to_string()), "a transposed digit is not found");
    let seed = seed_text(&dir, "004");
    assert_eq!(table_line(&seed, "Table 3", "Redis").unwrap()[1..], ["34", "214", "1666", "14.638"]);
}

#[test]
fn every_finding_is_measured_by_an_experiment_of_its_study() {
    let studies = [
        ("insert-find", include_str!("../../plan/studies/insert-find.toml")),
        ("in-memory", include_str!("../../plan/studies/in-memory.toml")),
        ("ycsb", include_str!("../../plan/studies/ycsb.toml")),
        ("kv-vs-relational", include_str!("../../plan/studies/kv-vs-relational.toml")),
    ];
    for paper in Paper::all() {
        let text = studies.iter().find(|(s, _)| *s == paper.study).unwrap().1;
        let study: toml::Value = toml::from_str(text).unwrap();
        let names: Vec<&str> = study["experiments"].as_array().unwrap().iter().map(|e| e["name"].as_str().unwrap()).collect();
        for f in paper.findings() {
            assert!(
                names.contains(&f.at.experiment.as_str()),
                "{}: {} names experiment {}, not in the study",
                paper.study,
                f.id,
                f.at.experiment
            );
        }
        for t in &paper.trends {
            assert!(
                names.contains(&t.experiment.as_str()),
                "{}: trend {} names experiment {}, not in the study",
                paper.study,
                t.id,
                t.experiment
            );
            assert!(t.values.len() >= 2, "{}: trend {} spans at least two values", paper.study, t.id);
        }
    }
}

fn golden() -> Report {
    serde_json::from_str(include_str!("../../../tests/golden/report.json")).unwrap()
}

/// A report of `study` holding the golden report's points (for the variance model) and,
/// at `at`, one point per (target, throughputs of its measured runs).
fn report_at(study: &str, at: &PointSpec, sides: &[(&str, &[f64])]) -> Report {
    let points: Vec<(PointSpec, &str, &[f64])> = sides.iter().map(|(t, v)| (at.clone(), *t, *v)).collect();
    report_with(study, &points)
}

/// A report of `study` holding the golden report's points and one point per (point,
/// target, throughputs of its measured runs).
fn report_with(study: &str, points: &[(PointSpec, &str, &[f64])]) -> Report {
    let mut r = golden();
    r.study = study.into();
    let template = r.points.iter().find(|p| !p.is_void() && p.measured_runs().len() >= 2 && !p.point.batched).unwrap().clone();
    let info = r.targets[0].clone();
    for (at, target, values) in points {
        let mut p = template.clone();
        (p.experiment, p.target, p.system) = (at.experiment.clone(), target.to_string(), target.to_string());
        (p.point.param, p.point.clients, p.point.batched) = (at.param, at.clients(), at.batch.is_some());
        p.point.batch = at.batch.unwrap_or(1);
        p.flags.clear();
        p.runs.retain(|r| !r.warmup);
        p.runs.truncate(values.len());
        for (run, v) in p.runs.iter_mut().zip(values.iter()) {
            (run.seconds, run.ok_ops, run.ops) = (1.0, *v as u64, *v as u64);
        }
        r.points.push(p);
        if !r.targets.iter().any(|t| t.name == *target) {
            r.targets.push(TargetInfo { name: target.to_string(), system: target.to_string(), ..info.clone() });
        }
    }
    r
}

use crate::adapter::TargetInfo;

fn verdict<'a>(v: &'a PaperVerdicts, id: &str) -> &'a Verdict {
    v.verdicts.iter().find(|v| v.finding == id).unwrap()
}

fn insert_all() -> PointSpec {
    PointSpec { experiment: "insert-all".into(), param: Some(100000), clients: None, batch: None }
}

#[test]
fn a_verdict_follows_the_measured_order() {
    // Table I through the drivers on an HDD: Redis 0.2500 s, MySQL 2.5508 s: 10.2x.
    let close = report_at("insert-find", &insert_all(), &[("redis", &[8000.0, 8100.0, 7900.0]), ("mariadb", &[1000.0, 1010.0, 990.0])]);
    let v = PaperVerdicts::of(&close).unwrap();
    let driver = verdict(&v, "insert-driver-hdd");
    assert_eq!(driver.verdict, VerdictKind::Reproduced, "{driver:?}");
    assert!(driver.reason.starts_with("the paper's order, within 3.00x of the paper's ratio"), "{}", driver.reason);
    assert!(driver.dbsweep.starts_with("redis 8.00x faster than mariadb (95 % "), "{}", driver.dbsweep);
    assert!(driver.paper.contains("0.2500") && driver.paper.contains("2.5508") && driver.paper.contains("10.2x"), "{}", driver.paper);

    // The order flipped: MariaDB faster.
    let flipped = report_at("insert-find", &insert_all(), &[("redis", &[1000.0, 1010.0, 990.0]), ("mariadb", &[8000.0, 8100.0, 7900.0])]);
    let v = PaperVerdicts::of(&flipped).unwrap();
    let driver = verdict(&v, "insert-driver-hdd");
    assert_eq!(driver.verdict, VerdictKind::Differs, "{driver:?}");
    assert!(driver.reason.starts_with("the opposite order here: mariadb 8.00x faster than redis"), "{}", driver.reason);

    // The same order, but 100x where the paper has 10.2x: beyond the stated factor.
    let far = report_at("insert-find", &insert_all(), &[("redis", &[100000.0, 101000.0, 99000.0]), ("mariadb", &[1000.0, 1010.0, 990.0])]);
    let driver = verdict(&PaperVerdicts::of(&far).unwrap(), "insert-driver-hdd").clone();
    assert_eq!(driver.verdict, VerdictKind::Differs);
    assert!(driver.reason.contains("against 10.2x in the paper: beyond the stated 3.00x"), "{}", driver.reason);

    // Equal: the data cannot rank them.
    let tied = report_at("insert-find", &insert_all(), &[("redis", &[1000.0, 1001.0, 999.0]), ("mariadb", &[1000.5, 999.5, 1000.0])]);
    let driver = verdict(&PaperVerdicts::of(&tied).unwrap(), "insert-driver-hdd").clone();
    assert_eq!(driver.verdict, VerdictKind::NotComparable);
    assert!(driver.reason.starts_with("the data cannot rank them: redis and mariadb "), "{}", driver.reason);
    assert!(
        driver.reason.ends_with("dbsweep's drivers are its own (Rust), not Node.js's"),
        "the method choice is named: {}",
        driver.reason
    );
}

#[test]
fn a_void_point_or_a_target_not_run_is_not_comparable_and_names_the_command() {
    let mut r = report_at("insert-find", &insert_all(), &[("redis", &[8000.0, 8100.0]), ("mariadb", &[1000.0, 1010.0])]);
    let v = PaperVerdicts::of(&r).unwrap();
    // The command-line targets were not run: their findings wait for --spawn.
    let cli = verdict(&v, "insert-cli-hdd");
    assert_eq!(cli.verdict, VerdictKind::NotComparable);
    assert!(
        cli.not_run
            && cli
                .reason
                .starts_with("not run: this point needs --spawn redis,mariadb (redis-cli and mariadb-cli not a target of this run)"),
        "{}",
        cli.reason
    );
    // find ran at no size: the experiment is named.
    let find = verdict(&v, "find-driver-hdd");
    assert!(find.reason.starts_with("not run: this point needs experiment find"), "{}", find.reason);
    // insert-all ran at one size: its trends need the others.
    assert_eq!(
        v.judge_with.as_deref(),
        Some("dbsweep run insert-find --spawn mariadb,redis --experiments find --sizes 100,1000,10000,100000")
    );
    assert!(v.not_run_text().unwrap().starts_with("19 findings could not be judged"), "{:?}", v.not_run_text());
    // A void point is not a measurement.
    let p = r.points.iter_mut().find(|p| p.experiment == "insert-all" && p.target == "mariadb").unwrap();
    p.flags.push(Flag::Errors { count: 2, failed_ops: 2 });
    let driver = verdict(&PaperVerdicts::of(&r).unwrap(), "insert-driver-hdd").clone();
    assert_eq!(driver.verdict, VerdictKind::NotComparable);
    assert!(driver.reason.starts_with("mariadb is void"), "{}", driver.reason);
    assert!(!driver.not_run);
}

#[test]
fn a_stand_in_is_left_out_and_named() {
    // Table 3 at 1,000: Memcached 23, Redis 34, H2 147, MongoDB 904, Cassandra 1202.
    let at = PointSpec { experiment: "write-all".into(), param: Some(1000), clients: None, batch: None };
    let r = report_at(
        "in-memory",
        &at,
        &[
            ("memcached", &[3000.0, 3030.0, 2970.0]),
            ("redis", &[2000.0, 2020.0, 1980.0]),
            ("h2", &[500.0, 505.0, 495.0]),
            ("ferretdb", &[100.0, 101.0, 99.0]),
            ("cassandra", &[90.0, 91.0, 89.0]),
        ],
    );
    let v = PaperVerdicts::of(&r).unwrap();
    let t3 = verdict(&v, "table-3-n1000");
    assert_eq!(t3.verdict, VerdictKind::Reproduced, "{t3:?}");
    assert!(t3.reason.contains("; MongoDB left out (FerretDB stands in for it"), "{}", t3.reason);
    assert!(t3.dbsweep.contains("ferretdb"), "what the stand-in measured is shown: {}", t3.dbsweep);
    // A stand-in only (ycsb): not comparable, whatever it measured.
    let at = PointSpec { experiment: "workload-a".into(), param: Some(1000), clients: Some(8), batch: None };
    let r = report_at("ycsb", &at, &[("redis", &[2000.0, 2020.0]), ("ledisdb", &[1000.0, 1010.0])]);
    let a = verdict(&PaperVerdicts::of(&r).unwrap(), "workload-a-1000").clone();
    assert_eq!(a.verdict, VerdictKind::NotComparable);
    assert!(a.reason.starts_with("SSDB left out (LedisDB stands in for it: SSDB 1.9.3 has no package here); "), "{}", a.reason);
    assert!(a.dbsweep.starts_with("redis 2.00x faster than ledisdb"), "{}", a.dbsweep);
}

#[test]
fn a_study_without_a_paper_has_no_verdicts() {
    assert!(PaperVerdicts::of(&golden()).is_none());
}

#[test]
fn a_size_sent_in_one_request_is_the_point_of_that_size() {
    // insert-find's insert-all sends all N keys in one request: a batch of N.
    let mut p = golden().points.into_iter().find(|p| !p.is_void()).unwrap();
    (p.experiment, p.point.param, p.point.clients, p.point.batched, p.point.batch) = ("insert-all".into(), Some(100000), 1, true, 100000);
    assert!(insert_all().matches(&p));
    let paper = Paper::of_study("insert-find").unwrap();
    let trend = paper.trends.iter().find(|t| t.id == "insert-all-driver-penalty-size").unwrap();
    assert_eq!(trend.on_axis(&p), Some(100000), "a trend over N takes it too");
    p.point.batch = 100;
    assert!(!insert_all().matches(&p), "a batch of another size is another point");
    assert_eq!(trend.on_axis(&p), None);
    // Without a size, a batched point is never the unbatched one (kv-vs-relational's batch sweep).
    let unbatched = PointSpec { experiment: "insert-all".into(), param: None, clients: None, batch: None };
    p.point.param = None;
    assert!(!unbatched.matches(&p));
    assert!(PointSpec { batch: Some(100), ..unbatched }.matches(&p));
}

#[test]
fn memory_findings_use_the_servers_growth_then_the_clients_change_and_their_noise_rule() {
    // Table 6 at 1,000 records (MB): Cassandra 0 < H2 1.2 < Redis 1.3 = Memcached 1.3.
    let at = PointSpec { experiment: "read-one".into(), param: Some(1000), clients: None, batch: None };
    let sides: [(&str, &[f64]); 4] =
        [("cassandra", &[100.0, 101.0]), ("h2", &[100.0, 101.0]), ("redis", &[100.0, 101.0]), ("memcached", &[100.0, 101.0])];
    // `client` and `server` in MiB, per target in the paper's order.
    let with_memory = |client: [f64; 4], server: [f64; 4]| {
        let mut r = report_at("in-memory", &at, &sides);
        for ((target, c), s) in ["cassandra", "h2", "redis", "memcached"].iter().zip(client).zip(server) {
            let p = r.points.iter_mut().find(|p| p.experiment == "read-one" && p.target == *target).unwrap();
            let (c, s) = (c * 1048576.0, s * 1048576.0);
            p.summary.as_mut().unwrap().memory = Some(crate::report::model::MemorySummary {
                engine_source: None,
                engine_delta_bytes: None,
                server_delta_bytes: Some(s),
                client_delta_bytes: c,
                engine_bytes_per_row: None,
                server_bytes_per_row: None,
                engine_after_bytes: None,
                server_after_bytes: None,
                engine_delta_range: None,
                server_delta_range: Some([s * 0.99, s * 1.01]),
                client_delta_range: Some([c * 0.99, c * 1.01]),
            });
        }
        let v = PaperVerdicts::of(&r).unwrap();
        (verdict(&v, "table-6-n1000").clone(), verdict(&v, "table-6-n1000-client").clone())
    };
    let (server, client) = with_memory([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]);
    assert_eq!(client.verdict, VerdictKind::Reproduced, "{client:?}");
    assert!(client.dbsweep.starts_with("client memory cassandra 1.0 MiB < h2 2.0 MiB"), "{}", client.dbsweep);
    assert!(client.claim.ends_with("[dbsweep's client's memory change, the paper's metric in kind]"), "{}", client.claim);
    assert_eq!(server.verdict, VerdictKind::Differs, "{server:?}");
    assert!(
        server.reason.starts_with("the opposite order here: server memory h2 3.0 MiB <= cassandra 4.0 MiB (medians, a JVM's PSS"),
        "{}",
        server.reason
    );
    assert!(server.reason.contains("judged on the server's memory growth"), "{}", server.reason);
    let (server, client) = with_memory([1.0, 3.0, 2.0, 4.0], [10.0, 20.0, 30.0, 40.0]);
    assert_eq!(server.verdict, VerdictKind::Reproduced, "{server:?}");
    assert!(server.dbsweep.starts_with("server memory cassandra 10.0 MiB < h2 20.0 MiB"), "{}", server.dbsweep);
    assert_eq!(client.verdict, VerdictKind::Differs, "{client:?}");
    assert!(client.reason.starts_with("the opposite order here: client memory redis 2.0 MiB <= h2 3.0 MiB"), "{}", client.reason);
    // A server that gave memory back over the operation has no growth to rank.
    let (server, _) = with_memory([1.0, 2.0, 3.0, 4.0], [1.0, -131.7, 3.0, 4.0]);
    assert_eq!(server.verdict, VerdictKind::NotComparable, "{server:?}");
    assert!(server.reason.contains("h2's server memory fell by 131.7 MiB over the operation"), "{}", server.reason);
    // Changes within one page: "< noise", nothing to rank.
    let (server, client) = with_memory([0.001, 0.002, 0.003, 0.001], [0.001, -0.002, 0.003, 0.001]);
    for noise in [server, client] {
        assert_eq!(noise.verdict, VerdictKind::NotComparable);
        assert!(noise.reason.contains("below the noise floor (< noise"), "{}", noise.reason);
    }
}

#[test]
fn command_line_findings_are_judged_on_the_servers_time_then_end_to_end() {
    // Table I via the command line on an SSD: Redis 0.0497 s, MySQL 0.7448 s: 15.0x.
    // `server`: each target's server seconds per run (one request per run).
    let with_server_time = |server: [f64; 2]| {
        let mut r =
            report_at("insert-find", &insert_all(), &[("redis-cli", &[6000.0, 6010.0, 5990.0]), ("mariadb-cli", &[1000.0, 1010.0, 990.0])]);
        for (target, seconds) in ["redis-cli", "mariadb-cli"].iter().zip(server) {
            let p = r.points.iter_mut().find(|p| p.target == *target).unwrap();
            for run in p.runs.iter_mut() {
                (run.server_seconds, run.server_timed_requests) = (Some(seconds), 1);
            }
        }
        let v = PaperVerdicts::of(&r).unwrap();
        (verdict(&v, "insert-cli-ssd").clone(), verdict(&v, "insert-cli-ssd-end-to-end").clone())
    };
    let (like, own) = with_server_time([0.02, 0.2]);
    assert_eq!(like.verdict, VerdictKind::Reproduced, "{like:?}");
    assert!(like.dbsweep.starts_with("server time per request redis-cli 0.0200 s < mariadb-cli 0.200 s"), "{}", like.dbsweep);
    assert!(like.reason.contains("judged on the server's own time per request"), "{}", like.reason);
    // The end-to-end verdict is dbsweep's throughput, labelled, whatever the server said.
    assert_eq!(own.verdict, VerdictKind::Reproduced, "{own:?}");
    assert!(own.claim.ends_with("[dbsweep's end-to-end time]") && own.dbsweep.starts_with("redis-cli 6.00x faster"), "{own:?}");
    // Beyond the factor: 100x where the paper has 15.0x.
    let (like, _) = with_server_time([0.002, 0.2]);
    assert_eq!(like.verdict, VerdictKind::Differs, "{like:?}");
    assert!(like.reason.contains("redis-cli is 100x better than mariadb-cli here against 15.0x in the paper"), "{}", like.reason);
    // Reversed on the server while the end-to-end order holds.
    let (like, own) = with_server_time([0.3, 0.2]);
    assert_eq!((like.verdict, own.verdict), (VerdictKind::Differs, VerdictKind::Reproduced));
    assert!(
        like.reason.starts_with("the opposite order here: server time per request mariadb-cli 0.200 s <= redis-cli 0.300 s"),
        "{}",
        like.reason
    );
}

#[test]
fn read_and_delete_one_are_judged_on_the_cold_call() {
    // Table 5 at 1,000 records (ms): Cassandra 2 < Redis 8 < MongoDB 8 < Memcached 9 < H2 25.
    let at = PointSpec { experiment: "read-one".into(), param: Some(1000), clients: None, batch: None };
    let with_cold = |cold_ms: [f64; 4]| {
        let sides: [(&str, &[f64]); 4] =
            [("cassandra", &[100.0, 101.0]), ("redis", &[100.0, 101.0]), ("memcached", &[100.0, 101.0]), ("h2", &[100.0, 101.0])];
        let mut r = report_at("in-memory", &at, &sides);
        for (target, ms) in ["cassandra", "redis", "memcached", "h2"].iter().zip(cold_ms) {
            let p = r.points.iter_mut().find(|p| p.target == *target).unwrap();
            p.runs.iter_mut().for_each(|run| run.cold_call_us = Some(ms * 1000.0));
        }
        verdict(&PaperVerdicts::of(&r).unwrap(), "table-5-n1000").clone()
    };
    let same = with_cold([1.0, 3.0, 3.3, 9.0]);
    assert_eq!(same.verdict, VerdictKind::Reproduced, "{same:?}");
    assert!(same.dbsweep.starts_with("cold call cassandra 1.00 ms < redis 3.00 ms"), "{}", same.dbsweep);
    let flipped = with_cold([4.0, 0.2, 0.2, 1.0]);
    assert_eq!(flipped.verdict, VerdictKind::Differs, "{flipped:?}");
    assert!(flipped.reason.starts_with("the opposite order here: cold call redis 0.200 ms <= cassandra 4.00 ms"), "{}", flipped.reason);
}

/// Points of one target along the in-memory study's sizes: (size, throughputs of its runs).
fn along_sizes<'a>(experiment: &str, target: &'a str, steps: &[(u64, &'a [f64])]) -> Vec<(PointSpec, &'a str, &'a [f64])> {
    steps
        .iter()
        .map(|(n, v)| (PointSpec { experiment: experiment.into(), param: Some(*n), clients: None, batch: None }, target, *v))
        .collect()
}

#[test]
fn a_trend_verdict_follows_the_measured_slope() {
    // The paper: H2's read slows as the data grows. Keys per second falling with size: the
    // time per key grows, as the paper's.
    let slowing = along_sizes(
        "read-one",
        "h2",
        &[(1000, &[9000.0, 9100.0, 8900.0]), (10000, &[6000.0, 6050.0, 5950.0]), (100000, &[4000.0, 4040.0, 3960.0])],
    );
    let v = PaperVerdicts::of(&report_with("in-memory", &slowing)).unwrap();
    let read = verdict(&v, "read-h2-size");
    assert_eq!(read.verdict, VerdictKind::Reproduced, "{read:?}");
    assert!(read.reason.starts_with("it grows here too (over 1,000 / 10,000 / 100,000; the paper's 1,000,000 not run)"), "{}", read.reason);
    assert!(read.dbsweep.starts_with("h2's time per op changes 2.2"), "the fitted change from 1,000 to 100,000: {}", read.dbsweep);
    assert!(
        read.dbsweep.contains("from 1,000 to 100,000 in size (95 % ") && read.dbsweep.ends_with("fitted over 3 points"),
        "{}",
        read.dbsweep
    );
    assert_eq!(read.point, "read-one n=1,000..1,000,000");

    // The trend flipped: reads get faster with size.
    let quickening = along_sizes(
        "read-one",
        "h2",
        &[(1000, &[4000.0, 4040.0, 3960.0]), (10000, &[6000.0, 6050.0, 5950.0]), (100000, &[9000.0, 9100.0, 8900.0])],
    );
    let read = verdict(&PaperVerdicts::of(&report_with("in-memory", &quickening)).unwrap(), "read-h2-size").clone();
    assert_eq!(read.verdict, VerdictKind::Differs, "{read:?}");
    assert!(read.reason.starts_with("it falls here"), "{}", read.reason);

    // Flat within 1 %: not the paper's growth either.
    let flat = along_sizes(
        "read-one",
        "h2",
        &[(1000, &[5000.0, 5010.0, 4990.0]), (10000, &[5005.0, 4995.0, 5000.0]), (100000, &[4998.0, 5003.0, 5001.0])],
    );
    let read = verdict(&PaperVerdicts::of(&report_with("in-memory", &flat)).unwrap(), "read-h2-size").clone();
    assert_eq!(read.verdict, VerdictKind::Differs, "{read:?}");
    assert!(read.reason.starts_with("flat here"), "{}", read.reason);
}

#[test]
fn no_trend_is_called_from_points_whose_intervals_cannot_tell() {
    // A 1.3x slowing over two sizes whose runs scatter 5x: the interval spans 1.
    let scattered = along_sizes("read-one", "h2", &[(1000, &[1000.0, 5000.0, 2000.0]), (10000, &[700.0, 4000.0, 1500.0])]);
    let read = verdict(&PaperVerdicts::of(&report_with("in-memory", &scattered)).unwrap(), "read-h2-size").clone();
    assert_eq!(read.verdict, VerdictKind::NotComparable, "{read:?}");
    assert!(read.reason.starts_with("the data cannot tell: "), "{}", read.reason);
    assert!(read.reason.contains("use --runs"), "the fix is named: {}", read.reason);
    assert!(!read.dbsweep.is_empty(), "what was measured is shown: {read:?}");

    // One size only: not run, and the command names the sizes.
    let one = along_sizes("read-one", "h2", &[(1000, &[9000.0, 9100.0, 8900.0])]);
    let v = PaperVerdicts::of(&report_with("in-memory", &one)).unwrap();
    let read = verdict(&v, "read-h2-size");
    assert_eq!(read.verdict, VerdictKind::NotComparable);
    assert!(read.not_run, "{read:?}");
    assert!(
        read.reason.starts_with("not run: this trend needs --sizes 1000,10000,100000,1000000 (measured here: 1,000)"),
        "{}",
        read.reason
    );
    assert!(v.judge_with.as_deref().unwrap().contains("--sizes 1000,10000,100000,1000000"), "{:?}", v.judge_with);
    // A system not in the run: the trend needs it spawned (a stand-in's, so not comparable
    // after that either, and left out of the command).
    let mongodb = verdict(&v, "write-mongodb-size");
    assert!(mongodb.reason.starts_with("not run: this trend needs --spawn memcached,ferretdb"), "{}", mongodb.reason);
    assert!(mongodb.reason.contains("MongoDB left out (FerretDB stands in for it") && !mongodb.not_run, "{mongodb:?}");
    assert!(!v.judge_with.as_deref().unwrap().contains("ferretdb"), "{:?}", v.judge_with);

    // Memory changes have no interval: listed, never called.
    let memory = verdict(&v, "delete-memory-h2-size");
    assert_eq!(memory.verdict, VerdictKind::NotComparable);
    assert!(memory.reason.starts_with("memory changes have no interval here"), "{}", memory.reason);
}

#[test]
fn a_lead_over_another_system_is_the_trend_of_their_ratio() {
    // Redis's lead over MariaDB through the drivers grows with N (2x, 4x, 8x), as the paper's
    // MySQL penalty; then shrinks (8x, 4x, 2x).
    let steps = |leads: [f64; 3]| -> Vec<(PointSpec, &'static str, Vec<f64>)> {
        [100u64, 1000, 10000]
            .iter()
            .zip(leads)
            .flat_map(|(n, lead)| {
                let at = PointSpec { experiment: "insert-all".into(), param: Some(*n), clients: None, batch: None };
                [(at.clone(), "redis", vec![1000.0 * lead, 1010.0 * lead, 990.0 * lead]), (at, "mariadb", vec![1000.0, 1010.0, 990.0])]
            })
            .collect()
    };
    let judge = |leads: [f64; 3]| {
        let owned = steps(leads);
        let points: Vec<(PointSpec, &str, &[f64])> = owned.iter().map(|(a, t, v)| (a.clone(), *t, v.as_slice())).collect();
        verdict(&PaperVerdicts::of(&report_with("insert-find", &points)).unwrap(), "insert-all-driver-penalty-size").clone()
    };
    let growing = judge([2.0, 4.0, 8.0]);
    assert_eq!(growing.verdict, VerdictKind::Reproduced, "{growing:?}");
    assert!(growing.dbsweep.starts_with("redis's lead over mariadb changes 4.0"), "{}", growing.dbsweep);
    assert!(growing.reason.ends_with("dbsweep's drivers are its own (Rust), not Node.js's"), "{}", growing.reason);
    let shrinking = judge([8.0, 4.0, 2.0]);
    assert_eq!(shrinking.verdict, VerdictKind::Differs, "{shrinking:?}");
    assert!(shrinking.reason.starts_with("it falls here"), "{}", shrinking.reason);
}

#[test]
fn a_stand_ins_trend_is_shown_but_not_comparable() {
    // LedisDB (for SSDB) pulling ahead of Redis with threads: measured, not the paper's system.
    let mut points = Vec::new();
    let runs: Vec<Vec<f64>> = [1.0, 2.0, 4.0, 8.0].iter().map(|c| vec![1000.0 * c, 1010.0 * c]).collect();
    let flat = vec![1000.0, 1010.0];
    for (i, c) in [1usize, 2, 4, 8].iter().enumerate() {
        let at = PointSpec { experiment: "workload-a".into(), param: Some(1000), clients: Some(*c), batch: None };
        points.push((at.clone(), "ledisdb", runs[i].as_slice()));
        points.push((at, "redis", flat.as_slice()));
    }
    let v = PaperVerdicts::of(&report_with("ycsb", &points)).unwrap();
    let a = verdict(&v, "workload-a-1000-threads");
    assert_eq!(a.verdict, VerdictKind::NotComparable, "{a:?}");
    assert!(a.reason.starts_with("it grows here too; SSDB left out (LedisDB stands in for it"), "{}", a.reason);
    assert!(a.dbsweep.starts_with("ledisdb's lead over redis changes 8.00x from 1 to 8 clients"), "{}", a.dbsweep);
    assert_eq!(a.point, "workload-a c=1..8 n=1000");
}
