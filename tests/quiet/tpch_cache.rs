//! The TPC-H cache end to end through the binary (issue 18, item 4): `dbsweep gen tpch`
//! writes dbgen's files once; a run with an empty cache generates them in a child process
//! and reads them; a run with a full cache never builds tpchgen's 300 MB text pool (its
//! peak RSS stays far below it); Ctrl-C while the cache is generated answers at once and
//! leaves neither files nor a generator behind, and so does a generator stopped directly.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};
use support::{entries, report};

fn dbsweep_with_cache(cache: &Path, args: &[&str]) -> Output {
    support::command().args(args).env("DBSWEEP_CACHE", cache).output().expect("run dbsweep")
}

/// Waits (up to 120 s) until SF 1's lineitem file has its first MiB in the partial
/// directory, with `child` (the process generating it, or the run that started it) alive.
fn wait_until_lineitem_is_being_written(cache: &Path, child: &mut std::process::Child) {
    let partial_lineitem = cache.join("tpch").join("sf1.partial").join("lineitem.tbl");
    let deadline = Instant::now() + Duration::from_secs(120);
    while std::fs::metadata(&partial_lineitem).map_or(0, |m| m.len()) < 1 << 20 {
        assert!(Instant::now() < deadline, "the generator did not start writing lineitem");
        assert!(child.try_wait().unwrap().is_none(), "dbsweep ended before lineitem was being written");
        std::thread::sleep(Duration::from_millis(20));
    }
}

const TABLES: [&str; 8] = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"];

#[test]
fn gen_tpch_writes_dbgens_files_once_and_refuses_a_bad_scale() {
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let o = dbsweep_with_cache(&cache, &["gen", "tpch", "--scale", "0.01"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dir = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    assert_eq!(dir, cache.join("tpch").join("sf0.01"), "it prints where the files are");
    let mut expected: Vec<String> = TABLES.iter().map(|t| format!("{t}.tbl")).collect();
    expected.push("manifest.json".into());
    expected.sort();
    assert_eq!(entries(&dir), expected);
    assert_eq!(entries(&cache.join("tpch")), vec!["sf0.01".to_string(), "sf0.01.lock".to_string()], "no partial directory is left");

    // dbgen's own first lines at this scale (TPC-H Tools 3.0.1, `dbgen -s 0.01`).
    let first_line = |table: &str| std::fs::read_to_string(dir.join(format!("{table}.tbl"))).unwrap().lines().next().unwrap().to_string();
    assert_eq!(
        first_line("region"),
        "0|AFRICA|lar deposits. blithely final packages cajole. regular waters are final requests. regular accounts are according to |"
    );
    assert_eq!(first_line("nation"), "0|ALGERIA|0| haggle. carefully final deposits detect slyly agai|");
    assert_eq!(
        first_line("lineitem"),
        "1|1552|93|1|17|24710.35|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|"
    );
    let lines = |table: &str| std::fs::read_to_string(dir.join(format!("{table}.tbl"))).unwrap().lines().count();
    assert_eq!([lines("supplier"), lines("customer"), lines("orders"), lines("lineitem")], [100, 1500, 15000, 60175]);
    let manifest: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["tables"][7]["rows"], 60175);
    assert_eq!(manifest["tables"][7]["bytes"], std::fs::metadata(dir.join("lineitem.tbl")).unwrap().len());

    // Again: the cache is complete, nothing is rewritten.
    let modified = std::fs::metadata(dir.join("lineitem.tbl")).unwrap().modified().unwrap();
    let o = dbsweep_with_cache(&cache, &["gen", "tpch", "--scale", "0.01"]);
    assert!(o.status.success());
    assert_eq!(std::fs::metadata(dir.join("lineitem.tbl")).unwrap().modified().unwrap(), modified);

    // A damaged file (a size other than the manifest's) makes the cache be generated again.
    std::fs::write(dir.join("region.tbl"), "0|AFRICA|x|\n").unwrap();
    let o = dbsweep_with_cache(&cache, &["gen", "tpch", "--scale", "0.01"]);
    assert!(o.status.success());
    assert!(first_line("region").starts_with("0|AFRICA|lar deposits."), "regenerated");

    let empty = tmp.path().join("other");
    for scale in ["0", "-1", "0.00001", "nan"] {
        let o = dbsweep_with_cache(&empty, &["gen", "tpch", "--scale", scale]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "--scale {scale}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("scale"), "{err}");
        assert!(!empty.exists(), "--scale {scale}: nothing written");
    }
}

/// Runs dbsweep and returns its output with its own peak resident memory in bytes: the
/// largest VmHWM read from /proc while it runs. (wait4's ru_maxrss cannot be used: a child
/// started by posix_spawn shares this test process's memory until exec, and the kernel
/// records that memory's high-water mark as the child's, so it reads as this test
/// binary's peak after earlier tests.)
fn run_measuring_peak_rss(cache: &Path, args: &[&str]) -> (std::process::ExitStatus, String, u64) {
    let mut child = support::command()
        .args(args)
        .env("DBSWEEP_CACHE", cache)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start dbsweep");
    let mut stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
        text
    });
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        let high_water = std::fs::read_to_string(&status_file).ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        });
        peak_kib = peak_kib.max(high_water.unwrap_or(0));
        if let Some(status) = child.try_wait().expect("wait for dbsweep") {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(peak_kib > 0, "read dbsweep's VmHWM while it ran");
    (status, reader.join().unwrap(), peak_kib * 1024)
}

