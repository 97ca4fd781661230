//! Experiments: what a measured point asks of a target, and the seeded op stream for it.
//!
//! Owns the mapping (experiment, point, run, sequence number) -> `Op`, a pure function, so
//! every system and every run sees the same operations: read experiments replay identical
//! ops in every run; write experiments use disjoint key ranges per point and run, so no run
//! depends on another — except sized inserts into shuffled pairs (the insert-find study),
//! which insert the same Fisher-Yates keys in every run, as the paper did, into a table the
//! runner restores after each run. Must not execute ops or time anything.

use crate::base::op::{Needs, Op, OpKind, PlannedOp, QueryId, RangeAgg};
use crate::base::rng::{Permutation, Stream, hash_str};
use crate::base::table::TableId;
use crate::data::{Dataset, RangeCounter};
use crate::workload::ycsb::{OpGen as YcsbGen, Workload};
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

/// The operation an experiment measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExperimentOp {
    Echo,
    Insert,
    Delete,
    Get,
    RangeRows,
    RangeCount,
    RangeMax,
    /// Look up `param` distinct preloaded keys in one request (`IN (...)`, `MGET`).
    MultiGet,
    /// TPC-H Q1 (pricing summary report, single table).
    TpchQ1,
    /// TPC-H Q3 (shipping priority, a three-table join).
    TpchQ3,
    /// TPC-H Q6 (forecasting revenue change, single table).
    TpchQ6,
    /// TPC-H Q14 (promotion effect, a two-table join).
    TpchQ14,
    /// A YCSB core workload: a mix of reads, updates, inserts, scans, read-modify-writes.
    Ycsb,
    /// Read every row of the table in one request (the in-memory study's "fetch all").
    FetchAll,
    /// One pass of the user's SQL script (`run --sql-file`, `--builtin`): the experiment's
    /// `script`.
    Script,
    /// The study's own operation: a statement per system family, parameters drawn from
    /// dbsweep's generators (the experiment's `custom`).
    Custom,
}

impl ExperimentOp {
    /// The analytic query this experiment runs, if it is one.
    pub fn query(self) -> Option<QueryId> {
        match self {
            ExperimentOp::TpchQ1 => Some(QueryId::TpchQ1),
            ExperimentOp::TpchQ3 => Some(QueryId::TpchQ3),
            ExperimentOp::TpchQ6 => Some(QueryId::TpchQ6),
            ExperimentOp::TpchQ14 => Some(QueryId::TpchQ14),
            _ => None,
        }
    }

    /// What a target must offer to run this experiment (a YCSB mix: every kind the
    /// workload uses).
    pub fn needs(self, workload: Option<&Workload>) -> Needs {
        match (self.query(), workload) {
            (Some(q), _) => Needs::Query(q),
            (None, Some(w)) => Needs::Kinds(
                [
                    (w.readproportion, OpKind::Get),
                    (w.updateproportion, OpKind::Update),
                    (w.insertproportion, OpKind::Insert),
                    (w.scanproportion, OpKind::Scan),
                    (w.readmodifywriteproportion, OpKind::ReadModifyWrite),
                ]
                .into_iter()
                .filter(|(share, _)| *share > 0.0)
                .map(|(_, kind)| kind)
                .collect(),
            ),
            (None, None) => Needs::Kinds(vec![self.kind()]),
        }
    }

    pub fn kind(self) -> OpKind {
        match self {
            ExperimentOp::Echo => OpKind::Echo,
            ExperimentOp::Insert => OpKind::Insert,
            ExperimentOp::Delete => OpKind::Delete,
            ExperimentOp::Get => OpKind::Get,
            ExperimentOp::RangeRows => OpKind::RangeRows,
            ExperimentOp::RangeCount => OpKind::RangeCount,
            ExperimentOp::RangeMax => OpKind::RangeMax,
            ExperimentOp::MultiGet => OpKind::MultiGet,
            ExperimentOp::TpchQ1 | ExperimentOp::TpchQ3 | ExperimentOp::TpchQ6 | ExperimentOp::TpchQ14 => OpKind::Query,
            ExperimentOp::Ycsb => OpKind::Mixed,
            ExperimentOp::FetchAll => OpKind::FetchAll,
            ExperimentOp::Script => OpKind::Script,
            ExperimentOp::Custom => OpKind::Custom,
        }
    }

