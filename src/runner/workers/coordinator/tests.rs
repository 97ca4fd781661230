//! Unit tests of `runner::workers::coordinator`.

use super::*;
use crate::adapter::{OpenContext, registry};
use crate::base::secret::Token;
use crate::data::{DataSpec, Dataset};
use crate::workload::experiment::{Experiment, ExperimentOp, OpStream, Point};
use std::sync::atomic::{AtomicBool, AtomicU64};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const TOKEN: &str = "the-runs-worker-token-0123";
const PLAN_HASH: &str = "abc";
const SILENCE: Duration = Duration::from_secs(10);

fn token(text: &str) -> Arc<Token> {
    Arc::new(Token::from_text(text, "a test").unwrap())
}

/// Worker `worker` of 2 joining with `plan_hash`: authenticates with `token`, says
/// hello, answers the clock check; returns its link and the coordinator's answer.
async fn join(address: SocketAddr, token_text: &str, worker: usize, plan_hash: &str) -> (Link, ToWorker) {
    let stream = TcpStream::connect(address).await.unwrap();
    let mut link = Link::open_as_worker(stream, token(token_text)).await.unwrap();
    let hello = ToCoordinator::Hello { worker, workers: 2, plan_hash: plan_hash.into(), version: "0".into(), host: "h".into(), pid: 1 };
    link.send(&hello).await.unwrap();
    loop {
        match link.receive::<ToWorker>(SILENCE).await.unwrap() {
            ToWorker::Ping => link.send(&ToCoordinator::Clock { unix_nanos: unix_nanos(SystemTime::now()) }).await.unwrap(),
            other => return (link, other),
        }
    }
}

fn gathering(timeout_secs: f64) -> Gathering {
    Gathering {
        count: 2,
        plan_hash: PLAN_HASH.into(),
        token: token(TOKEN),
        targets: vec![("r".to_string(), TargetUrl::parse("redis://:secret@127.0.0.1:1/0?password=secret&batch=multi").unwrap())],
        holder: Holder::this_process(),
        timeout_secs,
        cancel: Cancel::default(),
    }
}

/// A coordinator of 2 listening on loopback, and its address.
async fn listening() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    (listener, address)
}

async fn gather_one(worker_hash: &'static str) -> (Result<Coordinator>, ToWorker) {
    let (listener, address) = listening().await;
    let worker = tokio::spawn(async move { join(address, TOKEN, 1, worker_hash).await.1 });
    let gathered = Coordinator::gather(listener, gathering(5.0)).await;
    (gathered, worker.await.unwrap())
}

#[tokio::test]
async fn a_worker_of_the_same_plan_is_welcomed_with_the_targets_and_its_clock_measured() {
    let (gathered, answer) = gather_one(PLAN_HASH).await;
    let coordinator = gathered.unwrap();
    let ToWorker::Welcome { targets, .. } = answer else { panic!("{answer:?}") };
    assert_eq!(targets[0].1, "redis://127.0.0.1:1/0?batch=multi", "no password crosses the network");
    let records = coordinator.records();
    assert_eq!(records.iter().map(|r| r.index).collect::<Vec<_>>(), [0, 1]);
    assert!(records[1].clock_offset_ms.abs() < CLOCK_BOUND_MS, "one machine, one clock: {:?}", records[1]);
    assert!(coordinator.take_warnings().is_empty());
}

#[tokio::test]
async fn an_authenticated_worker_of_another_plan_is_refused_with_exit_2() {
    let (gathered, answer) = gather_one("xyz").await;
    let e = gathered.err().unwrap();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("same study, flags and seed"), "{e}");
    assert!(matches!(answer, ToWorker::Refused { .. }), "{answer:?}");
}

/// Reads what the coordinator sends a peer until it closes the connection.
async fn read_to_end(stream: &mut TcpStream) -> Vec<u8> {
    let mut heard = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(30), stream.read_to_end(&mut heard)).await.expect("the coordinator closes");
    heard
}

