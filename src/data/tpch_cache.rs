//! The TPC-H cache: the eight tables of one scale factor, generated once into dbgen's
//! `.tbl` files (byte for byte what `dbgen` and `tpchgen-cli` write), with a manifest of
//! their row counts, sizes, the value domain of every numeric column and the exact
//! reference answers of the study's queries; read back as rows by every later run.
//!
//! Why: generating a comment builds tpchgen's 300 MB text pool, once per process. A run
//! that generated its rows paid those 300 MB at any scale and generated on the cores the
//! server needs while loading. Now the pool lives only in the process that fills the cache
//! (`dbsweep gen tpch`, started by a run as a child process when the cache lacks its scale
//! factor), and runs stream finished files, as `psql \copy` does.
//!
//! Owns the cache's place (`$DBSWEEP_CACHE`, else `~/.cache/dbsweep`, next to the native
//! servers' `native/`; then `tpch/sf<SCALE>`), its lock (one generator per scale factor at
//! a time, others wait), writing it (into `sf<SCALE>.partial`, renamed when complete, so a
//! half-written cache is never read), checking it and reading it. Must not know about
//! backends, and must not generate rows in a run's process when a generator program is
//! set ([`generate_in_child_process`]).

use super::tpch::{self, TABLE_NAMES};
use super::tpch_reference;
use crate::base::op::{Answer, QueryId};
use crate::base::table::{ColumnType, Date, Decimal, Row, Value};
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator, PartSuppGenerator, RegionGenerator,
    SupplierGenerator,
};

/// Bumped when the files or the manifest change meaning; an older cache is generated again.
const FORMAT: u32 = 1;

/// The generator behind the files; a cache from another version is generated again.
const GENERATOR: &str = "tpchgen 4.0.0";

const MANIFEST: &str = "manifest.json";

/// The queries whose reference answers the manifest keeps.
const QUERIES: [QueryId; 4] = [QueryId::TpchQ1, QueryId::TpchQ3, QueryId::TpchQ6, QueryId::TpchQ14];

/// The program that fills the cache in its own process (`PROGRAM gen tpch --scale SF`),
/// set once by the `dbsweep` binary; unset (library users, tests), the calling process
/// generates.
static GENERATOR_PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Makes every later cache miss run `program gen tpch` instead of generating here, so the
/// text pool never enters this process.
pub fn generate_in_child_process(program: PathBuf) {
    let _ = GENERATOR_PROGRAM.set(program);
}

/// The cache's root directory.
pub fn root() -> Result<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = var("DBSWEEP_CACHE") {
        return Ok(dir);
    }
    if let Some(home) = var("HOME") {
        return Ok(home.join(".cache").join("dbsweep"));
    }
    Err(Error::usage("no place for dbsweep's data cache: set DBSWEEP_CACHE (or HOME) to a writable directory"))
}

/// The directory of one scale factor's tables under `root`.
pub fn dir_for(root: &Path, scale: f64) -> PathBuf {
    root.join("tpch").join(format!("sf{scale}"))
}

/// One table's file as the manifest records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct TableFile {
    name: String,
    rows: u64,
    bytes: u64,
}

/// A reference answer's cell with its type kept (report.json's untagged values would read
/// a date back as an integer).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum StoredValue {
    Null,
    Int(i64),
    Float(f64),
    Decimal(i64),
    Text(String),
    Date(i32),
}

impl StoredValue {
    fn of(v: &Value) -> Self {
        match v {
            Value::Null => StoredValue::Null,
            Value::Int(i) => StoredValue::Int(*i),
            Value::Float(f) => StoredValue::Float(*f),
            Value::Decimal(d) => StoredValue::Decimal(d.0),
            Value::Text(t) => StoredValue::Text(t.to_string()),
            Value::Date(d) => StoredValue::Date(d.0),
        }
    }

