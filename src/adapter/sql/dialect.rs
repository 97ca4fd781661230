//! The few things in which SQL engines differ (`Dialect`), and every statement dbsweep
//! sends to an SQL engine written once over them (`SqlTable::text`).
//!
//! Owns the statement texts: table creation, insert (one row, many rows as parameters,
//! many rows as arrays), get, multi-get, delete (one key, a key list), update, scan, range
//! rows / COUNT / MAX, fetch-all, count and drop. A dialect says how names are quoted and
//! qualified, how a parameter is written and typed, how a value is read back, how key
//! lists and row batches travel, and the layout's stored columns. Must not open
//! connections, bind values or decide when statements run.

use super::dialects::{SCHEMA, TABLE_PREFIX};
use super::statement::Statement;
use crate::base::op::RangeAgg;
use crate::base::table::{ColumnType, TableDef};
use std::sync::Arc;

/// How a list of keys (a multi-get, a batch of gets or deletes) travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyList {
    /// One array parameter, whatever the number of keys.
    Array,
    /// One parameter per key; a statement per distinct length.
    Params,
}

/// How a batch of inserts into one table travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowBatch {
    /// One statement with one array parameter per stored column (`UNNEST`).
    Arrays,
    /// Multi-row `VALUES`, at most this many parameters per statement.
    Values { max_params: usize },
    /// One statement per row, all in one transaction.
    Each,
}

/// How decimals and dates are stored, which decides how query texts compute with them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    /// Typed columns (`DECIMAL(15,2)`, `DATE`).
    Typed,
    /// Decimals as integer hundredths, dates as integer days since 1970-01-01.
    Integers,
    /// `(pk, document)`: every attribute is text inside the document, reached with
    /// this operator (`->` for hstore, `->>` for jsonb).
    Document { arrow: &'static str },
}

/// How an engine spells dbsweep's column types (`CREATE TABLE`, casts in query texts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnTypes {
    pub int: &'static str,
    pub float: &'static str,
    pub decimal: &'static str,
    pub date: &'static str,
    pub text: &'static str,
}

impl ColumnTypes {
    /// `BIGINT`, `DOUBLE PRECISION`, `NUMERIC(15,2)`, `DATE` and the engine's text type.
    pub const fn standard(text: &'static str) -> Self {
        ColumnTypes { int: "BIGINT", float: "DOUBLE PRECISION", decimal: "NUMERIC(15,2)", date: "DATE", text }
    }

    /// SQL's `DOUBLE` and `DECIMAL(15,2)` spellings, else as `standard`.
    pub const fn double_decimal(text: &'static str) -> Self {
        ColumnTypes { float: "DOUBLE", decimal: "DECIMAL(15,2)", ..ColumnTypes::standard(text) }
    }

    pub fn of(&self, ty: ColumnType) -> &'static str {
        match ty {
            ColumnType::Int => self.int,
            ColumnType::Float => self.float,
            ColumnType::Decimal => self.decimal,
            ColumnType::Date => self.date,
            ColumnType::Text => self.text,
        }
    }
}

/// How a statement's parameter `n` (1-based) is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `$n` (PostgreSQL's protocol, DuckDB).
    Dollar,
    /// `?` (MySQL's protocol, MonetDB).
    Question,
    /// `?n` (SQLite).
    NumberedQuestion,
}

impl Placeholder {
    pub fn write(self, n: usize) -> String {
        match self {
            Placeholder::Dollar => format!("${n}"),
            Placeholder::Question => "?".into(),
            Placeholder::NumberedQuestion => format!("?{n}"),
        }
    }
}

/// An engine's name and its spelling of types and parameters: the facts every dialect
/// states, from which `Dialect`'s name, type and parameter methods are derived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spelling {
    /// The dialect's name in the statement listing (`tests/golden/statements.txt`).
    pub name: &'static str,
    pub types: ColumnTypes,
    pub placeholder: Placeholder,
}

/// What differs between the SQL engines dbsweep drives. Every method but the first has
/// the default most engines share.
pub trait Dialect: Send + Sync {
    /// The engine's name and spelling of types and parameters.
    fn spelling(&self) -> &'static Spelling;

