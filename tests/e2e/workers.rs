//! End-to-end tests of `run --workers N`: worker processes that share every run's clients
//! and ops, meeting at the coordinator's barrier, against a real Redis started by
//! dbsweep's own spawn code. The merged run must be the one-process run: the same ops,
//! requests, rows and histogram counts per run, and the same commands reaching the server.
//! A worker killed mid-run leaves the point incomplete and void, the rest of the report
//! intact, and the run ends with exit 1 instead of hanging. Peers without the run's worker
//! token (real TCP peers: idle, old-style hellos, made-up proofs and results, oversized
//! lines) are closed, told nothing about the plan, and neither join nor stall the run; the
//! coordinator listens only where asked, IPv6 included.

use crate::support;

use dbsweep::servers::ServerKind;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use support::{dbsweep, report};

fn redis_command_calls(url: &str) -> BTreeMap<String, u64> {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let info: String = redis::cmd("INFO").arg("commandstats").query(&mut conn).unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split("calls=").nth(1)?.split(',').next()?.parse().ok()?;
            Some((name.to_string(), calls))
        })
        .collect()
}

fn reset_stats(url: &str) {
    let client = redis::Client::open(url).unwrap();
    let mut conn = client.get_connection().unwrap();
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(&mut conn).unwrap();
}

/// What must be equal between a one-process run and a run with workers, per point and run:
/// counts, and per op kind the histogram's count (rows only where no op reads records that
/// another op of the same run inserts, which depends on timing).
fn run_counts(report: &Value) -> BTreeMap<String, Vec<Value>> {
    report["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let key = format!("{} / {} / c={}", p["experiment"].as_str().unwrap(), p["target"].as_str().unwrap(), p["clients"]);
            let timing_dependent_rows = ["workload-d", "workload-e"].contains(&p["experiment"].as_str().unwrap());
            let runs = p["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let hist: BTreeMap<String, u64> =
                        r["service"].as_object().unwrap().iter().map(|(k, s)| (k.clone(), s["count"].as_u64().unwrap())).collect();
                    serde_json::json!({
                        "ops": r["ops"], "ok_ops": r["ok_ops"], "failed_ops": r["failed_ops"], "requests": r["requests"],
                        "rows": if timing_dependent_rows { Value::Null } else { r["rows"].clone() },
                        "answer_digest": r["answer_digest"], "histogram_counts": hist, "complete": r["complete"],
                    })
                })
                .collect();
            (key, runs)
        })
        .collect()
}

