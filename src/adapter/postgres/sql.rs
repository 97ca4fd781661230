//! SQL text and value encoding for the three PostgreSQL layouts (row, hstore, jsonb).
//!
//! Owns every statement the PostgreSQL adapter sends for a table, and how `Value`s become
//! parameters, COPY text and hstore/JSON values. Must not open connections or decide
//! when statements run.
//!
//! Wire types are kept to the ones tokio-postgres encodes without extra features:
//! decimals travel as hundredths (`int8`, turned into `numeric` by `* 0.01` on the
//! server) and dates as days since 1970-01-01 (`int4`, added to `DATE '1970-01-01'`).
//! In the hstore/jsonb layouts every non-key value is text inside the document (dates as
//! ISO `YYYY-MM-DD`, which sorts like the date); typed access casts the extracted text,
//! and the expression indexes use exactly the same expressions so the planner uses them.

use crate::adapter::sql::tpch::Dialect;
use crate::base::op::{OpError, RangeAgg};
use crate::base::table::{ColumnType, Date, Decimal, Row, TableDef, Value};
use std::fmt::Write as _;
use std::sync::Arc;
use tokio_postgres::types::ToSql;

/// dbsweep's default schema (the namespace's name); everything the adapter creates lives in it.
pub const SCHEMA: &str = "dbsweep";
/// The schema comment that marks `dbsweep` as created by dbsweep.
pub const MARKER: &str = "dbsweep-owned";

/// A boxed statement parameter.
pub type Param = Box<dyn ToSql + Sync + Send>;

/// How a table's rows are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One SQL column per attribute, with its proper type.
    Row,
    /// `(pk BIGINT PRIMARY KEY, v hstore)`.
    Hstore,
    /// `(pk BIGINT PRIMARY KEY, v jsonb)`.
    Jsonb,
}

impl Layout {
    pub fn parse(text: &str) -> Option<Layout> {
        match text {
            "row" => Some(Layout::Row),
            "hstore" => Some(Layout::Hstore),
            "jsonb" => Some(Layout::Jsonb),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Layout::Row => "row",
            Layout::Hstore => "hstore",
            Layout::Jsonb => "jsonb",
        }
    }

    pub fn system(self) -> &'static str {
        match self {
            Layout::Row => "pg-row",
            Layout::Hstore => "pg-hstore",
            Layout::Jsonb => "pg-jsonb",
        }
    }

    /// The SQL dialect of the analytic queries over this layout.
    pub fn dialect(self) -> Dialect {
        match self {
            Layout::Row => Dialect::Postgres,
            Layout::Hstore => Dialect::PgHstore,
            Layout::Jsonb => Dialect::PgJsonb,
        }
    }

    /// Table-name suffix, so the three layouts can share one server and schema.
    fn suffix(self) -> &'static str {
        match self {
            Layout::Row => "",
            Layout::Hstore => "_hstore",
            Layout::Jsonb => "_jsonb",
        }
    }
}

/// `"name"` with embedded quotes doubled.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `'text'` with embedded quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// SQL type of a column in the row layout.
fn sql_type(ty: ColumnType) -> &'static str {
    match ty {
        ColumnType::Int => "BIGINT",
        ColumnType::Float => "DOUBLE PRECISION",
        ColumnType::Decimal => "NUMERIC(15,2)",
        ColumnType::Text => "TEXT",
        ColumnType::Date => "DATE",
    }
}

/// The wire type a parameter of this column travels as (row layout and range bounds).
pub(crate) fn wire_type(ty: ColumnType, layout: Layout) -> &'static str {
    match ty {
        ColumnType::Int | ColumnType::Decimal => "int8",
        ColumnType::Float => "float8",
        ColumnType::Text => "text",
        ColumnType::Date if layout == Layout::Row => "int4",
        ColumnType::Date => "text",
    }
}

/// Turns an expression of `wire_type` into the column's comparable SQL type.
pub(crate) fn from_wire(ty: ColumnType, layout: Layout, expr: &str) -> String {
    match ty {
        ColumnType::Decimal => format!("({expr} * 0.01)"),
        ColumnType::Date if layout == Layout::Row => format!("(DATE '1970-01-01' + {expr})"),
        _ => expr.to_string(),
    }
}

/// Turns an expression of the column's comparable SQL type into what the client decodes.
fn to_wire(ty: ColumnType, layout: Layout, expr: &str) -> String {
    match ty {
        ColumnType::Decimal => format!("(({expr}) * 100)::int8"),
        ColumnType::Date if layout == Layout::Row => format!("(({expr}) - DATE '1970-01-01')"),
        ColumnType::Date => format!("(({expr})::date - DATE '1970-01-01')"),
        _ => expr.to_string(),
    }
}

