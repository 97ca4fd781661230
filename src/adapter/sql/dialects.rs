//! The SQL dialects dbsweep speaks: PostgreSQL in three layouts, HyPer, H2, MariaDB/MySQL,
//! SQLite, DuckDB and MonetDB. A new SQL engine starts here: one struct and its `Dialect` impl.
//!
//! Owns each engine's spelling of names, parameters, types and value conversions. Must not
//! open connections or bind values (the adapters' drivers bind in the encoding the
//! parameters here expect).

use super::dialect::{
    ColumnTypes, Dialect, KeyList, Placeholder, RowBatch, Spelling, SqlTable, Storage, default_create_table, default_insert_row,
};
use crate::base::table::ColumnType;

/// dbsweep's schema (PostgreSQL, HyPer, H2) or database (MariaDB) in the default namespace
/// (`--namespace NAME` makes it `dbsweep_NAME`, see `adapter::lease::Namespace`).
pub const SCHEMA: &str = "dbsweep";
/// Name prefix of dbsweep's tables in the embedded engines' files (no schemas there).
pub const TABLE_PREFIX: &str = "dbsweep_";

/// Every dialect, for the statement listing.
pub fn all() -> Vec<&'static dyn Dialect> {
    vec![&PG_ROW, &PG_HSTORE, &PG_JSONB, &HYPER, &H2, &MYSQL, &SQLITE, &DUCKDB, &MONETDB]
}

/// How PostgreSQL stores a table's rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One SQL column per attribute, with its proper type.
    Row,
    /// `(pk BIGINT PRIMARY KEY, v hstore)`: every non-key attribute as text in `v`.
    Hstore,
    /// `(pk BIGINT PRIMARY KEY, v jsonb)`: numbers as JSON numbers, the rest as strings.
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

    /// The dialect of this layout.
    pub fn dialect(self) -> &'static Postgres {
        match self {
            Layout::Row => &PG_ROW,
            Layout::Hstore => &PG_HSTORE,
            Layout::Jsonb => &PG_JSONB,
        }
    }
}

/// PostgreSQL's SQL and types, also spoken by HyPer. Parameters travel in PostgreSQL's
/// wire types without extra driver features: decimals as hundredths (`int8`, times 0.01
/// on the server), dates as days since 1970-01-01 (`int4`; ISO text in the document
/// layouts, where dates are text that sorts like the date).
pub struct Postgres {
    pub layout: Layout,
    /// HyPer: no primary keys or indexes (inserts check the key), no `LIMIT` parameter.
    pub hyper: bool,
}

pub static PG_ROW: Postgres = Postgres { layout: Layout::Row, hyper: false };
pub static PG_HSTORE: Postgres = Postgres { layout: Layout::Hstore, hyper: false };
pub static PG_JSONB: Postgres = Postgres { layout: Layout::Jsonb, hyper: false };
pub static HYPER: Postgres = Postgres { layout: Layout::Row, hyper: true };

impl Postgres {
    /// The wire type a parameter of this column travels as.
    pub fn wire_type(&self, ty: ColumnType) -> &'static str {
        match ty {
            ColumnType::Int | ColumnType::Decimal => "int8",
            ColumnType::Float => "float8",
            ColumnType::Text => "text",
            ColumnType::Date if self.layout == Layout::Row => "int4",
            ColumnType::Date => "text",
        }
    }

    /// An expression of `wire_type` as the column's comparable SQL type.
    fn comparable_from_wire(&self, ty: ColumnType, expr: &str) -> String {
        match ty {
            ColumnType::Decimal => format!("({expr} * 0.01)"),
            ColumnType::Date if self.layout == Layout::Row => format!("(DATE '1970-01-01' + {expr})"),
            _ => expr.to_string(),
        }
    }

    fn document_type(&self) -> &'static str {
        if self.layout == Layout::Hstore { "hstore" } else { "jsonb" }
    }
}