    fn value(&self) -> Value {
        match self {
            StoredValue::Null => Value::Null,
            StoredValue::Int(i) => Value::Int(*i),
            StoredValue::Float(f) => Value::Float(*f),
            StoredValue::Decimal(d) => Value::Decimal(Decimal(*d)),
            StoredValue::Text(t) => Value::Text(t.as_str().into()),
            StoredValue::Date(d) => Value::Date(Date(*d)),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    generator: String,
    scale: f64,
    /// In dataset order.
    tables: Vec<TableFile>,
    /// Per table, per column: `min..=max` of a numeric column (hundredths for decimals,
    /// days for dates); `None` for text.
    domains: Vec<Vec<Option<(i64, i64)>>>,
    /// Reference answers, by query name (`TpchQ1`, ...).
    answers: Vec<(String, Vec<Vec<StoredValue>>)>,
}

/// One scale factor's tables on disk, checked against its manifest.
#[derive(Debug)]
pub struct TpchCache {
    dir: PathBuf,
    manifest: Manifest,
}

impl TpchCache {
    /// The cache of `scale` under `root` if it is complete and current (format, generator
    /// and file sizes as the manifest says); `None` otherwise.
    pub fn open(root: &Path, scale: f64) -> Option<TpchCache> {
        let dir = dir_for(root, scale);
        let manifest: Manifest = serde_json::from_slice(&fs::read(dir.join(MANIFEST)).ok()?).ok()?;
        let current = manifest.format == FORMAT
            && manifest.generator == GENERATOR
            && manifest.scale == scale
            && manifest.tables.len() == TABLE_NAMES.len()
            && manifest
                .tables
                .iter()
                .zip(TABLE_NAMES)
                .all(|(t, name)| t.name == name && fs::metadata(dir.join(file_name(name))).is_ok_and(|m| m.len() == t.bytes));
        current.then_some(TpchCache { dir, manifest })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Rows of `table` as the manifest counted them.
    pub fn rows(&self, table: usize) -> u64 {
        self.manifest.tables[table].rows
    }

    /// Bytes of all files.
    pub fn bytes(&self) -> u64 {
        self.manifest.tables.iter().map(|t| t.bytes).sum()
    }

    /// The path of `table`'s `.tbl` file.
    pub fn file(&self, table: usize) -> PathBuf {
        self.dir.join(file_name(TABLE_NAMES[table]))
    }

    /// `min..=max` of a numeric column; `None` for a text column.
    pub fn domain(&self, table: usize, column: usize) -> Option<(i64, i64)> {
        self.manifest.domains[table][column]
    }

    /// The exact reference answer of `query` at this scale factor.
    pub fn answer(&self, query: QueryId) -> Answer {
        let name = format!("{query:?}");
        let (_, rows) = self.manifest.answers.iter().find(|(q, _)| *q == name).expect("every query's answer is in the manifest");
        Answer::Table(rows.iter().map(|r| r.iter().map(StoredValue::value).collect()).collect())
    }

    /// All rows of `table` in generation order, read from its file (with the study's
    /// artificial key for `partsupp` and `lineitem`). A read or parse error ends the
    /// stream early, with the reason logged; loaders check the row count.
    pub fn stream(&self, table: usize) -> Box<dyn Iterator<Item = Row> + Send> {
        let path = self.file(table);
        match File::open(&path) {
            Ok(file) => Box::new(TblRows::new(table, BufReader::with_capacity(1 << 18, file), path)),
            Err(e) => {
                tracing::error!("reading {}: {e}", path.display());
                Box::new(std::iter::empty())
            }
        }
    }
}

fn file_name(table: &str) -> String {
    format!("{table}.tbl")
}

/// The cache of `scale`, generated first when missing: by the generator program in a
/// child process when one is set, else here. Setting `cancel` stops a generation within
/// a tenth of a second (the child is killed, its partial files removed) with an error.
pub fn ensure(scale: f64, cancel: &AtomicBool) -> Result<TpchCache> {
    let root = root()?;
    if let Some(cache) = TpchCache::open(&root, scale) {
        return Ok(cache);
    }
    match GENERATOR_PROGRAM.get() {
        Some(program) => generate_in_child(program, &root, scale, cancel)?,
        None => generate_here(&root, scale, cancel)?,
    }
    TpchCache::open(&root, scale)
        .ok_or_else(|| Error::runtime(format!("the TPC-H cache in {} is incomplete after generating it", dir_for(&root, scale).display())))
}

/// How often a waiting generator looks at `cancel`.
const POLL: Duration = Duration::from_millis(50);

fn stopped() -> Error {
    Error::runtime("stopped while generating the TPC-H data")
}

/// How long a stopped generator gets to remove its partial files before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(2);

fn generate_in_child(program: &Path, root: &Path, scale: f64, cancel: &AtomicBool) -> Result<()> {
    let mut command = Command::new(program);
    command
        .args(["gen", "tpch", "--scale", &scale.to_string()])
        .env("DBSWEEP_CACHE", root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to send the generator
    // SIGTERM (on which it removes its partial files and exits) when the thread that
    // started it ends, so a run that exits or is killed leaves no generator behind.
    unsafe {
        use std::os::unix::process::CommandExt;
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|e| Error::runtime(format!("starting {} gen tpch: {e}", program.display())))?;
    let mut stopping_since: Option<std::time::Instant> = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::runtime(format!("waiting for gen tpch: {e}")))? {
            break status;
        }
        if cancel.load(Ordering::Relaxed) {
            match stopping_since {
                None => {
                    // SAFETY: signals the child this function started and has not reaped.
                    unsafe {
                        libc::kill(child.id() as i32, libc::SIGTERM);
                    }
                    stopping_since = Some(std::time::Instant::now());
                }
                Some(since) if since.elapsed() > STOP_GRACE => {
                    let _ = child.kill();
                }
                Some(_) => {}
            }
        }
        std::thread::sleep(POLL);
    };
    if stopping_since.is_some() {
        remove_partial_if_unlocked(root, scale);
        return Err(stopped());
    }
    if status.success() {
        return Ok(());
    }
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    let reason = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim().to_string();
    Err(Error::runtime(format!("generating TPC-H SF {scale} into {} failed ({status}): {reason}", dir_for(root, scale).display())))
}

fn partial_dir(root: &Path, scale: f64) -> PathBuf {
    root.join("tpch").join(format!("sf{scale}.partial"))
}

fn lock_path(root: &Path, scale: f64) -> PathBuf {
    root.join("tpch").join(format!("sf{scale}.lock"))
}

/// After a stopped generator: its partial files (if it was killed before it removed them
/// itself), unless another generator has taken over.
fn remove_partial_if_unlocked(root: &Path, scale: f64) {
    if let Ok(lock) = File::options().read(true).write(true).open(lock_path(root, scale))
        && lock.try_lock().is_ok()
    {
        let _ = fs::remove_dir_all(partial_dir(root, scale));
    }
}

/// Generates the cache of `scale` under `root` in this process (what `dbsweep gen tpch`
/// does), unless it is already there. One generator per scale factor at a time: a second
/// one waits for the lock, then finds the cache complete.
pub fn generate_here(root: &Path, scale: f64, cancel: &AtomicBool) -> Result<()> {
    tpch::check_scale(scale).map_err(Error::usage)?;
    let tpch_dir = root.join("tpch");
    fs::create_dir_all(&tpch_dir).map_err(|e| Error::runtime(format!("creating {}: {e}", tpch_dir.display())))?;
    let lock_file = lock_path(root, scale);
    let lock = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock_file)
        .map_err(|e| Error::runtime(format!("opening {}: {e}", lock_file.display())))?;
    while lock.try_lock().is_err() {
        if cancel.load(Ordering::Relaxed) {
            return Err(stopped());
        }
        std::thread::sleep(POLL);
    }
    if TpchCache::open(root, scale).is_some() {
        return Ok(());
    }
    let partial = partial_dir(root, scale);
    let io = |what: &str, path: &Path, e: std::io::Error| Error::runtime(format!("{what} {}: {e}", path.display()));
    if partial.exists() {
        fs::remove_dir_all(&partial).map_err(|e| io("removing", &partial, e))?;
    }
    fs::create_dir(&partial).map_err(|e| io("creating", &partial, e))?;
    let written = write_tables(&partial, scale, cancel);
    let manifest = match written {
        Ok(manifest) => manifest,
        Err(e) => {
            let _ = fs::remove_dir_all(&partial);
            return Err(e);
        }
    };
    let text = serde_json::to_vec_pretty(&manifest).expect("the manifest serializes");
    fs::write(partial.join(MANIFEST), text).map_err(|e| io("writing", &partial.join(MANIFEST), e))?;
    let dir = dir_for(root, scale);
    // An outdated cache of this scale (older format or generator): ours to replace.
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| io("removing the outdated", &dir, e))?;
    }
    fs::rename(&partial, &dir).map_err(|e| io("renaming the generated tables to", &dir, e))?;
    Ok(())
}

