//! A study's own operations (`op = "custom"`): the experiment's statements per system
//! family and its parameters become a `CustomOp`, every template checked before anything
//! runs.
//!
//! Owns the study-file syntax of a custom operation (`params`, `sql`, `sql_dialects`,
//! `redis`, `memcached`, `mongodb`, `cql`, `reads`, `setup`), its `${...}` templates for
//! non-SQL families (the Memcached, MongoDB and CQL ones in `custom/families.rs`; SQL takes
//! pgbench's `:name`, as `--sql-file` does), and its refusals, each one line naming the
//! experiment and the fix: an unknown placeholder, table or column, a parameter out of
//! range, a statement for no family, a write said to be a read, and what would act outside
//! dbsweep's namespace (DDL on other tables, FLUSHALL and its kin, keys outside the
//! prefix, another MongoDB database or collection, another keyspace). Must not run or draw anything
//! (`workload::custom` draws).

use super::ExperimentEntry;
use super::script::parse_statements;
use crate::base::custom::{CommandTemplate, CustomOp, Family, KeyDistribution, ParamSource, Piece};
use crate::base::script::{Command, ScriptValue, SqlKind};
use crate::data::Dataset;
use families::{cql_statement, memcached_command, mongodb_document};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The SQL dialects a `sql_dialects` key may name.
pub const DIALECTS: [&str; 6] = ["postgres", "hyper", "h2", "mariadb", "sqlite", "duckdb"];

/// A parameter as written: exactly one of `key`, `range`, `pick`, `column`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParamEntry {
    /// `key = "kv"`: a key of a loaded row of table `kv`.
    pub key: Option<String>,
    /// `range = [1, 100]`: an integer, inclusive.
    pub range: Option<[i64; 2]>,
    /// `pick = ["A", "N", "R"]`: one of these (numbers or text).
    pub pick: Option<Vec<toml::Value>>,
    /// `column = "lineitem.l_quantity"`: that column of a generated row.
    pub column: Option<String>,
    /// For `key` and `column`: uniform (default), zipfian, latest or sequential.
    pub distribution: Option<KeyDistribution>,
}

/// Setup statements, run once per target before loading.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetupEntry {
    #[serde(default)]
    pub sql: Vec<String>,
    #[serde(default)]
    pub redis: Vec<Vec<String>>,
    #[serde(default)]
    pub memcached: Vec<Vec<String>>,
    #[serde(default)]
    pub mongodb: Vec<toml::Table>,
    #[serde(default)]
    pub cql: Vec<String>,
}

/// Redis commands refused outright: they act on the whole server or database, or on
/// another database, not on dbsweep's keys.
const REDIS_REFUSED: [&str; 16] = [
    "FLUSHALL",
    "FLUSHDB",
    "SWAPDB",
    "SELECT",
    "MOVE",
    "MIGRATE",
    "CONFIG",
    "SHUTDOWN",
    "DEBUG",
    "SCRIPT",
    "FUNCTION",
    "ACL",
    "REPLICAOF",
    "SLAVEOF",
    "CLUSTER",
    "MODULE",
];

/// Redis commands that only read: their answers are compared.
const REDIS_READS: [&str; 22] = [
    "GET",
    "MGET",
    "HGET",
    "HMGET",
    "HGETALL",
    "HLEN",
    "EXISTS",
    "STRLEN",
    "ZRANGE",
    "ZRANGEBYSCORE",
    "ZCOUNT",
    "ZCARD",
    "ZSCORE",
    "LRANGE",
    "LLEN",
    "SMEMBERS",
    "SCARD",
    "SISMEMBER",
    "EVAL_RO",
    "EVALSHA_RO",
    "FCALL_RO",
    "HEXISTS",
];