/// PostgreSQL's and HyPer's spelling, with the dialect's name.
const fn postgres_spelling(name: &'static str) -> Spelling {
    Spelling { name, types: ColumnTypes::standard("TEXT"), placeholder: Placeholder::Dollar }
}
const POSTGRES_ROW: Spelling = postgres_spelling("postgres-row");
const POSTGRES_HSTORE: Spelling = postgres_spelling("postgres-hstore");
const POSTGRES_JSONB: Spelling = postgres_spelling("postgres-jsonb");
const HYPER_SPELLING: Spelling = postgres_spelling("hyper");

impl Dialect for Postgres {
    fn spelling(&self) -> &'static Spelling {
        match (self.hyper, self.layout) {
            (true, _) => &HYPER_SPELLING,
            (false, Layout::Row) => &POSTGRES_ROW,
            (false, Layout::Hstore) => &POSTGRES_HSTORE,
            (false, Layout::Jsonb) => &POSTGRES_JSONB,
        }
    }

    fn table_name_in(&self, schema: &str, bare: &str) -> String {
        format!("{schema}.{}", self.quote(bare))
    }

    /// The three layouts share one schema.
    fn bare_name(&self, table: &str) -> String {
        match self.layout {
            Layout::Row => table.to_string(),
            Layout::Hstore => format!("{table}_hstore"),
            Layout::Jsonb => format!("{table}_jsonb"),
        }
    }

    fn param(&self, n: usize, ty: ColumnType) -> String {
        self.comparable_from_wire(ty, &format!("${n}::{}", self.wire_type(ty)))
    }

    fn output(&self, ty: ColumnType, expr: &str) -> String {
        match ty {
            ColumnType::Decimal => format!("(({expr}) * 100)::int8"),
            ColumnType::Date if self.layout == Layout::Row => format!("(({expr}) - DATE '1970-01-01')"),
            ColumnType::Date => format!("(({expr})::date - DATE '1970-01-01')"),
            _ => expr.to_string(),
        }
    }

    /// Document layouts: attributes extracted from `v` and cast back to their types,
    /// exactly as the expression indexes are written, so the planner uses them.
    fn column(&self, t: &SqlTable, c: usize) -> String {
        let name = &t.def.columns[c].name;
        let arrow = match (self.layout, c) {
            (Layout::Row, _) => return self.quote(name),
            (_, 0) => return "pk".into(),
            (Layout::Hstore, _) => "->",
            (Layout::Jsonb, _) => "->>",
        };
        let text = format!("(v {arrow} {})", quote_literal(name));
        match t.def.columns[c].ty {
            ColumnType::Int => format!("({text}::int8)"),
            ColumnType::Float => format!("({text}::float8)"),
            ColumnType::Decimal => format!("({text}::numeric)"),
            ColumnType::Text | ColumnType::Date => text,
        }
    }

    fn key_constraint(&self) -> &'static str {
        if self.hyper { " NOT NULL" } else { " PRIMARY KEY" }
    }

    fn create_table(&self, t: &SqlTable) -> String {
        match self.layout {
            Layout::Row => default_create_table(self, t),
            _ => format!("CREATE TABLE {} (pk BIGINT PRIMARY KEY, v {} NOT NULL)", t.name, self.document_type()),
        }
    }

    /// Unnamed, on the column's comparable expression (HyPer has no indexes).
    fn create_index(&self, t: &SqlTable, c: usize) -> Option<String> {
        (!self.hyper).then(|| format!("CREATE INDEX ON {} (({}))", t.name, self.column(t, c)))
    }

    fn insert_row(&self, t: &SqlTable, first: usize) -> (Vec<String>, Vec<String>) {
        match self.layout {
            Layout::Row => default_insert_row(self, t, first),
            _ => {
                (vec!["pk".into(), "v".into()], vec![format!("${first}::int8"), format!("${}::text::{}", first + 1, self.document_type())])
            }
        }
    }

    fn set(&self, t: &SqlTable, c: usize) -> String {
        let name = quote_literal(&t.def.columns[c].name);
        match self.layout {
            Layout::Row => format!("{} = {}", self.quote(&t.def.columns[c].name), self.param(1, t.def.columns[c].ty)),
            Layout::Hstore => format!("v = v || hstore({name}, $1::text)"),
            Layout::Jsonb => format!("v = v || jsonb_build_object({name}, $1::text::jsonb)"),
        }
    }

    fn guard_inserts(&self) -> bool {
        self.hyper
    }

    fn limit_parameter(&self) -> bool {
        !self.hyper
    }

    fn key_list(&self, _n: usize) -> KeyList {
        KeyList::Array
    }

    fn key_array(&self) -> String {
        "= ANY($1::int8[])".into()
    }

    fn insert_arrays(&self, t: &SqlTable) -> String {
        let (columns, _) = self.insert_row(t, 1);
        let aliases: Vec<String> = (0..columns.len()).map(|i| format!("c{i}")).collect();
        let (arrays, values): (Vec<String>, Vec<String>) = match self.layout {
            Layout::Row => (t.def.columns.iter().enumerate())
                .map(|(i, c)| (format!("${}::{}[]", i + 1, self.wire_type(c.ty)), self.comparable_from_wire(c.ty, &format!("u.c{i}"))))
                .unzip(),
            _ => (vec!["$1::int8[]".into(), "$2::text[]".into()], vec!["u.c0".into(), format!("u.c1::{}", self.document_type())]),
        };
        let guard = if self.hyper {
            format!(" WHERE NOT EXISTS (SELECT 1 FROM {} AS e WHERE e.{} = u.c0)", t.name, self.key_column(t))
        } else {
            String::new()
        };
        format!(
            "INSERT INTO {} ({}) SELECT {} FROM UNNEST({}) AS u({}){guard}",
            t.name,
            columns.join(", "),
            values.join(", "),
            arrays.join(", "),
            aliases.join(", ")
        )
    }

    fn row_batch(&self) -> RowBatch {
        RowBatch::Arrays
    }

    fn storage(&self) -> Storage {
        match self.layout {
            Layout::Row => Storage::Typed,
            Layout::Hstore => Storage::Document { arrow: "->" },
            Layout::Jsonb => Storage::Document { arrow: "->>" },
        }
    }
}

