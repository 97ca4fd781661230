//! YCSB's CoreWorkload as a pure, seeded op generator over the `usertable`.
//!
//! Owns the workload (YCSB's property names and defaults, core workloads A–F; reading
//! workload files and `-p` properties is `ycsb_properties`) and `OpGen`, which turns a
//! sequence number into an op: the op type by proportion, the record by the request
//! distribution over records that exist at that sequence number. Must not hold state: any
//! client may execute any sequence number.
//!
//! Record numbers ("keynums"): records `0..recordcount` are loaded; the insert at sequence
//! number `s` inserts keynum `recordcount + s`, so the keynums that exist at sequence `q`
//! are the loaded ones plus `recordcount + s` for every insert sequence `s < q`. A keynum
//! becomes a key through `insertorder` (see `data::ycsb`).
//!
//! A worker of a run with workers (`--workers`) sends a contiguous share of the run's
//! sequence numbers while the others send theirs: the inserts of the shares before its own
//! (`unseen`) have not happened yet when it starts. It reads only records it knows exist:
//! the loaded ones, those inserted before the run, and its own inserts; the request
//! distribution is drawn over those (for "latest", its own last insert is the latest).
//! One process has no unseen sequence numbers and draws over every earlier insert.

use super::distribution::Distribution;
use crate::base::op::{Op, OpKind, PlannedOp};
use crate::base::rng::{Stream, hash_str};
use crate::base::table::{LazyValue, Row, TableDef, TableId};
use crate::base::zipfian::{ZIPFIAN_CONSTANT, Zeta, Zipfian};
use crate::data::ycsb::{self as data, FieldLengths, InsertOrder, Shape};
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::sync::Arc;

/// YCSB's `requestdistribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RequestDistribution {
    Uniform,
    Zipfian,
    Latest,
    Hotspot,
    Exponential,
    /// Record numbers in order, wrapping around (YCSB's SequentialGenerator).
    Sequential,
}

/// YCSB's `scanlengthdistribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScanLengthDistribution {
    Uniform,
    Zipfian,
}

/// A YCSB CoreWorkload configuration; field names are YCSB's property names. Reads fetch
/// whole records and updates write one field (YCSB's defaults `readallfields=true`,
/// `writeallfields=false`; the other values are refused when the properties are read).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Workload {
    pub recordcount: u64,
    pub operationcount: u64,
    pub readproportion: f64,
    pub updateproportion: f64,
    pub insertproportion: f64,
    pub scanproportion: f64,
    pub readmodifywriteproportion: f64,
    pub requestdistribution: RequestDistribution,
    pub minscanlength: u64,
    pub maxscanlength: u64,
    pub scanlengthdistribution: ScanLengthDistribution,
    pub fieldcount: usize,
    /// The length of every value, or the longest with varying lengths.
    pub fieldlength: usize,
    pub fieldlengthdistribution: FieldLengths,
    pub minfieldlength: usize,
    pub insertorder: InsertOrder,
    pub hotspotdatafraction: f64,
    pub hotspotopnfraction: f64,
    /// `exponential.percentile`.
    #[serde(rename = "exponential.percentile")]
    pub exponential_percentile: f64,
    /// `exponential.frac`.
    #[serde(rename = "exponential.frac")]
    pub exponential_frac: f64,
}

impl Default for Workload {
    /// CoreWorkload's defaults (recordcount/operationcount as in the core workload files).
    fn default() -> Self {
        Workload {
            recordcount: 1000,
            operationcount: 1000,
            readproportion: 0.95,
            updateproportion: 0.05,
            insertproportion: 0.0,
            scanproportion: 0.0,
            readmodifywriteproportion: 0.0,
            requestdistribution: RequestDistribution::Uniform,
            minscanlength: 1,
            maxscanlength: 1000,
            scanlengthdistribution: ScanLengthDistribution::Uniform,
            fieldcount: 10,
            fieldlength: 100,
            fieldlengthdistribution: FieldLengths::Constant,
            minfieldlength: 1,
            insertorder: InsertOrder::Hashed,
            hotspotdatafraction: 0.2,
            hotspotopnfraction: 0.8,
            exponential_percentile: 95.0,
            exponential_frac: 0.8571428571,
        }
    }
}