/// The custom operation of experiment `e` on `dataset`'s tables, checked; errors are one
/// line naming the experiment and the fix.
pub fn resolve(e: &ExperimentEntry, dataset: &Dataset) -> Result<CustomOp, String> {
    let at = |what: String| format!("experiment '{}': {what}", e.name);
    let names: Vec<String> = e.params.keys().cloned().collect();
    let params = e.params.iter().map(|(name, p)| param(name, p, dataset)).collect::<Result<Vec<_>, _>>().map_err(at)?;
    let variables: Vec<String> = std::iter::once("scale".to_string()).chain(names.iter().cloned()).collect();
    let tables: Vec<String> = dataset.tables.iter().map(|t| t.name.clone()).collect();
    if names.iter().any(|n| n == "scale") {
        return Err(at("a parameter may not be called 'scale' (the data's scale has that name)".into()));
    }
    let sql = match &e.sql {
        Some(sql) => Some(sql_script(&e.name, sql, &e.sql_dialects, &tables, &names).map_err(at)?),
        None if !e.sql_dialects.is_empty() => {
            return Err(at("sql_dialects overrides a `sql` statement it does not have: add sql = \"...\"".into()));
        }
        None => None,
    };
    let redis = match &e.redis {
        Some(args) => vec![redis_command(args, &variables, &tables).map_err(|m| at(format!("redis: {m}")))?],
        None => Vec::new(),
    };
    let memcached = match &e.memcached {
        Some(args) => vec![memcached_command(args, &variables, &tables).map_err(|m| at(format!("memcached: {m}")))?],
        None => Vec::new(),
    };
    let mongodb = match &e.mongodb {
        Some(document) => vec![mongodb_document(document, &variables, &tables).map_err(|m| at(format!("mongodb: {m}")))?],
        None => Vec::new(),
    };
    let cql = match &e.cql {
        Some(text) => vec![cql_statement(text, &variables).map_err(|m| at(format!("cql: {m}")))?],
        None => Vec::new(),
    };
    if sql.is_none() && redis.is_empty() && memcached.is_empty() && mongodb.is_empty() && cql.is_empty() {
        return Err(at(
            "op = \"custom\" needs a statement: sql = \"SELECT ...\", redis = [\"GET\", \"${prefix}...\"], memcached = [...], mongodb = {...} or cql = \"...\""
                .into(),
        ));
    }
    let sql_reads = sql.as_ref().map(|s| s.read_only());
    let redis_reads = e.redis.as_ref().map(|args| args.first().is_some_and(|c| REDIS_READS.contains(&c.to_ascii_uppercase().as_str())));
    let memcached_reads = e.memcached.as_ref().map(|args| families::memcached_reads(args));
    let mongodb_reads = e.mongodb.as_ref().map(families::mongodb_reads);
    let cql_reads = e.cql.as_ref().map(|text| families::cql_reads(text));
    let reads = match e.reads {
        Some(true) if sql_reads == Some(false) => {
            return Err(at("reads = true, but its sql statement writes (its answers could not be compared): remove reads".into()));
        }
        Some(reads) => reads,
        None => [sql_reads, redis_reads, memcached_reads, mongodb_reads, cql_reads].iter().all(|r| r.unwrap_or(true)),
    };
    let setup = match &e.setup {
        Some(setup) => Some(Box::new(setup_op(&e.name, setup, &tables).map_err(|m| at(format!("setup: {m}")))?)),
        None => None,
    };
    Ok(CustomOp { name: e.name.clone(), variables, params, reads, sql, redis, memcached, mongodb, cql, setup })
}