    /// The dialect's name in the statement listing (`tests/golden/statements.txt`).
    fn name(&self) -> &'static str {
        self.spelling().name
    }

    /// The SQL type of a column; `indexed` when it is the key or has an index.
    fn sql_type(&self, ty: ColumnType, _indexed: bool) -> &'static str {
        self.spelling().types.of(ty)
    }

    /// Parameter `n` (1-based) carrying a value of type `ty`, written as an expression of
    /// the column's comparable type (the driver binds the value in the matching encoding).
    fn param(&self, n: usize, _ty: ColumnType) -> String {
        self.spelling().placeholder.write(n)
    }

    /// An identifier in quotes.
    fn quote(&self, ident: &str) -> String {
        format!("\"{}\"", ident.replace('"', "\"\""))
    }

    /// The unquoted name of dbsweep's table for a logical table: without a schema of
    /// dbsweep's own (the embedded engines' files), the name carries `dbsweep_`.
    fn bare_name(&self, table: &str) -> String {
        format!("{TABLE_PREFIX}{table}")
    }

    /// dbsweep's quoted, qualified name of a table (`bare` is `bare_name`'s answer) in the
    /// default namespace.
    fn table_name(&self, bare: &str) -> String {
        self.table_name_in(SCHEMA, bare)
    }

    /// The same in the namespace `schema` (`--namespace`): the schema or database that
    /// holds dbsweep's tables in engines that have them; the embedded engines' files have
    /// none, so there it is only the quoted name.
    fn table_name_in(&self, _schema: &str, bare: &str) -> String {
        self.quote(bare)
    }

    /// An expression of the column's comparable type turned into what the client decodes
    /// (MAX results; text columns in select lists).
    fn output(&self, _ty: ColumnType, expr: &str) -> String {
        expr.to_string()
    }

    /// What `SELECT ... FROM` lists for whole rows.
    fn select_list(&self, _t: &SqlTable) -> String {
        "*".into()
    }

    /// The column as an expression of its comparable type (filters, indexes, MAX).
    fn column(&self, t: &SqlTable, c: usize) -> String {
        self.quote(&t.def.columns[c].name)
    }

    /// The key column as a filter expression.
    fn key_column(&self, t: &SqlTable) -> String {
        self.column(t, 0)
    }

    /// What follows the key column's type in `CREATE TABLE`.
    fn key_constraint(&self) -> &'static str {
        " PRIMARY KEY"
    }

    /// What follows the column list in `CREATE TABLE`.
    fn table_options(&self) -> &'static str {
        ""
    }

    /// `CREATE TABLE` with its columns.
    fn create_table(&self, t: &SqlTable) -> String {
        default_create_table(self, t)
    }

    /// The index on secondary column `c`, if the engine has indexes.
    fn create_index(&self, t: &SqlTable, c: usize) -> Option<String> {
        let name = format!("{}_{}_idx", self.bare_name(&t.def.name), t.def.columns[c].name);
        Some(format!("CREATE INDEX {} ON {} ({})", self.quote(&name), t.name, self.column(t, c)))
    }

    /// The stored columns an insert names, and the values of one row whose parameters
    /// start at `first`.
    fn insert_row(&self, t: &SqlTable, first: usize) -> (Vec<String>, Vec<String>) {
        default_insert_row(self, t, first)
    }

    /// `SET ...` of an update of column `c` to parameter 1.
    fn set(&self, t: &SqlTable, c: usize) -> String {
        format!("{} = {}", self.quote(&t.def.columns[c].name), self.param(1, t.def.columns[c].ty))
    }

    /// True when the engine has no primary key, so an insert checks that its key is absent.
    fn guard_inserts(&self) -> bool {
        false
    }

    /// True when `LIMIT` takes a parameter; else the scan length is written into the text.
    fn limit_parameter(&self) -> bool {
        true
    }

    /// How `n` keys travel.
    fn key_list(&self, _n: usize) -> KeyList {
        KeyList::Params
    }

    /// `= ANY(...)` of one array parameter, for `KeyList::Array`.
    fn key_array(&self) -> String {
        unimplemented!("{} has no array parameters", self.name())
    }

    /// An insert of any number of rows from one array parameter per stored column, for
    /// `RowBatch::Arrays`.
    fn insert_arrays(&self, _t: &SqlTable) -> String {
        unimplemented!("{} has no array parameters", self.name())
    }

    /// True when key lists are sorted, made distinct and padded with their last key to a
    /// power of two (engines that parse every statement: a few statements serve every
    /// length; a repeated key matches its row once, so results do not change).
    fn pad_keys(&self) -> bool {
        false
    }

    /// Most keys in one statement; longer lists are split.
    fn max_keys(&self) -> usize {
        usize::MAX
    }

    /// How a batch of inserts travels.
    fn row_batch(&self) -> RowBatch {
        RowBatch::Each
    }

    /// True when a batch of gets or deletes of one table is one key-list statement;
    /// else a batch is a transaction of single statements.
    fn batch_keys(&self) -> bool {
        true
    }

    /// The type of `CAST(... AS double)` in query texts.
    fn double(&self) -> &'static str {
        self.spelling().types.float
    }

    /// How decimals and dates are stored.
    fn storage(&self) -> Storage {
        Storage::Typed
    }
}