/// Writes the eight files into `dir` and computes the manifest: the tables and the
/// reference answers on threads of their own (the generator's text pool is shared).
fn write_tables(dir: &Path, scale: f64, cancel: &AtomicBool) -> Result<Manifest> {
    let defs = tpch::table_defs();
    // Not joined on a stop: the answers cannot be interrupted, and the process ends soon.
    let answers = std::thread::spawn(move || reference_answers(scale));
    let files = std::thread::scope(|s| {
        // lineitem alone is about as much work as the other seven tables.
        let lineitem = s.spawn(|| write_table(dir, scale, tpch::LINEITEM, &defs[tpch::LINEITEM].columns, cancel));
        let mut files: Vec<Result<WrittenTable>> =
            (0..tpch::LINEITEM).map(|t| write_table(dir, scale, t, &defs[t].columns, cancel)).collect();
        files.push(lineitem.join().expect("the lineitem writer does not panic"));
        files
    });
    let (tables, domains): (Vec<TableFile>, Vec<_>) = files.into_iter().collect::<Result<Vec<_>>>()?.into_iter().unzip();
    if cancel.load(Ordering::Relaxed) {
        return Err(stopped());
    }
    let answers = answers.join().expect("the reference answers do not panic");
    let answers = QUERIES
        .iter()
        .zip(answers)
        .map(|(q, answer)| {
            let Answer::Table(rows) = answer else { unreachable!("TPC-H reference answers are tables") };
            (format!("{q:?}"), rows.iter().map(|r| r.iter().map(StoredValue::of).collect()).collect())
        })
        .collect();
    Ok(Manifest { format: FORMAT, generator: GENERATOR.into(), scale, tables, domains, answers })
}