#[test]
fn ycsb_with_3_workers_sends_exactly_the_one_process_runs_ops_and_adds_their_histograms() {
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let args = |out: &Path| -> Vec<String> {
        [
            "run",
            "ycsb",
            "--target",
            &format!("redis={url}"),
            "--target",
            "nodb=nodb:",
            "-p",
            "recordcount=2000",
            "--experiments",
            "load,workload-a,workload-b,workload-f",
            "--clients",
            "3,7",
            "--ops",
            "1200",
            "--runs",
            "2",
            "--warmup",
            "1",
            "--no-progress",
            "--out",
            out.to_str().unwrap(),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let one = tmp.path().join("one");
    reset_stats(&url);
    let o = dbsweep(&args(&one).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one_calls = redis_command_calls(&url);

    let three = tmp.path().join("three");
    reset_stats(&url);
    let mut with_workers = args(&three);
    with_workers.extend(["--workers".to_string(), "3".to_string()]);
    let o = dbsweep(&with_workers.iter().map(String::as_str).collect::<Vec<_>>());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let three_calls = redis_command_calls(&url);

    let (one, three) = (report(&one), report(&three));
    assert_eq!(one["plan_hash"], three["plan_hash"]);
    assert_eq!(three["complete"], true);
    let (a, b) = (run_counts(&one), run_counts(&three));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "every point, once");
    assert_eq!(a.len(), 2 + 4 * 2 * 2, "the echo floor (1 client) and 4 experiments x 2 client counts, on 2 targets");
    for (point, runs) in &a {
        assert_eq!(runs, &b[point], "{point}");
        if !point.starts_with("echo-floor") {
            assert_eq!(runs.len(), 3, "{point}: 1 warm-up and 2 measured runs");
            assert!(runs.iter().all(|r| r["ops"] == 1200), "{point}");
        }
    }
    // The data commands that reached Redis: the same (reads, update scripts, the load
    // experiment's inserts and their removal). Each worker's connections load the
    // scripts and it reads the marker once, so SCRIPT, GET, INFO and CONFIG differ.
    for command in ["hgetall", "evalsha", "zrangebyscore", "hset", "zadd", "del", "zrem", "unlink"] {
        assert_eq!(one_calls.get(command), three_calls.get(command), "{command}: {one_calls:?} vs {three_calls:?}");
    }
    assert!(one_calls.get("hgetall").copied().unwrap_or(0) > 0, "{one_calls:?}");
    // Every worker is recorded, with its share of the ops: at 3 and 7 clients each of the
    // three workers ran clients (1+1+1, 3+2+2).
    let workers = three["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3);
    let total: u64 = workers.iter().map(|w| w["ops"].as_u64().unwrap()).sum();
    let all_ops: u64 = a.values().flatten().map(|r| r["ops"].as_u64().unwrap()).sum();
    assert_eq!(total, all_ops);
    for (i, w) in workers.iter().enumerate() {
        assert_eq!(w["index"], i);
        assert!(w["ops"].as_u64().unwrap() > 0, "{w}");
    }
    assert_eq!(workers[0]["clock_offset_ms"], 0.0);
    assert!(one.get("workers").is_none(), "a one-process run lists no workers");
    // The workers' interval histograms add up, interval by interval, to the run's: every
    // ok request of every op kind is in exactly one interval, and each measured run has
    // its interval log.
    for point in three["points"].as_array().unwrap() {
        let measured: Vec<&Value> = point["runs"].as_array().unwrap().iter().filter(|r| r["warmup"] == false).collect();
        for run in &measured {
            let requests: u64 = run["service"].as_object().unwrap().values().map(|l| l["count"].as_u64().unwrap()).sum();
            let intervals = run["intervals"]["histograms"].as_array().unwrap();
            let counted: u64 =
                intervals.iter().map(|h| dbsweep::stats::intervals::decode_saved(h.as_str().unwrap()).expect("decodes").len()).sum();
            assert_eq!(counted, requests, "{} / {}: {run}", point["experiment"], point["target"]);
        }
        assert_eq!(point["exports"]["hlog"].as_array().unwrap().len(), measured.len(), "{point}");
    }
}

fn children_named(parent: u32, name: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            // stat: pid (comm) state ppid ...
            let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
            ppid == Some(parent) && comm.trim() == name
        })
        .collect()
}

/// Sends `signal` to `pid` (the coordinator `child` or one of its workers), waits up to a
/// minute for the coordinator to end (killing it and panicking with `hang` otherwise), and
/// returns its exit status and stderr.
fn signal_and_wait(child: &mut Child, pid: u32, signal: i32, hang: &str) -> (ExitStatus, String) {
    // SAFETY: sends a signal to a process this test or its child started, and to nothing else.
    unsafe {
        libc::kill(pid as i32, signal);
    }
    let sent = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{hang}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
    (status, stderr)
}

#[test]
fn a_worker_killed_mid_run_voids_its_point_keeps_the_rest_and_ends_the_run_with_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // Fixed-rate runs of about 8 s each, so the kill lands in the middle of one.
    let mut child = support::command()
        .args(["run", "ycsb", "--spawn", "redis", "--target", "nodb=nodb:", "-p", "recordcount=1000"])
        .args(["--experiments", "workload-c", "--clients", "3,6", "--ops", "1600", "--rate", "200", "--runs", "1", "--warmup", "0"])
        .args(["--workers", "3", "--no-progress", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    // Wait until the first point of workload-c (c=3, on both targets) is saved, then kill
    // worker 2 during the next one.
    let saved_points = || {
        std::fs::read_to_string(out.join("report.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .map_or(0, |r| r["points"].as_array().map_or(0, |p| p.iter().filter(|p| p["experiment"] == "workload-c").count()))
    };
    while saved_points() == 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "the first point never finished");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let workers = children_named(child.id(), "dbsweep");
    assert_eq!(workers.len(), 2, "workers 1 and 2 run as children of the coordinator");
    std::thread::sleep(Duration::from_secs(2));
    let victim = *workers.iter().max().unwrap();
    let (status, stderr) = signal_and_wait(&mut child, victim, libc::SIGKILL, "the coordinator hung after a worker was killed");
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("worker") && stderr.contains("was lost"), "{stderr}");
    for pid in &workers {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "worker {pid} is gone");
    }
    let r = report(&out);
    assert_eq!(r["complete"], false);
    assert!(r["incomplete_reason"].as_str().unwrap().contains("was lost"), "{}", r["incomplete_reason"]);
    let points: Vec<&Value> = r["points"].as_array().unwrap().iter().filter(|p| p["experiment"] == "workload-c").collect();
    assert_eq!(points.len(), 3, "c=3 on both targets, then c=6 on nodb, cut short: {points:?}");
    for first in &points[..2] {
        assert_eq!(first["clients"], 3);
        assert_eq!(first["status"]["state"], "measured", "{first}");
        assert_eq!(first["runs"][0]["ops"], 1600);
        assert_eq!(first["runs"][0]["ok_ops"], 1600);
    }
    let last = points[2];
    assert_eq!((last["target"].as_str(), last["clients"].as_u64()), (Some("nodb"), Some(6)));
    assert_eq!(last["status"]["state"], "incomplete", "{last}");
    assert!(last["flags"].as_array().unwrap().iter().any(|f| f["flag"] == "incomplete"), "{last}");
    let run = &last["runs"][0];
    assert_eq!(run["errors"]["worker"], 1, "{run}");
    assert_eq!(run["complete"], false);
    assert!(run["ops"].as_u64().unwrap() < 1600, "only the coordinator's share, cut short: {run}");
}

/// A network namespace with a veth pair to the host: the host side is `10.N.I.1`, the
/// namespace's `10.N.I.2`, its default route via the host. Removed when dropped.
struct Namespace {
    name: String,
    host_address: String,
}

fn ip(args: &[&str]) {
    let o = Command::new("ip").args(args).output().expect("run ip");
    assert!(o.status.success(), "ip {}: {} (the test needs root and iproute2)", args.join(" "), String::from_utf8_lossy(&o.stderr));
}

impl Namespace {
    fn new(net: u32, index: u32) -> Namespace {
        let pid = std::process::id();
        let name = format!("dbsweep-w{pid}-{index}");
        let (host, inside) = (format!("dsw{pid}h{index}"), format!("dsw{pid}n{index}"));
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        ip(&["netns", "add", &name]);
        let ns = Namespace { name: name.clone(), host_address: format!("10.{net}.{index}.1") };
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &inside]);
        ip(&["link", "set", &inside, "netns", &name]);
        ip(&["addr", "add", &format!("{}/24", ns.host_address), "dev", &host]);
        ip(&["link", "set", &host, "up"]);
        ip(&["-n", &name, "addr", "add", &format!("10.{net}.{index}.2/24"), "dev", &inside]);
        ip(&["-n", &name, "link", "set", &inside, "up"]);
        ip(&["-n", &name, "link", "set", "lo", "up"]);
        ip(&["-n", &name, "route", "add", "default", "via", &ns.host_address]);
        ns
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Deleting the namespace deletes its end of the veth pair, and so the pair.
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
    }
}