impl Workload {
    /// YCSB's core workload files `workloads/workload{a..f}`.
    pub fn core(letter: char) -> Result<Workload, String> {
        let base = Workload { requestdistribution: RequestDistribution::Zipfian, ..Workload::default() };
        let w = |r: f64, u: f64, i: f64, s: f64, m: f64| Workload {
            readproportion: r,
            updateproportion: u,
            insertproportion: i,
            scanproportion: s,
            readmodifywriteproportion: m,
            ..base.clone()
        };
        Ok(match letter.to_ascii_lowercase() {
            'a' => w(0.5, 0.5, 0.0, 0.0, 0.0),
            'b' => w(0.95, 0.05, 0.0, 0.0, 0.0),
            'c' => w(1.0, 0.0, 0.0, 0.0, 0.0),
            'd' => Workload { requestdistribution: RequestDistribution::Latest, ..w(0.95, 0.0, 0.05, 0.0, 0.0) },
            'e' => Workload { maxscanlength: 100, scanlengthdistribution: ScanLengthDistribution::Uniform, ..w(0.0, 0.0, 0.05, 0.95, 0.0) },
            'f' => w(0.5, 0.0, 0.0, 0.0, 0.5),
            other => return Err(format!("no YCSB core workload '{other}': use one of a, b, c, d, e, f")),
        })
    }

    /// The record shape: field count and value lengths.
    pub fn shape(&self) -> Result<Shape, String> {
        Shape::new(self.fieldcount, self.fieldlengthdistribution, self.minfieldlength, self.fieldlength)
    }

    /// Checks the values are usable: proportions sum > 0, at least one record and field,
    /// scan lengths ordered, value lengths in range.
    pub fn validate(&self) -> Result<(), String> {
        if self.total_proportion() <= 0.0 || !self.total_proportion().is_finite() {
            return Err("the operation proportions (read/update/insert/scan/readmodifywrite) sum to 0".into());
        }
        if self.recordcount == 0 {
            return Err("recordcount must be at least 1".into());
        }
        if self.fieldcount == 0 {
            return Err("fieldcount must be at least 1".into());
        }
        if self.minscanlength == 0 || self.maxscanlength < self.minscanlength {
            return Err(format!(
                "scan lengths must satisfy 1 <= minscanlength <= maxscanlength (got {} and {})",
                self.minscanlength, self.maxscanlength
            ));
        }
        self.shape().map(|_| ())
    }

    fn total_proportion(&self) -> f64 {
        self.readproportion + self.updateproportion + self.insertproportion + self.scanproportion + self.readmodifywriteproportion
    }
}

/// Loaded records whose keys `OpGen` keeps in a table (256 KiB): with hashed keys, an op
/// on one of them then costs a lookup instead of an FNV-64 hash.
const KEY_TABLE_MAX: u64 = 1 << 15;
/// Walk length bound when looking for the nearest earlier insert.
const WALK_LIMIT: u64 = 100_000;
/// Redraws of a zipfian record that does not exist yet before falling back to loaded ones.
const MAX_TRIES: u64 = 256;

/// Turns sequence numbers into ops of one workload. Pure: `op(seq)` depends only on the
/// workload, the seed and `seq`.
#[derive(Debug, Clone)]
pub struct OpGen {
    workload: Workload,
    seed: u64,
    table: TableId,
    shape: Shape,
    /// The op kinds of non-zero proportion in the order read, update, insert, scan,
    /// read-modify-write, each with its cumulative proportion (the upper end of its share).
    kinds: Box<[(f64, OpKind)]>,
    /// The sum of the proportions.
    total_proportion: f64,
    keys: Distribution,
    /// The keys of record numbers `0..` (at most `KEY_TABLE_MAX`), as `insertorder` makes them.
    key_table: Arc<[i64]>,
    scan_zipf: Option<Zipfian>,
    op_stream: Stream,
    key_stream: Stream,
    field_stream: Stream,
    scan_stream: Stream,
}