/// H2 through its PostgreSQL-protocol server: parameters without casts (a cast leaves
/// H2's parameter type unknown), `DATEADD`/`DATEDIFF` for day numbers, text selected as
/// UTF-8 bytes (H2's server has no binary text output), no arrays (key lists padded to
/// a power of two, multi-row `VALUES`), `VARCHAR` for text (`TEXT` would be a CLOB).
pub struct H2;
pub static H2_SQL: H2 = H2;

impl Dialect for H2 {
    fn spelling(&self) -> &'static Spelling {
        const H2_SPELLING: Spelling = Spelling { name: "h2", types: ColumnTypes::standard("VARCHAR"), placeholder: Placeholder::Dollar };
        &H2_SPELLING
    }

    fn table_name_in(&self, schema: &str, bare: &str) -> String {
        format!("{schema}.{}", self.quote(bare))
    }

    /// In dbsweep's schema.
    fn bare_name(&self, table: &str) -> String {
        table.to_string()
    }

    fn param(&self, n: usize, ty: ColumnType) -> String {
        match ty {
            ColumnType::Decimal => format!("(${n} * 0.01)"),
            ColumnType::Date => format!("DATEADD(DAY, ${n}, DATE '1970-01-01')"),
            ColumnType::Int | ColumnType::Float | ColumnType::Text => Placeholder::Dollar.write(n),
        }
    }

    fn output(&self, ty: ColumnType, expr: &str) -> String {
        match ty {
            ColumnType::Decimal => format!("CAST({expr} * 100 AS BIGINT)"),
            ColumnType::Date => format!("DATEDIFF(DAY, DATE '1970-01-01', {expr})"),
            ColumnType::Text => format!("STRINGTOUTF8({expr})"),
            ColumnType::Int | ColumnType::Float => expr.to_string(),
        }
    }

    fn select_list(&self, t: &SqlTable) -> String {
        let columns: Vec<String> = (t.def.columns.iter())
            .map(|c| match c.ty {
                ColumnType::Text => format!("{} AS {}", self.output(c.ty, &self.quote(&c.name)), self.quote(&c.name)),
                _ => self.quote(&c.name),
            })
            .collect();
        columns.join(", ")
    }

    fn pad_keys(&self) -> bool {
        true
    }

    fn max_keys(&self) -> usize {
        1024
    }

    fn row_batch(&self) -> RowBatch {
        RowBatch::Values { max_params: 4096 }
    }
}