/// `Dialect::create_table`'s default: typed columns, the key's constraint, the options.
pub fn default_create_table(d: &(impl Dialect + ?Sized), t: &SqlTable) -> String {
    let columns: Vec<String> = (t.def.columns.iter().enumerate())
        .map(|(i, c)| {
            let key = if i == 0 { d.key_constraint() } else { "" };
            format!("{} {}{key}", d.quote(&c.name), d.sql_type(c.ty, i == 0 || t.def.indexed.contains(&i)))
        })
        .collect();
    format!("CREATE TABLE {} ({}){}", t.name, columns.join(", "), d.table_options())
}

/// `CREATE TABLE` without a key, for a table whose column 0 repeats (pgbench's history).
fn create_keyless(d: &(impl Dialect + ?Sized), t: &SqlTable) -> String {
    let columns: Vec<String> = t.def.columns.iter().map(|c| format!("{} {}", d.quote(&c.name), d.sql_type(c.ty, false))).collect();
    format!("CREATE TABLE {} ({})", t.name, columns.join(", "))
}

/// `Dialect::insert_row`'s default: every column, one parameter each.
pub fn default_insert_row(d: &(impl Dialect + ?Sized), t: &SqlTable, first: usize) -> (Vec<String>, Vec<String>) {
    let columns = t.def.columns.iter().map(|c| d.quote(&c.name)).collect();
    let values = t.def.columns.iter().enumerate().map(|(i, c)| d.param(first + i, c.ty)).collect();
    (columns, values)
}

/// One table as an SQL engine names it.
pub struct SqlTable {
    pub def: Arc<TableDef>,
    /// The quoted, qualified table name.
    pub name: String,
}

impl SqlTable {
    /// The table in the default namespace.
    pub fn new(dialect: &dyn Dialect, def: Arc<TableDef>) -> Self {
        Self::in_schema(dialect, def, SCHEMA)
    }

    /// The table in the namespace `schema` (see `Dialect::table_name_in`).
    pub fn in_schema(dialect: &dyn Dialect, def: Arc<TableDef>, schema: &str) -> Self {
        let name = dialect.table_name_in(schema, &dialect.bare_name(&def.name));
        SqlTable { def, name }
    }

    /// The statements that create the table and its indexes.
    pub fn create(&self, d: &dyn Dialect) -> Vec<String> {
        let indexes = self.def.indexed.iter().filter(|&&c| c != 0).filter_map(|&c| d.create_index(self, c));
        // Document layouts keep their `(pk, document)` shape: scripts do not run there.
        let keyless = crate::data::pgbench::keyless(&self.def) && !matches!(d.storage(), Storage::Document { .. });
        let create = if keyless { create_keyless(d, self) } else { d.create_table(self) };
        std::iter::once(create).chain(indexes).collect()
    }

