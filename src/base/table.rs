//! Backend-neutral table definitions and row values.
//!
//! Owns the shape of generated data (columns, types, which columns are indexed), the
//! `Value` type rows are made of, and `LazyValue`, a value made on first use. Must not know
//! about any backend's storage format.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// The type of a column, chosen so every backend has a natural mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColumnType {
    /// 64-bit signed integer (`BIGINT`).
    Int,
    /// 64-bit float (`DOUBLE PRECISION`).
    Float,
    /// Fixed-point with two fractional digits, carried as hundredths (`DECIMAL(15,2)`).
    Decimal,
    /// Variable-length text (`VARCHAR`/`TEXT`).
    Text,
    /// Calendar date, carried as days since 1970-01-01 (`DATE`).
    Date,
}

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Column {
    pub name: String,
    pub ty: ColumnType,
}

/// A table as every backend sees it. Column 0 is always the single-column primary key
/// and is of type `Int`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// Logical name, e.g. `kv` or `lineitem`; backends add their own namespace around it.
    pub name: String,
    pub columns: Vec<Column>,
    /// Indices into `columns` of the columns that get a secondary index.
    pub indexed: Vec<usize>,
}

impl TableDef {
    pub fn key_column(&self) -> &Column {
        &self.columns[0]
    }

    pub fn column_index(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }
}

/// Index of a table in the plan's dataset (`Dataset::tables`). Ops carry this instead of
/// names so the hot path never compares strings.
pub type TableId = usize;

/// One cell value. `Null` is never generated for key columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Value {
    Null,
    Int(i64),
    Float(f64),
    /// Hundredths, see [`ColumnType::Decimal`].
    Decimal(Decimal),
    Text(Arc<str>),
    Date(Date),
}

/// Fixed-point number in hundredths (so 12.34 is `Decimal(1234)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decimal(pub i64);

/// Days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Date(pub i32);

impl Value {
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// A stable 64-bit fingerprint used to compare answers across systems. Floats are
    /// rounded to 9 significant digits so that engines summing in different orders agree.
    pub fn fingerprint(&self) -> u64 {
        use crate::base::rng::mix;
        match self {
            Value::Null => 0x6e75_6c6c,
            Value::Int(v) => mix(1, *v as u64),
            Value::Float(v) => mix(2, format!("{v:.9e}").bytes().fold(0u64, |h, b| mix(h, b as u64))),
            Value::Decimal(d) => mix(3, d.0 as u64),
            Value::Text(s) => s.bytes().fold(4u64, |h, b| mix(h, b as u64)),
            Value::Date(d) => mix(5, d.0 as u64),
        }
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}{}.{:02}", abs / 100, abs % 100)
    }
}

impl Date {
    /// The date as `YYYY-MM-DD` (proleptic Gregorian), for SQL literals and text stores.
    pub fn to_iso(self) -> String {
        let (y, m, d) = self.to_civil();
        format!("{y:04}-{m:02}-{d:02}")
    }

    /// Parses `YYYY-MM-DD`.
    pub fn from_iso(s: &str) -> Option<Date> {
        let mut parts = s.splitn(3, '-');
        let y: i64 = parts.next()?.parse().ok()?;
        let m: u32 = parts.next()?.parse().ok()?;
        let d: u32 = parts.next()?.parse().ok()?;
        Date::from_civil(y, m, d)
    }

    /// (year, month 1-12, day 1-31) of the proleptic Gregorian calendar.
    pub fn to_civil(self) -> (i64, u32, u32) {
        // Howard Hinnant's civil_from_days.
        let z = self.0 as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m as u32, d as u32)
    }

    /// The date of (year, month, day); `None` when month or day is out of range.
    pub fn from_civil(y: i64, m: u32, d: u32) -> Option<Date> {
        if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
            return None;
        }
        let (m, d) = (i64::from(m), i64::from(d));
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = if m > 2 { m - 3 } else { m + 9 };
        let doy = (153 * mp + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        i32::try_from(era * 146_097 + doe - 719_468).ok().map(Date)
    }
}

