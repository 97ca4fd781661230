//! How values travel to PostgreSQL-protocol engines: statement parameters, COPY text and
//! the hstore/JSON documents of the document layouts.
//!
//! Wire types are kept to the ones tokio-postgres encodes without extra features (the
//! `postgres` dialect writes the matching casts): decimals travel as hundredths (`int8`)
//! and dates as days since 1970-01-01 (`int4`). In the hstore/jsonb layouts every non-key
//! value is text inside the document (dates as ISO `YYYY-MM-DD`, which sorts like the
//! date). Replies are decoded by `Cell`. Must not open connections or write SQL.

use crate::adapter::sql::dialects::Layout;
use crate::base::op::OpError;
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use std::fmt::Write as _;
use tokio_postgres::types::{FromSql, ToSql, Type};

/// A boxed statement parameter.
pub type Param = Box<dyn ToSql + Sync + Send>;

/// The parameters of one table in one layout.
pub struct Wire<'a> {
    pub def: &'a TableDef,
    pub layout: Layout,
}

/// The protocol type of a parameter of this column (or of an array of it), for engines
/// that are told parameter types (see `Flavor::typed_parameters`).
pub fn pg_type(ty: ColumnType, layout: Layout, array: bool) -> Type {
    match (ty, layout, array) {
        (ColumnType::Int | ColumnType::Decimal, _, false) => Type::INT8,
        (ColumnType::Int | ColumnType::Decimal, _, true) => Type::INT8_ARRAY,
        (ColumnType::Float, _, false) => Type::FLOAT8,
        (ColumnType::Float, _, true) => Type::FLOAT8_ARRAY,
        (ColumnType::Date, Layout::Row, false) => Type::INT4,
        (ColumnType::Date, Layout::Row, true) => Type::INT4_ARRAY,
        (_, _, false) => Type::TEXT,
        (_, _, true) => Type::TEXT_ARRAY,
    }
}