/// Whether any of `systems`' families has a statement in `op` (the NO-DB ceiling does not
/// count): else the experiment would measure nothing but the ceiling.
pub fn check_families(name: &str, op: &CustomOp, families: &[(String, Option<Family>)]) -> Result<(), String> {
    let measured: Vec<&(String, Option<Family>)> = families.iter().filter(|(system, _)| system != "nodb").collect();
    if measured.is_empty() || measured.iter().any(|(_, f)| f.is_some_and(|f| op.runs_on(f))) {
        return Ok(());
    }
    let systems: Vec<&str> = measured.iter().map(|(s, _)| s.as_str()).collect();
    let wanted: Vec<&str> = measured.iter().filter_map(|(_, f)| f.map(Family::name)).collect();
    Err(match wanted.is_empty() {
        true => format!(
            "experiment '{name}': none of this run's systems ({}) runs custom statements; add a SQL, Redis, Memcached, MongoDB or Cassandra target",
            systems.join(", ")
        ),
        false => format!(
            "experiment '{name}': no statement for any system of this run ({}): add {}",
            systems.join(", "),
            wanted.iter().map(|f| format!("`{f} = ...`")).collect::<Vec<_>>().join(" or ")
        ),
    })
}

fn param(name: &str, p: &ParamEntry, dataset: &Dataset) -> Result<ParamSource, String> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(format!("parameter name '{name}': letters, digits and _ only"));
    }
    let given = [p.key.is_some(), p.range.is_some(), p.pick.is_some(), p.column.is_some()].iter().filter(|g| **g).count();
    if given != 1 {
        return Err(format!(
            "parameter '{name}' needs exactly one of key = \"TABLE\", range = [LO, HI], pick = [...], column = \"TABLE.COLUMN\""
        ));
    }
    if p.distribution.is_some() && p.key.is_none() && p.column.is_none() {
        return Err(format!("parameter '{name}': distribution applies to key and column parameters only"));
    }
    let distribution = p.distribution.unwrap_or(KeyDistribution::Uniform);
    let table_id = |table: &str| {
        let id = dataset.table_id(table).ok_or_else(|| {
            let names: Vec<&str> = dataset.tables.iter().map(|t| t.name.as_str()).collect();
            format!("parameter '{name}': no table '{table}' in this data (tables: {})", names.join(", "))
        })?;
        if dataset.initial_rows(id) == 0 {
            return Err(format!("parameter '{name}': table '{table}' starts empty, so it has no key to draw"));
        }
        Ok(id)
    };
    Ok(match (&p.key, &p.range, &p.pick, &p.column) {
        (Some(table), ..) => ParamSource::Key { table: table_id(table)?, distribution },
        (_, Some([lo, hi]), ..) if lo > hi => return Err(format!("parameter '{name}': range [{lo}, {hi}] is empty: write [low, high]")),
        (_, Some([lo, hi]), ..) if (*hi as i128 - *lo as i128) >= i64::MAX as i128 => {
            return Err(format!("parameter '{name}': range [{lo}, {hi}] is too wide"));
        }
        (_, Some([lo, hi]), ..) => ParamSource::Range { lo: *lo, hi: *hi },
        (_, _, Some(list), _) if list.is_empty() => return Err(format!("parameter '{name}': pick needs at least one value")),
        (_, _, Some(list), _) => ParamSource::Pick(list.iter().map(|v| pick_value(name, v)).collect::<Result<_, _>>()?),
        (.., Some(column)) => {
            let (table, column) =
                column.split_once('.').ok_or_else(|| format!("parameter '{name}': column = \"TABLE.COLUMN\", not '{column}'"))?;
            let id = table_id(table)?;
            let def = &dataset.tables[id];
            let index = def.columns.iter().position(|c| c.name == column).ok_or_else(|| {
                let names: Vec<&str> = def.columns.iter().map(|c| c.name.as_str()).collect();
                format!("parameter '{name}': table '{table}' has no column '{column}' (columns: {})", names.join(", "))
            })?;
            ParamSource::Column { table: id, column: index, distribution }
        }
        _ => unreachable!("exactly one source is given"),
    })
}

fn pick_value(name: &str, value: &toml::Value) -> Result<ScriptValue, String> {
    Ok(match value {
        toml::Value::Integer(i) => ScriptValue::Int(*i),
        toml::Value::Float(x) => ScriptValue::Float(*x),
        toml::Value::String(s) => ScriptValue::Text(s.clone()),
        other => return Err(format!("parameter '{name}': pick takes numbers and text, not {other}")),
    })
}

