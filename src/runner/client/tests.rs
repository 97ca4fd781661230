//! Unit tests of `runner::client`.

use super::*;
use crate::adapter::{OpenContext, TargetUrl};
use crate::base::op::OpKind;
use crate::data::{DataSpec, Dataset};
use crate::workload::experiment::{Experiment, ExperimentOp};

/// One run of `get` on a mock whose every `fail_every`-th request fails.
async fn run_on_flaky_mock(fail_every: u64, batch: usize, ops: u64) -> RunMeasurement {
    run_on_mock(&format!("fail_every={fail_every}"), ExperimentOp::Get, batch, ops).await
}

/// One run of `op` on a mock with these URL options and 1,000 loaded rows.
async fn run_on_mock(options: &str, op: ExperimentOp, batch: usize, ops: u64) -> RunMeasurement {
    run_once(Arc::new(mock_job(options, op, batch, ops, 1).await)).await
}

/// The job of one run of `op` by `clients` clients on a mock with these URL options and
/// 1,000 loaded rows.
async fn mock_job(options: &str, op: ExperimentOp, batch: usize, ops: u64, clients: usize) -> RunJob {
    timed_mock_job(options, op, batch, ops, clients, None).await
}

/// As `mock_job`, with runs that last `duration_secs` when given (`--duration`).
async fn timed_mock_job(options: &str, op: ExperimentOp, batch: usize, ops: u64, clients: usize, duration_secs: Option<f64>) -> RunJob {
    mock_job_lasting(options, op, batch, ops, clients, (duration_secs, None)).await
}

/// As `mock_job`, with runs of at least `secs` (`--quick`).
async fn min_run_mock_job(options: &str, op: ExperimentOp, ops: u64, clients: usize, secs: f64) -> RunJob {
    mock_job_lasting(options, op, 1, ops, clients, (None, Some(secs))).await
}