impl Wire<'_> {
    fn ty(&self, column: usize) -> ColumnType {
        self.def.columns[column].ty
    }

    /// The parameters of one row of an insert.
    pub fn insert_params(&self, row: &Row) -> Result<Vec<Param>, OpError> {
        self.check_width(row)?;
        match self.layout {
            Layout::Row => row.iter().enumerate().map(|(i, v)| self.row_param(i, v)).collect(),
            Layout::Hstore | Layout::Jsonb => Ok(vec![Box::new(self.key_of(row)?), Box::new(self.document(row)?)]),
        }
    }

    /// The parameters of an array insert: one array per stored column.
    pub fn insert_many_params(&self, rows: &[&Row]) -> Result<Vec<Param>, OpError> {
        for row in rows {
            self.check_width(row)?;
        }
        match self.layout {
            Layout::Row => (0..self.def.columns.len()).map(|i| self.row_array(i, rows)).collect(),
            Layout::Hstore | Layout::Jsonb => {
                let keys: Vec<i64> = rows.iter().map(|r| self.key_of(r)).collect::<Result<_, _>>()?;
                let docs: Vec<String> = rows.iter().map(|r| self.document(r)).collect::<Result<_, _>>()?;
                Ok(vec![Box::new(keys), Box::new(docs)])
            }
        }
    }

    /// The value parameter of an update.
    pub fn update_value(&self, column: usize, value: &Value) -> Result<Param, OpError> {
        if column == 0 || column >= self.def.columns.len() {
            return Err(OpError::client(format!("{}: cannot update column #{column}", self.def.name)));
        }
        match self.layout {
            Layout::Row => self.row_param(column, value),
            Layout::Hstore => Ok(Box::new(self.text_value(column, value)?)),
            Layout::Jsonb => Ok(Box::new(self.json_value(column, value)?)),
        }
    }

    /// A range bound (`lo`/`hi` are in the column's integer representation).
    pub fn range_bound(&self, column: usize, bound: i64) -> Result<Param, OpError> {
        Ok(match (self.ty(column), self.layout) {
            (ColumnType::Int | ColumnType::Decimal, _) => Box::new(bound),
            (ColumnType::Float, _) => Box::new(bound as f64),
            (ColumnType::Date, Layout::Row) => Box::new(days(bound)?),
            (ColumnType::Date, _) => Box::new(Date(days(bound)?).to_iso()),
            (ColumnType::Text, _) => {
                return Err(OpError::client(format!("{}: no integer range over text column #{column}", self.def.name)));
            }
        })
    }

    /// Appends one row in COPY text format.
    pub fn copy_row(&self, row: &Row, out: &mut String) -> Result<(), OpError> {
        self.check_width(row)?;
        match self.layout {
            Layout::Row => {
                for (i, v) in row.iter().enumerate() {
                    if i > 0 {
                        out.push('\t');
                    }
                    self.copy_value(i, v, out)?;
                }
            }
            Layout::Hstore | Layout::Jsonb => {
                let _ = write!(out, "{}\t", self.key_of(row)?);
                copy_escape(&self.document(row)?, out);
            }
        }
        out.push('\n');
        Ok(())
    }

    /// Appends one row-layout value in COPY text format, without an intermediate string
    /// for numbers and text (bulk loads encode millions of values).
    fn copy_value(&self, column: usize, value: &Value, out: &mut String) -> Result<(), OpError> {
        match (self.ty(column), value) {
            (_, Value::Null) => out.push_str("\\N"),
            (ColumnType::Int, Value::Int(v)) => {
                let _ = write!(out, "{v}");
            }
            (ColumnType::Decimal, Value::Decimal(d)) => {
                let _ = write!(out, "{d}");
            }
            (ColumnType::Text, Value::Text(s)) => copy_escape(s, out),
            // Floats and dates: the same text as everywhere else (no escaping needed).
            (_, v) => out.push_str(&self.plain_text(column, v)?),
        }
        Ok(())
    }

    fn check_width(&self, row: &Row) -> Result<(), OpError> {
        if row.len() == self.def.columns.len() {
            Ok(())
        } else {
            Err(OpError::client(format!("{}: row has {} values, table has {} columns", self.def.name, row.len(), self.def.columns.len())))
        }
    }

    fn key_of(&self, row: &Row) -> Result<i64, OpError> {
        row[0].as_int().ok_or_else(|| OpError::client(format!("{}: key must be an integer, got {:?}", self.def.name, row[0])))
    }

    fn mismatch(&self, column: usize, value: &Value) -> OpError {
        let c = &self.def.columns[column];
        OpError::client(format!("{}.{}: value {value:?} does not fit a {:?} column", self.def.name, c.name, c.ty))
    }

    /// A row-layout parameter of the column's wire type.
    fn row_param(&self, column: usize, value: &Value) -> Result<Param, OpError> {
        Ok(match (self.ty(column), value) {
            (ColumnType::Int | ColumnType::Decimal, Value::Null) => Box::new(None::<i64>),
            (ColumnType::Float, Value::Null) => Box::new(None::<f64>),
            (ColumnType::Text, Value::Null) => Box::new(None::<String>),
            (ColumnType::Date, Value::Null) => Box::new(None::<i32>),
            (ColumnType::Int, Value::Int(v)) => Box::new(*v),
            (ColumnType::Float, Value::Float(v)) => Box::new(*v),
            (ColumnType::Float, Value::Int(v)) => Box::new(*v as f64),
            (ColumnType::Decimal, Value::Decimal(d)) => Box::new(d.0),
            (ColumnType::Text, Value::Text(s)) => Box::new(s.to_string()),
            (ColumnType::Date, Value::Date(d)) => Box::new(d.0),
            _ => return Err(self.mismatch(column, value)),
        })
    }

    /// A row-layout array parameter holding column `column` of every row.
    fn row_array(&self, column: usize, rows: &[&Row]) -> Result<Param, OpError> {
        Ok(match self.ty(column) {
            ColumnType::Int => self.array(column, rows, |v| if let Value::Int(x) = v { Some(*x) } else { None })?,
            ColumnType::Decimal => self.array(column, rows, |v| if let Value::Decimal(d) = v { Some(d.0) } else { None })?,
            ColumnType::Float => self.array(column, rows, |v| match v {
                Value::Float(x) => Some(*x),
                Value::Int(x) => Some(*x as f64),
                _ => None,
            })?,
            ColumnType::Text => self.array(column, rows, |v| if let Value::Text(s) = v { Some(s.to_string()) } else { None })?,
            ColumnType::Date => self.array(column, rows, |v| if let Value::Date(d) = v { Some(d.0) } else { None })?,
        })
    }

    /// Column `column` of every row as one array of `T` (NULLs kept); `wire` reads a value
    /// of the column's type, `None` for one of another type.
    fn array<T: ToSql + Send + Sync + 'static>(
        &self,
        column: usize,
        rows: &[&Row],
        wire: impl Fn(&Value) -> Option<T>,
    ) -> Result<Param, OpError> {
        let values = (rows.iter().map(|r| &r[column]))
            .map(|v| match v {
                Value::Null => Ok(None),
                v => wire(v).map(Some).ok_or_else(|| self.mismatch(column, v)),
            })
            .collect::<Result<Vec<Option<T>>, _>>()?;
        Ok(Box::new(values))
    }

    /// The value as the text PostgreSQL parses back to the column's type (for COPY and
    /// inside hstore documents). Floats print the shortest text that reads back exactly.
    fn plain_text(&self, column: usize, value: &Value) -> Result<String, OpError> {
        Ok(match (self.ty(column), value) {
            (ColumnType::Int, Value::Int(v)) => v.to_string(),
            (ColumnType::Float, Value::Float(v)) => v.to_string(),
            (ColumnType::Float, Value::Int(v)) => (*v as f64).to_string(),
            (ColumnType::Decimal, Value::Decimal(d)) => d.to_string(),
            (ColumnType::Text, Value::Text(s)) => s.to_string(),
            (ColumnType::Date, Value::Date(d)) => d.to_iso(),
            _ => return Err(self.mismatch(column, value)),
        })
    }

    /// The hstore value of one attribute (`None` = SQL NULL).
    fn text_value(&self, column: usize, value: &Value) -> Result<Option<String>, OpError> {
        match value {
            Value::Null => Ok(None),
            v => self.plain_text(column, v).map(Some),
        }
    }

    /// The JSON text of one attribute: numbers for numeric columns, strings otherwise.
    fn json_value(&self, column: usize, value: &Value) -> Result<String, OpError> {
        Ok(match (self.ty(column), value) {
            (_, Value::Null) => "null".into(),
            (ColumnType::Float, Value::Float(v)) if !v.is_finite() => "null".into(),
            (ColumnType::Int | ColumnType::Float | ColumnType::Decimal, v) => self.plain_text(column, v)?,
            (ColumnType::Text | ColumnType::Date, v) => json_string(&self.plain_text(column, v)?),
        })
    }

    /// The hstore or JSON document holding all non-key attributes of a row.
    fn document(&self, row: &Row) -> Result<String, OpError> {
        let mut doc = String::with_capacity(16 * row.len() + 32);
        match self.layout {
            Layout::Hstore => {
                for (i, v) in row.iter().enumerate().skip(1) {
                    if i > 1 {
                        doc.push_str(", ");
                    }
                    hstore_quote(&self.def.columns[i].name, &mut doc);
                    doc.push_str("=>");
                    match self.text_value(i, v)? {
                        Some(text) => hstore_quote(&text, &mut doc),
                        None => doc.push_str("NULL"),
                    }
                }
            }
            Layout::Jsonb => {
                doc.push('{');
                for (i, v) in row.iter().enumerate().skip(1) {
                    if i > 1 {
                        doc.push_str(", ");
                    }
                    doc.push_str(&json_string(&self.def.columns[i].name));
                    doc.push_str(": ");
                    doc.push_str(&self.json_value(i, v)?);
                }
                doc.push('}');
            }
            Layout::Row => unreachable!("row layout has no document"),
        }
        Ok(doc)
    }
}

