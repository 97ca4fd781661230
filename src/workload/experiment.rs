//! Experiments: what a measured point asks of a target, and the seeded op stream for it.
//!
//! Owns the mapping (experiment, point, run, sequence number) -> `Op`, a pure function, so
//! every system and every run sees the same operations: read experiments replay identical
//! ops in every run; write experiments use disjoint key ranges per point and run, so no run
//! depends on another. Must not execute ops or time anything.

use crate::base::op::{Needs, Op, OpKind, QueryId, RangeAgg};
use crate::base::table::TableId;
use crate::data::Dataset;
use crate::workload::ycsb::{OpGen as YcsbGen, Workload};

/// A YCSB workload by core letter (`a`..`f`) or from a YCSB workload file.
pub fn load_ycsb_workload(spec: &str) -> Result<Workload, String> {
    let mut letters = spec.chars();
    match (letters.next(), letters.next()) {
        (Some(c), None) => Workload::core(c),
        _ => {
            let text = std::fs::read_to_string(spec).map_err(|e| format!("cannot read workload file {spec}: {e}"))?;
            let w = Workload::parse(&text).map_err(|e| format!("{spec}: {e}"))?;
            w.validate().map_err(|e| format!("{spec}: {e}"))?;
            Ok(w)
        }
    }
}
use crate::base::rng::{Permutation, Stream, hash_str};
use serde::{Deserialize, Serialize};

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

/// One parameter point of an experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Point {
    pub clients: usize,
    /// Ops per request.
    pub batch: usize,
    /// False: one op per request via `execute`; true: `execute_batch` (so batch 1 can be
    /// measured both ways — batching has a cost).
    pub batched: bool,
    /// Range width for range experiments.
    pub param: Option<u64>,
}

/// A validated experiment of a plan.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    pub op: ExperimentOp,
    /// YCSB experiments: the core workload letter or workload file.
    pub workload: Option<String>,
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
    /// them, delete removes min(`ops`, N) distinct ones, fetch-all reads what is left —
    /// with memory read before and after each.
    #[serde(default)]
    pub lifecycle: bool,
    /// Measured runs per point.
    pub runs: u32,
    /// Warm-up runs per point (not measured).
    pub warmup: u32,
    pub points: Vec<Point>,
}

/// Key-space stride between experiments that write: far above any preloaded key.
const EXPERIMENT_STRIDE: i64 = 1 << 40;

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
    dataset: Dataset,
    /// YCSB experiments: the workload's op generator.
    ycsb: Option<YcsbGen>,
    sized: bool,
    lifecycle: bool,
}

impl OpStream {
    pub fn new(experiment: &Experiment, experiment_index: usize, dataset: &Dataset, seed: u64, runs_per_point: u32) -> Self {
        let table = experiment.table;
        let preloaded = dataset.initial_rows(table).max(1);
        let stream_id = hash_str(&experiment.name);
        OpStream {
            op: experiment.op,
            table,
            column: experiment.column,
            max_column: experiment.max_column,
            preloaded,
            stream: Stream::new(seed, stream_id),
            read_order: Permutation::new(seed ^ stream_id, preloaded),
            write_order: Permutation::new(seed ^ stream_id ^ 1, experiment.ops.max(1)),
            write_base: EXPERIMENT_STRIDE * (experiment_index as i64 + 1),
            runs_per_point: runs_per_point as u64,
            ops: experiment.ops,
            sized: experiment.sized,
            lifecycle: experiment.lifecycle,
            dataset: dataset.clone(),
            ycsb: experiment.workload.as_deref().map(|w| {
                let mut workload = load_ycsb_workload(w).expect("workloads are validated in the plan");
                if let crate::data::DataSpec::Ycsb { recordcount, fieldcount, fieldlength, insertorder } = &dataset.spec {
                    workload.recordcount = *recordcount;
                    workload.fieldcount = *fieldcount;
                    workload.fieldlength = *fieldlength;
                    workload.insertorder = crate::data::ycsb::InsertOrder::parse(insertorder).unwrap_or_default();
                }
                workload.operationcount = experiment.ops * runs_per_point as u64 * experiment.points.len().max(1) as u64;
                YcsbGen::new(&workload, seed, table).expect("workloads are validated in the plan")
            }),
        }
    }

    /// Ops per run at a point: its size for sized experiments, else the experiment's.
    pub fn ops_at(&self, point: &Point) -> u64 {
        match (self.lifecycle, self.sized, point.param) {
            (true, _, Some(n)) => match self.op {
                ExperimentOp::Insert => n,
                ExperimentOp::Delete => self.ops.min(n),
                ExperimentOp::FetchAll => 1,
                _ => self.ops,
            },
            (false, true, Some(n)) => n,
            _ => self.ops,
        }
    }