#[tokio::test]
async fn peers_without_the_token_are_closed_told_nothing_and_take_no_place() {
    let (listener, address) = listening().await;
    let coordinator = tokio::spawn(Coordinator::gather(listener, gathering(5.0)));
    // Idle peers, a peer with another token, an old-style hello with a guessed hash,
    // and a line far over the bound, all before the real worker.
    let mut idle = Vec::new();
    for _ in 0..20 {
        idle.push(TcpStream::connect(address).await.unwrap());
    }
    let wrong_token = tokio::spawn(async move {
        Link::open_as_worker(TcpStream::connect(address).await.unwrap(), token("another-token-entirely")).await.err().map(|e| e.to_string())
    });
    let mut hello = TcpStream::connect(address).await.unwrap();
    hello
        .write_all(b"{\"type\":\"hello\",\"worker\":1,\"workers\":2,\"plan_hash\":\"xyz\",\"version\":\"0\",\"host\":\"evil\",\"pid\":1}\n")
        .await
        .unwrap();
    let mut flood = TcpStream::connect(address).await.unwrap();
    let _ = flood.write_all(&vec![b'x'; 4 * super::super::protocol::MAX_HANDSHAKE_BYTES]).await;
    let (_link, welcome) = join(address, TOKEN, 1, PLAN_HASH).await;
    assert!(matches!(welcome, ToWorker::Welcome { .. }), "{welcome:?}");
    let coordinator = coordinator.await.unwrap().unwrap();
    assert_eq!(coordinator.records().iter().map(|r| r.host.as_str()).filter(|h| *h == "h").count(), 1, "the real worker joined");
    let refused = wrong_token.await.unwrap().expect("refused");
    assert!(refused.contains("DBSWEEP_WORKER_TOKEN"), "{refused}");
    for mut stream in [hello, flood].into_iter().chain(idle.into_iter().take(1)) {
        let heard = String::from_utf8_lossy(&read_to_end(&mut stream).await).into_owned();
        assert!(!heard.contains(PLAN_HASH) && !heard.contains("plan") && !heard.contains("redis"), "{heard}");
    }
}

/// The job of one run of 300 gets by 3 clients on NO-DB.
async fn nodb_job() -> RunJob {
    let target = registry::open("nodb", &TargetUrl::parse("nodb:").unwrap(), &OpenContext::new(std::env::temp_dir())).unwrap();
    let dataset = Dataset::new(&DataSpec::Kv { rows: 100, payload_bytes: 8 }, 1);
    let point = Point { clients: 3, batch: 1, batched: false, param: None, rate: None };
    let experiment = Experiment::single("get", ExperimentOp::Get, 300, point);
    let stream = Arc::new(OpStream::new(&experiment, 0, &dataset, 1, 1));
    RunJob {
        target,
        seqs: 0..stream.seqs_per_run(&point),
        stream,
        point,
        point_index: 0,
        run: 0,
        warmup: false,
        clients: 3,
        timeout: Duration::from_secs(1),
        cancel: Arc::new(AtomicBool::new(false)),
        progress: Arc::new(AtomicU64::new(0)),
        rate: None,
        time_limit: None,
        check_rows: false,
        stop: None,
        intervals: None,
        cold_call: false,
        budget: None,
        min_run: None,
    }
}

fn run_id() -> RunId {
    RunId { round: 0, experiment: 0, point: 0, target: "nodb".into(), run: 0 }
}

/// What worker 1 does after the start.
enum After {
    /// Runs its share and sends its result as measured, or changed by `tamper`.
    Honest(fn(&mut RunMeasurement)),
    /// Reports progress every 100 ms and never a result.
    ProgressForever,
    /// Runs its share and sends its result tagged with another token.
    Forged,
}