fn days(bound: i64) -> Result<i32, OpError> {
    i32::try_from(bound).map_err(|_| OpError::client(format!("date bound {bound} out of range")))
}

fn json_string(text: &str) -> String {
    serde_json::to_string(text).expect("strings always serialize")
}

/// `"text"` in hstore syntax.
fn hstore_quote(text: &str, out: &mut String) {
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// Escapes a field for COPY text format (copied whole when nothing needs escaping).
fn copy_escape(text: &str, out: &mut String) {
    if !text.bytes().any(|b| matches!(b, b'\\' | b'\t' | b'\n' | b'\r')) {
        out.push_str(text);
        return;
    }
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// One reply cell of any type dbsweep selects, as a `Value` (bytea: UTF-8 text).
pub struct Cell(pub Value);

/// 2000-01-01 (the protocol's date epoch) in days since 1970-01-01.
const PG_EPOCH_DAYS: i32 = 10_957;

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell(match *ty {
            Type::INT2 => Value::Int(i16::from_sql(ty, raw)?.into()),
            Type::INT4 => Value::Int(i32::from_sql(ty, raw)?.into()),
            Type::INT8 => Value::Int(i64::from_sql(ty, raw)?),
            Type::FLOAT4 => Value::Float(f32::from_sql(ty, raw)?.into()),
            Type::FLOAT8 => Value::Float(f64::from_sql(ty, raw)?),
            Type::DATE => Value::Date(Date(i32::from_sql(&Type::INT4, raw)? + PG_EPOCH_DAYS)),
            Type::BYTEA => Value::Text(std::str::from_utf8(raw)?.into()),
            _ => Value::Text(<&str>::from_sql(&Type::TEXT, raw)?.into()),
        }))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Cell(Value::Null))
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::FLOAT4
                | Type::FLOAT8
                | Type::DATE
                | Type::BYTEA
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
        )
    }
}

