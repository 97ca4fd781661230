//! What a coordinator and its workers say to each other (`--workers`): one line per
//! message over TCP, both ways, every message authenticated with the run's worker token.
//!
//! A connection opens with a challenge-response handshake: the worker sends a nonce, the
//! coordinator answers with its own, the worker proves that it holds the token with an
//! HMAC over both nonces and its role, and only then does the coordinator prove the same
//! with its role. The token never crosses the network, and a peer that fails learns
//! nothing but a nonce. After that every line is `TAG JSON`, where the tag is an HMAC over
//! the session's nonces, the direction, the message's sequence number and the JSON: a
//! message cannot be forged, replayed, reordered or moved to another connection.
//!
//! Lines are bounded ([`MAX_HANDSHAKE_BYTES`] before authentication, [`MAX_MESSAGE_BYTES`]
//! after): a longer one voids its connection, and memory never grows with a peer's line.
//!
//! Owns the messages, their framing and the handshake. Must not decide anything: the
//! coordinator and the worker modules do.

use crate::adapter::lease::Holder;
use crate::base::measurement::RunMeasurement;
use crate::base::secret::{self, Token};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

/// The longest line read before a peer has authenticated: a handshake line holds a nonce
/// or a tag (under 200 bytes), so an unauthenticated peer costs at most this much memory.
pub const MAX_HANDSHAKE_BYTES: usize = 1024;

/// The longest authenticated message. The largest real ones are the workers' `Done`
/// messages with their histograms, measured: 1.2 KB for a YCSB workload A run, and about
/// 300 bytes more per interval histogram under `--hlog-interval` (15-18 KB for 50
/// intervals), so a day-long run at 1 s intervals sends about 26 MB. A longer line voids
/// its connection.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;

/// How long a new connection has to authenticate and say hello.
pub const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(5);

/// Labels the HMAC inputs of this protocol, so that no tag made for something else (a
/// shard report) is ever accepted here.
const PROTOCOL: &[u8] = b"dbsweep workers v1";

/// One run of one point on one target, as both sides number them in the plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunId {
    /// Index of the record count (YCSB record-count sweeps; 0 otherwise).
    pub round: usize,
    pub experiment: usize,
    pub point: usize,
    pub target: String,
    pub run: u32,
}

/// From a worker to the coordinator.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToCoordinator {
    /// The first authenticated message: who the worker is and which plan it resolved.
    Hello { worker: usize, workers: usize, plan_hash: String, version: String, host: String, pid: u32 },
    /// The worker's wall clock, in reply to `Ping`.
    Clock { unix_nanos: u64 },
    /// Every client of this worker connected; waiting for `Go`.
    Ready,
    /// Sent every second while a run goes on: the worker is alive, with its ops so far.
    Progress { ops: u64 },
    /// The worker's share of run `id` with `clients` clients, measured, and its clients'
    /// window on its own clock. The coordinator checks it against the share it gave.
    Done { id: RunId, clients: usize, measurement: Box<RunMeasurement>, window: Option<(u64, u64)> },
    /// The worker could not take part in the run (e.g. a target it cannot join).
    Failed { reason: String },
}

/// From the coordinator to a worker.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// The targets of the run (spawned servers included; URLs without passwords) and the
    /// run's lease holder, whose lease the worker works under.
    Welcome {
        targets: Vec<(String, String)>,
        holder: Holder,
    },
    Refused {
        reason: String,
    },
    Ping,
    Run(RunId),
    Go,
    /// The run is over; the worker exits.
    Finish,
}

/// The handshake's lines, sent in the clear before the session's tags exist.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
enum Handshake {
    /// Each side's challenge: the worker's first, then the coordinator's.
    Challenge { nonce: String },
    /// The HMAC of both nonces and the sender's role: proof that the sender holds the token.
    Proof { tag: String },
    /// The coordinator did not accept the worker's proof. Says nothing about the run.
    Refused { reason: String },
}

/// Which side of a connection this end is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Coordinator,
    Worker,
}