/// One run of the NO-DB job with the coordinator and worker 1 behaving as `after` says.
async fn run_with(after: After) -> (RunMeasurement, Vec<String>, Vec<WorkerRecord>) {
    let (listener, address) = listening().await;
    let job = nodb_job().await;
    let share = share_of(&job, 1, 2);
    let worker = tokio::spawn(async move {
        let (mut link, _) = join(address, TOKEN, 1, PLAN_HASH).await;
        let Ok(ToWorker::Run(id)) = link.receive::<ToWorker>(SILENCE).await else { panic!("no run") };
        link.send(&ToCoordinator::Ready).await.unwrap();
        let Ok(ToWorker::Go) = link.receive::<ToWorker>(SILENCE).await else { panic!("no start") };
        let clients = share.clients;
        let done = |measurement: RunMeasurement, window: Option<Window>| ToCoordinator::Done {
            id: id.clone(),
            clients,
            measurement: Box::new(measurement),
            window: window.map(|w| (unix_nanos(w.start), unix_nanos(w.end))),
        };
        match after {
            After::Honest(tamper) => {
                let (mut m, window) = client::run_share(Arc::new(share), None).await;
                tamper(&mut m);
                link.send(&done(m, window)).await.unwrap();
            }
            After::Forged => {
                let (m, window) = client::run_share(Arc::new(share), None).await;
                link.send_forged(&done(m, window), Token::from_text("a-forgers-own-token-0", "a test").unwrap()).await.unwrap();
            }
            After::ProgressForever => loop {
                if link.send(&ToCoordinator::Progress { ops: 1 }).await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            },
        }
        // Hold the connection until the coordinator lets go.
        let _ = link.receive::<ToWorker>(Duration::from_secs(60)).await;
    });
    let coordinator = Coordinator::gather(listener, gathering(1.0)).await.unwrap();
    let m = coordinator.run(run_id(), "get / nodb run 0", job).await;
    let (warnings, records) = (coordinator.take_warnings(), coordinator.records());
    drop(coordinator);
    worker.await.unwrap();
    (m, warnings, records)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_honest_share_is_summed_into_the_whole_run() {
    let (m, warnings, records) = run_with(After::Honest(|_| {})).await;
    assert_eq!((m.ops, m.ok_ops, m.requests), (300, 300, 300));
    assert!(m.complete && !m.is_void() && m.share_mismatch.is_none(), "{m:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(records.iter().map(|r| r.ops).collect::<Vec<_>>(), [200, 100], "2 clients and 1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_with_a_thousand_times_its_ops_is_left_out_and_voids_the_run() {
    let (m, warnings, records) = run_with(After::Honest(|m| {
        m.ops *= 1000;
        m.ok_ops *= 1000;
        m.requests *= 1000;
    }))
    .await;
    let why = m.share_mismatch.clone().expect("a mismatch");
    assert!(why.contains("worker 1") && why.contains("100000 ops, its share has 100"), "{why}");
    assert_eq!(m.ops, 200, "only the coordinator's own share is summed");
    assert!(m.is_void() && m.ops_per_sec().is_none());
    assert_eq!(records.iter().map(|r| r.ops).collect::<Vec<_>>(), [200, 0], "the worker's claim is counted nowhere");
    assert_eq!(warnings, [why]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_share_that_claims_fewer_ops_or_other_clients_does_not_fit() {
    let (m, ..) = run_with(After::Honest(|m| {
        m.ops -= 10;
        m.ok_ops -= 10;
        m.requests -= 10;
    }))
    .await;
    assert!(m.share_mismatch.as_deref().is_some_and(|w| w.contains("90 ops of its 100")), "{:?}", m.share_mismatch);
    let (m, ..) = run_with(After::Honest(|m| m.run = 7)).await;
    assert!(m.share_mismatch.as_deref().is_some_and(|w| w.contains("another run")), "{:?}", m.share_mismatch);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_result_loses_the_worker_and_voids_the_run() {
    let (m, ..) = run_with(After::Forged).await;
    assert!(!m.complete && m.is_void(), "{m:?}");
    assert_eq!(m.errors["worker"], 1);
    assert!(
        m.error_samples[0].contains("worker 1 was lost") && m.error_samples[0].contains("failed authentication"),
        "{:?}",
        m.error_samples
    );
    assert_eq!(m.ops, 200, "the forged share is not summed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_reports_progress_but_never_a_result_is_lost_at_the_runs_bound() {
    let (m, ..) = run_with(After::ProgressForever).await;
    assert!(!m.complete && m.is_void(), "{m:?}");
    assert!(m.error_samples[0].contains("no result within"), "{:?}", m.error_samples);
}