/// The reference answers of [`QUERIES`], in that order.
fn reference_answers(scale: f64) -> Vec<Answer> {
    let (q1, q6) = tpch_reference::q1_q6(scale);
    vec![q1, tpch_reference::q3(scale), q6, tpch_reference::q14(scale)]
}

/// A table's written file and its numeric columns' domains (min, max; `None` for other
/// columns).
type WrittenTable = (TableFile, Vec<Option<(i64, i64)>>);

/// Writes one table's file (each generated row's dbgen line) and folds its rows into the
/// numeric columns' domains.
fn write_table(dir: &Path, scale: f64, table: usize, columns: &[crate::base::table::Column], cancel: &AtomicBool) -> Result<WrittenTable> {
    let path = dir.join(file_name(TABLE_NAMES[table]));
    let file = File::create(&path).map_err(|e| Error::runtime(format!("creating {}: {e}", path.display())))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut domains: Vec<Option<(i64, i64)>> = vec![None; columns.len()];
    let mut rows = 0u64;
    let mut failed: Option<std::io::Error> = None;
    let mut emit = |line: &dyn std::fmt::Display, row: Row| {
        if failed.is_some() {
            return;
        }
        if let Err(e) = writeln!(out, "{line}") {
            failed = Some(e);
        }
        for (d, v) in domains.iter_mut().zip(&row) {
            if let Some(x) = numeric(v) {
                *d = Some(d.map_or((x, x), |(lo, hi)| (lo.min(x), hi.max(x))));
            }
        }
        rows += 1;
    };
    match table {
        tpch::REGION => until_stopped(RegionGenerator::new(scale, 1, 1).iter(), cancel, |r| emit(&r, tpch::region_row(&r))),
        tpch::NATION => until_stopped(NationGenerator::new(scale, 1, 1).iter(), cancel, |n| emit(&n, tpch::nation_row(&n))),
        tpch::SUPPLIER => until_stopped(SupplierGenerator::new(scale, 1, 1).iter(), cancel, |s| emit(&s, tpch::supplier_row(&s))),
        tpch::CUSTOMER => until_stopped(CustomerGenerator::new(scale, 1, 1).iter(), cancel, |c| emit(&c, tpch::customer_row(&c))),
        tpch::PART => until_stopped(PartGenerator::new(scale, 1, 1).iter(), cancel, |p| emit(&p, tpch::part_row(&p))),
        tpch::PARTSUPP => {
            until_stopped(PartSuppGenerator::new(scale, 1, 1).iter().zip(1..), cancel, |(ps, pk)| emit(&ps, tpch::partsupp_row(pk, &ps)))
        }
        tpch::ORDERS => until_stopped(OrderGenerator::new(scale, 1, 1).iter(), cancel, |o| emit(&o, tpch::orders_row(&o))),
        tpch::LINEITEM => {
            until_stopped(LineItemGenerator::new(scale, 1, 1).iter().zip(1..), cancel, |(l, pk)| emit(&l, tpch::lineitem_row(pk, &l)))
        }
        _ => unreachable!("TPC-H has 8 tables"),
    }
    if cancel.load(Ordering::Relaxed) {
        return Err(stopped());
    }
    if let Some(e) = failed {
        return Err(Error::runtime(format!("writing {}: {e}", path.display())));
    }
    let file = out.into_inner().map_err(|e| Error::runtime(format!("writing {}: {e}", path.display())))?;
    file.sync_all().map_err(|e| Error::runtime(format!("writing {}: {e}", path.display())))?;
    let bytes = file.metadata().map_err(|e| Error::runtime(format!("reading {}: {e}", path.display())))?.len();
    Ok((TableFile { name: TABLE_NAMES[table].into(), rows, bytes }, domains))
}