impl Side {
    fn name(self) -> &'static [u8] {
        match self {
            Side::Coordinator => b"coordinator",
            Side::Worker => b"worker",
        }
    }

    fn other(self) -> Side {
        match self {
            Side::Coordinator => Side::Worker,
            Side::Worker => Side::Coordinator,
        }
    }
}

/// Why a handshake failed.
#[derive(Debug)]
pub enum HandshakeError {
    /// The peer does not hold the token (a wrong tag, or no dbsweep at all).
    NotAuthenticated(String),
    /// The coordinator refused this worker's proof: the worker was given another token.
    Refused(String),
    /// The connection closed or broke before the handshake ended.
    Connection(String),
}

impl std::fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HandshakeError::NotAuthenticated(why) | HandshakeError::Refused(why) | HandshakeError::Connection(why) => f.write_str(why),
        }
    }
}

/// What both sides of one authenticated connection know: the token and both nonces.
struct Session {
    token: Arc<Token>,
    worker_nonce: String,
    coordinator_nonce: String,
    side: Side,
    sent: u64,
    received: u64,
}

impl Session {
    /// The tag of message number `seq` from `from` with body `body`.
    fn tag(&self, from: Side, seq: u64, body: &[u8]) -> String {
        self.token.tag_hex(&self.parts(b"message", from, &seq.to_be_bytes(), body))
    }

    fn verify(&self, from: Side, seq: u64, body: &[u8], tag: &str) -> bool {
        self.token.verify_hex(&self.parts(b"message", from, &seq.to_be_bytes(), body), tag)
    }

    /// The handshake proof of `from`.
    fn proof(&self, from: Side) -> String {
        self.token.tag_hex(&self.parts(b"proof", from, &[], &[]))
    }

    fn verify_proof(&self, from: Side, tag: &str) -> bool {
        self.token.verify_hex(&self.parts(b"proof", from, &[], &[]), tag)
    }

    fn parts<'a>(&'a self, what: &'static [u8], from: Side, seq: &'a [u8], body: &'a [u8]) -> [&'a [u8]; 7] {
        [PROTOCOL, what, self.worker_nonce.as_bytes(), self.coordinator_nonce.as_bytes(), from.name(), seq, body]
    }
}

/// One end of an authenticated coordinator-worker connection.
pub struct Link {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: Vec<u8>,
    session: Session,
}

/// A connection whose handshake is under way: plain lines, bounded to
/// [`MAX_HANDSHAKE_BYTES`].
struct Opening {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: Vec<u8>,
}

impl Opening {
    fn new(stream: TcpStream) -> Opening {
        let _ = stream.set_nodelay(true);
        let (read, writer) = stream.into_split();
        Opening { reader: BufReader::new(read), writer, line: Vec::new() }
    }

    async fn send(&mut self, message: &Handshake) -> std::result::Result<(), HandshakeError> {
        let mut text = serde_json::to_vec(message).map_err(|e| HandshakeError::Connection(format!("cannot encode a message: {e}")))?;
        text.push(b'\n');
        self.writer.write_all(&text).await.map_err(|e| HandshakeError::Connection(format!("connection lost: {e}")))
    }

    async fn receive(&mut self) -> std::result::Result<Handshake, HandshakeError> {
        read_line(&mut self.reader, &mut self.line, MAX_HANDSHAKE_BYTES).await.map_err(|e| HandshakeError::Connection(e.to_string()))?;
        serde_json::from_slice(&self.line).map_err(|_| HandshakeError::NotAuthenticated("not a dbsweep worker handshake".into()))
    }

    fn into_link(self, session: Session) -> Link {
        Link { reader: self.reader, writer: self.writer, line: self.line, session }
    }
}

/// A nonce as this protocol draws them: 32 hex digits.
fn well_formed_nonce(nonce: &str) -> bool {
    nonce.len() == 32 && nonce.bytes().all(|b| b.is_ascii_hexdigit())
}