/// A value made on first use by a pure function of (bits, len): the new field value of an
/// update. The generator fixes what it is; the adapter that sends it pays for making it (as
/// YCSB's lazily filled RandomByteIterator), and a target that never reads it (NO-DB, like
/// YCSB's BasicDB) never does. Reads through `Deref` as the `Value` it is.
#[derive(Clone)]
pub struct LazyValue {
    made: OnceLock<Value>,
    recipe: Option<Recipe>,
}

#[derive(Clone, Copy)]
struct Recipe {
    make: fn(u64, usize) -> Value,
    bits: u64,
    len: usize,
}

impl LazyValue {
    /// `make(bits, len)`, made when first read.
    pub fn lazy(make: fn(u64, usize) -> Value, bits: u64, len: usize) -> LazyValue {
        LazyValue { made: OnceLock::new(), recipe: Some(Recipe { make, bits, len }) }
    }

    /// The value, making it on first use.
    pub fn get(&self) -> &Value {
        self.made.get_or_init(|| match self.recipe {
            Some(r) => (r.make)(r.bits, r.len),
            None => Value::Null,
        })
    }
}

impl From<Value> for LazyValue {
    fn from(v: Value) -> LazyValue {
        LazyValue { made: OnceLock::from(v), recipe: None }
    }
}

impl std::ops::Deref for LazyValue {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.get()
    }
}

impl PartialEq for LazyValue {
    fn eq(&self, other: &LazyValue) -> bool {
        self.get() == other.get()
    }
}

impl fmt::Debug for LazyValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.get().fmt(f)
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Decimal(d) => write!(f, "{d}"),
            Value::Text(s) => f.write_str(s),
            Value::Date(d) => f.write_str(&d.to_iso()),
        }
    }
}

/// One row, values in column order; `row[0]` is the primary key.
pub type Row = Vec<Value>;

/// Rows to bulk-load into one table, streamed.
pub type RowSource = Box<dyn Iterator<Item = Row> + Send>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_round_trip_through_iso() {
        for (days, iso) in [(0, "1970-01-01"), (8035, "1992-01-01"), (10_591, "1998-12-31"), (-1, "1969-12-31")] {
            assert_eq!(Date(days).to_iso(), iso);
            assert_eq!(Date::from_iso(iso), Some(Date(days)));
        }
        assert_eq!(Date::from_iso("1998-13-01"), None);
    }

    #[test]
    fn decimals_print_two_digits() {
        assert_eq!(Decimal(1234).to_string(), "12.34");
        assert_eq!(Decimal(-5).to_string(), "-0.05");
        assert_eq!(Decimal(100).to_string(), "1.00");
    }

    #[test]
    fn float_fingerprints_tolerate_summation_order() {
        let a: f64 = (0..1000).map(|i| i as f64 * 0.1).sum();
        let b: f64 = (0..1000).rev().map(|i| i as f64 * 0.1).sum();
        assert_eq!(Value::Float(a).fingerprint(), Value::Float(b).fingerprint());
        assert_ne!(Value::Float(1.0).fingerprint(), Value::Float(1.001).fingerprint());
    }

    #[test]
    fn a_lazy_value_is_made_on_first_read_and_equals_the_value_it_makes() {
        fn make(bits: u64, len: usize) -> Value {
            Value::Text(format!("{bits}:{len}").into())
        }
        let v = LazyValue::lazy(make, 7, 3);
        assert!(v.made.get().is_none(), "not made before it is read");
        assert_eq!(*v, Value::Text("7:3".into()));
        assert!(v.made.get().is_some());
        assert_eq!(v, LazyValue::from(Value::Text("7:3".into())));
        assert_eq!(format!("{v:?}"), format!("{:?}", Value::Text("7:3".into())));
    }
}
