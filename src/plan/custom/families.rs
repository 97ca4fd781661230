//! The Memcached, MongoDB and CQL statements of a custom operation, checked: a Memcached
//! command as argument templates (as Redis ones, `${...}` placeholders), a MongoDB command
//! document as a template tree, a CQL statement with a bind marker per placeholder. Refuses, in one line naming the fix, what would act outside
//! dbsweep's namespace: a Memcached key outside the prefix or one of dbsweep's own items,
//! a command beyond the data commands; a MongoDB command beyond the CRUD ones, a collection
//! that is not a table of the data, another database (`$db`) and the pipeline stages that
//! name another collection (`$out`, `$merge`, `$lookup`, ...); CQL other than one SELECT,
//! INSERT, UPDATE or DELETE, a name qualified by a keyspace (`other.t`), dbsweep's own owner
//! and lease tables. Must not run anything.

use super::template;
use crate::base::custom::{CommandTemplate, CqlStatement, DocumentTemplate, Piece};

/// The Memcached commands a custom operation may send: name, arguments after the name
/// (`None`: one or more keys), whether it only reads.
const MEMCACHED_COMMANDS: [(&str, Option<usize>, bool); 10] = [
    ("get", None, true),
    ("gets", None, true),
    ("set", Some(2), false),
    ("add", Some(2), false),
    ("replace", Some(2), false),
    ("append", Some(2), false),
    ("prepend", Some(2), false),
    ("delete", Some(1), false),
    ("incr", Some(2), false),
    ("decr", Some(2), false),
];

/// Whether a Memcached command (as written) only reads.
pub fn memcached_reads(args: &[String]) -> bool {
    args.first().is_some_and(|c| MEMCACHED_COMMANDS.iter().any(|(name, _, reads)| *reads && c.eq_ignore_ascii_case(name)))
}

/// One Memcached command, checked: `["get", "${row:kv}${k}"]`, `["set", KEY, VALUE]`,
/// `["incr", KEY, AMOUNT]`, ... (flags and expiry are always 0).
pub fn memcached_command(args: &[String], variables: &[String], tables: &[String]) -> Result<CommandTemplate, String> {
    let names: Vec<&str> = MEMCACHED_COMMANDS.iter().map(|(name, ..)| *name).collect();
    let written = args.first().ok_or_else(|| "an empty command: write [\"get\", \"${row:kv}${k}\"]".to_string())?;
    let command = written.to_ascii_lowercase();
    let Some((_, arity, _)) = MEMCACHED_COMMANDS.iter().find(|(name, ..)| *name == command) else {
        return Err(format!("'{written}' is refused: custom commands are {} (the others act on the whole server)", names.join(", ")));
    };
    let given = args.len() - 1;
    match arity {
        None if given == 0 => return Err(format!("{command} needs at least one key")),
        Some(n) if given != *n => {
            let what = if *n == 1 {
                "a key"
            } else if command.ends_with("cr") {
                "a key and an amount"
            } else {
                "a key and a value"
            };
            return Err(format!("{command} takes {what} ({given} arguments given; flags and expiry are always 0)"));
        }
        _ => {}
    }
    let mut templates = vec![vec![Piece::Text(command.clone())]];
    for arg in &args[1..] {
        templates.push(template(arg, variables, tables)?);
    }
    if let Some(bad) = templates.iter().flatten().find(|p| matches!(p, Piece::KeySet(_) | Piece::DocumentId(_))) {
        let name = if matches!(bad, Piece::KeySet(_)) { "${pk:TABLE} (Redis' key set)" } else { "${id:...} (MongoDB's _id)" };
        return Err(format!("{name} has no meaning in memcached: write ${{row:TABLE}}${{name}} for a row's item"));
    }
    let keys = if arity.is_none() { 1..args.len() } else { 1..2 };
    for k in keys {
        match templates[k].first() {
            Some(Piece::Prefix | Piece::RowPrefix(_)) => {}
            _ => {
                return Err(format!(
                    "argument {} ('{}') is a key outside dbsweep's namespace: start it with ${{prefix}} or ${{row:TABLE}}",
                    k + 1,
                    args[k]
                ));
            }
        }
        let lower = args[k].to_ascii_lowercase();
        if lower == "${prefix}owner" || lower == "${prefix}lease" {
            return Err(format!("argument {}: dbsweep's own owner and lease items are not for custom commands", k + 1));
        }
    }
    Ok(CommandTemplate { args: templates })
}