impl Link {
    /// The worker's side of the handshake on a fresh connection to the coordinator.
    pub async fn open_as_worker(stream: TcpStream, token: Arc<Token>) -> std::result::Result<Link, HandshakeError> {
        let mut opening = Opening::new(stream);
        let worker_nonce = secret::nonce().map_err(|e| HandshakeError::Connection(e.to_string()))?;
        opening.send(&Handshake::Challenge { nonce: worker_nonce.clone() }).await?;
        let coordinator_nonce = match opening.receive().await? {
            Handshake::Challenge { nonce } if well_formed_nonce(&nonce) && nonce != worker_nonce => nonce,
            _ => return Err(HandshakeError::NotAuthenticated("the peer is not a dbsweep coordinator (no challenge)".into())),
        };
        let session = Session { token, worker_nonce, coordinator_nonce, side: Side::Worker, sent: 0, received: 0 };
        opening.send(&Handshake::Proof { tag: session.proof(Side::Worker) }).await?;
        match opening.receive().await? {
            Handshake::Proof { tag } if session.verify_proof(Side::Coordinator, &tag) => Ok(opening.into_link(session)),
            Handshake::Refused { reason } => Err(HandshakeError::Refused(reason)),
            _ => Err(HandshakeError::NotAuthenticated("the coordinator did not prove that it holds the worker token".into())),
        }
    }

    /// The coordinator's side of the handshake on a connection just accepted. A peer that
    /// fails gets a refusal that names only the token, never the run.
    pub async fn open_as_coordinator(stream: TcpStream, token: Arc<Token>) -> std::result::Result<Link, HandshakeError> {
        let mut opening = Opening::new(stream);
        let worker_nonce = match opening.receive().await? {
            Handshake::Challenge { nonce } if well_formed_nonce(&nonce) => nonce,
            _ => return Err(HandshakeError::NotAuthenticated("the peer did not open with a challenge".into())),
        };
        let coordinator_nonce = secret::nonce().map_err(|e| HandshakeError::Connection(e.to_string()))?;
        opening.send(&Handshake::Challenge { nonce: coordinator_nonce.clone() }).await?;
        let session = Session { token, worker_nonce, coordinator_nonce, side: Side::Coordinator, sent: 0, received: 0 };
        match opening.receive().await? {
            Handshake::Proof { tag } if session.verify_proof(Side::Worker, &tag) => {
                opening.send(&Handshake::Proof { tag: session.proof(Side::Coordinator) }).await?;
                Ok(opening.into_link(session))
            }
            _ => {
                let reason = format!(
                    "the coordinator refused this worker: it does not hold the run's worker token; give every worker the same {} (or {})",
                    secret::TOKEN_VARIABLE,
                    secret::TOKEN_FILE_VARIABLE
                );
                let _ = opening.send(&Handshake::Refused { reason }).await;
                Err(HandshakeError::NotAuthenticated("its proof of the worker token was wrong".into()))
            }
        }
    }

    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<()> {
        let line = self.frame(message)?;
        self.writer.write_all(&line).await.map_err(|e| Error::runtime(format!("connection lost: {e}")))
    }

    /// The line of the next message: its tag, a space, its JSON and a newline.
    fn frame<T: Serialize>(&mut self, message: &T) -> Result<Vec<u8>> {
        let body = serde_json::to_vec(message).map_err(|e| Error::runtime(format!("cannot encode a message: {e}")))?;
        let tag = self.session.tag(self.session.side, self.session.sent, &body);
        self.session.sent += 1;
        let mut line = Vec::with_capacity(tag.len() + body.len() + 2);
        line.extend_from_slice(tag.as_bytes());
        line.push(b' ');
        line.extend_from_slice(&body);
        line.push(b'\n');
        Ok(line)
    }

    /// Sends `message` tagged with `token` instead of the session's: what a forger who
    /// does not hold the run's token, but sees the connection, could send.
    #[cfg(test)]
    pub(super) async fn send_forged<T: Serialize>(&mut self, message: &T, token: Token) -> Result<()> {
        let real = std::mem::replace(&mut self.session.token, Arc::new(token));
        let line = self.frame(message);
        self.session.token = real;
        self.writer.write_all(&line?).await.map_err(|e| Error::runtime(format!("connection lost: {e}")))
    }