/// The SQL statement and its per-dialect overrides as one script: the statement on every
/// dialect without an override, each override on its own.
fn sql_script(
    name: &str,
    sql: &str,
    dialects: &BTreeMap<String, String>,
    tables: &[String],
    params: &[String],
) -> Result<crate::base::script::Script, String> {
    if let Some(bad) = dialects.keys().find(|d| !DIALECTS.contains(&d.as_str())) {
        return Err(format!("sql_dialects.{bad}: unknown dialect (dialects: {})", DIALECTS.join(", ")));
    }
    let statement = |text: &str| format!("{};\n", text.trim().trim_end_matches(';'));
    let mut text = String::new();
    if !dialects.is_empty() {
        text.push_str(&format!("-- dbsweep:not={}\n", dialects.keys().cloned().collect::<Vec<_>>().join(",")));
    }
    text.push_str(&statement(sql));
    for (dialect, sql) in dialects {
        text.push_str(&format!("-- dbsweep:on={dialect}\n{}", statement(sql)));
    }
    let script = parse_statements(&format!("sql of {name}"), &text, tables, params)?;
    let statements: Vec<SqlKind> =
        script.commands.iter().filter_map(|c| if let Command::Sql(s) = c { Some(s.kind) } else { None }).collect();
    if statements.len() != 1 + dialects.len() {
        return Err("sql (and each of sql_dialects) is one statement: split several into experiments of their own".into());
    }
    if statements.iter().any(|k| matches!(k, SqlKind::Begin | SqlKind::Commit | SqlKind::Rollback)) {
        return Err("a custom statement runs on its own: no BEGIN/COMMIT (use --sql-file for transactions)".into());
    }
    if statements.iter().any(|k| *k != statements[0]) {
        return Err("sql_dialects: an override must read where the statement reads, and write where it writes".into());
    }
    Ok(script)
}

/// One Redis command's arguments as templates, checked.
pub(super) fn redis_command(args: &[String], variables: &[String], tables: &[String]) -> Result<CommandTemplate, String> {
    let command = args.first().ok_or("an empty command: write [\"GET\", \"${row:kv}${k}\"]")?.to_ascii_uppercase();
    if REDIS_REFUSED.contains(&command.as_str()) {
        return Err(format!("{command} is refused: it acts outside dbsweep's keys (custom commands touch keys under ${{prefix}} only)"));
    }
    let templates = args.iter().map(|a| template(a, variables, tables)).collect::<Result<Vec<_>, _>>()?;
    if templates.iter().flatten().any(|p| matches!(p, Piece::DocumentId(_))) {
        return Err("${id:...} is a MongoDB document's _id: write ${row:TABLE}${name} for a row's key".into());
    }
    if templates[0].iter().any(|p| !matches!(p, Piece::Text(_))) {
        return Err("the command name (the first argument) cannot be a placeholder".into());
    }
    for (i, arg) in args.iter().enumerate().skip(1) {
        let upper = arg.to_ascii_uppercase();
        if ["FLUSHALL", "FLUSHDB", "SWAPDB"].iter().any(|f| upper.contains(f)) {
            return Err(format!("argument {}: a script that flushes is refused (custom commands touch dbsweep's keys only)", i + 1));
        }
        if [":OWNER", ":LEASE"].iter().any(|k| upper.ends_with(&format!("}}{}", &k[1..])) || upper.ends_with(k)) {
            return Err(format!("argument {}: dbsweep's own owner and lease keys are not for custom commands", i + 1));
        }
    }
    // The keys: EVAL's KEYS, else the first argument of a command on a key.
    let keys: Vec<usize> = match command.as_str() {
        "EVAL" | "EVALSHA" | "EVAL_RO" | "EVALSHA_RO" | "FCALL" | "FCALL_RO" => {
            let count: usize = args.get(2).and_then(|n| n.parse().ok()).ok_or("EVAL needs its number of keys as the third argument")?;
            if 3 + count > args.len() {
                return Err(format!("EVAL says {count} keys, but has {} arguments after the count", args.len() - 3));
            }
            (3..3 + count).collect()
        }
        "ECHO" | "PING" | "TIME" => vec![],
        _ if args.len() > 1 => vec![1],
        _ => vec![],
    };
    for k in keys {
        if !matches!(templates[k].first(), Some(Piece::Prefix | Piece::RowPrefix(_) | Piece::KeySet(_))) {
            return Err(format!(
                "argument {} ('{}') is a key outside dbsweep's namespace: start it with ${{prefix}}, ${{row:TABLE}} or ${{pk:TABLE}}",
                k + 1,
                args[k]
            ));
        }
    }
    Ok(CommandTemplate { args: templates })
}

