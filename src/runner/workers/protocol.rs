//! What a coordinator and its workers say to each other (`--workers`): one JSON object per
//! line over TCP, both ways.
//!
//! Owns the messages and their framing. Must not decide anything: the coordinator and the
//! worker modules do.

use crate::adapter::lease::Holder;
use crate::base::measurement::RunMeasurement;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

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
    Hello {
        worker: usize,
        workers: usize,
        plan_hash: String,
        version: String,
        host: String,
        pid: u32,
    },
    /// The worker's wall clock, in reply to `Ping`.
    Clock {
        unix_nanos: u64,
    },
    /// Every client of this worker connected; waiting for `Go`.
    Ready,
    /// Sent every second while a run goes on: the worker is alive, with its ops so far.
    Progress {
        ops: u64,
    },
    /// The worker's share of the run, measured, and its clients' window on its own clock.
    Done {
        measurement: Box<RunMeasurement>,
        window: Option<(u64, u64)>,
    },
    /// The worker could not take part in the run (e.g. a target it cannot join).
    Failed {
        reason: String,
    },
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

/// One end of a coordinator-worker connection.
pub struct Link {
    reader: BufReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    line: String,
}

impl Link {
    pub fn new(stream: TcpStream) -> Link {
        let _ = stream.set_nodelay(true);
        let (read, writer) = stream.into_split();
        Link { reader: BufReader::new(read), writer, line: String::new() }
    }

    pub async fn send<T: Serialize>(&mut self, message: &T) -> Result<()> {
        let mut text = serde_json::to_string(message).map_err(|e| Error::runtime(format!("cannot encode a message: {e}")))?;
        text.push('\n');
        self.writer.write_all(text.as_bytes()).await.map_err(|e| Error::runtime(format!("connection lost: {e}")))
    }

    /// The next message, or an error when the other side closed the connection or said
    /// nothing for `silence`.
    pub async fn receive<T: for<'de> Deserialize<'de>>(&mut self, silence: Duration) -> Result<T> {
        self.line.clear();
        let read = tokio::time::timeout(silence, self.reader.read_line(&mut self.line)).await;
        match read {
            Err(_) => Err(Error::runtime(format!("nothing heard for {:.0} s", silence.as_secs_f64()))),
            Ok(Err(e)) => Err(Error::runtime(format!("connection lost: {e}"))),
            Ok(Ok(0)) => Err(Error::runtime("connection closed")),
            Ok(Ok(_)) => serde_json::from_str(&self.line).map_err(|e| Error::runtime(format!("unreadable message ({e})"))),
        }
    }
}

/// Nanoseconds since the Unix epoch (a u64 lasts until the year 2554).
pub fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

pub fn from_unix_nanos(nanos: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_nanos(nanos)
}