    pub fn is_range(self) -> bool {
        matches!(self, ExperimentOp::RangeRows | ExperimentOp::RangeCount | ExperimentOp::RangeMax)
    }

    /// Write experiments change the data and so get fresh keys per run.
    pub fn writes(self) -> bool {
        matches!(self, ExperimentOp::Insert | ExperimentOp::Delete)
    }
}

/// A fixed (open-loop) request rate: ops per second for all clients together. Plans only
/// hold finite positive rates, so equality and hashing by the bits are exact.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Rate(f64);

impl Rate {
    /// `None` unless `ops_per_sec` is finite and positive.
    pub fn new(ops_per_sec: f64) -> Option<Rate> {
        (ops_per_sec.is_finite() && ops_per_sec > 0.0).then_some(Rate(ops_per_sec))
    }

    pub fn ops_per_sec(self) -> f64 {
        self.0
    }
}

impl Eq for Rate {}

impl std::hash::Hash for Rate {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// One parameter point of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    pub clients: usize,
    /// Ops per request.
    pub batch: usize,
    /// False: one op per request via `execute`; true: `execute_batch` (so batch 1 can be
    /// measured both ways — batching has a cost).
    pub batched: bool,
    /// Range width for range experiments.
    pub param: Option<u64>,
    /// Fixed-rate (open-loop) points: total ops/s of all clients; `None`: closed loop (as
    /// fast as the target answers). A list of rates is a sweep axis (`--rate 1000,2000`).
    #[serde(default)]
    pub rate: Option<Rate>,
}

/// A validated experiment of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    pub op: ExperimentOp,
    /// YCSB experiments: the core workload letter or workload file, as given.
    pub workload: Option<String>,
    /// Script experiments: the parsed script each op runs a pass of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub script: Option<std::sync::Arc<crate::base::script::Script>>,
    /// Custom experiments: the operation each op runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub custom: Option<std::sync::Arc<crate::base::custom::CustomOp>>,
    /// YCSB experiments: the workload as resolved (file, `-P`, `-p` and the data's shape).
    #[serde(default)]
    pub ycsb: Option<Workload>,
    /// YCSB's `maxexecutiontime`: a run stops after this many seconds even if ops remain.
    #[serde(default)]
    pub time_limit_secs: Option<f64>,
    /// `--duration`: every run lasts this many seconds, with as many ops as it takes (see
    /// `OpStream::seqs_per_run`); `None`: every run does `ops` ops.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_secs: Option<f64>,
    /// `--quick`: every run does its `ops` and goes on until it has lasted this many
    /// seconds (a run of 300 fast ops takes a tenth of a millisecond, where one scheduler
    /// tick decides its throughput); `None`: runs end with their ops or their duration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_run_secs: Option<f64>,
    /// The table the ops touch.
    pub table: TableId,
    /// Range experiments: the indexed column of `lo <= column <= hi`.
    pub column: usize,
    /// Range MAX experiments: the column whose maximum is computed.
    pub max_column: usize,
    /// Ops per measured run (and per warm-up run); for `sized` experiments the largest
    /// point's.
    pub ops: u64,
    /// Sizes sweep: each point's `param` is its op count (insert N keys, in one request
    /// or N).
    #[serde(default)]
    pub sized: bool,
    /// Part of a lifecycle study (`lifecycle = true`): each point's `param` is a record
    /// count N, and every run starts from an empty table and runs the study's experiments
    /// in order — insert writes keys 0..N one per request, get reads `ops` random keys of
    /// them, delete removes `lifecycle_deletes(ops, N)` distinct ones (at most a tenth of
    /// N), fetch-all reads what is left (at least nine tenths of N) —
    /// with memory read before and after each.
    #[serde(default)]
    pub lifecycle: bool,
    /// Measured runs per point.
    pub runs: u32,
    /// Warm-up runs per point (not measured).
    pub warmup: u32,
    pub points: Vec<Point>,
}