    /// The next message, or an error when the other side closed the connection, said
    /// nothing for `silence`, or sent a line that is too long or not authentic (after
    /// which the connection is of no further use).
    pub async fn receive<T: for<'de> Deserialize<'de>>(&mut self, silence: Duration) -> Result<T> {
        let read = tokio::time::timeout(silence, read_line(&mut self.reader, &mut self.line, MAX_MESSAGE_BYTES)).await;
        match read {
            Err(_) => return Err(Error::runtime(format!("nothing heard for {:.0} s", silence.as_secs_f64()))),
            Ok(Err(e)) => return Err(e),
            Ok(Ok(())) => {}
        }
        let from = self.session.side.other();
        let seq = self.session.received;
        let line = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let authentic = match line.iter().position(|&b| b == b' ') {
            Some(space) => {
                let (tag, body) = (&line[..space], &line[space + 1..]);
                std::str::from_utf8(tag).is_ok_and(|tag| self.session.verify(from, seq, body, tag)).then_some(body)
            }
            None => None,
        };
        let Some(body) = authentic else {
            return Err(Error::runtime(format!("message {seq} failed authentication (forged, replayed or out of order)")));
        };
        self.session.received += 1;
        serde_json::from_slice(body).map_err(|e| Error::runtime(format!("unreadable message ({e})")))
    }
}

/// Reads one line ending in a newline into `line` (replacing its contents), reading at
/// most `limit + 1` bytes: a longer line is an error, and so is a connection that closes.
async fn read_line(reader: &mut BufReader<OwnedReadHalf>, line: &mut Vec<u8>, limit: usize) -> Result<()> {
    line.clear();
    let read = (&mut *reader).take(limit as u64 + 1).read_until(b'\n', line).await;
    match read {
        Err(e) => Err(Error::runtime(format!("connection lost: {e}"))),
        Ok(0) => Err(Error::runtime("connection closed")),
        Ok(_) if line.last() == Some(&b'\n') => Ok(()),
        Ok(_) if line.len() > limit => Err(Error::runtime(format!("a message over {limit} bytes"))),
        Ok(_) => Err(Error::runtime("connection closed in the middle of a message")),
    }
}

/// Nanoseconds since the Unix epoch (a u64 lasts until the year 2554).
pub fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