/// `${name}`, `${prefix}`, `${row:TABLE}`, `${pk:TABLE}` in an argument.
pub(super) fn template(arg: &str, variables: &[String], tables: &[String]) -> Result<Vec<Piece>, String> {
    let mut pieces = Vec::new();
    let mut rest = arg;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_string()));
        }
        let end = rest[start..].find('}').ok_or_else(|| format!("'{arg}': a '${{' without its '}}'"))? + start;
        let inside = &rest[start + 2..end];
        let table = |t: &str| match tables.iter().any(|n| n == t) {
            true => Ok(t.to_string()),
            false => Err(format!("'{arg}': no table '{t}' in this data (tables: {})", tables.join(", "))),
        };
        pieces.push(match inside.split_once(':') {
            None if inside == "prefix" => Piece::Prefix,
            Some(("row", t)) => Piece::RowPrefix(table(t)?),
            Some(("pk", t)) => Piece::KeySet(table(t)?),
            Some(("id", v)) if variables.iter().any(|n| n == v) => Piece::DocumentId(variables.iter().position(|n| n == v).expect("found")),
            None if variables.iter().any(|v| v == inside) => Piece::Variable(variables.iter().position(|v| v == inside).expect("found")),
            _ => {
                return Err(format!(
                    "unknown placeholder ${{{inside}}} (params: {}; or ${{prefix}}, ${{row:TABLE}}, ${{pk:TABLE}}, ${{id:PARAM}})",
                    variables.join(", ")
                ));
            }
        });
        rest = &rest[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// The setup statements as an operation of their own (no parameters but `scale`).
fn setup_op(name: &str, setup: &SetupEntry, tables: &[String]) -> Result<CustomOp, String> {
    let variables = vec!["scale".to_string()];
    let sql = match setup.sql.is_empty() {
        true => None,
        false => {
            let text: String = setup.sql.iter().map(|s| format!("{};\n", s.trim().trim_end_matches(';'))).collect();
            Some(parse_statements(&format!("setup sql of {name}"), &text, tables, &[])?)
        }
    };
    let redis = setup.redis.iter().map(|c| redis_command(c, &variables, tables)).collect::<Result<Vec<_>, _>>()?;
    let memcached = setup.memcached.iter().map(|c| memcached_command(c, &variables, tables)).collect::<Result<Vec<_>, _>>()?;
    let mongodb = setup.mongodb.iter().map(|d| mongodb_document(d, &variables, tables)).collect::<Result<Vec<_>, _>>()?;
    let cql = setup.cql.iter().map(|s| cql_statement(s, &variables)).collect::<Result<Vec<_>, _>>()?;
    let op = CustomOp {
        name: format!("{name} (setup)"),
        variables,
        params: vec![],
        reads: false,
        sql,
        redis,
        memcached,
        mongodb,
        cql,
        setup: None,
    };
    Ok(op)
}

mod families;

#[cfg(test)]
mod tests;