/// The most a lifecycle delete phase removes: one key in this many, so that the phases
/// after it (the paper's fetch-all after deleting one key) still find nearly every key,
/// and never time an empty table.
pub const LIFECYCLE_DELETE_SHARE: u64 = 10;

/// How many keys a lifecycle delete phase of `ops` ops removes from `records`: `ops`, at
/// most a tenth of the records (one when there are fewer than ten).
pub fn lifecycle_deletes(ops: u64, records: u64) -> u64 {
    ops.min((records / LIFECYCLE_DELETE_SHARE).max(1)).min(records)
}

impl Experiment {
    /// An experiment of one point doing `ops` ops of `op` on the first table, one measured run
    /// and no warm-up; other settings by struct update (`Experiment { runs: 3, ..single }`).
    pub fn single(name: &str, op: ExperimentOp, ops: u64, point: Point) -> Experiment {
        Experiment {
            name: name.into(),
            op,
            workload: None,
            script: None,
            custom: None,
            ycsb: None,
            time_limit_secs: None,
            duration_secs: None,
            min_run_secs: None,
            table: 0,
            column: 0,
            max_column: 0,
            ops,
            sized: false,
            lifecycle: false,
            runs: 1,
            warmup: 0,
            points: vec![point],
        }
    }

    /// What a target must offer to run this experiment: its op's needs, or for a custom
    /// operation a statement for the target's family.
    pub fn needs(&self) -> Needs {
        match &self.custom {
            Some(custom) => Needs::Custom(custom.families()),
            None => self.op.needs(self.ycsb.as_ref()),
        }
    }

    /// Ops per run at `point` (`OpStream::ops_at`): what a run that does all of its ops
    /// does, without building the op stream.
    pub fn ops_at(&self, point: &Point) -> u64 {
        ops_per_run(self.op, self.ops, self.sized, self.lifecycle, point)
    }
}

/// Ops per run at a point: its size for sized experiments, a lifecycle phase's count at
/// its record count, else the experiment's `ops`.
fn ops_per_run(op: ExperimentOp, ops: u64, sized: bool, lifecycle: bool, point: &Point) -> u64 {
    match (lifecycle, sized, point.param) {
        (true, _, Some(n)) => match op {
            ExperimentOp::Insert => n,
            ExperimentOp::Delete => lifecycle_deletes(ops, n),
            ExperimentOp::FetchAll => 1,
            _ => ops,
        },
        (false, true, Some(n)) => n,
        _ => ops,
    }
}

/// Lifecycle deletes: a delete phase of `ops` ops over `records` keys removes every
/// `delete_step`-th key from 0, `lifecycle_deletes(ops, records)` of them.
fn delete_step(ops: u64, records: u64) -> u64 {
    records.max(1) / lifecycle_deletes(ops, records).max(1)
}

/// Whether a lifecycle delete phase of `ops` ops over `records` keys removes `key`.
fn deleted_by(ops: u64, records: u64, key: u64) -> bool {
    let count = lifecycle_deletes(ops, records);
    let step = delete_step(ops, records);
    count > 0 && key.is_multiple_of(step) && key / step < count
}

/// The op streams of a plan's experiments, in order. In a lifecycle study each phase
/// knows the delete phases that run before it, so its reads expect exactly the keys left.
pub fn streams(experiments: &[Experiment], dataset: &Dataset, seed: u64) -> Vec<OpStream> {
    experiments
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let stream = OpStream::new(e, i, dataset, seed, e.warmup + e.runs);
            let deletes = experiments[..i].iter().filter(|d| e.lifecycle && d.lifecycle && d.op == ExperimentOp::Delete);
            stream.after_deletes(deletes.map(|d| d.ops).collect()).with_range_counts()
        })
        .collect()
}

/// Key-space stride between experiments that write: far above any preloaded key.
const EXPERIMENT_STRIDE: i64 = 1 << 40;

