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
mod tests;