/// One table as laid out in PostgreSQL.
pub struct PgTable {
    pub def: Arc<TableDef>,
    pub layout: Layout,
    /// `dbsweep."kv_hstore"`.
    pub qualified: String,
    /// The quoted key column (`"k"` or `pk`).
    key: String,
}

impl PgTable {
    /// The table in the default schema `dbsweep`.
    pub fn new(def: Arc<TableDef>, layout: Layout) -> Self {
        Self::in_schema(def, layout, SCHEMA)
    }

    /// The table in `schema` (dbsweep's namespace, see `lease::Namespace`).
    pub fn in_schema(def: Arc<TableDef>, layout: Layout, schema: &str) -> Self {
        let bare = format!("{}{}", def.name, layout.suffix());
        let qualified = format!("{schema}.{}", quote_ident(&bare));
        let key = match layout {
            Layout::Row => quote_ident(&def.key_column().name),
            Layout::Hstore | Layout::Jsonb => "pk".to_string(),
        };
        PgTable { def, layout, qualified, key }
    }

    fn ty(&self, column: usize) -> ColumnType {
        self.def.columns[column].ty
    }

    /// The column as an expression of its comparable type (what indexes and ranges use).
    fn column_expr(&self, column: usize) -> String {
        let name = &self.def.columns[column].name;
        if column == 0 {
            return self.key.clone();
        }
        let text = match self.layout {
            Layout::Row => return quote_ident(name),
            Layout::Hstore => format!("(v -> {})", quote_literal(name)),
            Layout::Jsonb => format!("(v ->> {})", quote_literal(name)),
        };
        match self.ty(column) {
            ColumnType::Int => format!("({text}::int8)"),
            ColumnType::Float => format!("({text}::float8)"),
            ColumnType::Decimal => format!("({text}::numeric)"),
            ColumnType::Text | ColumnType::Date => text,
        }
    }

    /// `CREATE TABLE` and `CREATE INDEX` statements.
    pub fn create_sql(&self) -> Vec<String> {
        let table = match self.layout {
            Layout::Row => {
                let mut cols: Vec<String> =
                    self.def.columns.iter().map(|c| format!("{} {}", quote_ident(&c.name), sql_type(c.ty))).collect();
                cols[0].push_str(" PRIMARY KEY");
                format!("CREATE TABLE {} ({})", self.qualified, cols.join(", "))
            }
            Layout::Hstore => format!("CREATE TABLE {} (pk BIGINT PRIMARY KEY, v hstore NOT NULL)", self.qualified),
            Layout::Jsonb => format!("CREATE TABLE {} (pk BIGINT PRIMARY KEY, v jsonb NOT NULL)", self.qualified),
        };
        let mut out = vec![table];
        for &i in self.def.indexed.iter().filter(|&&i| i != 0) {
            out.push(format!("CREATE INDEX ON {} (({}))", self.qualified, self.column_expr(i)));
        }
        out
    }

    pub fn drop_sql(&self) -> String {
        format!("DROP TABLE IF EXISTS {}", self.qualified)
    }

    pub fn count_sql(&self) -> String {
        format!("SELECT count(*) FROM {}", self.qualified)
    }

    pub fn copy_sql(&self) -> String {
        match self.layout {
            Layout::Row => {
                let cols: Vec<String> = self.def.columns.iter().map(|c| quote_ident(&c.name)).collect();
                format!("COPY {} ({}) FROM STDIN", self.qualified, cols.join(", "))
            }
            Layout::Hstore | Layout::Jsonb => format!("COPY {} (pk, v) FROM STDIN", self.qualified),
        }
    }

    pub fn insert_sql(&self) -> String {
        match self.layout {
            Layout::Row => {
                let cols: Vec<String> = self.def.columns.iter().map(|c| quote_ident(&c.name)).collect();
                let params: Vec<String> = self
                    .def
                    .columns
                    .iter()
                    .enumerate()
                    .map(|(i, c)| from_wire(c.ty, Layout::Row, &format!("${}::{}", i + 1, wire_type(c.ty, Layout::Row))))
                    .collect();
                format!("INSERT INTO {} ({}) VALUES ({})", self.qualified, cols.join(", "), params.join(", "))
            }
            Layout::Hstore => format!("INSERT INTO {} (pk, v) VALUES ($1::int8, $2::text::hstore)", self.qualified),
            Layout::Jsonb => format!("INSERT INTO {} (pk, v) VALUES ($1::int8, $2::text::jsonb)", self.qualified),
        }
    }