/// The MongoDB commands a custom operation may run, the first found naming the command
/// (`findAndModify` before `update`, which is also one of its fields); whether it reads.
const MONGODB_COMMANDS: [(&str, bool); 8] = [
    ("findAndModify", false),
    ("find", true),
    ("aggregate", true),
    ("count", true),
    ("distinct", true),
    ("insert", false),
    ("update", false),
    ("delete", false),
];

/// Keys refused anywhere in a document: another database, or a stage that reads or writes
/// another collection.
const MONGODB_REFUSED: [&str; 7] = ["$db", "$out", "$merge", "$lookup", "$unionWith", "$graphLookup", "$documents"];

/// The command a document runs (its key naming one of `MONGODB_COMMANDS`).
fn mongodb_command(document: &toml::Table) -> Option<(&'static str, bool)> {
    MONGODB_COMMANDS.iter().copied().find(|(name, _)| document.contains_key(*name))
}

/// Whether a MongoDB command document only reads (unknown commands count as reads: they
/// are refused by `mongodb_document`).
pub fn mongodb_reads(document: &toml::Table) -> bool {
    mongodb_command(document).is_none_or(|(_, reads)| reads)
}

/// A MongoDB command document, checked: `{ find = "kv", filter = { _id = "${id:k}" } }`.
/// The command's value is a table of the data (its collection in dbsweep's database); the
/// command comes first, the other keys after it in the document's (alphabetical) order.
pub fn mongodb_document(document: &toml::Table, variables: &[String], tables: &[String]) -> Result<DocumentTemplate, String> {
    let names: Vec<&str> = MONGODB_COMMANDS.iter().map(|(name, _)| *name).collect();
    let (command, _) = mongodb_command(document).ok_or_else(|| {
        let written: Vec<&str> = document.keys().map(String::as_str).collect();
        format!(
            "no command in {{ {} }}: custom documents run {} on a table's collection (other commands may act outside dbsweep's database)",
            written.join(", "),
            names.join(", ")
        )
    })?;
    match &document[command] {
        toml::Value::String(table) if tables.contains(table) => {}
        other => {
            return Err(format!(
                "{command} = {other}: name a table of this data ({}); custom commands run on dbsweep's collections only",
                tables.join(", ")
            ));
        }
    }
    let mut entries =
        vec![(command.to_string(), DocumentTemplate::Text(vec![Piece::Text(document[command].as_str().expect("checked").into())]))];
    for (key, value) in document.iter().filter(|(key, _)| key.as_str() != command) {
        entries.push((key.clone(), document_value(key, value, variables, tables)?));
    }
    Ok(DocumentTemplate::Table(entries))
}

fn document_value(key: &str, value: &toml::Value, variables: &[String], tables: &[String]) -> Result<DocumentTemplate, String> {
    if MONGODB_REFUSED.contains(&key) {
        return Err(format!("{key} is refused: it names another database or collection (custom commands stay in dbsweep's)"));
    }
    Ok(match value {
        toml::Value::String(text) => {
            let pieces = template(text, variables, tables)?;
            if pieces.iter().any(|p| matches!(p, Piece::Prefix | Piece::RowPrefix(_) | Piece::KeySet(_))) {
                return Err(format!(
                    "'{text}': ${{prefix}}, ${{row:...}} and ${{pk:...}} are keys of Redis and Memcached; a row's _id is ${{id:PARAM}}"
                ));
            }
            DocumentTemplate::Text(pieces)
        }
        toml::Value::Integer(i) => DocumentTemplate::Int(*i),
        toml::Value::Float(x) => DocumentTemplate::Float(*x),
        toml::Value::Boolean(b) => DocumentTemplate::Bool(*b),
        toml::Value::Datetime(d) => return Err(format!("{key} = {d}: write dates as text")),
        toml::Value::Array(items) => {
            DocumentTemplate::Array(items.iter().map(|v| document_value(key, v, variables, tables)).collect::<Result<_, _>>()?)
        }
        toml::Value::Table(table) => DocumentTemplate::Table(
            table.iter().map(|(k, v)| Ok((k.clone(), document_value(k, v, variables, tables)?))).collect::<Result<_, String>>()?,
        ),
    })
}