pub fn from_unix_nanos(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    fn token(text: &str) -> Arc<Token> {
        Arc::new(Token::from_text(text, "a test").unwrap())
    }

    /// Both ends of a connection, each handshaking with its token.
    async fn pair(
        worker_token: &str,
        coordinator_token: &str,
    ) -> (std::result::Result<Link, HandshakeError>, std::result::Result<Link, HandshakeError>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let coordinator_token = token(coordinator_token);
        let coordinator = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            Link::open_as_coordinator(stream, coordinator_token).await
        });
        let worker = Link::open_as_worker(TcpStream::connect(address).await.unwrap(), token(worker_token)).await;
        (worker, coordinator.await.unwrap())
    }

    #[tokio::test]
    async fn both_sides_prove_the_token_and_then_talk() {
        let (worker, coordinator) = pair("the-same-token-0123", "the-same-token-0123").await;
        let (mut worker, mut coordinator) = (worker.unwrap(), coordinator.unwrap());
        worker.send(&ToCoordinator::Progress { ops: 7 }).await.unwrap();
        worker.send(&ToCoordinator::Ready).await.unwrap();
        let silence = Duration::from_secs(5);
        assert!(matches!(coordinator.receive::<ToCoordinator>(silence).await.unwrap(), ToCoordinator::Progress { ops: 7 }));
        assert!(matches!(coordinator.receive::<ToCoordinator>(silence).await.unwrap(), ToCoordinator::Ready));
        coordinator.send(&ToWorker::Go).await.unwrap();
        assert!(matches!(worker.receive::<ToWorker>(silence).await.unwrap(), ToWorker::Go));
    }

    #[tokio::test]
    async fn another_token_is_refused_on_both_sides_without_a_word_about_the_run() {
        let (worker, coordinator) = pair("the-workers-token-01", "the-coordinators-token").await;
        assert!(matches!(coordinator, Err(HandshakeError::NotAuthenticated(_))), "{:?}", coordinator.err());
        let Err(HandshakeError::Refused(reason)) = worker else { panic!("the worker was not refused") };
        assert!(reason.contains("DBSWEEP_WORKER_TOKEN"), "{reason}");
    }

    /// A connected pair whose worker end writes raw lines (what an attacker on the
    /// connection could send) and whose coordinator end is a real link.
    async fn raw_pair() -> (Link, Link) {
        let (worker, coordinator) = pair("the-same-token-0123", "the-same-token-0123").await;
        (worker.unwrap(), coordinator.unwrap())
    }

    #[tokio::test]
    async fn replayed_reordered_or_altered_messages_fail_authentication() {
        let silence = Duration::from_secs(5);
        // What reaches the coordinator, from the first and second genuine lines.
        type Wire = fn(Vec<u8>, Vec<u8>) -> Vec<u8>;
        let cases: [(&str, Wire); 3] = [
            ("replayed", |first, _| [first.clone(), first].concat()),
            ("reordered", |first, second| [second, first].concat()),
            ("altered", |first, _| String::from_utf8(first).unwrap().replace("\"ops\":1", "\"ops\":9").into_bytes()),
        ];
        for (what, wire) in cases {
            let (mut worker, mut coordinator) = raw_pair().await;
            let first = worker.frame(&ToCoordinator::Progress { ops: 1 }).unwrap();
            let second = worker.frame(&ToCoordinator::Progress { ops: 2 }).unwrap();
            let bytes = wire(first, second);
            worker.writer.write_all(&bytes).await.unwrap();
            let mut heard = Vec::new();
            let error = loop {
                match coordinator.receive::<ToCoordinator>(silence).await {
                    Ok(ToCoordinator::Progress { ops }) => heard.push(ops),
                    Ok(other) => panic!("{other:?}"),
                    Err(e) => break e.to_string(),
                }
            };
            assert!(error.contains("failed authentication"), "{what}: {error}");
            assert!(heard.iter().all(|&ops| ops == 1) && heard.len() <= 1, "{what}: only the genuine first message: {heard:?}");
        }
    }

    #[tokio::test]
    async fn a_message_tagged_with_another_token_fails_authentication() {
        let (mut worker, mut coordinator) = raw_pair().await;
        worker.send_forged(&ToCoordinator::Ready, Token::from_text("a-forgers-own-token-0", "a test").unwrap()).await.unwrap();
        let error = coordinator.receive::<ToCoordinator>(Duration::from_secs(5)).await.err().unwrap().to_string();
        assert!(error.contains("failed authentication"), "{error}");
    }

    #[tokio::test]
    async fn a_line_longer_than_the_bound_voids_the_connection_without_reading_it_whole() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let sender = tokio::spawn(async move {
            let mut stream = TcpStream::connect(address).await.unwrap();
            // Twice the bound, no newline: the reader must stop at the bound.
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..(2 * MAX_HANDSHAKE_BYTES / chunk.len() + 2) {
                if stream.write_all(&chunk).await.is_err() {
                    break;
                }
            }
        });
        let (stream, _) = listener.accept().await.unwrap();
        let mut opening = Opening::new(stream);
        let error = opening.receive().await.err().unwrap().to_string();
        assert!(error.contains(&format!("over {MAX_HANDSHAKE_BYTES} bytes")), "{error}");
        assert!(opening.line.len() == MAX_HANDSHAKE_BYTES + 1, "{} bytes read", opening.line.len());
        drop(opening);
        sender.await.unwrap();
    }
}