/// Time-based runs of experiments that write nothing: the sequence numbers a run may use
/// (days at the NO-DB ceiling's rate); their ops repeat over the data as in fixed-ops runs.
const TIME_BASED_READ_SEQS: u64 = 1 << 48;

/// Generates the ops of one experiment over one dataset.
#[derive(Debug, Clone)]
pub struct OpStream {
    op: ExperimentOp,
    table: TableId,
    column: usize,
    max_column: usize,
    /// Number of preloaded rows of the table.
    preloaded: u64,
    stream: Stream,
    read_order: Permutation,
    write_order: Permutation,
    /// First key of this experiment's private key space (writes only).
    write_base: i64,
    runs_per_point: u64,
    ops: u64,
    /// The sequence numbers of one run (`0..run_span`), which is also the stride between
    /// runs in the key space of writes and in a YCSB workload's sequence: `ops`, or under
    /// `--duration` as many as a run can use (see `seqs_per_run`).
    run_span: u64,
    /// Runs may send more ops than `ops` (`--duration`, `--quick`'s shortest run).
    open_ended: bool,
    dataset: Dataset,
    /// YCSB experiments: the workload's op generator.
    ycsb: Option<YcsbGen>,
    /// YCSB experiments: each point's index among the points at its record count (each
    /// record count is loaded afresh, so its workload sequence starts at 0).
    ycsb_point: Vec<usize>,
    sized: bool,
    lifecycle: bool,
    /// Range experiments over a column whose counts the generator defines (kv groups): the
    /// rows each range must match. Counted over every loaded row when a run first needs it
    /// (`with_range_counts`), not when a plan is estimated or shown (`--dry-run` at `--rows`
    /// in the billions would walk them all).
    range_counter: OnceLock<Option<RangeCounter>>,
    /// Lifecycle experiments: the `ops` of the delete phases that run before this one, so
    /// reads know which keys are gone.
    deletes_before: Vec<u64>,
    /// Script experiments: the script.
    script: Option<std::sync::Arc<crate::base::script::Script>>,
    /// Custom experiments: the operation and its draws.
    custom: Option<crate::workload::custom::CustomDraws>,
}

impl OpStream {
    pub fn new(experiment: &Experiment, experiment_index: usize, dataset: &Dataset, seed: u64, runs_per_point: u32) -> Self {
        let table = experiment.table;
        let preloaded = dataset.initial_rows(table).max(1);
        let stream_id = hash_str(&experiment.name);
        let run_span = match experiment.duration_secs.or(experiment.min_run_secs) {
            None => experiment.ops,
            // Inserts: each run of each point its own share of the experiment's key space.
            Some(_) if experiment.op.writes() => {
                let slots = (experiment.points.len() as u64 * runs_per_point as u64).max(1);
                EXPERIMENT_STRIDE as u64 / slots
            }
            Some(_) => TIME_BASED_READ_SEQS,
        };
        OpStream {
            op: experiment.op,
            table,
            column: experiment.column,
            max_column: experiment.max_column,
            preloaded,
            stream: Stream::new(seed, stream_id),
            read_order: Permutation::new(seed ^ stream_id, preloaded),
            write_order: Permutation::new(seed ^ stream_id ^ 1, run_span.max(1)),
            write_base: EXPERIMENT_STRIDE * (experiment_index as i64 + 1),
            runs_per_point: runs_per_point as u64,
            ops: experiment.ops,
            run_span,
            open_ended: experiment.duration_secs.is_some() || experiment.min_run_secs.is_some(),
            sized: experiment.sized,
            lifecycle: experiment.lifecycle,
            range_counter: OnceLock::new(),
            deletes_before: Vec::new(),
            script: experiment.script.clone(),
            custom: experiment.custom.clone().map(|op| crate::workload::custom::CustomDraws::new(op, dataset)),
            dataset: dataset.clone(),
            ycsb: experiment.ycsb.as_ref().map(|w| {
                let mut workload = w.clone();
                workload.recordcount = dataset.initial_rows(table);
                let points_per_count = experiment.points.iter().filter(|p| p.param == experiment.points[0].param).count();
                workload.operationcount = experiment.ops * runs_per_point as u64 * points_per_count.max(1) as u64;
                YcsbGen::new(&workload, seed, table).expect("workloads are validated in the plan")
            }),
            ycsb_point: experiment
                .points
                .iter()
                .enumerate()
                .map(|(i, p)| experiment.points[..i].iter().filter(|q| q.param == p.param).count())
                .collect(),
        }
    }