/// A decoded cell as a value of `ty` (decimals arrive as hundredths, dates as day numbers
/// or dates, text as text or UTF-8 bytes).
pub fn as_type(ty: ColumnType, value: Value) -> Result<Value, OpError> {
    Ok(match (ty, value) {
        (_, Value::Null) => Value::Null,
        (ColumnType::Decimal, Value::Int(h)) => Value::Decimal(Decimal(h)),
        (ColumnType::Date, Value::Int(d)) => {
            Value::Date(Date(i32::try_from(d).map_err(|_| OpError::client(format!("date {d} out of range")))?))
        }
        (ColumnType::Float, Value::Int(x)) => Value::Float(x as f64),
        (ColumnType::Text, v @ Value::Text(_))
        | (ColumnType::Float, v @ Value::Float(_))
        | (ColumnType::Int, v @ Value::Int(_))
        | (ColumnType::Date, v @ Value::Date(_)) => v,
        (ty, v) => return Err(OpError::client(format!("expected {ty:?}, got {v:?}"))),
    })
}

/// One text cell (simple protocol) as a value of `ty`.
pub fn parse_cell(ty: ColumnType, text: Option<&str>) -> Result<Value, OpError> {
    let Some(text) = text else { return Ok(Value::Null) };
    let bad = || OpError::client(format!("cannot read {text:?} as {ty:?}"));
    Ok(match ty {
        ColumnType::Int => Value::Int(text.parse().map_err(|_| bad())?),
        ColumnType::Float => Value::Float(text.parse().map_err(|_| bad())?),
        ColumnType::Text => Value::Text(text.into()),
        ColumnType::Date => Value::Date(Date::from_iso(text).ok_or_else(bad)?),
        ColumnType::Decimal => {
            let hundredths = (text.parse::<f64>().map_err(|_| bad())? * 100.0).round();
            Value::Decimal(Decimal(hundredths as i64))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Column;
    use std::sync::Arc;

    fn def() -> Arc<TableDef> {
        Arc::new(TableDef {
            name: "t".into(),
            columns: vec![
                Column { name: "k".into(), ty: ColumnType::Int },
                Column { name: "price".into(), ty: ColumnType::Decimal },
                Column { name: "note".into(), ty: ColumnType::Text },
                Column { name: "day".into(), ty: ColumnType::Date },
                Column { name: "x".into(), ty: ColumnType::Float },
            ],
            indexed: vec![3],
        })
    }

    fn row() -> Row {
        vec![Value::Int(7), Value::Decimal(Decimal(-5)), Value::Text("a\"b\\c\td".into()), Value::Date(Date(0)), Value::Null]
    }

    #[test]
    fn cells_become_values_of_the_column_type() {
        assert_eq!(as_type(ColumnType::Decimal, Value::Int(-5)).unwrap(), Value::Decimal(Decimal(-5)));
        assert_eq!(as_type(ColumnType::Date, Value::Int(10)).unwrap(), Value::Date(Date(10)));
        assert_eq!(as_type(ColumnType::Float, Value::Int(2)).unwrap(), Value::Float(2.0));
        assert!(as_type(ColumnType::Int, Value::Text("x".into())).is_err());
        let d = Cell::from_sql(&Type::DATE, &0i32.to_be_bytes()).unwrap();
        assert_eq!(d.0, Value::Date(Date::from_iso("2000-01-01").unwrap()));
        assert_eq!(parse_cell(ColumnType::Decimal, Some("-12.34")).unwrap(), Value::Decimal(Decimal(-1234)));
        assert_eq!(parse_cell(ColumnType::Date, Some("1995-03-15")).unwrap(), Value::Date(Date::from_iso("1995-03-15").unwrap()));
        assert_eq!(parse_cell(ColumnType::Int, None).unwrap(), Value::Null);
        assert!(parse_cell(ColumnType::Int, Some("x")).is_err());
    }

    #[test]
    fn documents_escape_and_keep_types_readable() {
        let d = def();
        let h = Wire { def: &d, layout: Layout::Hstore };
        assert_eq!(h.document(&row()).unwrap(), r#""price"=>"-0.05", "note"=>"a\"b\\c	d", "day"=>"1970-01-01", "x"=>NULL"#);
        let j = Wire { def: &d, layout: Layout::Jsonb };
        let doc = j.document(&row()).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["price"].to_string(), "-0.05");
        assert_eq!(parsed["note"], "a\"b\\c\td");
        assert_eq!(parsed["day"], "1970-01-01");
        assert!(parsed["x"].is_null());
    }

    #[test]
    fn copy_rows_escape_specials_and_nulls() {
        let d = def();
        let r = Wire { def: &d, layout: Layout::Row };
        let mut out = String::new();
        r.copy_row(&row(), &mut out).unwrap();
        assert_eq!(out, "7\t-0.05\ta\"b\\\\c\\td\t1970-01-01\t\\N\n");
        assert!(r.copy_row(&vec![Value::Int(1)], &mut out).is_err(), "short rows are refused");
    }
}