#[test]
fn a_run_generates_a_missing_cache_in_a_child_and_then_stays_far_below_the_text_pool() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let run = |out: &Path| {
        let db = tmp.path().join(format!("{}.sqlite", out.file_name().unwrap().to_string_lossy()));
        let target = format!("lite=sqlite:{}", db.display());
        let args = [
            "run",
            "kv-vs-relational",
            "--quick",
            "--target",
            &target,
            "--experiments",
            "tpch-q6,tpch-q3,insert-orders,range-max-lineitem",
            "--clients",
            "1",
            "--ops",
            "200",
            "--runs",
            "1",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ];
        run_measuring_peak_rss(&cache, &args)
    };
    // An empty cache: the run fills it first (a child process holds the text pool).
    let (status, stderr, _) = run(&tmp.path().join("first"));
    assert!(status.success(), "{stderr}");
    assert!(cache.join("tpch").join("sf0.01").join("manifest.json").exists(), "the run filled the cache");

    // A full cache: the run reads the files; its own peak RSS stays far below the 300 MB
    // pool it would build by generating a single comment.
    let out = tmp.path().join("second");
    let (status, stderr, peak) = run(&out);
    assert!(status.success(), "{stderr}");
    eprintln!("peak RSS of the run with a full cache: {} MB", peak >> 20);
    assert!(peak < 150 << 20, "peak RSS {} MB: the run generated rows itself", peak >> 20);
    let r = report(&out);
    assert_eq!(r["complete"], true);
    let points: Vec<&serde_json::Value> = r["points"].as_array().unwrap().iter().filter(|p| p["target"] == "lite").collect();
    let experiments: std::collections::BTreeSet<&str> = points.iter().map(|p| p["experiment"].as_str().unwrap()).collect();
    assert_eq!(experiments.into_iter().collect::<Vec<_>>(), ["echo-floor", "insert-orders", "range-max-lineitem", "tpch-q3", "tpch-q6"]);
    for p in points.iter().filter(|p| p["experiment"] != "echo-floor") {
        let flags: Vec<&str> = p["flags"].as_array().unwrap().iter().map(|f| f["flag"].as_str().unwrap()).collect();
        assert!(
            !flags.iter().any(|f| ["answer_mismatch", "errors", "missing_rows", "incomplete"].contains(f)),
            "{}: {flags:?} (the reference answers come from the cache)",
            p["experiment"]
        );
        assert!(p["summary"]["median_ops_per_sec"].as_f64().is_some_and(|v| v > 0.0));
    }
}

/// Processes whose command line is `... gen tpch ...` and whose environment names `cache`.
fn generators_for(cache: &Path) -> Vec<u32> {
    let needle = format!("DBSWEEP_CACHE={}", cache.display());
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmdline.windows(9).any(|w| w == b"gen\0tpch\0") && environ.split(|b| *b == 0).any(|var| var == needle.as_bytes())
        })
        .collect()
}

#[test]
fn ctrl_c_while_generating_the_cache_exits_130_within_2_s_and_leaves_nothing() {
    let _alone = crate::alone();
    let tmp = tempfile::tempdir().unwrap();
    let cache = tmp.path().join("cache");
    let out = tmp.path().join("run");
    let mut child = support::command()
        .args(["run", "kv-vs-relational", "--scale", "1", "--target", "nodb=nodb:", "--experiments", "get-region"])
        .args(["--no-progress", "--out", out.to_str().unwrap()])
        .env("DBSWEEP_CACHE", &cache)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until_lineitem_is_being_written(&cache, &mut child);
    assert_eq!(generators_for(&cache).len(), 1, "one generator process");
    // SAFETY: sends SIGINT to the child this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let asked = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(asked.elapsed() < Duration::from_secs(60), "dbsweep did not exit after Ctrl-C");
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = asked.elapsed();
    let mut stderr = String::new();
    let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(took <= Duration::from_secs(2), "exited {took:?} after Ctrl-C: {stderr}");
    assert!(stderr.contains("generating the data"), "the first Ctrl-C says what it stopped: {stderr}");
    // The generator, asked with SIGTERM (by the run, or by the kernel when the run's
    // thread ended first), removes its partial files and exits.
    let cleaned = Instant::now();
    while !generators_for(&cache).is_empty() || entries(&cache.join("tpch")) != ["sf1.lock"] {
        assert!(
            cleaned.elapsed() < Duration::from_secs(3),
            "generators {:?}, cache {:?}",
            generators_for(&cache),
            entries(&cache.join("tpch"))
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_generator_stopped_with_sigterm_or_ctrl_c_removes_its_partial_files() {
    let _alone = crate::alone();
    for (signal, code) in [(libc::SIGTERM, 143), (libc::SIGINT, 130)] {
        let tmp = tempfile::tempdir().unwrap();
        let cache = tmp.path().join("cache");
        let mut child = support::command()
            .args(["gen", "tpch", "--scale", "1"])
            .env("DBSWEEP_CACHE", &cache)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_until_lineitem_is_being_written(&cache, &mut child);
        // SAFETY: signals the child this test started.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let asked = Instant::now();
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        let _ = std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr);
        assert_eq!(status.code(), Some(code), "signal {signal}: {stderr}");
        assert!(asked.elapsed() < Duration::from_secs(2), "signal {signal}: took {:?}", asked.elapsed());
        assert!(stderr.contains("no TPC-H files were left"), "{stderr}");
        assert_eq!(entries(&cache.join("tpch")), vec!["sf1.lock".to_string()], "signal {signal}");
    }
}