/// The CQL statements a custom operation may run (the others change the schema, or act on
/// other keyspaces or on users), and whether each reads.
const CQL_STATEMENTS: [(&str, bool); 4] = [("SELECT", true), ("INSERT", false), ("UPDATE", false), ("DELETE", false)];

fn cql_first_word(text: &str) -> String {
    text.trim_start().split(|c: char| !c.is_ascii_alphabetic()).next().unwrap_or("").to_ascii_uppercase()
}

/// Whether a CQL statement only reads.
pub fn cql_reads(text: &str) -> bool {
    CQL_STATEMENTS.iter().any(|(word, reads)| *reads && cql_first_word(text) == *word)
}

/// One CQL statement, checked: `SELECT k, grp FROM kv WHERE k = ${k}`, each `${NAME}` a bind
/// marker, tables unqualified (they are dbsweep's keyspace's).
pub fn cql_statement(text: &str, variables: &[String]) -> Result<CqlStatement, String> {
    let first = cql_first_word(text);
    if !CQL_STATEMENTS.iter().any(|(word, _)| *word == first) {
        return Err(format!(
            "'{first}' is refused: custom CQL is one SELECT, INSERT, UPDATE or DELETE (the others change the schema or act outside dbsweep's keyspace)"
        ));
    }
    let body = text.trim().trim_end_matches(';');
    let mut out = String::with_capacity(body.len());
    let mut markers = Vec::new();
    let mut previous: Option<String> = None; // the identifier just before, for `a.b`
    let mut chars = body.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        match c {
            '\'' => {
                out.push(c);
                loop {
                    match chars.next() {
                        Some((_, '\'')) if chars.peek().is_some_and(|(_, n)| *n == '\'') => {
                            chars.next();
                            out.push_str("''");
                        }
                        Some((_, '\'')) => {
                            out.push('\'');
                            break;
                        }
                        Some((_, '$')) if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                            return Err(
                                "a placeholder inside a quoted string: write ${NAME} without quotes (it is bound as a value)".into()
                            );
                        }
                        Some((_, other)) => out.push(other),
                        None => return Err("a string without its closing quote".into()),
                    }
                }
                previous = None;
            }
            '$' if chars.peek().is_some_and(|(_, n)| *n == '{') => {
                let end = body[at..].find('}').ok_or_else(|| format!("'{body}': a '${{' without its '}}'"))? + at;
                let inside = &body[at + 2..end];
                let slot = variables.iter().position(|v| v == inside).ok_or_else(|| {
                    format!("unknown placeholder ${{{inside}}} (params: {}; CQL binds ${{NAME}} as a value)", variables.join(", "))
                })?;
                markers.push(slot);
                out.push('?');
                while chars.peek().is_some_and(|(i, _)| *i <= end) {
                    chars.next();
                }
                previous = None;
            }
            ';' => return Err("one statement: split several into experiments of their own".into()),
            '.' if previous.is_some() => {
                let rest = body[at + 1..].trim_start();
                let next: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '"').collect();
                return Err(format!(
                    "'{}.{next}' names another keyspace: custom CQL runs in dbsweep's keyspace; write the table alone",
                    previous.expect("checked")
                ));
            }
            c if c.is_alphabetic() || c == '_' || c == '"' => {
                let mut word = c.to_string();
                while let Some((_, n)) = chars.peek().copied().filter(|(_, n)| n.is_alphanumeric() || *n == '_' || (c == '"' && *n != '.'))
                {
                    chars.next();
                    word.push(n);
                    if c == '"' && n == '"' {
                        break;
                    }
                }
                out.push_str(&word);
                let bare = word.trim_matches('"').to_ascii_lowercase();
                if bare == "dbsweep_owner" || bare == "dbsweep_lease" {
                    return Err(format!("{bare}: dbsweep's own owner and lease tables are not for custom statements"));
                }
                while chars.peek().is_some_and(|(_, n)| *n == ' ') {
                    out.push(' ');
                    chars.next();
                }
                previous = Some(word);
            }
            c if c.is_ascii_digit() => {
                out.push(c);
                while let Some((_, n)) = chars.peek().copied().filter(|(_, n)| n.is_ascii_alphanumeric() || *n == '.' || *n == '_') {
                    chars.next();
                    out.push(n);
                }
                previous = None;
            }
            c => {
                out.push(c);
                previous = if c.is_whitespace() { previous } else { None };
            }
        }
    }
    Ok(CqlStatement { text: out, markers })
}