    /// Counts the rows of each range now, before any run is timed, rather than in a run's
    /// first request (see `range_counter`).
    pub fn with_range_counts(self) -> Self {
        self.range_counts();
        self
    }

    fn range_counts(&self) -> Option<&RangeCounter> {
        self.range_counter
            .get_or_init(|| if self.op.is_range() { self.dataset.range_counter(self.table, self.column) } else { None })
            .as_ref()
    }

    /// Ops per run at a point: its size for sized experiments, else the experiment's.
    pub fn ops_at(&self, point: &Point) -> u64 {
        ops_per_run(self.op, self.ops, self.sized, self.lifecycle, point)
    }

    /// The sequence numbers one run at `point` may use: its ops (`ops_at`), or in an
    /// open-ended run (`--duration`, `--quick`'s shortest run) more than it can send
    /// before its deadline.
    pub fn seqs_per_run(&self, point: &Point) -> u64 {
        if self.open_ended { self.run_span } else { self.ops_at(point) }
    }

    /// Whether a run's op count is known only at its end: it lasts a duration
    /// (`--duration`) or at least one (`--quick`), rather than a number of ops.
    pub fn open_ended(&self) -> bool {
        self.open_ended
    }

    /// Lifecycle experiments: the op with sequence number `seq` over a table holding keys
    /// `0..records` (see `Experiment::lifecycle`), and the rows it finds there unless an
    /// earlier delete phase removed its key.
    fn lifecycle_planned(&self, records: u64, seq: u64) -> PlannedOp {
        let table = self.table;
        let records = records.max(1);
        let present = |key: u64| u64::from(!self.deletes_before.iter().any(|&ops| deleted_by(ops, records, key)));
        let (op, expected_rows) = match self.op {
            ExperimentOp::Insert => (Op::Insert { table, row: self.dataset.new_row(table, seq as i64) }, 1),
            // Distinct keys spread evenly over the table.
            ExperimentOp::Delete => {
                let key = seq * delete_step(self.ops, records);
                (Op::Delete { table, key: key as i64 }, present(key))
            }
            // At least what the earlier deletes left (keys deleted twice count twice here).
            ExperimentOp::FetchAll => {
                let deleted: u64 = self.deletes_before.iter().map(|&ops| lifecycle_deletes(ops, records)).sum();
                (Op::FetchAll { table }, records.saturating_sub(deleted))
            }
            ExperimentOp::MultiGet => {
                let key = self.stream.below(seq, 0, records);
                (Op::MultiGet { table, keys: vec![key as i64] }, present(key))
            }
            _ => {
                let key = self.stream.below(seq, 0, records);
                (Op::Get { table, key: key as i64 }, present(key))
            }
        };
        PlannedOp { op, expected_rows }
    }

    /// One pass of the experiment's script with the values drawn for `seq` (the same in
    /// every run and on every system).
    fn script_op(&self, seq: u64) -> Op {
        let script = self.script.clone().expect("script experiments carry their script");
        let scale = self.dataset.spec.pgbench_scale().unwrap_or(1.0);
        let values = crate::workload::script::values(&script, scale, &self.stream, seq);
        Op::Script { script, values }
    }

    /// Lifecycle streams: records that delete phases with these `ops` run before this one.
    pub fn after_deletes(mut self, ops: Vec<u64>) -> Self {
        self.deletes_before = ops;
        self
    }