    /// Lifecycle experiments: the op with sequence number `seq` over a table holding keys
    /// `0..records` (see `Experiment::lifecycle`).
    fn lifecycle_op(&self, records: u64, seq: u64) -> Op {
        let table = self.table;
        let records = records.max(1);
        match self.op {
            ExperimentOp::Insert => Op::Insert { table, row: self.dataset.new_row(table, seq as i64) },
            // Distinct keys spread evenly over the table.
            ExperimentOp::Delete => Op::Delete { table, key: (seq * (records / self.ops.min(records).max(1))) as i64 },
            ExperimentOp::FetchAll => Op::FetchAll { table },
            ExperimentOp::MultiGet => Op::MultiGet { table, keys: vec![self.stream.below(seq, 0, records) as i64] },
            _ => Op::Get { table, key: self.stream.below(seq, 0, records) as i64 },
        }
    }

    /// The YCSB workload of this stream, if it is one.
    pub fn workload(&self) -> Option<&Workload> {
        self.ycsb.as_ref().map(|g| g.workload())
    }

    /// Keys written (inserted, or pre-loaded then deleted) in one run of one point.
    pub fn write_keys(&self, point_index: usize, run: u32) -> std::ops::Range<i64> {
        let start = self.write_base + ((point_index as u64 * self.runs_per_point + run as u64) * self.ops) as i64;
        start..start + self.ops as i64
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
        let table = self.table;
        if let (true, Some(records)) = (self.lifecycle, point.param) {
            return self.lifecycle_op(records, seq);
        }
        match self.op {
            ExperimentOp::FetchAll => Op::FetchAll { table },
            ExperimentOp::Echo => Op::Echo,
            ExperimentOp::TpchQ1 | ExperimentOp::TpchQ3 | ExperimentOp::TpchQ6 | ExperimentOp::TpchQ14 => {
                Op::Query(self.op.query().expect("query experiments name a query"))
            }
            ExperimentOp::MultiGet => {
                let count = point.param.unwrap_or(1).min(self.preloaded);
                let first = seq * count;
                let keys = (first..first + count).map(|i| self.dataset.key_at(table, self.read_order.apply(i % self.preloaded))).collect();
                Op::MultiGet { table, keys }
            }
            ExperimentOp::Ycsb => {
                // Every run of every point continues the workload's sequence, so inserted
                // keys never repeat across runs.
                let global = (point_index as u64 * self.runs_per_point + run as u64) * self.ops + seq;
                self.ycsb.as_ref().expect("ycsb experiments have a generator").op(global)
            }
            ExperimentOp::Get => Op::Get { table, key: self.dataset.key_at(table, self.read_order.apply(seq % self.preloaded)) },
            ExperimentOp::Insert => {
                let key = self.write_keys(point_index, run).start + self.write_order.apply(seq % self.ops) as i64;
                Op::Insert { table, row: self.dataset.new_row(table, key) }
            }
            ExperimentOp::Delete => {
                let key = self.write_keys(point_index, run).start + self.write_order.apply(seq % self.ops) as i64;
                Op::Delete { table, key }
            }
            ExperimentOp::RangeRows | ExperimentOp::RangeCount | ExperimentOp::RangeMax => {
                let domain = self.dataset.column_domain(table, self.column);
                let span = (domain.end() - domain.start() + 1).max(1) as u64;
                let width = point.param.unwrap_or(1).clamp(1, span);
                let lo = domain.start() + self.stream.below(seq, 0, span - width + 1) as i64;
                let agg = match self.op {
                    ExperimentOp::RangeRows => RangeAgg::Rows,
                    ExperimentOp::RangeCount => RangeAgg::Count,
                    _ => RangeAgg::Max { column: self.max_column },
                };
                Op::Range { table, column: self.column, lo, hi: lo + width as i64 - 1, agg }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DataSpec;

    fn experiment(op: ExperimentOp) -> Experiment {
        Experiment {
            name: format!("{op:?}"),
            op,
            workload: None,
            sized: false,
            lifecycle: false,
            table: 0,
            column: crate::data::kv::GROUP,
            max_column: crate::data::kv::VALUE,
            runs: 3,
            warmup: 1,
            ops: 100,
            points: vec![Point { clients: 1, batch: 1, batched: false, param: Some(5) }],
        }
    }

    fn dataset() -> Dataset {
        Dataset::new(&DataSpec::Kv { rows: 1000, payload_bytes: 10 }, 1)
    }

    #[test]
    fn same_spec_gives_same_ops_and_reads_repeat_across_runs() {
        let e = experiment(ExperimentOp::Get);
        let a = OpStream::new(&e, 0, &dataset(), 9, 4);
        let b = OpStream::new(&e, 0, &dataset(), 9, 4);
        let p = e.points[0];
        let run1: Vec<Op> = (0..100).map(|s| a.op(&p, 0, 1, s)).collect();
        assert_eq!(run1, (0..100).map(|s| b.op(&p, 0, 1, s)).collect::<Vec<_>>());
        assert_eq!(run1, (0..100).map(|s| a.op(&p, 0, 2, s)).collect::<Vec<_>>(), "reads repeat per run");
        let other_seed = OpStream::new(&e, 0, &dataset(), 10, 4);
        assert_ne!(run1, (0..100).map(|s| other_seed.op(&p, 0, 1, s)).collect::<Vec<_>>());
    }

    #[test]
    fn gets_never_repeat_a_key_within_a_batch_window() {
        let e = experiment(ExperimentOp::Get);
        let s = OpStream::new(&e, 0, &dataset(), 3, 4);
        let keys: std::collections::HashSet<i64> = (0..1000)
            .map(|seq| match s.op(&e.points[0], 0, 0, seq) {
                Op::Get { key, .. } => key,
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(keys.len(), 1000);
    }

    #[test]
    fn writes_use_disjoint_keys_per_run_and_point() {
        let e = experiment(ExperimentOp::Insert);
        let s = OpStream::new(&e, 0, &dataset(), 3, 4);
        let mut all = std::collections::HashSet::new();
        for point in 0..3 {
            for run in 0..4 {
                for seq in 0..100 {
                    let Op::Insert { row, .. } = s.op(&e.points[0], point, run, seq) else { unreachable!() };
                    assert!(all.insert(row[0].as_int().unwrap()), "key reused");
                }
            }
        }
        assert!(all.iter().all(|k| *k >= 1000), "writes collide with preloaded keys");
    }

    #[test]
    fn lifecycle_phases_write_all_keys_then_read_and_delete_among_them() {
        let n = 1000u64;
        let phase = |op| Experiment {
            lifecycle: true,
            ops: 30,
            points: vec![Point { clients: 1, batch: 1, batched: false, param: Some(n) }],
            ..experiment(op)
        };
        let data = Dataset::new(&DataSpec::Pairs { rows: 0, value_bytes: 20 }, 1);
        let stream = |op| {
            let e = phase(op);
            (OpStream::new(&e, 1, &data, 7, 3), e.points[0])
        };
        let (writes, p) = stream(ExperimentOp::Insert);
        assert_eq!(writes.ops_at(&p), n, "write-all writes N pairs");
        let keys: Vec<i64> = (0..n)
            .map(|seq| match writes.op(&p, 0, 2, seq) {
                Op::Insert { row, .. } => row[0].as_int().unwrap(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(keys, (0..n as i64).collect::<Vec<_>>(), "keys 0..N, the same in every run");
        let (reads, p) = stream(ExperimentOp::Get);
        assert_eq!(reads.ops_at(&p), 30);
        assert!((0..30).all(|seq| matches!(reads.op(&p, 0, 0, seq), Op::Get { key, .. } if (0..n as i64).contains(&key))));
        let (deletes, p) = stream(ExperimentOp::Delete);
        let deleted: std::collections::HashSet<i64> = (0..deletes.ops_at(&p))
            .map(|seq| match deletes.op(&p, 0, 0, seq) {
                Op::Delete { key, .. } => key,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(deleted.len(), 30, "distinct keys");
        assert!(deleted.iter().all(|k| (0..n as i64).contains(k)));
        let (fetch, p) = stream(ExperimentOp::FetchAll);
        assert_eq!(fetch.ops_at(&p), 1);
        assert_eq!(fetch.op(&p, 0, 0, 0), Op::FetchAll { table: 0 });
    }

    #[test]
    fn ranges_have_the_point_width() {
        let e = experiment(ExperimentOp::RangeCount);
        let s = OpStream::new(&e, 0, &dataset(), 3, 4);
        for seq in 0..100 {
            let Op::Range { lo, hi, .. } = s.op(&e.points[0], 0, 0, seq) else { unreachable!() };
            assert_eq!(hi - lo + 1, 5);
            assert!(lo >= 0 && hi < 100);
        }
    }

    #[test]
    fn tpch_experiments_run_their_query_and_need_it_declared() {
        let ops = [ExperimentOp::TpchQ1, ExperimentOp::TpchQ3, ExperimentOp::TpchQ6, ExperimentOp::TpchQ14];
        let ids = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];
        for (op, id) in ops.into_iter().zip(ids) {
            assert_eq!(op.query(), Some(id));
            assert_eq!(op.kind(), OpKind::Query);
            assert!(!op.writes() && !op.is_range());
            let e = experiment(op);
            let s = OpStream::new(&e, 0, &dataset(), 3, 4);
            assert!((0..5).all(|seq| s.op(&e.points[0], 0, 1, seq) == Op::Query(id)), "{op:?}");
        }
        let q14: ExperimentOp = serde_json::from_str("\"tpch_q14\"").unwrap();
        assert_eq!(q14, ExperimentOp::TpchQ14);
        // Each query experiment needs its own query (a system may run Q1 but not Q14).
        assert_eq!(ExperimentOp::TpchQ14.needs(None), Needs::Query(QueryId::TpchQ14));
        assert_eq!(ExperimentOp::Get.needs(None), Needs::Kinds(vec![OpKind::Get]));
    }
}