impl OpGen {
    pub fn new(workload: &Workload, seed: u64, table: TableId) -> Result<OpGen, String> {
        workload.validate()?;
        let w = workload;
        let proportions = [w.readproportion, w.updateproportion, w.insertproportion, w.scanproportion, w.readmodifywriteproportion];
        let all_kinds = [OpKind::Get, OpKind::Update, OpKind::Insert, OpKind::Scan, OpKind::ReadModifyWrite];
        let mut kinds = Vec::new();
        let mut cumulative = 0.0;
        for (p, kind) in proportions.into_iter().zip(all_kinds) {
            let below = cumulative;
            cumulative += p;
            // A kind whose share does not move the sum is never drawn (not even for a u
            // on a boundary).
            if cumulative > below {
                kinds.push((cumulative, kind));
            }
        }
        let keys = match w.requestdistribution {
            // Sequential draws nothing (see `keynum`).
            RequestDistribution::Uniform | RequestDistribution::Sequential => Distribution::uniform(),
            RequestDistribution::Zipfian => Distribution::zipfian(),
            RequestDistribution::Latest => Distribution::latest(),
            RequestDistribution::Hotspot => Distribution::hotspot(w.hotspotdatafraction, w.hotspotopnfraction),
            RequestDistribution::Exponential => {
                Distribution::exponential(w.exponential_percentile, w.recordcount as f64 * w.exponential_frac)
            }
        };
        let scan_zipf = (w.scanlengthdistribution == ScanLengthDistribution::Zipfian)
            .then(|| Zipfian::new(w.maxscanlength - w.minscanlength + 1, &Zeta::new(ZIPFIAN_CONSTANT)));
        let key_table = match w.insertorder {
            InsertOrder::Hashed => (0..w.recordcount.min(KEY_TABLE_MAX)).map(|k| w.insertorder.key(k)).collect(),
            InsertOrder::Ordered => Arc::default(),
        };
        Ok(OpGen {
            workload: w.clone(),
            seed,
            table,
            shape: w.shape()?,
            kinds: kinds.into(),
            total_proportion: cumulative,
            keys,
            key_table,
            scan_zipf,
            op_stream: Stream::new(seed, hash_str("ycsb.op")),
            key_stream: Stream::new(seed, hash_str("ycsb.key")),
            field_stream: Stream::new(seed, hash_str("ycsb.field")),
            scan_stream: Stream::new(seed, hash_str("ycsb.scan")),
        })
    }

    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The `usertable` definition for this workload's field count.
    pub fn table_def(&self) -> TableDef {
        data::table_def(self.workload.fieldcount)
    }

    /// The key of record number `keynum` (loaded: `< recordcount`; inserted at sequence
    /// `s`: `recordcount + s`).
    pub fn key_of(&self, keynum: u64) -> i64 {
        match self.key_table.get(keynum as usize) {
            Some(&key) => key,
            None => self.workload.insertorder.key(keynum),
        }
    }

    /// The row stored under `key` (loaded or inserted).
    pub fn row(&self, key: i64) -> Row {
        data::row(self.seed, key, &self.shape)
    }