    /// The workload sequence number of a YCSB op: every run of every point at one record
    /// count continues the sequence, so inserted keys never repeat across runs.
    fn ycsb_seq(&self, point_index: usize, run: u32, seq: u64) -> u64 {
        let index = self.ycsb_point.get(point_index).copied().unwrap_or(point_index) as u64;
        (index * self.runs_per_point + run as u64) * self.run_span + seq
    }

    /// The keys the first `ops` ops of one run of one point insert (insert experiments,
    /// YCSB workloads with inserts), in sequence order; empty for experiments that insert
    /// nothing. A whole run is `ops_at(point)` ops; one stopped early by `--precision`, fewer.
    pub fn inserted_keys(&self, point: &Point, point_index: usize, run: u32, ops: u64) -> Vec<i64> {
        match &self.ycsb {
            Some(g) if g.workload().insertproportion > 0.0 => (0..ops)
                .map(|seq| self.ycsb_seq(point_index, run, seq))
                .filter(|&s| g.kind(s) == OpKind::Insert)
                .map(|s| g.key_of(g.workload().recordcount + s))
                .collect(),
            Some(_) => Vec::new(),
            None => (0..ops)
                .filter_map(|seq| match self.op(point, point_index, run, seq) {
                    Op::Insert { row, .. } => row[0].as_int(),
                    _ => None,
                })
                .collect(),
        }
    }

    /// The YCSB workload of this stream, if it is one.
    pub fn workload(&self) -> Option<&Workload> {
        self.ycsb.as_ref().map(|g| g.workload())
    }

    /// Keys written (inserted, or pre-loaded then deleted) in one run of one point.
    pub fn write_keys(&self, point_index: usize, run: u32) -> std::ops::Range<i64> {
        let start = self.write_base + ((point_index as u64 * self.runs_per_point + run as u64) * self.run_span) as i64;
        start..start + self.run_span as i64
    }

    /// Rows that must exist before a run (the rows a delete run deletes).
    pub fn rows_to_preload(&self, point_index: usize, run: u32) -> Option<std::ops::Range<i64>> {
        (self.op == ExperimentOp::Delete).then(|| self.write_keys(point_index, run))
    }

    pub fn kind(&self) -> OpKind {
        self.op.kind()
    }

    pub fn table(&self) -> TableId {
        self.table
    }

    /// The op with sequence number `seq` (`0..ops`) in run `run` of point `point_index`.
    pub fn op(&self, point: &Point, point_index: usize, run: u32, seq: u64) -> Op {
        self.planned(point, point_index, run, seq).op
    }

    /// The op with sequence number `seq` and the rows it must return or affect (see
    /// `PlannedOp`): a read of a loaded key finds it, a multi-get finds every key, a
    /// delete finds the row its run preloaded, an insert writes its row, a range over kv
    /// groups matches the rows the generator put there. 0 where the plan cannot know
    /// (echo, MAX, analytic queries, ranges over TPC-H columns).
    pub fn planned(&self, point: &Point, point_index: usize, run: u32, seq: u64) -> PlannedOp {
        self.planned_in_share(point, point_index, run, seq, 0, point.clients)
    }