#[test]
fn workers_in_their_own_network_namespaces_send_the_one_process_runs_ops() {
    let url = support::url(ServerKind::Redis);
    let redis_port: u16 = url.rsplit(':').next().unwrap().split('/').next().unwrap().parse().unwrap();
    let net = 200 + std::process::id() % 50;
    let (ns1, ns2) = (Namespace::new(net, 1), Namespace::new(net, 2));
    // The spawned Redis listens on the host's loopback; the workers reach it through the
    // host's address on the first veth pair (socat forwards), and so does the coordinator:
    // every worker must be given the same target URL.
    let free_port = || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (forward_port, coordinator_port) = (free_port(), free_port());
    let mut forward = Command::new("socat")
        .args([format!("TCP-LISTEN:{forward_port},bind={},fork,reuseaddr", ns1.host_address), format!("TCP:127.0.0.1:{redis_port}")])
        .spawn()
        .expect("socat");
    let target = format!("redis=redis://{}:{forward_port}/0", ns1.host_address);
    let tmp = tempfile::tempdir().unwrap();
    let args = |out: &Path| -> Vec<String> {
        ["run", "ycsb", "--target", &target, "-p", "recordcount=1000", "--experiments", "load,workload-a,workload-c"]
            .into_iter()
            .chain(["--clients", "3", "--ops", "900", "--runs", "1", "--warmup", "1", "--namespace", "netns", "--no-progress"])
            .map(str::to_string)
            .chain(["--out".to_string(), out.display().to_string()])
            .collect()
    };
    std::thread::sleep(Duration::from_millis(300));
    let one = tmp.path().join("one");
    let o = support::command().args(args(&one)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let three = tmp.path().join("three");
    let coordinator = format!("{}:{coordinator_port}", ns1.host_address);
    let workers: Vec<_> = [(1, &ns1), (2, &ns2)]
        .into_iter()
        .map(|(index, ns)| {
            Command::new("ip")
                .args(["netns", "exec", &ns.name, support::BIN])
                .args(args(&tmp.path().join(format!("worker{index}"))))
                .args(["--workers", "3", "--worker", &index.to_string(), "--coordinator", &coordinator])
                .env("DBSWEEP_WORKER_TOKEN", TOKEN)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let o = support::command()
        .args(args(&three))
        .args(["--workers", "3", "--worker", "0", "--coordinator", &coordinator])
        .env("DBSWEEP_WORKER_TOKEN", TOKEN)
        .output()
        .unwrap();
    let worker_results: Vec<_> = workers.into_iter().map(|w| w.wait_with_output().unwrap()).collect();
    let _ = forward.kill();
    let _ = forward.wait();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for (i, w) in worker_results.iter().enumerate() {
        assert!(w.status.success(), "worker {}: {}", i + 1, String::from_utf8_lossy(&w.stderr));
        assert!(!tmp.path().join(format!("worker{}", i + 1)).exists(), "a worker writes no run directory");
    }
    let (one, three) = (report(&one), report(&three));
    let (a, b) = (run_counts(&one), run_counts(&three));
    assert_eq!(a, b, "the same ops, requests, rows and histogram counts per run");
    let records = three["workers"].as_array().unwrap();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|w| w["ops"].as_u64().unwrap() > 0), "{records:?}");
    // One machine, one clock: the measured offsets are within the bound.
    assert!(records.iter().all(|w| w["clock_offset_ms"].as_f64().unwrap().abs() < 10.0), "{records:?}");
}

#[test]
fn sigterm_to_the_coordinator_alone_stops_the_workers_mid_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    // One fixed-rate run of about 330 s: it cannot end before the stop.
    let mut child = support::command()
        .args(["run", "ycsb", "--target", "nodb=nodb:", "-p", "recordcount=1000", "--experiments", "workload-c"])
        .args(["--clients", "3", "--ops", "100000", "--rate", "300", "--runs", "1", "--warmup", "0"])
        .args(["--workers", "3", "--no-progress", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let mut workers = Vec::new();
    while workers.len() < 2 || !out.join("report.json").exists() {
        assert!(started.elapsed() < Duration::from_secs(120), "the run never started");
        assert!(child.try_wait().unwrap().is_none(), "the run ended early");
        std::thread::sleep(Duration::from_millis(50));
        workers = children_named(child.id(), "dbsweep");
    }
    std::thread::sleep(Duration::from_secs(3));
    let coordinator = child.id();
    let (status, stderr) =
        signal_and_wait(&mut child, coordinator, libc::SIGTERM, "the coordinator waited for its workers to finish the run after SIGTERM");
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(!stderr.contains("was killed"), "the workers stopped on their own: {stderr}");
    for pid in &workers {
        assert!(!Path::new(&format!("/proc/{pid}")).exists(), "worker {pid} is gone");
    }
    let r = report(&out);
    assert_eq!(r["complete"], false);
    let points: Vec<&Value> = r["points"].as_array().unwrap().iter().filter(|p| p["experiment"] == "workload-c").collect();
    assert_eq!(points.len(), 1, "{points:?}");
    let point = points[0];
    assert_eq!(point["status"]["state"], "incomplete", "{point}");
    assert!(point["runs"][0]["ops"].as_u64().unwrap() < 100_000, "{point}");
}

/// Under Slurm's `srun -n 3` (a one-node cluster of Debian's slurm-wlm started for the
/// test), the three tasks are the three workers: each takes its index from SLURM_PROCID,
/// worker 0 coordinates, and together they send exactly the one-process run's ops.
#[test]
fn under_slurms_srun_three_tasks_are_three_workers_that_send_the_one_process_runs_ops() {
    let slurm = support::slurm::Slurm::start();
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let args = |out: &Path| -> Vec<String> {
        let target = format!("redis={url}");
        let out = out.to_str().unwrap();
        ["run", "ycsb", "--target", &target, "-p", "recordcount=1000", "--experiments", "workload-a,workload-b"]
            .into_iter()
            .chain(["--clients", "3,5", "--ops", "900", "--runs", "2", "--warmup", "1", "--no-progress", "--out", out])
            .map(str::to_string)
            .collect()
    };
    let one = tmp.path().join("one");
    let o = dbsweep(&args(&one).iter().map(String::as_str).collect::<Vec<_>>());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let three = tmp.path().join("three");
    let coordinator = format!("127.0.0.1:{}", std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port());
    let o = slurm
        .command("srun")
        .args(["-n", "3", "--overcommit", "--kill-on-bad-exit=1", "--time=5"])
        .arg(format!("--export=ALL,DBSWEEP_COORDINATOR={coordinator},DBSWEEP_WORKER_TOKEN={TOKEN}"))
        .arg(support::BIN)
        .args(args(&three))
        .args(["--workers", "3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "srun: {}\n{}", String::from_utf8_lossy(&o.stderr), slurm.logs());

    let (one, three) = (report(&one), report(&three));
    assert_eq!(one["plan_hash"], three["plan_hash"]);
    assert_eq!(three["complete"], true);
    let (a, b) = (run_counts(&one), run_counts(&three));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "every point, once");
    for (point, runs) in &a {
        assert_eq!(runs, &b[point], "{point}");
    }
    // Three workers, one per Slurm task (distinct processes), each with a share of the ops.
    let workers = three["workers"].as_array().unwrap();
    let indices: Vec<u64> = workers.iter().map(|w| w["index"].as_u64().unwrap()).collect();
    assert_eq!(indices, [0, 1, 2]);
    let mut pids: Vec<u64> = workers.iter().map(|w| w["pid"].as_u64().unwrap()).collect();
    pids.dedup();
    assert_eq!(pids.len(), 3, "{workers:?}");
    assert!(workers.iter().all(|w| w["ops"].as_u64().unwrap() > 0), "{workers:?}");
    let total: u64 = workers.iter().map(|w| w["ops"].as_u64().unwrap()).sum();
    assert_eq!(total, a.values().flatten().map(|r| r["ops"].as_u64().unwrap()).sum::<u64>());
}

/// The token the tests' coordinators and workers share.
const TOKEN: &str = "a-worker-token-for-the-tests-0123456789";

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A small fixed-ops run on NO-DB, as every process of a run with workers is given it.
fn nodb_run(out: &Path) -> Vec<String> {
    ["run", "ycsb", "--target", "nodb=nodb:", "-p", "recordcount=1000", "--experiments", "workload-c"]
        .into_iter()
        .chain(["--clients", "3", "--ops", "900", "--runs", "1", "--warmup", "0", "--no-progress"])
        .map(str::to_string)
        .chain(["--out".to_string(), out.display().to_string()])
        .collect()
}

/// Worker `index` of 3 (0: the coordinator) of `nodb_run`, meeting at `coordinator`, with
/// the tests' token.
fn worker_process(out: &Path, index: usize, coordinator: &str) -> Child {
    support::command()
        .args(nodb_run(out))
        .args(["--workers", "3", "--worker", &index.to_string(), "--coordinator", coordinator])
        .env("DBSWEEP_WORKER_TOKEN", TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits up to two minutes for `child` to exit (killing it and panicking otherwise);
/// returns its status and stderr.
fn exit_of(mut child: Child, what: &str) -> (ExitStatus, String) {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{what} did not end within two minutes");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    (o.status, String::from_utf8_lossy(&o.stderr).into_owned())
}

/// Waits until something listens at `address`.
fn wait_for_listener(address: &str, child: &mut Child) {
    let started = Instant::now();
    while std::net::TcpStream::connect(address).is_err() {
        assert!(child.try_wait().unwrap().is_none(), "the coordinator ended before listening");
        assert!(started.elapsed() < Duration::from_secs(60), "nothing listens at {address}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// What peers without the token do to a coordinator: each returns every byte the
/// coordinator sent it before it closed the connection.
mod attacker {
    use std::time::Duration;
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
    use tokio::net::TcpStream;

    async fn rest(mut stream: TcpStream, mut heard: Vec<u8>) -> Vec<u8> {
        let read = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut heard)).await;
        assert!(read.is_ok(), "the coordinator held a peer without the token open for a minute");
        heard
    }

    /// Says hello as the old protocol did, with a guessed plan hash.
    pub async fn hello(address: String) -> Vec<u8> {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        let hello = r#"{"type":"hello","worker":2,"workers":3,"plan_hash":"0000","version":"0.1.0","host":"evil-host","pid":1}"#;
        let _ = stream.write_all(format!("{hello}\n").as_bytes()).await;
        rest(stream, Vec::new()).await
    }

    /// Opens the handshake and answers the coordinator's challenge with a made-up proof.
    pub async fn wrong_proof(address: String) -> Vec<u8> {
        let stream = TcpStream::connect(&address).await.unwrap();
        let mut stream = BufReader::new(stream);
        stream.write_all(b"{\"type\":\"challenge\",\"nonce\":\"0123456789abcdef0123456789abcdef\"}\n").await.unwrap();
        let mut challenge = String::new();
        let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_line(&mut challenge)).await;
        let _ = stream.write_all(format!("{{\"type\":\"proof\",\"tag\":\"{}\"}}\n", "ab".repeat(32)).as_bytes()).await;
        let mut heard = challenge.into_bytes();
        let _ = tokio::time::timeout(Duration::from_secs(60), stream.read_to_end(&mut heard)).await;
        heard
    }

    /// Skips the proof and sends results in the session's framing with a made-up tag.
    pub async fn forged_result(address: String) -> Vec<u8> {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        let done = r#"{"type":"done","id":{"round":0,"experiment":0,"point":0,"target":"nodb","run":0},"clients":1,"measurement":{},"window":null}"#;
        let lines = format!("{{\"type\":\"challenge\",\"nonce\":\"0123456789abcdef0123456789abcdef\"}}\n{} {done}\n", "cd".repeat(32));
        let _ = stream.write_all(lines.as_bytes()).await;
        rest(stream, Vec::new()).await
    }

    /// Sends one line of 64 MB with no end (written while the coordinator reads it).
    pub async fn oversized(address: String) -> Vec<u8> {
        let mut stream = TcpStream::connect(&address).await.unwrap();
        let chunk = vec![b'x'; 1 << 20];
        for _ in 0..64 {
            if stream.write_all(&chunk).await.is_err() {
                break;
            }
        }
        rest(stream, Vec::new()).await
    }
}

#[test]
fn peers_without_the_token_cannot_join_learn_the_plan_or_stall_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let address = format!("127.0.0.1:{}", free_port());
    let mut coordinator = worker_process(&out, 0, &address);
    wait_for_listener(&address, &mut coordinator);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    // Idle connections ahead of the real workers (each held the old coordinator for 10 s,
    // past its 120 s join timeout), and peers that try their luck.
    let idle: Vec<tokio::net::TcpStream> = runtime
        .block_on(async { futures_util::future::join_all((0..15).map(|_| tokio::net::TcpStream::connect(&address))).await })
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let attacks = [
        runtime.spawn(attacker::hello(address.clone())),
        runtime.spawn(attacker::wrong_proof(address.clone())),
        runtime.spawn(attacker::forged_result(address.clone())),
        runtime.spawn(attacker::oversized(address.clone())),
    ];
    let workers = [1, 2].map(|index| worker_process(&tmp.path().join(format!("worker{index}")), index, &address));
    let (status, stderr) = exit_of(coordinator, "the coordinator");
    for (index, worker) in workers.into_iter().enumerate() {
        let (status, stderr) = exit_of(worker, "a worker");
        assert!(status.success(), "worker {}: {stderr}", index + 1);
    }
    assert!(status.success(), "{stderr}");
    let heard: Vec<Vec<u8>> = attacks.into_iter().map(|a| runtime.block_on(a).unwrap()).collect();
    drop(idle);
    let r = report(&out);
    assert_eq!(r["complete"], true);
    let hash = r["plan_hash"].as_str().unwrap();
    for bytes in &heard {
        let text = String::from_utf8_lossy(bytes);
        assert!(!text.contains(hash) && !text.contains("plan") && !text.contains("nodb"), "a peer without the token heard: {text}");
    }
    let workers = r["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 3, "{workers:?}");
    assert!(workers.iter().all(|w| w["host"] != "evil-host"), "{workers:?}");
    assert!(workers[1..].iter().all(|w| w["ops"] == 300), "each real worker sent its 300 ops: {workers:?}");
    let point = r["points"].as_array().unwrap().iter().find(|p| p["experiment"] == "workload-c").unwrap();
    assert_eq!((point["runs"][0]["ops"].as_u64(), point["runs"][0]["ok_ops"].as_u64()), (Some(900), Some(900)), "{point}");
    assert!(point["flags"].as_array().unwrap().is_empty(), "{point}");
    assert!(stderr.contains("was closed"), "the refused peers are logged: {stderr}");
}

/// Whether something accepts connections at `address` right now.
fn reachable(address: &str) -> bool {
    std::net::TcpStream::connect_timeout(&address.parse().unwrap(), Duration::from_secs(5)).is_ok()
}

#[test]
fn the_coordinator_listens_only_where_asked_ipv6_included() {
    let tmp = tempfile::tempdir().unwrap();
    let port = free_port();
    // Asked for 127.0.0.1: not reachable at another address of this machine (all of
    // 127.0.0.0/8 is local; the old coordinator listened on 0.0.0.0).
    let asked = format!("127.0.0.1:{port}");
    let out = tmp.path().join("v4");
    let mut coordinator = worker_process(&out, 0, &asked);
    wait_for_listener(&asked, &mut coordinator);
    assert!(!reachable(&format!("127.0.0.2:{port}")), "a coordinator asked for 127.0.0.1 listens on 127.0.0.2");
    let workers = [1, 2].map(|index| worker_process(&tmp.path().join(format!("w{index}")), index, &asked));
    let (status, stderr) = exit_of(coordinator, "the coordinator");
    assert!(status.success(), "{stderr}");
    workers.into_iter().for_each(|w| assert!(exit_of(w, "a worker").0.success()));
    assert_eq!(report(&out)["complete"], true);

    if std::net::TcpListener::bind("[::1]:0").is_err() {
        println!("skipped the IPv6 half: this machine has no ::1 to listen on");
        return;
    }
    let port = free_port();
    let asked = format!("[::1]:{port}");
    let out = tmp.path().join("v6");
    let mut coordinator = worker_process(&out, 0, &asked);
    wait_for_listener(&asked, &mut coordinator);
    assert!(!reachable(&format!("127.0.0.1:{port}")), "a coordinator asked for [::1] listens on IPv4");
    let workers = [1, 2].map(|index| worker_process(&tmp.path().join(format!("v6w{index}")), index, &asked));
    let (status, stderr) = exit_of(coordinator, "the coordinator");
    assert!(status.success(), "{stderr}");
    workers.into_iter().for_each(|w| assert!(exit_of(w, "a worker").0.success()));
    let r = report(&out);
    assert_eq!(r["complete"], true);
    assert_eq!(r["workers"].as_array().unwrap().len(), 3);
}

#[test]
fn workers_that_start_on_their_own_need_the_token_and_the_count_is_capped() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let run = nodb_run(&out);
    let run: Vec<&str> = run.iter().map(String::as_str).collect();
    let without_token = |extra: &[&str]| {
        support::command()
            .args(&run)
            .args(extra)
            .env_remove("DBSWEEP_WORKER_TOKEN")
            .env_remove("DBSWEEP_WORKER_TOKEN_FILE")
            .output()
            .unwrap()
    };
    for extra in [
        &["--workers", "3", "--worker", "1", "--coordinator", "127.0.0.1:9"][..],
        &["--workers", "3", "--worker", "0", "--coordinator", "127.0.0.1:9"],
        &["--workers", "3", "--listen", "0.0.0.0:9"],
    ] {
        let o = without_token(extra);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains("DBSWEEP_WORKER_TOKEN") && stderr.contains("DBSWEEP_WORKER_TOKEN_FILE"), "{stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    let o = without_token(&["--workers", "100000"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--workers 100000: this machine holds at most"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(!out.exists(), "nothing written");
}

#[test]
fn workload_d_with_3_workers_finds_every_row_it_reads() {
    let url = support::url(ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    // Each run in a namespace of its own: the other's inserts are not there to be found.
    let args = |out: &Path| -> Vec<String> {
        let target = format!("redis={url}");
        let namespace = out.file_name().unwrap().to_str().unwrap();
        ["run", "ycsb", "--target", &target, "-p", "recordcount=1000", "--experiments", "workload-d", "--namespace", namespace]
            .into_iter()
            .chain(["--clients", "3", "--ops", "1200", "--runs", "2", "--warmup", "1", "--no-progress"])
            .map(str::to_string)
            .chain(["--out".to_string(), out.display().to_string()])
            .collect()
    };
    let one = tmp.path().join("one");
    let o = support::command().args(args(&one)).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let three = tmp.path().join("three");
    let o = support::command().args(args(&three)).args(["--workers", "3"]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let point = |r: &Value| {
        r["points"].as_array().unwrap().iter().find(|p| p["experiment"] == "workload-d" && p["target"] == "redis").unwrap().clone()
    };
    let (one, three) = (point(&report(&one)), point(&report(&three)));
    assert!(three["flags"].as_array().unwrap().is_empty(), "{three}");
    for (a, b) in one["runs"].as_array().unwrap().iter().zip(three["runs"].as_array().unwrap()) {
        assert_eq!((a["ops"].as_u64(), b["ops"].as_u64()), (Some(1200), Some(1200)));
        // Every read finds its record and every insert writes one: one row per op, as one
        // process finds (but for reads of inserts still in flight on its other clients).
        assert_eq!((b["rows"].as_u64(), b["missing_rows"].as_u64()), (Some(1200), Some(0)), "{b}");
        assert!(b["rows"].as_u64() >= a["rows"].as_u64(), "{a}");
    }
}