    /// The `recordcount` rows of the load phase, streamed in record-number order.
    pub fn load_rows(&self) -> impl Iterator<Item = Row> + Send + 'static {
        let this = self.clone();
        (0..self.workload.recordcount).map(move |k| this.row(this.key_of(k)))
    }

    /// The kind of op at `seq` (cheap: one hash, none when the workload has one kind).
    pub fn kind(&self, seq: u64) -> OpKind {
        if let [(_, only)] = *self.kinds {
            return only;
        }
        let u = self.op_stream.unit(seq, 0) * self.total_proportion;
        match self.kinds.iter().find(|(upper, _)| u < *upper) {
            Some(&(_, kind)) => kind,
            None => self.kinds.last().map_or(OpKind::Get, |&(_, kind)| kind),
        }
    }

    /// The op at sequence number `seq`.
    pub fn op(&self, seq: u64) -> Op {
        self.planned(seq, seq, &(0..0)).op
    }

    /// The op at sequence number `seq` and the rows it must return or affect: an insert
    /// writes its record; a read, update, read-modify-write or scan finds its record (a
    /// scan at least its start) when that record is loaded or was inserted at a sequence
    /// number below `settled`. Records inserted in `settled..seq` may still be in flight on
    /// another client, so nothing is expected of them. Records inserted at `unseen`
    /// sequence numbers (other workers' shares) are never read.
    pub fn planned(&self, seq: u64, settled: u64, unseen: &Range<u64>) -> PlannedOp {
        let table = self.table;
        let rc = self.workload.recordcount;
        let present = |keynum: u64| u64::from(keynum < rc || keynum - rc < settled);
        let (op, expected_rows) = match self.kind(seq) {
            OpKind::Insert => {
                let key = self.key_of(rc + seq);
                (Op::Insert { table, row: self.row(key) }, 1)
            }
            OpKind::Update => {
                let (column, value) = self.new_field(seq);
                let keynum = self.keynum_seen(seq, unseen);
                (Op::Update { table, key: self.key_of(keynum), column, value }, present(keynum))
            }
            OpKind::ReadModifyWrite => {
                let (column, value) = self.new_field(seq);
                let keynum = self.keynum_seen(seq, unseen);
                (Op::ReadModifyWrite { table, key: self.key_of(keynum), column, value }, present(keynum))
            }
            OpKind::Scan => {
                let w = &self.workload;
                let span = w.maxscanlength - w.minscanlength + 1;
                let len = match &self.scan_zipf {
                    Some(z) => w.minscanlength + z.from_unit(self.scan_stream.unit(seq, 0)),
                    None => w.minscanlength + self.scan_stream.below(seq, 0, span),
                };
                let keynum = self.keynum_seen(seq, unseen);
                (Op::Scan { table, start: self.key_of(keynum), count: len as usize }, present(keynum))
            }
            _ => {
                let keynum = self.keynum_seen(seq, unseen);
                (Op::Get { table, key: self.key_of(keynum) }, present(keynum))
            }
        };
        PlannedOp { op, expected_rows }
    }

    /// One field (column index >= 1) and a fresh value for it, made when an adapter first
    /// reads it (as YCSB's values: a target that ignores it never pays for it).
    fn new_field(&self, seq: u64) -> (usize, LazyValue) {
        let field = self.field_stream.below(seq, 0, self.workload.fieldcount as u64) as usize;
        let len = self.shape.length(&self.field_stream, seq, 2);
        (field + 1, LazyValue::lazy(data::text_value, self.field_stream.u64(seq, 1), len))
    }

    /// Whether record number `keynum` exists when sequence number `seq` runs.
    pub fn exists(&self, keynum: u64, seq: u64) -> bool {
        self.seen(keynum, seq, &(0..0))
    }

    /// Whether record number `keynum` exists when sequence number `seq` runs and was not
    /// inserted at an `unseen` sequence number.
    fn seen(&self, keynum: u64, seq: u64, unseen: &Range<u64>) -> bool {
        let rc = self.workload.recordcount;
        keynum < rc || (keynum - rc < seq && !unseen.contains(&(keynum - rc)) && self.kind(keynum - rc) == OpKind::Insert)
    }

    /// The highest seen record number `<= keynum` at `seq` (walking back over non-insert
    /// sequence numbers, bounded, and jumping over the unseen ones; then the last loaded
    /// record).
    fn existing_at_or_below(&self, keynum: u64, seq: u64, unseen: &Range<u64>) -> u64 {
        let rc = self.workload.recordcount;
        let mut k = keynum.min(rc + seq.saturating_sub(1));
        if self.workload.insertproportion == 0.0 {
            return k.min(rc - 1);
        }
        let mut steps = 0;
        while k >= rc {
            if unseen.contains(&(k - rc)) {
                k = rc + unseen.start;
            } else if self.seen(k, seq, unseen) {
                return k;
            } else {
                steps += 1;
                if steps > WALK_LIMIT {
                    return rc - 1;
                }
            }
            k -= 1;
        }
        k
    }

    /// The record number a read/update/scan/read-modify-write at `seq` targets, drawn by
    /// the request distribution over the records that exist at `seq`, as CoreWorkload's
    /// `nextKeynum` does.
    pub fn keynum(&self, seq: u64) -> u64 {
        self.keynum_seen(seq, &(0..0))
    }

    /// As [`OpGen::keynum`], over the records not inserted at `unseen` sequence numbers:
    /// the distribution is drawn over the seen records as if the unseen ones were not
    /// there (the latest seen record stays the most likely for "latest").
    fn keynum_seen(&self, seq: u64, unseen: &Range<u64>) -> u64 {
        let w = &self.workload;
        let rc = w.recordcount;
        let s = &self.key_stream;
        match w.requestdistribution {
            // CoreWorkload draws these over the loaded records only.
            RequestDistribution::Uniform | RequestDistribution::Hotspot => self.keys.sample(s, seq, 0, rc),
            // One record after the other over the loaded records, wrapping around.
            RequestDistribution::Sequential => seq % rc,
            // Over a fixed space covering loaded and future records, redrawn while the
            // record does not exist yet (CoreWorkload: keychooser over
            // recordcount + expected new keys, `while keynum > last inserted`).
            RequestDistribution::Zipfian => {
                if w.insertproportion == 0.0 {
                    return self.keys.sample(s, seq, 0, rc);
                }
                let space = rc + w.operationcount.max(seq);
                for lane in 0..MAX_TRIES {
                    let k = self.keys.sample(s, seq, lane, space);
                    if self.seen(k, seq, unseen) {
                        return k;
                    }
                }
                self.keys.sample(s, seq, MAX_TRIES, rc)
            }
            // Relative to the last inserted record (SkewedLatestGenerator; exponential as
            // CoreWorkload uses it: last - x).
            RequestDistribution::Latest | RequestDistribution::Exponential => {
                let last = self.existing_at_or_below(rc + seq, seq, unseen);
                // Drawn over the seen records closed up, then mapped back past the gap.
                let gap = if last >= rc + unseen.end { unseen.end - unseen.start } else { 0 };
                let k = self.keys.sample(s, seq, 0, last - gap + 1);
                let k = if gap > 0 && k >= rc + unseen.start { k + gap } else { k };
                self.existing_at_or_below(k, seq, unseen)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Value;
    use std::collections::HashSet;

    fn kind_counts(g: &OpGen, n: u64) -> [u64; 5] {
        let mut c = [0u64; 5];
        for seq in 0..n {
            let i = match g.op(seq).kind() {
                OpKind::Get => 0,
                OpKind::Update => 1,
                OpKind::Insert => 2,
                OpKind::Scan => 3,
                OpKind::ReadModifyWrite => 4,
                k => panic!("unexpected {k:?}"),
            };
            c[i] += 1;
        }
        c
    }

    #[test]
    fn core_proportions_hold() {
        let n = 100_000u64;
        for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
            let w = Workload::core(letter).unwrap();
            let g = OpGen::new(&w, 42, 0).unwrap();
            let c = kind_counts(&g, n);
            let props = [w.readproportion, w.updateproportion, w.insertproportion, w.scanproportion, w.readmodifywriteproportion];
            for (i, p) in props.iter().enumerate() {
                let expect = n as f64 * p;
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!((c[i] as f64 - expect).abs() <= 4.0 * sd, "workload {letter}: kind {i} count {} expected {expect} (sd {sd})", c[i]);
            }
        }
    }

    #[test]
    fn core_workload_values() {
        let d = Workload::core('d').unwrap();
        assert_eq!(d.requestdistribution, RequestDistribution::Latest);
        assert_eq!((d.readproportion, d.insertproportion), (0.95, 0.05));
        let e = Workload::core('E').unwrap();
        assert_eq!((e.scanproportion, e.insertproportion, e.maxscanlength), (0.95, 0.05, 100));
        assert_eq!(e.requestdistribution, RequestDistribution::Zipfian);
        let f = Workload::core('f').unwrap();
        assert_eq!((f.readproportion, f.readmodifywriteproportion), (0.5, 0.5));
        assert_eq!((f.recordcount, f.operationcount, f.fieldcount, f.fieldlength), (1000, 1000, 10, 100));
        assert!(Workload::core('g').is_err());
    }

    /// Replays ops in order, tracking which keys exist.
    fn check_keys_exist(w: &Workload, seed: u64, n: u64) {
        let g = OpGen::new(w, seed, 3).unwrap();
        let mut live: HashSet<i64> = (0..w.recordcount).map(|k| g.key_of(k)).collect();
        assert_eq!(live.len() as u64, w.recordcount);
        let mut inserted_keys = 0;
        for seq in 0..n {
            match g.op(seq) {
                Op::Insert { table, row } => {
                    assert_eq!(table, 3);
                    assert_eq!(row.len(), w.fieldcount + 1);
                    let key = row[0].as_int().unwrap();
                    assert!(live.insert(key), "seq {seq}: insert of existing key {key}");
                    inserted_keys += 1;
                }
                Op::Get { key, .. } | Op::Update { key, .. } | Op::ReadModifyWrite { key, .. } => {
                    assert!(live.contains(&key), "seq {seq}: key {key} does not exist");
                }
                Op::Scan { start, count, .. } => {
                    assert!(live.contains(&start), "seq {seq}: scan start {start} does not exist");
                    assert!((w.minscanlength..=w.maxscanlength).contains(&(count as u64)));
                }
                op => panic!("unexpected {op:?}"),
            }
        }
        if w.insertproportion > 0.0 {
            assert!(inserted_keys > 0);
        }
    }

    #[test]
    fn keys_exist_for_every_core_workload_and_distribution() {
        for letter in ['a', 'b', 'c', 'd', 'e', 'f'] {
            check_keys_exist(&Workload::core(letter).unwrap(), 7, 20_000);
        }
        for dist in [
            RequestDistribution::Uniform,
            RequestDistribution::Zipfian,
            RequestDistribution::Latest,
            RequestDistribution::Hotspot,
            RequestDistribution::Exponential,
        ] {
            for order in [InsertOrder::Hashed, InsertOrder::Ordered] {
                let w = Workload {
                    recordcount: 100,
                    operationcount: 5000,
                    readproportion: 0.4,
                    updateproportion: 0.2,
                    insertproportion: 0.2,
                    scanproportion: 0.1,
                    readmodifywriteproportion: 0.1,
                    requestdistribution: dist,
                    scanlengthdistribution: ScanLengthDistribution::Zipfian,
                    maxscanlength: 50,
                    insertorder: order,
                    ..Workload::default()
                };
                check_keys_exist(&w, 9, 5000);
            }
        }
    }

    #[test]
    fn reads_expect_their_record_only_once_its_insert_has_settled() {
        for letter in ['a', 'd', 'e', 'f'] {
            let w = Workload { recordcount: 100, operationcount: 4000, ..Workload::core(letter).unwrap() };
            let g = OpGen::new(&w, 9, 0).unwrap();
            let run_start = 2000;
            for seq in 0..4000 {
                // One client: every earlier insert is done, so every read finds its record.
                let alone = g.planned(seq, seq, &(0..0));
                assert_eq!(alone.op, g.op(seq));
                // Several clients: only records loaded or inserted before the run started.
                let shared = g.planned(seq, seq.min(run_start), &(0..0));
                assert_eq!(shared.op, alone.op);
                let keynum = match &alone.op {
                    Op::Insert { .. } => {
                        assert_eq!((alone.expected_rows, shared.expected_rows), (1, 1), "an insert writes its record");
                        continue;
                    }
                    _ => g.keynum(seq),
                };
                assert_eq!(alone.expected_rows, 1, "workload {letter} seq {seq}");
                let settled = keynum < w.recordcount || keynum - w.recordcount < seq.min(run_start);
                assert_eq!(shared.expected_rows, u64::from(settled), "workload {letter} seq {seq} keynum {keynum}");
            }
        }
    }

    #[test]
    fn a_workers_share_reads_only_records_inserted_before_the_run_or_by_itself() {
        // A run of 3,000 sequence numbers from 6,000 on, of which this worker sends the
        // last third: the first two thirds are other workers' and unseen.
        let (run_start, share_start, end) = (6000u64, 8000u64, 9000u64);
        let unseen = run_start..share_start;
        for letter in ['d', 'e'] {
            let w = Workload { recordcount: 500, operationcount: 10_000, ..Workload::core(letter).unwrap() };
            let rc = w.recordcount;
            let g = OpGen::new(&w, 3, 0).unwrap();
            let (mut reads, mut own) = (0, 0);
            for seq in share_start..end {
                let planned = g.planned(seq, seq, &unseen);
                if matches!(planned.op, Op::Insert { .. }) {
                    continue;
                }
                let keynum = g.keynum_seen(seq, &unseen);
                reads += 1;
                assert!(keynum < rc + run_start || (rc + share_start..rc + seq).contains(&keynum), "workload {letter} seq {seq}: {keynum}");
                assert!(g.exists(keynum, seq), "workload {letter} seq {seq}: {keynum} was never inserted");
                assert_eq!(planned.expected_rows, 1, "one client: every record it reads is there");
                own += u64::from(keynum >= rc + share_start);
            }
            if letter == 'd' {
                // "Latest": the worker's own recent inserts are still the most read.
                assert!(own as f64 > 0.4 * reads as f64, "{own} of {reads}");
            }
        }
        // With nothing unseen, one process's records.
        let w = Workload { recordcount: 500, operationcount: 10_000, ..Workload::core('d').unwrap() };
        let g = OpGen::new(&w, 3, 0).unwrap();
        assert!((share_start..end).all(|seq| g.keynum_seen(seq, &(0..0)) == g.keynum(seq) && g.planned(seq, seq, &(0..0)).op == g.op(seq)));
    }

    #[test]
    fn latest_reads_recent_inserts() {
        let w = Workload { recordcount: 1000, operationcount: 20_000, ..Workload::core('d').unwrap() };
        let g = OpGen::new(&w, 5, 0).unwrap();
        let mut recent = 0;
        let mut reads = 0;
        for seq in 10_000..20_000 {
            if g.kind(seq) == OpKind::Get {
                reads += 1;
                // Within the last ~100 inserts (2,000 sequence numbers at 5%).
                if g.keynum(seq) + 2000 >= w.recordcount + seq {
                    recent += 1;
                }
            }
        }
        assert!(recent as f64 > 0.4 * reads as f64, "{recent} of {reads}");
    }

    #[test]
    fn zipfian_reads_are_skewed() {
        let g = OpGen::new(&Workload::core('c').unwrap(), 1, 0).unwrap();
        let mut c = vec![0u64; 1000];
        for seq in 0..100_000 {
            c[g.keynum(seq) as usize] += 1;
        }
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top10: u64 = c[..10].iter().sum();
        // Uniform would give 1,000 (1%); the scrambled zipfian gives over 10x that.
        assert!(top10 > 10_000, "{top10}");
    }

    #[test]
    fn ops_are_pure_and_seeded() {
        for letter in ['a', 'd', 'e', 'f'] {
            let w = Workload::core(letter).unwrap();
            let a = OpGen::new(&w, 1, 0).unwrap();
            let b = OpGen::new(&w, 1, 0).unwrap();
            let c = OpGen::new(&w, 2, 0).unwrap();
            let oa: Vec<Op> = (0..500).map(|s| a.op(s)).collect();
            // Out of order, as another client would.
            let ob: Vec<Op> = (0..500).rev().map(|s| b.op(s)).collect::<Vec<_>>().into_iter().rev().collect();
            let oc: Vec<Op> = (0..500).map(|s| c.op(s)).collect();
            assert_eq!(oa, ob);
            assert_ne!(oa, oc);
        }
    }

    #[test]
    fn updates_write_one_field_with_a_fresh_value() {
        let g = OpGen::new(&Workload::core('a').unwrap(), 3, 0).unwrap();
        let mut columns = HashSet::new();
        for seq in 0..2000 {
            if let Op::Update { key, column, value, .. } = g.op(seq) {
                assert!((1..=10).contains(&column));
                columns.insert(column);
                let Value::Text(s) = &*value else { panic!() };
                assert_eq!(s.len(), 100);
                assert_ne!(*value, g.row(key)[column]);
            }
        }
        assert_eq!(columns.len(), 10);
    }

    #[test]
    fn keys_from_the_table_and_beyond_it_are_insertorder_keys() {
        let w = Workload { recordcount: KEY_TABLE_MAX + 10, ..Workload::core('a').unwrap() };
        let g = OpGen::new(&w, 1, 0).unwrap();
        assert_eq!(g.key_table.len() as u64, KEY_TABLE_MAX);
        for keynum in [0, 1, 999, KEY_TABLE_MAX - 1, KEY_TABLE_MAX, KEY_TABLE_MAX + 9, KEY_TABLE_MAX + 10 + 7] {
            assert_eq!(g.key_of(keynum), crate::data::ycsb::hashed_key(keynum), "keynum {keynum}");
        }
        let ordered = OpGen::new(&Workload { insertorder: InsertOrder::Ordered, ..w }, 1, 0).unwrap();
        assert!(ordered.key_table.is_empty());
        assert_eq!(ordered.key_of(5), 5);
    }

    #[test]
    fn load_rows_stream_recordcount_rows() {
        let w = Workload { recordcount: 50, ..Workload::core('a').unwrap() };
        let g = OpGen::new(&w, 4, 0).unwrap();
        let rows: Vec<Row> = g.load_rows().collect();
        assert_eq!(rows.len(), 50);
        assert_eq!(rows[7][0], Value::Int(crate::data::ycsb::hashed_key(7)));
        assert_eq!(rows[7], g.row(g.key_of(7)));
        assert_eq!(g.table_def().columns.len(), 11);
        let ordered = OpGen::new(&Workload { insertorder: InsertOrder::Ordered, ..w }, 4, 0).unwrap();
        let keys: Vec<i64> = ordered.load_rows().map(|r| r[0].as_int().unwrap()).collect();
        assert_eq!(keys, (0..50).collect::<Vec<_>>());
    }

    #[test]
    fn sequential_walks_the_records_and_varying_lengths_reach_updates() {
        let w = Workload {
            recordcount: 7,
            requestdistribution: RequestDistribution::Sequential,
            fieldlengthdistribution: FieldLengths::Uniform,
            minfieldlength: 3,
            fieldlength: 9,
            ..Workload::core('a').unwrap()
        };
        let g = OpGen::new(&w, 2, 0).unwrap();
        let keynums: Vec<u64> = (0..10).map(|seq| g.keynum(seq)).collect();
        assert_eq!(keynums, [0, 1, 2, 3, 4, 5, 6, 0, 1, 2]);
        let mut lengths = HashSet::new();
        for seq in 0..500 {
            if let Op::Update { value, .. } = g.op(seq)
                && let Value::Text(v) = &*value
            {
                lengths.insert(v.len());
            }
        }
        assert_eq!(lengths, (3..=9).collect::<HashSet<usize>>());
        let bad = Workload { minfieldlength: 10, ..w };
        assert!(OpGen::new(&bad, 2, 0).unwrap_err().contains("minfieldlength"));
    }
}