    /// As [`OpStream::planned`], for a process that sends the run's sequence numbers from
    /// `share_start` on with `clients` clients: one process sends them all (0 and the
    /// point's clients); a worker (`--workers`) its share, whose YCSB reads do not read
    /// what the shares before it insert (see `ycsb`'s module comment).
    pub fn planned_in_share(&self, point: &Point, point_index: usize, run: u32, seq: u64, share_start: u64, clients: usize) -> PlannedOp {
        let table = self.table;
        if let (true, Some(records)) = (self.lifecycle, point.param) {
            return self.lifecycle_planned(records, seq);
        }
        let loaded = u64::from(self.dataset.initial_rows(table) > 0);
        let (op, expected_rows) = match self.op {
            ExperimentOp::FetchAll => (Op::FetchAll { table }, self.dataset.initial_rows(table)),
            ExperimentOp::Echo => (Op::Echo, 0),
            ExperimentOp::Script => (self.script_op(seq), 0),
            ExperimentOp::Custom => {
                let draws = self.custom.as_ref().expect("custom experiments carry their operation");
                (Op::Custom { op: draws.op.clone(), values: draws.values(&self.stream, seq) }, 0)
            }
            ExperimentOp::TpchQ1 | ExperimentOp::TpchQ3 | ExperimentOp::TpchQ6 | ExperimentOp::TpchQ14 => {
                (Op::Query(self.op.query().expect("query experiments name a query")), 0)
            }
            ExperimentOp::MultiGet => {
                let count = point.param.unwrap_or(1).min(self.preloaded);
                let first = seq * count;
                // Keys already in a seeded random order are read in that order: request
                // `seq` of N keys asks for the (seq+1)-th window of N, as the paper read the
                // first N keys of its input file.
                let shuffled = self.dataset.keys_shuffled();
                let position = |i: u64| if shuffled { i % self.preloaded } else { self.read_order.apply(i % self.preloaded) };
                let keys = (first..first + count).map(|i| self.dataset.key_at(table, position(i))).collect();
                (Op::MultiGet { table, keys }, count * loaded)
            }
            ExperimentOp::Ycsb => {
                let run_start = self.ycsb_seq(point_index, run, 0);
                // One client executes in sequence order, so every earlier insert it reads
                // is done; with more, inserts of this run may still be in flight on other
                // clients. Other workers' inserts are not read at all.
                let settled = if clients == 1 { run_start + seq } else { run_start };
                let unseen = run_start..run_start + share_start.min(seq);
                return self.ycsb.as_ref().expect("ycsb experiments have a generator").planned(run_start + seq, settled, &unseen);
            }
            ExperimentOp::Get => (Op::Get { table, key: self.dataset.key_at(table, self.read_order.apply(seq % self.preloaded)) }, loaded),
            ExperimentOp::Insert if self.sized && self.dataset.keys_shuffled() => {
                // The paper's insert: the N keys of `dbsweep gen keys N` in their
                // Fisher-Yates order, after the table's preloaded keys. The same keys in
                // every run, as the paper re-inserted its input; the runner removes them
                // after each run.
                let n = point.param.unwrap_or(self.ops).max(1);
                let key = self.dataset.initial_rows(table) as i64 + self.dataset.fisher_yates(n)[(seq % n) as usize] as i64;
                (Op::Insert { table, row: self.dataset.new_row(table, key) }, 1)
            }
            ExperimentOp::Insert => {
                let key = self.write_keys(point_index, run).start + self.write_order.apply(seq % self.run_span) as i64;
                (Op::Insert { table, row: self.dataset.new_row(table, key) }, 1)
            }
            // The run's keys are loaded before it starts (`rows_to_preload`).
            ExperimentOp::Delete => {
                let key = self.write_keys(point_index, run).start + self.write_order.apply(seq % self.run_span) as i64;
                (Op::Delete { table, key }, 1)
            }
            ExperimentOp::RangeRows | ExperimentOp::RangeCount | ExperimentOp::RangeMax => {
                let domain = self.dataset.column_domain(table, self.column);
                let span = (domain.end() - domain.start() + 1).max(1) as u64;
                let width = point.param.unwrap_or(1).clamp(1, span);
                let lo = domain.start() + self.stream.below(seq, 0, span - width + 1) as i64;
                let hi = lo + width as i64 - 1;
                let matching = self.range_counts().map_or(0, |c| c.count(lo, hi));
                let (agg, expected) = match self.op {
                    ExperimentOp::RangeRows => (RangeAgg::Rows, matching),
                    // A COUNT is checked by the count it answers, which a batch does not
                    // carry (see `Outcome::found_rows`).
                    ExperimentOp::RangeCount => (RangeAgg::Count, if point.batched { 0 } else { matching }),
                    _ => (RangeAgg::Max { column: self.max_column }, 0),
                };
                (Op::Range { table, column: self.column, lo, hi, agg }, expected)
            }
        };
        PlannedOp { op, expected_rows }
    }
}

#[cfg(test)]
mod tests;