    /// A multi-row insert from one array parameter per column (`INSERT ... SELECT FROM
    /// UNNEST(...)`): one statement, one round trip, whatever the batch size.
    pub fn insert_many_sql(&self) -> String {
        match self.layout {
            Layout::Row => {
                let cols: Vec<String> = self.def.columns.iter().map(|c| quote_ident(&c.name)).collect();
                let arrays: Vec<String> =
                    self.def.columns.iter().enumerate().map(|(i, c)| format!("${}::{}[]", i + 1, wire_type(c.ty, Layout::Row))).collect();
                let aliases: Vec<String> = (0..cols.len()).map(|i| format!("c{i}")).collect();
                let exprs: Vec<String> =
                    self.def.columns.iter().enumerate().map(|(i, c)| from_wire(c.ty, Layout::Row, &format!("c{i}"))).collect();
                format!(
                    "INSERT INTO {} ({}) SELECT {} FROM UNNEST({}) AS u({})",
                    self.qualified,
                    cols.join(", "),
                    exprs.join(", "),
                    arrays.join(", "),
                    aliases.join(", ")
                )
            }
            Layout::Hstore => {
                format!("INSERT INTO {} (pk, v) SELECT p, d::hstore FROM UNNEST($1::int8[], $2::text[]) AS u(p, d)", self.qualified)
            }
            Layout::Jsonb => {
                format!("INSERT INTO {} (pk, v) SELECT p, d::jsonb FROM UNNEST($1::int8[], $2::text[]) AS u(p, d)", self.qualified)
            }
        }
    }

    pub fn get_sql(&self) -> String {
        format!("SELECT * FROM {} WHERE {} = $1::int8", self.qualified, self.key)
    }

    pub fn get_many_sql(&self) -> String {
        format!("SELECT * FROM {} WHERE {} = ANY($1::int8[])", self.qualified, self.key)
    }

    pub fn delete_sql(&self) -> String {
        format!("DELETE FROM {} WHERE {} = $1::int8", self.qualified, self.key)
    }

    pub fn delete_many_sql(&self) -> String {
        format!("DELETE FROM {} WHERE {} = ANY($1::int8[])", self.qualified, self.key)
    }

    /// Sets one column of the row with key `$2` to `$1` (see `update_value`).
    pub fn update_sql(&self, column: usize) -> String {
        let name = &self.def.columns[column].name;
        let set = match self.layout {
            Layout::Row => {
                let ty = self.ty(column);
                format!("{} = {}", quote_ident(name), from_wire(ty, Layout::Row, &format!("$1::{}", wire_type(ty, Layout::Row))))
            }
            Layout::Hstore => format!("v = v || hstore({}, $1::text)", quote_literal(name)),
            Layout::Jsonb => format!("v = v || jsonb_build_object({}, $1::text::jsonb)", quote_literal(name)),
        };
        format!("UPDATE {} SET {set} WHERE {} = $2::int8", self.qualified, self.key)
    }

    pub fn scan_sql(&self) -> String {
        format!("SELECT * FROM {} WHERE {k} >= $1::int8 ORDER BY {k} LIMIT $2::int8", self.qualified, k = self.key)
    }

    /// Rows, `count(*)` or `max(of)` over `$1 <= column <= $2` (bounds from `range_bound`).
    pub fn range_sql(&self, column: usize, agg: RangeAgg) -> String {
        let ty = self.ty(column);
        let bound = |n: usize| from_wire(ty, self.layout, &format!("${n}::{}", wire_type(ty, self.layout)));
        let filter = format!("{} BETWEEN {} AND {}", self.column_expr(column), bound(1), bound(2));
        match agg {
            RangeAgg::Rows => format!("SELECT * FROM {} WHERE {filter}", self.qualified),
            RangeAgg::Count => format!("SELECT count(*) FROM {} WHERE {filter}", self.qualified),
            RangeAgg::Max { column: of } => {
                let max = to_wire(self.ty(of), self.layout, &format!("max({})", self.column_expr(of)));
                format!("SELECT {max} FROM {} WHERE {filter}", self.qualified)
            }
        }
    }

    /// Parameters for `insert_sql`.
    pub fn insert_params(&self, row: &Row) -> Result<Vec<Param>, OpError> {
        self.check_width(row)?;
        match self.layout {
            Layout::Row => row.iter().enumerate().map(|(i, v)| self.row_param(i, v)).collect(),
            Layout::Hstore | Layout::Jsonb => Ok(vec![Box::new(self.key_of(row)?), Box::new(self.document(row)?)]),
        }
    }

    /// Parameters for `insert_many_sql`: one array per column.
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

    /// The `$1` of `update_sql`.
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