/// MariaDB / MySQL: backquotes, `?` parameters, InnoDB with inline indexes; decimals and
/// dates are bound as the text the server converts exactly.
pub struct MySql;
pub static MYSQL: MySql = MySql;

impl Dialect for MySql {
    fn spelling(&self) -> &'static Spelling {
        const MARIADB: Spelling =
            Spelling { name: "mariadb", types: ColumnTypes::double_decimal("TEXT"), placeholder: Placeholder::Question };
        &MARIADB
    }

    fn quote(&self, ident: &str) -> String {
        format!("`{}`", ident.replace('`', "``"))
    }

    fn table_name_in(&self, schema: &str, bare: &str) -> String {
        format!("{}.{}", self.quote(schema), self.quote(bare))
    }

    /// In dbsweep's database.
    fn bare_name(&self, table: &str) -> String {
        table.to_string()
    }

    fn sql_type(&self, ty: ColumnType, indexed: bool) -> &'static str {
        match ty {
            // TEXT cannot be indexed without a prefix length.
            ColumnType::Text if indexed => "VARCHAR(255)",
            ty => self.spelling().types.of(ty),
        }
    }

    /// One statement: the key and the indexes inside the column list.
    fn create_table(&self, t: &SqlTable) -> String {
        let mut parts: Vec<String> = (t.def.columns.iter().enumerate())
            .map(|(i, c)| format!("{} {}", self.quote(&c.name), self.sql_type(c.ty, i == 0 || t.def.indexed.contains(&i))))
            .collect();
        parts.push(format!("PRIMARY KEY ({})", self.key_column(t)));
        for &i in t.def.indexed.iter().filter(|&&i| i != 0) {
            let name = &t.def.columns[i].name;
            parts.push(format!("INDEX {} ({})", self.quote(&format!("{name}_idx")), self.quote(name)));
        }
        format!("CREATE TABLE {} ({}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin", t.name, parts.join(", "))
    }

    fn create_index(&self, _t: &SqlTable, _c: usize) -> Option<String> {
        None
    }

    /// One list, however long: the session sends a list beyond 65,535 keys with literal keys.
    fn max_keys(&self) -> usize {
        usize::MAX
    }

    /// One statement, however many rows: the session sends one beyond 65,535 placeholders
    /// with literal values.
    fn row_batch(&self) -> RowBatch {
        RowBatch::Values { max_params: usize::MAX }
    }
}

/// SQLite: numbered `?N` parameters; decimals as INTEGER hundredths and dates as INTEGER
/// days (exact, compact, ordered); a batch is one transaction of single statements.
pub struct Sqlite;
pub static SQLITE: Sqlite = Sqlite;

impl Dialect for Sqlite {
    fn spelling(&self) -> &'static Spelling {
        const TYPES: ColumnTypes = ColumnTypes { int: "INTEGER", float: "REAL", decimal: "INTEGER", date: "INTEGER", text: "TEXT" };
        const SQLITE_SPELLING: Spelling = Spelling { name: "sqlite", types: TYPES, placeholder: Placeholder::NumberedQuestion };
        &SQLITE_SPELLING
    }

    /// SQLite allows 32,766 bound parameters.
    fn max_keys(&self) -> usize {
        10_000
    }

    fn batch_keys(&self) -> bool {
        false
    }

    fn storage(&self) -> Storage {
        Storage::Integers
    }
}