/// Calls `each` on every item until `cancel` is set, looked at every 4096 items: a stop
/// request ends a large table within milliseconds.
fn until_stopped<T>(items: impl Iterator<Item = T>, cancel: &AtomicBool, mut each: impl FnMut(T)) {
    for (i, item) in items.enumerate() {
        if i % 4096 == 0 && cancel.load(Ordering::Relaxed) {
            return;
        }
        each(item);
    }
}

/// A numeric cell as an integer (hundredths for decimals, days for dates).
fn numeric(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Decimal(d) => Some(d.0),
        Value::Date(d) => Some(d.0.into()),
        _ => None,
    }
}

/// Rows parsed from a `.tbl` file: `|`-separated fields with a trailing `|`, in the
/// table's column order after the artificial key (for `partsupp` and `lineitem`, the
/// 1-based line number).
struct TblRows<R> {
    table: usize,
    types: Vec<ColumnType>,
    /// Whether the first column is the artificial key (not in the file).
    artificial_key: bool,
    reader: R,
    line: String,
    number: i64,
    path: PathBuf,
}

impl<R: BufRead> TblRows<R> {
    fn new(table: usize, reader: R, path: PathBuf) -> Self {
        let types: Vec<ColumnType> = tpch::table_defs()[table].columns.iter().map(|c| c.ty).collect();
        TblRows {
            table,
            types,
            artificial_key: matches!(table, tpch::PARTSUPP | tpch::LINEITEM),
            reader,
            line: String::with_capacity(256),
            number: 0,
            path,
        }
    }

    fn parse(&self) -> Option<Row> {
        let mut row = Vec::with_capacity(self.types.len());
        let mut types = self.types.iter();
        if self.artificial_key {
            types.next();
            row.push(Value::Int(self.number));
        }
        let mut fields = self.line.trim_end_matches('\n').split('|');
        for ty in types {
            let field = fields.next()?;
            row.push(match ty {
                ColumnType::Int => Value::Int(field.parse().ok()?),
                ColumnType::Decimal => Value::Decimal(parse_hundredths(field)?),
                ColumnType::Date => Value::Date(Date::from_iso(field)?),
                ColumnType::Text => Value::Text(field.into()),
                other => unreachable!("TPC-H has no {other:?} column"),
            });
        }
        // dbgen ends every line with a separator: exactly one empty field is left.
        (fields.next() == Some("") && fields.next().is_none()).then_some(row)
    }
}