    /// Decodes the single value `range_sql(.., Max { column })` returns.
    pub fn decode_max(&self, column: usize, row: &tokio_postgres::Row) -> Result<Value, OpError> {
        let bad = |e: tokio_postgres::Error| OpError::client(format!("decoding max: {e}"));
        Ok(match self.ty(column) {
            ColumnType::Int => row.try_get::<_, Option<i64>>(0).map_err(bad)?.map_or(Value::Null, Value::Int),
            ColumnType::Float => row.try_get::<_, Option<f64>>(0).map_err(bad)?.map_or(Value::Null, Value::Float),
            ColumnType::Decimal => row.try_get::<_, Option<i64>>(0).map_err(bad)?.map_or(Value::Null, |d| Value::Decimal(Decimal(d))),
            ColumnType::Text => row.try_get::<_, Option<String>>(0).map_err(bad)?.map_or(Value::Null, |s| Value::Text(s.into())),
            ColumnType::Date => row.try_get::<_, Option<i32>>(0).map_err(bad)?.map_or(Value::Null, |d| Value::Date(Date(d))),
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
        let fail = |v: &Value| self.mismatch(column, v);
        Ok(match self.ty(column) {
            ColumnType::Int => Box::new(
                rows.iter()
                    .map(|r| &r[column])
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        Value::Int(x) => Ok(Some(*x)),
                        v => Err(fail(v)),
                    })
                    .collect::<Result<Vec<Option<i64>>, _>>()?,
            ),
            ColumnType::Decimal => Box::new(
                rows.iter()
                    .map(|r| &r[column])
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        Value::Decimal(d) => Ok(Some(d.0)),
                        v => Err(fail(v)),
                    })
                    .collect::<Result<Vec<Option<i64>>, _>>()?,
            ),
            ColumnType::Float => Box::new(
                rows.iter()
                    .map(|r| &r[column])
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        Value::Float(x) => Ok(Some(*x)),
                        Value::Int(x) => Ok(Some(*x as f64)),
                        v => Err(fail(v)),
                    })
                    .collect::<Result<Vec<Option<f64>>, _>>()?,
            ),
            ColumnType::Text => Box::new(
                rows.iter()
                    .map(|r| &r[column])
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        Value::Text(s) => Ok(Some(s.to_string())),
                        v => Err(fail(v)),
                    })
                    .collect::<Result<Vec<Option<String>>, _>>()?,
            ),
            ColumnType::Date => Box::new(
                rows.iter()
                    .map(|r| &r[column])
                    .map(|v| match v {
                        Value::Null => Ok(None),
                        Value::Date(d) => Ok(Some(d.0)),
                        v => Err(fail(v)),
                    })
                    .collect::<Result<Vec<Option<i32>>, _>>()?,
            ),
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::table::Column;

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
    fn documents_escape_and_keep_types_readable() {
        let h = PgTable::new(def(), Layout::Hstore);
        assert_eq!(h.document(&row()).unwrap(), r#""price"=>"-0.05", "note"=>"a\"b\\c	d", "day"=>"1970-01-01", "x"=>NULL"#);
        let j = PgTable::new(def(), Layout::Jsonb);
        let doc = j.document(&row()).unwrap();
        let parsed: serde_json::Value = serde_json::from_str(&doc).unwrap();
        assert_eq!(parsed["price"].to_string(), "-0.05");
        assert_eq!(parsed["note"], "a\"b\\c\td");
        assert_eq!(parsed["day"], "1970-01-01");
        assert!(parsed["x"].is_null());
    }

    #[test]
    fn copy_rows_escape_specials_and_nulls() {
        let r = PgTable::new(def(), Layout::Row);
        let mut out = String::new();
        r.copy_row(&row(), &mut out).unwrap();
        assert_eq!(out, "7\t-0.05\ta\"b\\\\c\\td\t1970-01-01\t\\N\n");
        assert!(r.copy_row(&vec![Value::Int(1)], &mut out).is_err(), "short rows are refused");
    }

    #[test]
    fn layouts_use_their_own_table_names_and_index_expressions() {
        let r = PgTable::new(def(), Layout::Row);
        let h = PgTable::new(def(), Layout::Hstore);
        let j = PgTable::new(def(), Layout::Jsonb);
        assert_eq!(r.qualified, "dbsweep.\"t\"");
        assert_eq!(h.qualified, "dbsweep.\"t_hstore\"");
        assert_eq!(j.qualified, "dbsweep.\"t_jsonb\"");
        assert_eq!(h.create_sql()[1], "CREATE INDEX ON dbsweep.\"t_hstore\" (((v -> 'day')))");
        // The range filter uses the indexed expression verbatim.
        assert!(j.range_sql(1, RangeAgg::Count).contains("((v ->> 'price')::numeric) BETWEEN ($1::int8 * 0.01)"));
        assert!(r.range_sql(3, RangeAgg::Max { column: 1 }).starts_with("SELECT ((max(\"price\")) * 100)::int8"));
    }
}
