//! The latency exports end to end: a short embedded run with `--hlog-interval`, whose `.hlog`
//! files are read by HdrHistogram's own Java `HistogramLogReader` (org.hdrhistogram:
//! HdrHistogram, installed by `scripts/setup-hdrhistogram`; `tests/support/ReadHlogs.java`),
//! and checked
//! against report.json: one line per interval of the run, every ok request counted once,
//! max and p99 equal within the histogram's precision. The `.hgrm` files' totals match too,
//! and `dbsweep report` writes the same files again.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::{dbsweep, files_under, report};

/// The library `scripts/setup-hdrhistogram` installs.
fn hdrhistogram_jar() -> PathBuf {
    let native = std::env::var_os("DBSWEEP_NATIVE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME")).join(".cache/dbsweep/native"));
    let jar = native.join("hdrhistogram/HdrHistogram.jar");
    assert!(jar.is_file(), "{} is missing: run scripts/setup (or scripts/setup-hdrhistogram)", jar.display());
    jar
}

/// What HdrHistogram's reader found in one `.hlog`: the count of each interval, and the
/// whole log's count, p99 and max (nanoseconds).
struct Read {
    counts: Vec<u64>,
    total: u64,
    p99: f64,
    max: f64,
}

/// Reads every `.hlog` in one JVM with HdrHistogram's `HistogramLogReader`
/// (`tests/support/ReadHlogs.java`).
fn read_with_hdrhistogram(jar: &Path, hlogs: &[PathBuf]) -> std::collections::BTreeMap<PathBuf, Read> {
    let program = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/ReadHlogs.java");
    let o = Command::new("java").arg("-cp").arg(jar).arg(program).args(hlogs).output().expect("run java (installed by scripts/setup)");
    assert!(o.status.success(), "HistogramLogReader: {}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let cells: Vec<&str> = line.split(' ').collect();
            let read = Read {
                counts: cells[1].split(',').filter(|c| !c.is_empty()).map(|c| c.parse().unwrap()).collect(),
                total: cells[2].parse().unwrap(),
                p99: cells[3].parse().unwrap(),
                max: cells[4].parse().unwrap(),
            };
            (PathBuf::from(cells[0]), read)
        })
        .collect()
}

/// Equal within HdrHistogram's 3 significant digits (plus rounding of the printed value).
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 0.002 * a.abs().max(b.abs()) + 0.01
}

/// The `#[Max = …, Total count = …]` footer of an `.hgrm` file.
fn hgrm_max_and_count(text: &str) -> (f64, u64) {
    let line = text.lines().find(|l| l.starts_with("#[Max")).expect("a Max footer");
    let numbers: Vec<&str> = line.split(['=', ',', ']']).map(str::trim).collect();
    (numbers[1].parse().unwrap(), numbers[3].parse().unwrap())
}

#[test]
fn interval_logs_load_in_hdrhistograms_own_reader_and_agree_with_the_report() {
    let jar = hdrhistogram_jar();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("run");
    let width = 0.005;
    let o = dbsweep(&[
        "run",
        "embedded",
        "--quick",
        "--experiments",
        "get",
        "--target",
        "sqlite=sqlite:",
        "--target",
        "duckdb=duckdb:",
        "--ops",
        "1000",
        "--runs",
        "2",
        "--clients",
        "2",
        "--batch",
        "1",
        "--hlog-interval",
        &width.to_string(),
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = report(&out);
    assert_eq!(r["schema"]["path"], "docs/report.schema.json");
    assert_eq!(r["schema"]["version"], r["format_version"]);
    let points = r["points"].as_array().unwrap();
    let measured = |point: &serde_json::Value| -> Vec<serde_json::Value> {
        point["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] == false).cloned().collect()
    };
    let hlogs: Vec<PathBuf> =
        points.iter().flat_map(|p| p["exports"]["hlog"].as_array().unwrap().iter().map(|f| out.join(f.as_str().unwrap()))).collect();
    let read = read_with_hdrhistogram(&jar, &hlogs);
    assert_eq!(read.len(), hlogs.len(), "the reader read every file");
    let mut several_intervals = false;
    for point in points {
        let what = format!("{} / {} / c={} b={}", point["experiment"], point["target"], point["clients"], point["batch"]);
        let files = &point["exports"];
        let hlog = files["hlog"].as_array().unwrap_or_else(|| panic!("{what}: no exports in {files}"));
        let runs = measured(point);
        assert_eq!(hlog.len(), runs.len(), "{what}: one interval log per measured run");
        for (run, path) in runs.iter().zip(hlog) {
            let path = path.as_str().unwrap();
            assert!(path.starts_with("exports/") && path.ends_with(".ns.hlog"), "{path}");
            let got = &read[&out.join(path)];
            let saved = &run["intervals"];
            assert_eq!(got.counts.len(), saved["histograms"].as_array().unwrap().len(), "{path}: every saved interval is read");
            let expected = run["seconds"].as_f64().unwrap() / width;
            assert!(
                !got.counts.is_empty() && (got.counts.len() as f64 - expected).abs() <= 1.0,
                "{path}: {} intervals for a run of {} s at {width} s",
                got.counts.len(),
                run["seconds"]
            );
            several_intervals |= got.counts.len() > 2;
            let service = run["service"].as_object().unwrap();
            assert_eq!(service.len(), 1, "{what}: one op kind");
            let latency = service.values().next().unwrap();
            let requests = run["requests"].as_u64().unwrap();
            assert_eq!(run["ok_ops"], run["ops"], "{what}: every request was ok");
            assert_eq!(latency["count"].as_u64().unwrap(), requests);
            assert_eq!(got.total, requests, "{path}: every ok request once");
            assert_eq!(got.counts.iter().sum::<u64>(), requests, "{path}: the intervals add up");
            let ns = |field: &str| latency[field].as_f64().unwrap() * 1000.0;
            assert!(close(got.max, ns("max_us")), "{path}: max {} ns, report.json {} ns", got.max, ns("max_us"));
            assert!(close(got.p99, ns("p99_us")), "{path}: p99 {} ns, report.json {} ns", got.p99, ns("p99_us"));
        }
        let hgrm = files["hgrm"].as_str().unwrap();
        assert!(hgrm.ends_with(".us.hgrm"), "{hgrm}");
        let (max_us, count) = hgrm_max_and_count(&std::fs::read_to_string(out.join(hgrm)).unwrap());
        let summary = &point["summary"]["latency"];
        assert_eq!(count, summary["count"].as_u64().unwrap(), "{hgrm}: every measured request");
        assert!(close(max_us, summary["max_us"].as_f64().unwrap()), "{hgrm}: max {max_us} µs, report.json {}", summary["max_us"]);
    }
    let targets: std::collections::BTreeSet<&str> = points.iter().map(|p| p["target"].as_str().unwrap()).collect();
    assert!(targets.contains("sqlite") && targets.contains("duckdb"), "{targets:?}");
    assert!(several_intervals, "some run spans several intervals of {width} s");

    // `dbsweep report` writes the same files again from report.json.
    let before: Vec<(PathBuf, Vec<u8>)> = files_under(&out.join("exports"));
    std::fs::remove_dir_all(out.join("exports")).unwrap();
    let o = dbsweep(&["report", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(files_under(&out.join("exports")), before);
}