impl<R: BufRead> Iterator for TblRows<R> {
    type Item = Row;

    fn next(&mut self) -> Option<Row> {
        self.line.clear();
        match self.reader.read_line(&mut self.line) {
            Ok(0) => None,
            Ok(_) => {
                self.number += 1;
                let row = self.parse();
                if row.is_none() {
                    tracing::error!("{} line {}: not a {} row: {:?}", self.path.display(), self.number, TABLE_NAMES[self.table], self.line);
                }
                row
            }
            Err(e) => {
                tracing::error!("reading {}: {e}", self.path.display());
                None
            }
        }
    }
}

/// `12.34`, `-0.50` or `17` (dbgen writes quantities as integers) in hundredths.
fn parse_hundredths(field: &str) -> Option<Decimal> {
    let (negative, digits) = match field.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, field),
    };
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "00"));
    if fraction.len() != 2 || !fraction.bytes().all(|b| b.is_ascii_digit()) || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = whole.parse::<i64>().ok()?.checked_mul(100)?.checked_add(fraction.parse::<i64>().ok()?)?;
    Some(Decimal(if negative { -value } else { value }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hundredths_parse_dbgen_decimals_and_integer_quantities() {
        assert_eq!(parse_hundredths("12.34"), Some(Decimal(1234)));
        assert_eq!(parse_hundredths("-999.07"), Some(Decimal(-99907)));
        assert_eq!(parse_hundredths("0.05"), Some(Decimal(5)));
        assert_eq!(parse_hundredths("17"), Some(Decimal(1700)));
        for bad in ["", "1.2", "1.234", "a.00", "1,00", "--1.00"] {
            assert_eq!(parse_hundredths(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn a_line_parses_into_the_tables_columns_with_the_artificial_key() {
        let text = "1|156|4|1|17|17954.55|0.04|0.02|N|O|1996-03-13|1996-02-12|1996-03-22|DELIVER IN PERSON|TRUCK|egular courts above the|\n\
                    1|68|9|2|36|34850.16|0.09|0.06|N|O|1996-04-12|1996-02-28|1996-04-20|TAKE BACK RETURN|MAIL|ly final dependencies: slyly bold |\n";
        let rows: Vec<Row> = TblRows::new(tpch::LINEITEM, text.as_bytes(), "lineitem.tbl".into()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[1][0], Value::Int(2), "l_pk is the line number");
        assert_eq!(rows[0][1], Value::Int(1));
        assert_eq!(rows[0][5], Value::Decimal(Decimal(1700)));
        assert_eq!(rows[0][6], Value::Decimal(Decimal(1_795_455)));
        assert_eq!(rows[0][11], Value::Date(Date::from_iso("1996-03-13").unwrap()));
        assert_eq!(rows[1][16], Value::Text("ly final dependencies: slyly bold ".into()), "trailing spaces are kept");
    }

    #[test]
    fn a_malformed_line_ends_the_stream() {
        let text = "0|AFRICA|lar deposits|\n1|AMERICA|missing the last separator\n2|ASIA|never read|\n";
        let rows: Vec<Row> = TblRows::new(tpch::REGION, text.as_bytes(), "region.tbl".into()).collect();
        assert_eq!(rows.len(), 1, "the stream stops at the bad line; the loader's row count catches it");
    }

    #[test]
    fn stored_values_keep_their_types() {
        let row = vec![
            Value::Int(3),
            Value::Float(0.5),
            Value::Date(Date(9000)),
            Value::Decimal(Decimal(12)),
            Value::Text("x".into()),
            Value::Null,
        ];
        let stored: Vec<StoredValue> = row.iter().map(StoredValue::of).collect();
        let back: Vec<StoredValue> = serde_json::from_str(&serde_json::to_string(&stored).unwrap()).unwrap();
        assert_eq!(back.iter().map(StoredValue::value).collect::<Row>(), row);
    }
}