/// DuckDB: numbered `$N` parameters, typed columns; more than 100 keys travel as one list
/// parameter (an `IN` list of thousands of keys takes seconds to plan); a batch is one
/// transaction of single statements.
pub struct DuckDb;
pub static DUCKDB: DuckDb = DuckDb;

/// Most keys DuckDB gets as an `IN ($1, ...)` list.
pub const DUCKDB_IN_LIST_MAX: usize = 100;

impl Dialect for DuckDb {
    fn spelling(&self) -> &'static Spelling {
        const DUCKDB_SPELLING: Spelling =
            Spelling { name: "duckdb", types: ColumnTypes::double_decimal("VARCHAR"), placeholder: Placeholder::Dollar };
        &DUCKDB_SPELLING
    }

    fn key_list(&self, n: usize) -> KeyList {
        if n > DUCKDB_IN_LIST_MAX { KeyList::Array } else { KeyList::Params }
    }

    fn key_array(&self) -> String {
        "IN (SELECT unnest(CAST($1 AS BIGINT[])))".into()
    }

    fn batch_keys(&self) -> bool {
        false
    }
}

/// MonetDB (MonetDBe): `?` parameters, a decimal one written `CAST(? AS DECIMAL(15,2))` so
/// that its bound hundredths keep their scale; typed columns; a named primary key (bulk
/// loads drop it and add it back, see `embedded::monetdb`); key lists as `IN` lists of
/// bound keys, padded to a power of two (every new text is prepared once per connection);
/// inserts as multi-row `VALUES`.
pub struct MonetDb;
pub static MONETDB: MonetDb = MonetDb;

impl MonetDb {
    /// The name of the primary key constraint of dbsweep's table `bare`.
    pub fn primary_key_name(&self, bare: &str) -> String {
        format!("{bare}_pk")
    }
}

impl Dialect for MonetDb {
    fn spelling(&self) -> &'static Spelling {
        const MONETDB_SPELLING: Spelling =
            Spelling { name: "monetdb", types: ColumnTypes::double_decimal("TEXT"), placeholder: Placeholder::Question };
        &MONETDB_SPELLING
    }

    /// A decimal parameter keeps its scale as `CAST(? AS DECIMAL(15,2))`.
    fn param(&self, n: usize, ty: ColumnType) -> String {
        match ty {
            ColumnType::Decimal => format!("CAST({} AS {})", self.spelling().placeholder.write(n), self.spelling().types.decimal),
            _ => self.spelling().placeholder.write(n),
        }
    }

    /// The key as a named table constraint, which a bulk load can drop and add back.
    fn create_table(&self, t: &SqlTable) -> String {
        let columns: Vec<String> = (t.def.columns.iter().enumerate())
            .map(|(i, c)| {
                format!(
                    "{} {}{}",
                    self.quote(&c.name),
                    self.sql_type(c.ty, i == 0 || t.def.indexed.contains(&i)),
                    if i == 0 { " NOT NULL" } else { "" }
                )
            })
            .collect();
        let key = self.quote(&self.primary_key_name(&self.bare_name(&t.def.name)));
        format!("CREATE TABLE {} ({}, CONSTRAINT {key} PRIMARY KEY ({}))", t.name, columns.join(", "), self.quote(&t.def.columns[0].name))
    }

    fn pad_keys(&self) -> bool {
        true
    }

    fn max_keys(&self) -> usize {
        MONETDB_MAX_KEYS
    }

    fn row_batch(&self) -> RowBatch {
        RowBatch::Values { max_params: MONETDB_MAX_PARAMS }
    }
}

/// Most keys in one MonetDB `IN` list (a longer list is split).
pub const MONETDB_MAX_KEYS: usize = 1024;
/// Most parameters of one multi-row MonetDB insert.
const MONETDB_MAX_PARAMS: usize = 4096;

/// `'text'` with embedded quotes doubled.
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}