    pub fn drop(&self) -> String {
        format!("DROP TABLE IF EXISTS {}", self.name)
    }

    pub fn count(&self) -> String {
        format!("SELECT COUNT(*) FROM {}", self.name)
    }

    /// The text of a statement on this table (`Echo` and `Query` are not table statements).
    pub fn text(&self, d: &dyn Dialect, statement: Statement) -> String {
        let (t, key) = (&self.name, d.key_column(self));
        let select = d.select_list(self);
        match statement {
            Statement::Insert { rows: 0, .. } => d.insert_arrays(self),
            Statement::Insert { rows, .. } => self.insert_values(d, rows),
            Statement::Get { .. } => format!("SELECT {select} FROM {t} WHERE {key} = {}", d.param(1, ColumnType::Int)),
            Statement::GetMany { keys, .. } => format!("SELECT {select} FROM {t} WHERE {key} {}", self.in_keys(d, keys)),
            Statement::Delete { .. } => format!("DELETE FROM {t} WHERE {key} = {}", d.param(1, ColumnType::Int)),
            Statement::DeleteMany { keys, .. } => format!("DELETE FROM {t} WHERE {key} {}", self.in_keys(d, keys)),
            Statement::Update { column, .. } => {
                format!("UPDATE {t} SET {} WHERE {key} = {}", d.set(self, column), d.param(2, ColumnType::Int))
            }
            Statement::Scan { limit, .. } => {
                let limit = limit.map_or_else(|| d.param(2, ColumnType::Int), |n| n.to_string());
                format!("SELECT {select} FROM {t} WHERE {key} >= {} ORDER BY {key} LIMIT {limit}", d.param(1, ColumnType::Int))
            }
            Statement::Range { column, agg, .. } => {
                let ty = self.def.columns[column].ty;
                let filter = format!("{} BETWEEN {} AND {}", d.column(self, column), d.param(1, ty), d.param(2, ty));
                let what = match agg {
                    RangeAgg::Rows => select,
                    RangeAgg::Count => "COUNT(*)".into(),
                    RangeAgg::Max { column: of } => d.output(self.def.columns[of].ty, &format!("MAX({})", d.column(self, of))),
                };
                format!("SELECT {what} FROM {t} WHERE {filter}")
            }
            Statement::FetchAll { .. } => format!("SELECT {select} FROM {t}"),
            Statement::Echo | Statement::Query(_) => unreachable!("{statement:?} is not a table statement"),
        }
    }

    /// `= ANY(array)` or `IN (p1, ..., pn)`.
    fn in_keys(&self, d: &dyn Dialect, keys: usize) -> String {
        if keys == 0 {
            return d.key_array();
        }
        let list: Vec<String> = (1..=keys).map(|n| d.param(n, ColumnType::Int)).collect();
        format!("IN ({})", list.join(", "))
    }

    /// `rows` rows from consecutive parameters.
    fn insert_values(&self, d: &dyn Dialect, rows: usize) -> String {
        let width = self.params_per_row(d);
        let (columns, first) = d.insert_row(self, 1);
        if d.guard_inserts() {
            // One row, inserted only if its key (parameter 1) is absent.
            return format!(
                "INSERT INTO {t} ({}) SELECT {} WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE {} = {})",
                columns.join(", "),
                first.join(", "),
                d.key_column(self),
                d.param(1, ColumnType::Int),
                t = self.name
            );
        }
        let tuples: Vec<String> = (0..rows).map(|r| format!("({})", d.insert_row(self, r * width + 1).1.join(", "))).collect();
        format!("INSERT INTO {} ({}) VALUES {}", self.name, columns.join(", "), tuples.join(", "))
    }

    /// Parameters per row of a multi-row insert.
    pub fn params_per_row(&self, d: &dyn Dialect) -> usize {
        d.insert_row(self, 1).1.len()
    }

    /// Rows per multi-row insert under a parameter limit.
    pub fn rows_per_statement(&self, d: &dyn Dialect, max_params: usize) -> usize {
        (max_params / self.params_per_row(d).max(1)).max(1)
    }
}