/// A mock job whose runs last (`duration_secs`, at least `min_run_secs`).
async fn mock_job_lasting(
    options: &str,
    op: ExperimentOp,
    batch: usize,
    ops: u64,
    clients: usize,
    (duration_secs, min_run_secs): (Option<f64>, Option<f64>),
) -> RunJob {
    let url = TargetUrl::parse(&if options.is_empty() { "mock:".to_string() } else { format!("mock:?{options}") }).unwrap();
    let target = crate::adapter::registry::open("flaky", &url, &OpenContext::new(std::env::temp_dir())).unwrap();
    let dataset = Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 8 }, 1);
    target.prepare(&dataset.tables).await.unwrap();
    target.load(&dataset.tables[0], dataset.initial(0)).await.unwrap();
    let point = Point { clients, batch, batched: batch > 1, param: None, rate: None };
    let experiment = Experiment { duration_secs, min_run_secs, ..Experiment::single("run", op, ops, point) };
    let stream = Arc::new(OpStream::new(&experiment, 0, &dataset, 1, 1));
    // As the runner does: a delete run's keys are loaded before it starts.
    if let Some(keys) = stream.rows_to_preload(0, 0) {
        target.load(&dataset.tables[0], dataset.new_rows(0, keys)).await.unwrap();
    }
    let seqs = 0..stream.seqs_per_run(&point);
    RunJob {
        target,
        stream,
        point,
        point_index: 0,
        run: 0,
        warmup: false,
        seqs,
        clients,
        timeout: Duration::from_secs(5),
        cancel: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
        rate: None,
        time_limit: duration_secs.map(Duration::from_secs_f64),
        check_rows: true,
        stop: None,
        intervals: Some(Duration::from_millis(100)),
        cold_call: false,
        budget: None,
        min_run: min_run_secs.map(|secs| MinRun { ops, lasting: Duration::from_secs_f64(secs) }),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_request_adds_failed_ops_and_nothing_else() {
    let m = run_on_flaky_mock(4, 1, 100).await;
    assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.short_ops), (100, 75, 25, 0));
    assert_eq!(m.errors["server"], 25);
    assert_eq!(m.rows, 75, "rows of ok requests only");
    assert_eq!(m.service[&OpKind::Get].count, 75, "only ok requests are timed");
    assert!(m.complete && m.is_void() && m.ops_per_sec().is_none(), "a run with a failure has no throughput");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cold_call_is_recorded_apart_from_the_warm_histogram() {
    // Each mock request takes at least 200 µs, so the cold call is a real time.
    let cold = |clients: usize, ops: u64| async move {
        let job = RunJob { cold_call: true, ..mock_job("latency_us=200", ExperimentOp::Get, 1, ops, clients).await };
        run_once(Arc::new(job)).await
    };
    let m = cold(1, 50).await;
    assert_eq!((m.ok_ops, m.service[&OpKind::Get].count), (50, 49), "the first request is not a warm one");
    assert!(m.cold_call_us.is_some_and(|us| us >= 200.0), "{:?}", m.cold_call_us);
    let m = cold(2, 50).await;
    assert_eq!((m.ok_ops, m.service[&OpKind::Get].count), (50, 48), "one cold call per client's connection");
    // A client whose only request was its cold call keeps it as its warm time too.
    let m = cold(1, 1).await;
    assert_eq!(m.service[&OpKind::Get].count, 1);
    assert!(m.cold_call_us.is_some());
    // Runs that do not ask for it time every request as warm and keep no cold call.
    let m = run_on_mock("latency_us=200", ExperimentOp::Get, 1, 50).await;
    assert_eq!((m.service[&OpKind::Get].count, m.cold_call_us), (50, None));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_batch_fails_all_of_its_ops() {
    // 10 requests of 10 gets; requests 3, 6 and 9 fail.
    let m = run_on_flaky_mock(3, 10, 100).await;
    assert_eq!((m.requests, m.ok_ops, m.failed_ops), (10, 70, 30));
    assert_eq!(m.errors["server"], 3);
    assert_eq!((m.rows, m.service[&OpKind::Get].count), (70, 7));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blind_deletes_are_read_back_and_a_key_still_there_is_a_missing_row() {
    // Every delete replies "1 row"; the read-back after the run confirms them all.
    let m = run_on_mock("blind_deletes=1", ExperimentOp::Delete, 1, 100).await;
    assert_eq!((m.ok_ops, m.short_ops, m.missing_rows, m.rows), (100, 0, 0, 100));
    assert!(!m.is_void());
    // Without blind deletes the same run needs no read-back and counts the same.
    let m = run_on_mock("", ExperimentOp::Delete, 1, 100).await;
    assert_eq!((m.ok_ops, m.short_ops, m.rows), (100, 0, 100));
    // Every 10th delete is silently skipped: 10 keys are still there, the run is void.
    let m = run_on_mock("lose_deletes_every=10", ExperimentOp::Delete, 1, 100).await;
    assert_eq!((m.ok_ops, m.short_ops, m.missing_rows, m.rows), (90, 10, 10, 90));
    assert!(m.is_void() && m.ops_per_sec().is_none());
    // The same in batches of 10 (one request each).
    let m = run_on_mock("lose_deletes_every=25", ExperimentOp::Delete, 10, 100).await;
    assert_eq!((m.requests, m.short_ops, m.missing_rows), (10, 4, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_on_threads_of_their_own_count_every_op() {
    let job = mock_job("execution=async_threads", ExperimentOp::Get, 1, 2000, 2).await;
    let progress = job.progress.clone();
    let m = run_once(Arc::new(job)).await;
    assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.rows, m.requests), (2000, 2000, 0, 2000, 2000));
    assert_eq!(m.service[&OpKind::Get].count, 2000);
    assert_eq!(progress.load(Ordering::Relaxed), 2000);
    assert!(m.complete && m.ops_per_sec().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_on_threads_of_their_own_time_out_slow_requests() {
    // Every request takes 300 ms; the timeout is 50 ms.
    let mut job = mock_job("execution=async_threads&latency_us=300000", ExperimentOp::Get, 1, 4, 2).await;
    job.timeout = Duration::from_millis(50);
    let m = run_once(Arc::new(job)).await;
    assert_eq!((m.ops, m.ok_ops, m.failed_ops), (4, 0, 4));
    assert_eq!(m.errors["timeout"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_shorter_than_the_timeout_never_time_out_however_long_the_run() {
    // Every request takes 20 ms, the timeout is 50 ms: each client's 12 requests run
    // for 240 ms, past the timeout several times over, on one timer per client.
    for execution in ["async_threads", "async"] {
        let mut job = mock_job(&format!("execution={execution}&latency_us=20000"), ExperimentOp::Get, 1, 24, 2).await;
        job.timeout = Duration::from_millis(50);
        let m = run_once(Arc::new(job)).await;
        assert_eq!((m.ops, m.ok_ops, m.failed_ops), (24, 24, 0), "{execution}: {:?}", m.errors);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_on_threads_of_their_own_stop_when_the_run_is_cancelled() {
    let job = Arc::new(mock_job("execution=async_threads&latency_us=1000", ExperimentOp::Get, 1, 1_000_000, 2).await);
    let cancel = job.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        cancel.store(true, Ordering::Relaxed);
    });
    let m = tokio::time::timeout(Duration::from_secs(30), run_once(job)).await.expect("the run ends once cancelled");
    assert!(!m.complete && m.ops > 0 && m.ops < 1_000_000, "{} ops", m.ops);
    assert_eq!(m.failed_ops, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_based_run_lasts_its_duration_and_counts_every_op_sent() {
    // Every request takes 2 ms; 2 clients for 300 ms, far past the 10 ops of a fixed run.
    let job = timed_mock_job("latency_us=2000", ExperimentOp::Get, 1, 10, 2, Some(0.3)).await;
    let progress = job.progress.clone();
    let m = run_once(Arc::new(job)).await;
    assert!((0.3..0.3 + 0.1).contains(&m.seconds), "{} s", m.seconds);
    assert!(m.ops > 10 && m.ops <= 2 * 150, "{} ops", m.ops);
    assert_eq!((m.ok_ops, m.failed_ops, m.requests, m.service[&OpKind::Get].count), (m.ops, 0, m.ops, m.ops));
    assert_eq!(progress.load(Ordering::Relaxed), m.ops);
    assert!(m.complete && m.ops_per_sec().is_some_and(|v| (v - m.ops as f64 / m.seconds).abs() < 1e-6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_based_run_at_a_fixed_rate_sends_the_ops_due_before_its_deadline() {
    // 100 ops/s for 0.5 s: ops 0..50 are due at 0, 10, ..., 490 ms; op 50 at the deadline.
    let mut job = timed_mock_job("", ExperimentOp::Get, 1, 10, 2, Some(0.5)).await;
    job.rate = Some(100.0);
    let m = run_once(Arc::new(job)).await;
    assert_eq!((m.ops, m.ok_ops), (50, 50));
    assert!(m.complete && (0.49..0.6).contains(&m.seconds), "{} s", m.seconds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fixed_rate_run_that_keeps_up_achieves_its_rate_not_one_slot_more() {
    // 10 requests at 50 ops/s: due at 0, 20, ..., 180 ms; the schedule is 200 ms long.
    let mut job = mock_job("", ExperimentOp::Get, 1, 10, 1).await;
    job.rate = Some(50.0);
    let m = run_once(Arc::new(job)).await;
    assert_eq!((m.ops, m.ok_ops), (10, 10));
    let achieved = m.ops_per_sec().unwrap();
    assert!((45.0..=50.0).contains(&achieved), "{achieved} ops/s over {} s (the last start alone gives 55.6)", m.seconds);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_time_based_insert_run_inserts_a_prefix_of_its_keys() {
    runs_past_its_10_ops_inserting_a_prefix(timed_mock_job("latency_us=1000", ExperimentOp::Insert, 1, 10, 3, Some(0.2)).await).await;
}

/// Runs an open-ended insert job of 10 ops: it completes past them, and every key of its
/// first `ops` sequence numbers was claimed and sent once.
async fn runs_past_its_10_ops_inserting_a_prefix(job: RunJob) {
    let (stream, point) = (job.stream.clone(), job.point);
    let m = run_once(Arc::new(job)).await;
    assert!(m.complete && m.ops > 10 && m.ok_ops == m.ops, "{} ops", m.ops);
    let keys = stream.inserted_keys(&point, 0, 0, m.ops);
    assert_eq!(keys.iter().collect::<std::collections::HashSet<_>>().len() as u64, m.ops);
    assert_eq!(m.rows, m.ops, "each insert stored its row (none was a duplicate)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_shortest_length_goes_on_past_its_ops_until_it_has_lasted_it() {
    // 10 ops take no time on the mock: the run goes on for 50 ms.
    let job = min_run_mock_job("", ExperimentOp::Get, 10, 2, 0.05).await;
    let progress = job.progress.clone();
    let m = run_once(Arc::new(job)).await;
    assert!(m.complete && m.ops > 10 && m.ok_ops == m.ops && m.failed_ops == 0, "{} ops", m.ops);
    assert!((0.05..0.05 + 0.1).contains(&m.seconds), "{} s", m.seconds);
    assert_eq!((m.requests, m.service[&OpKind::Get].count, progress.load(Ordering::Relaxed)), (m.ops, m.ops, m.ops));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_longer_than_its_shortest_length_does_its_ops_and_stops() {
    // 20 requests of 2 ms by 2 clients take 20 ms, past the 5 ms asked for: each client
    // stops at its first claim after the 20th op.
    let job = min_run_mock_job("latency_us=2000", ExperimentOp::Get, 20, 2, 0.005).await;
    let m = run_once(Arc::new(job)).await;
    assert!(m.complete && (20..=21).contains(&m.ops), "{} ops", m.ops);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_a_shortest_length_inserts_a_prefix_of_its_keys() {
    runs_past_its_10_ops_inserting_a_prefix(min_run_mock_job("latency_us=200", ExperimentOp::Insert, 10, 3, 0.05).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_run_is_all_ok_ops() {
    let m = run_on_flaky_mock(1_000_000, 1, 50).await;
    assert_eq!((m.ops, m.ok_ops, m.failed_ops, m.rows), (50, 50, 0, 50));
    assert!(!m.is_void() && m.ops_per_sec().is_some_and(|v| v > 0.0));
    let intervals = m.intervals.as_ref().expect("a measured run keeps its intervals").decoded().unwrap();
    assert_eq!(intervals.iter().map(|h| h.len()).sum::<u64>(), 50, "every ok request is in one interval");
    assert_eq!(m.intervals.as_ref().unwrap().interval_seconds, 0.1);
}
