//! `--sql-file` and `--builtin`: a script in pgbench's language becomes a `Script`.
//!
//! Owns what dbsweep accepts of pgbench's script language (`\set` with pgbench's
//! expressions and the functions `random`, `random_zipfian`, `random_exponential`, `abs`,
//! `least`, `greatest`, `int`, `double`; statements ended by `;`; `:name` references;
//! `BEGIN;`/`END;`), pgbench's built-in scripts, and the one-line refusal of anything else,
//! naming the line. Must not run or evaluate anything (`workload::script` draws the values).

use super::{ExperimentEntry, RunOptions, StudyFile};
use crate::base::script::{BinaryOp, Command, Expr, Function, Script, SqlKind, SqlPart, SqlStatement};
use crate::data::{DataSpec, Dataset};
use crate::error::{Error, Result};
use crate::workload::experiment::ExperimentOp;
use std::sync::Arc;

/// The study a run with `--sql-file` or `--builtin` uses when none is named.
pub const SCRIPT_STUDY: &str = "pgbench";

/// The built-in script a `script` experiment runs when no script is named (pgbench's default).
const DEFAULT_BUILTIN: &str = "tpcb-like";

/// Whether the run names a script.
pub(super) fn named(opts: &RunOptions) -> bool {
    opts.sql_file.is_some() || opts.builtin.is_some()
}

/// A study run with a script: one that has no `script` experiment measures the script
/// instead of its own experiments, on its own data.
pub(super) fn adapt_study(study: &mut StudyFile) {
    if !study.experiments.iter().any(|e| e.op == ExperimentOp::Script) {
        let entry: ExperimentEntry = toml::from_str("name = \"script\"\nop = \"script\"\nsweep = [\"clients\"]").expect("a valid entry");
        study.experiments = vec![entry];
    }
}

/// The script of the run's `script` experiments, parsed against the data's tables and its
/// first pass drawn (so a parameter out of range is refused now, not mid-run); `None` when
/// no experiment runs a script. Errors are usage errors (exit 2).
pub(super) fn resolve_script(opts: &RunOptions, study: &StudyFile, data: &DataSpec, seed: u64) -> Result<Option<Arc<Script>>> {
    if !study.experiments.iter().any(|e| e.op == ExperimentOp::Script) {
        return Ok(None);
    }
    let (name, text) = match (&opts.sql_file, &opts.builtin) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path).map_err(|e| Error::usage(format!("--sql-file {}: {e}", path.display())))?;
            (path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned()), text)
        }
        (None, builtin) => {
            let name = builtin.as_deref().unwrap_or(DEFAULT_BUILTIN);
            (name.to_string(), builtin_text(name).map_err(Error::usage)?.to_string())
        }
    };
    let dataset = Dataset::new(data, seed);
    let tables: Vec<String> = dataset.tables.iter().map(|t| t.name.clone()).collect();
    let script = parse(&name, &text, &tables).map_err(Error::usage)?;
    let stream = crate::base::rng::Stream::new(seed, 0);
    crate::workload::script::values(&script, data.pgbench_scale().unwrap_or(1.0), &stream, 0).map_err(Error::usage)?;
    Ok(Some(Arc::new(script)))
}

/// pgbench's built-in scripts (`pgbench -b NAME`), as pgbench writes them.
pub const BUILTINS: [(&str, &str); 3] = [
    (
        "tpcb-like",
        "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, 1 * :scale)\n\\set tid random(1, 10 * :scale)\n\
         \\set delta random(-5000, 5000)\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
         UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;\n\
         UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;\n\
         INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
         END;\n",
    ),
    (
        "simple-update",
        "\\set aid random(1, 100000 * :scale)\n\\set bid random(1, 1 * :scale)\n\\set tid random(1, 10 * :scale)\n\
         \\set delta random(-5000, 5000)\nBEGIN;\n\
         UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;\n\
         SELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n\
         INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);\n\
         END;\n",
    ),
    ("select-only", "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"),
];

/// The text of built-in script `name`, or the one-line error listing them.
pub fn builtin_text(name: &str) -> Result<&'static str, String> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, text)| *text).ok_or_else(|| {
        let names: Vec<&str> = BUILTINS.iter().map(|(n, _)| *n).collect();
        format!("unknown built-in script '{name}' in --builtin; pgbench's built-ins are: {}", names.join(", "))
    })
}

/// pgbench meta-commands dbsweep does not run.
const REFUSED_META: [&str; 11] =
    ["sleep", "setshell", "shell", "if", "elif", "else", "endif", "gset", "aset", "startpipeline", "endpipeline"];

/// Parses a script named `name`; `tables` are the data set's table names, which statements
/// may name. Errors are one line: `NAME line N: what, and the fix`.
pub fn parse(name: &str, text: &str, tables: &[String]) -> Result<Script, String> {
    parse_with(name, text, tables, &[], false)
}

/// Parses a custom operation's SQL: statements only (no meta-commands), whose `:name`s are
/// `scale` and `params` (slots 1 on, in order). Errors as `parse`'s.
pub fn parse_statements(name: &str, text: &str, tables: &[String], params: &[String]) -> Result<Script, String> {
    parse_with(name, text, tables, params, true)
}

fn parse_with(name: &str, text: &str, tables: &[String], params: &[String], custom: bool) -> Result<Script, String> {
    let variables = std::iter::once("scale".to_string()).chain(params.iter().cloned()).collect();
    let mut parser = Parser { variables, commands: Vec::new(), tables, custom };
    let mut pending = String::new();
    let (mut start_line, mut directives) = (0, Directives::default());
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        let trimmed = line.trim();
        let at = |e: String| format!("{name} line {number}: {e}");
        if let Some(meta) = trimmed.strip_prefix('\\') {
            if custom {
                return Err(at(format!("\\{meta}: a custom statement takes its values from the experiment's params, not meta-commands")));
            }
            if !strip_comments(&pending).trim().is_empty() {
                return Err(at("a meta-command inside an unfinished SQL statement (end the statement with ';')".into()));
            }
            parser.meta(meta, number).map_err(at)?;
            continue;
        }
        if strip_comments(&pending).trim().is_empty() {
            pending.clear();
            if let Some(directive) = trimmed.strip_prefix("--").map(str::trim).and_then(|c| c.strip_prefix("dbsweep:")) {
                directives.read(directive).map_err(at)?;
                continue;
            }
            start_line = number;
        }
        pending.push_str(line);
        pending.push('\n');
        while let Some(end) = statement_end(&pending) {
            let statement: String = pending.drain(..=end).collect();
            let statement = statement.trim_end_matches(';');
            if !strip_comments(statement).trim().is_empty() {
                let parsed = parser.statement(statement, start_line, std::mem::take(&mut directives));
                parser.commands.push(Command::Sql(parsed.map_err(|e| format!("{name} line {start_line}: {e}"))?));
            }
            start_line = number;
        }
    }
    if !strip_comments(&pending).trim().is_empty() {
        return Err(format!("{name} line {start_line}: the last statement has no ';' at its end"));
    }
    if !parser.commands.iter().any(|c| matches!(c, Command::Sql(_))) {
        return Err(format!("{name}: no SQL statement to run (end each statement with ';')"));
    }
    Ok(Script { name: name.into(), variables: parser.variables, commands: parser.commands })
}

/// `-- dbsweep:on=NAMES` / `-- dbsweep:not=NAMES` before a statement.
#[derive(Default)]
struct Directives {
    only: Vec<String>,
    not: Vec<String>,
}

impl Directives {
    fn read(&mut self, text: &str) -> Result<(), String> {
        let names = |list: &str| list.split(',').map(|d| d.trim().to_string()).filter(|d| !d.is_empty()).collect();
        match text.split_once('=') {
            Some(("on", list)) => self.only = names(list),
            Some(("not", list)) => self.not = names(list),
            _ => return Err(format!("unknown directive 'dbsweep:{text}' (dbsweep:on=DIALECTS or dbsweep:not=DIALECTS)")),
        }
        Ok(())
    }
}

struct Parser<'a> {
    variables: Vec<String>,
    commands: Vec<Command>,
    tables: &'a [String],
    /// A custom operation's statements: variables are its params.
    custom: bool,
}

impl Parser<'_> {
    fn meta(&mut self, meta: &str, line: usize) -> Result<(), String> {
        let (command, rest) = meta.split_once(char::is_whitespace).unwrap_or((meta, ""));
        if command != "set" {
            return Err(if REFUSED_META.contains(&command) {
                format!("pgbench's \\{command} is not supported by dbsweep (only \\set)")
            } else {
                format!("unknown meta-command \\{command} (dbsweep runs \\set)")
            });
        }
        let rest = rest.trim();
        let (variable, expr) = rest.split_once(char::is_whitespace).ok_or("\\set needs a name and an expression")?;
        if !variable.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') || variable.is_empty() {
            return Err(format!("invalid variable name '{variable}' in \\set"));
        }
        let expr = ExprParser { tokens: tokens(expr)?, at: 0, variables: &self.variables }.whole()?;
        let slot = match self.variables.iter().position(|v| v == variable) {
            Some(slot) => slot,
            None => {
                self.variables.push(variable.into());
                self.variables.len() - 1
            }
        };
        self.commands.push(Command::Set { slot, expr, line });
        Ok(())
    }

    /// One statement's text cut into parts.
    fn statement(&self, text: &str, line: usize, directives: Directives) -> Result<SqlStatement, String> {
        let text = strip_comments(text);
        let first = text.split_whitespace().next().unwrap_or("").to_ascii_uppercase();
        let kind = match first.as_str() {
            "BEGIN" | "START" => SqlKind::Begin,
            "END" | "COMMIT" => SqlKind::Commit,
            "ROLLBACK" | "ABORT" => SqlKind::Rollback,
            "SELECT" | "WITH" | "VALUES" | "TABLE" => SqlKind::Read,
            _ => SqlKind::Write,
        };
        let mut parts = Vec::new();
        let mut text_part = String::new();
        let chars: Vec<char> = text.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' || c == '"' {
                let end = (i + 1..chars.len()).find(|&j| chars[j] == c).ok_or("an unterminated quote")?;
                text_part.extend(&chars[i..=end]);
                i = end + 1;
            } else if c == ':' && chars.get(i + 1) == Some(&':') {
                text_part.push_str("::");
                i += 2;
            } else if c == ':' && chars.get(i + 1).is_some_and(|n| n.is_ascii_alphanumeric() || *n == '_') {
                let end = (i + 1..chars.len()).find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '_')).unwrap_or(chars.len());
                let name: String = chars[i + 1..end].iter().collect();
                let slot = self.defined(&name)?;
                parts.push(SqlPart::Text(std::mem::take(&mut text_part)));
                parts.push(SqlPart::Variable(slot));
                i = end;
            } else if c.is_ascii_alphabetic() || c == '_' {
                let end = (i..chars.len()).find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '_')).unwrap_or(chars.len());
                let word: String = chars[i..end].iter().collect();
                let qualified = text_part.trim_end().ends_with('.');
                match self.tables.iter().find(|t| t.eq_ignore_ascii_case(&word)) {
                    Some(table) if !qualified => {
                        parts.push(SqlPart::Text(std::mem::take(&mut text_part)));
                        parts.push(SqlPart::Table(table.clone()));
                    }
                    _ => text_part.push_str(&word),
                }
                i = end;
            } else {
                text_part.push(c);
                i += 1;
            }
        }
        parts.push(SqlPart::Text(text_part));
        parts.retain(|p| !matches!(p, SqlPart::Text(t) if t.is_empty()));
        inside_namespace(&text, &parts)?;
        Ok(SqlStatement { parts, kind, line, only: directives.only, not: directives.not })
    }

    fn defined(&self, name: &str) -> Result<usize, String> {
        self.variables.iter().position(|v| v == name).ok_or_else(|| match self.custom {
            true => format!("unknown placeholder :{name} (define it under the experiment's params, e.g. {name} = {{ range = [1, 10] }})"),
            false => format!("undefined variable :{name} (set it with \\set {name} ... first)"),
        })
    }
}

/// Refuses what would change or drop objects outside dbsweep's namespace, where the
/// statement shows it: DDL that names none of dbsweep's tables (written unqualified, so
/// each system puts its own qualified name there), a schema or database dropped, objects
/// created that dbsweep would not remove (anything but an index on its tables).
fn inside_namespace(text: &str, parts: &[SqlPart]) -> Result<(), String> {
    let words: Vec<String> = text.split_whitespace().take(3).map(str::to_ascii_uppercase).collect();
    let word = |i: usize| words.get(i).map_or("", String::as_str);
    let names_ours = parts.iter().any(|p| matches!(p, SqlPart::Table(_)));
    let fix = "custom statements change dbsweep's own tables only (name them unqualified: lineitem, kv, pgbench_accounts)";
    match word(0) {
        "DROP" | "TRUNCATE" | "ALTER" | "RENAME" | "GRANT" | "REVOKE" | "ATTACH" | "DETACH" | "FLUSH" | "SHUTDOWN"
            if matches!(word(1), "SCHEMA" | "DATABASE" | "USER" | "ROLE" | "KEYSPACE") || !names_ours =>
        {
            return Err(format!("refused: {} {} outside dbsweep's namespace; {fix}", word(0), word(1)));
        }
        "CREATE" => {
            let index = word(1) == "INDEX" || (word(1) == "UNIQUE" && word(2) == "INDEX");
            if !index || !names_ours {
                return Err(format!(
                    "refused: CREATE {} (dbsweep would not remove it); {fix}, and CREATE INDEX ... ON one of them",
                    word(1)
                ));
            }
        }
        _ => {}
    }
    Ok(())
}

/// The byte index of the `;` that ends the first statement, outside quotes and comments.
fn statement_end(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            q @ (b'\'' | b'"') => i = bytes[i + 1..].iter().position(|&b| b == q).map(|p| i + 1 + p)? + 1,
            b'-' if bytes.get(i + 1) == Some(&b'-') => i = bytes[i..].iter().position(|&b| b == b'\n').map(|p| i + p)?,
            b';' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// The text without `--` comments (quotes kept whole).
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quote = None;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '-') if chars.peek() == Some(&'-') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Float(f64),
    Variable(String),
    Name(String),
    Symbol(char),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let word_end =
        |from: usize| (from..chars.len()).find(|&j| !(chars[j].is_ascii_alphanumeric() || chars[j] == '_')).unwrap_or(chars.len());
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(char::is_ascii_digit)) {
            let mut end = i;
            while end < chars.len() && (chars[end].is_ascii_alphanumeric() || chars[end] == '.') {
                end += 1;
                if matches!(chars[end - 1], 'e' | 'E') && matches!(chars.get(end), Some('+' | '-')) {
                    end += 1;
                }
            }
            let number: String = chars[i..end].iter().collect();
            out.push(match number.parse::<i64>() {
                Ok(n) => Token::Int(n),
                Err(_) => Token::Float(number.parse().map_err(|_| format!("'{number}' is not a number"))?),
            });
            i = end;
        } else if c == ':' {
            let end = word_end(i + 1);
            if end == i + 1 {
                return Err("':' without a variable name".into());
            }
            out.push(Token::Variable(chars[i + 1..end].iter().collect()));
            i = end;
        } else if c.is_ascii_alphabetic() || c == '_' {
            let end = word_end(i);
            out.push(Token::Name(chars[i..end].iter().collect::<String>().to_ascii_lowercase()));
            i = end;
        } else if "+-*/%(),".contains(c) {
            out.push(Token::Symbol(c));
            i += 1;
        } else {
            return Err(format!("unexpected '{c}' in a \\set expression"));
        }
    }
    Ok(out)
}

/// Recursive descent over pgbench's arithmetic: `+ -` below `* / %` below unary minus.
struct ExprParser<'a> {
    tokens: Vec<Token>,
    at: usize,
    variables: &'a [String],
}

impl ExprParser<'_> {
    fn whole(mut self) -> Result<Expr, String> {
        let expr = self.sum()?;
        match self.tokens.get(self.at) {
            None => Ok(expr),
            Some(t) => Err(format!("unexpected {t:?} after a complete \\set expression")),
        }
    }

    fn eat(&mut self, symbol: char) -> bool {
        let hit = self.tokens.get(self.at) == Some(&Token::Symbol(symbol));
        self.at += usize::from(hit);
        hit
    }

    /// One level of left-associative operators: `next (operator next)*`.
    fn level(&mut self, operators: &[(char, BinaryOp)], next: fn(&mut Self) -> Result<Expr, String>) -> Result<Expr, String> {
        let mut left = next(self)?;
        while let Some(&(_, op)) = operators.iter().find(|(symbol, _)| self.eat(*symbol)) {
            left = Expr::Binary(op, Box::new(left), Box::new(next(self)?));
        }
        Ok(left)
    }

    fn sum(&mut self) -> Result<Expr, String> {
        self.level(&[('+', BinaryOp::Add), ('-', BinaryOp::Subtract)], Self::product)
    }

    fn product(&mut self) -> Result<Expr, String> {
        self.level(&[('*', BinaryOp::Multiply), ('/', BinaryOp::Divide), ('%', BinaryOp::Modulo)], Self::unary)
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat('-') {
            return Ok(match self.unary()? {
                Expr::Int(n) => Expr::Int(-n),
                Expr::Float(x) => Expr::Float(-x),
                e => Expr::Negate(Box::new(e)),
            });
        }
        if self.eat('+') {
            return self.unary();
        }
        let token = self.tokens.get(self.at).cloned().ok_or("a \\set expression ends too early")?;
        self.at += 1;
        match token {
            Token::Int(n) => Ok(Expr::Int(n)),
            Token::Float(x) => Ok(Expr::Float(x)),
            Token::Variable(name) => self
                .variables
                .iter()
                .position(|v| *v == name)
                .map(Expr::Variable)
                .ok_or_else(|| format!("undefined variable :{name} (set it with \\set {name} ... first)")),
            Token::Symbol('(') => {
                let inner = self.sum()?;
                if self.eat(')') { Ok(inner) } else { Err("a '(' without its ')'".into()) }
            }
            Token::Name(name) => self.call(&name),
            Token::Symbol(c) => Err(format!("unexpected '{c}' in a \\set expression")),
        }
    }

    fn call(&mut self, name: &str) -> Result<Expr, String> {
        let Some((function, arity)) = Function::named(name) else {
            return Err(format!(
                "function {name}() is not supported by dbsweep (random, random_zipfian, random_exponential, abs, least, greatest, int, double)"
            ));
        };
        if !self.eat('(') {
            return Err(format!("{name} needs its arguments in parentheses"));
        }
        let mut args = Vec::new();
        if !self.eat(')') {
            loop {
                args.push(self.sum()?);
                if self.eat(')') {
                    break;
                }
                if !self.eat(',') {
                    return Err(format!("{name}(...): expected ',' or ')'"));
                }
            }
        }
        if !arity.contains(&args.len()) {
            return Err(format!("{name}() takes {} arguments, not {}", arity.start(), args.len()));
        }
        Ok(Expr::Call(function, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pgbench_tables() -> Vec<String> {
        crate::data::pgbench::TABLES.iter().map(|t| t.to_string()).collect()
    }

    #[test]
    fn every_builtin_parses_and_only_select_only_is_read_only() {
        for (name, text) in BUILTINS {
            let script = parse(name, text, &pgbench_tables()).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(script.read_only(), name == "select-only", "{name}");
        }
        let tpcb = parse("tpcb-like", builtin_text("tpcb-like").unwrap(), &pgbench_tables()).unwrap();
        assert_eq!(tpcb.variables, ["scale", "aid", "bid", "tid", "delta"]);
        let kinds: Vec<SqlKind> = tpcb.commands.iter().filter_map(|c| if let Command::Sql(s) = c { Some(s.kind) } else { None }).collect();
        assert_eq!(kinds, [SqlKind::Begin, SqlKind::Write, SqlKind::Read, SqlKind::Write, SqlKind::Write, SqlKind::Write, SqlKind::Commit]);
        assert!(builtin_text("nope").unwrap_err().contains("tpcb-like, simple-update, select-only"));
    }

    #[test]
    fn statements_are_cut_into_text_variables_and_tables() {
        let script =
            parse("q.sql", "\\set k random(1, 10)\nSELECT a::int, ':x' FROM pgbench_accounts\n WHERE aid = :k;", &pgbench_tables())
                .unwrap();
        let Command::Sql(s) = &script.commands[1] else { panic!("a statement") };
        assert_eq!(
            s.parts,
            [
                SqlPart::Text("SELECT a::int, ':x' FROM ".into()),
                SqlPart::Table("pgbench_accounts".into()),
                SqlPart::Text("\n WHERE aid = ".into()),
                SqlPart::Variable(1)
            ]
        );
        assert_eq!((s.line, s.kind), (2, SqlKind::Read));
    }

    #[test]
    fn expressions_follow_precedence_and_unary_minus() {
        let script = parse("q", "\\set d -5 + 2 * (3 - :scale) % 4\nSELECT :d;", &[]).unwrap();
        let Command::Set { expr, .. } = &script.commands[0] else { panic!("a set") };
        use BinaryOp::*;
        let product = Expr::Binary(
            Modulo,
            Box::new(Expr::Binary(
                Multiply,
                Box::new(Expr::Int(2)),
                Box::new(Expr::Binary(Subtract, Box::new(Expr::Int(3)), Box::new(Expr::Variable(0)))),
            )),
            Box::new(Expr::Int(4)),
        );
        assert_eq!(*expr, Expr::Binary(Add, Box::new(Expr::Int(-5)), Box::new(product)));
        let zipf = parse("q", "\\set k random_zipfian(1, 100, 1.5)\nSELECT :k;", &[]).unwrap();
        assert!(
            matches!(&zipf.commands[0], Command::Set { expr: Expr::Call(Function::RandomZipfian, args), .. } if args[2] == Expr::Float(1.5))
        );
    }

    #[test]
    fn what_pgbench_or_dbsweep_refuses_is_one_line_naming_the_line() {
        let refused = [
            ("SELECT 1;\n\\foo bar\n", "q line 2: unknown meta-command \\foo"),
            ("\\sleep 10 ms\nSELECT 1;", "q line 1: pgbench's \\sleep is not supported"),
            ("\\set a 1\nSELECT :b;", "q line 2: undefined variable :b"),
            ("\\set a :b + 1\nSELECT 1;", "q line 1: undefined variable :b"),
            ("\\set a random(1)\nSELECT 1;", "q line 1: random() takes 2 arguments, not 1"),
            ("\\set a pow(2, 3)\nSELECT 1;", "q line 1: function pow() is not supported"),
            ("\\set a (1 + 2\nSELECT 1;", "q line 1: a '(' without its ')'"),
            ("\\set a 1 2\nSELECT 1;", "q line 1: unexpected Int(2)"),
            ("SELECT 1;\nSELECT 2", "q line 2: the last statement has no ';'"),
            ("\\set a 1\n", "q: no SQL statement"),
            ("SELECT 'x\n\\set a 1\n", "q line 2: a meta-command inside an unfinished SQL statement"),
            ("-- dbsweep:only=sqlite\nSELECT 1;", "q line 1: unknown directive"),
        ];
        for (text, expected) in refused {
            let e = parse("q", text, &[]).expect_err(text);
            assert!(e.starts_with(expected), "{text:?}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn directives_say_where_the_next_statement_runs() {
        let script = parse("q", "-- dbsweep:not=sqlite\nSELECT 1;\n-- dbsweep:on=sqlite\nSELECT 2;\nSELECT 3;", &[]).unwrap();
        let runs: Vec<(bool, bool)> = script
            .commands
            .iter()
            .map(|c| match c {
                Command::Sql(s) => (s.runs_on("sqlite"), s.runs_on("duckdb")),
                Command::Set { .. } => unreachable!(),
            })
            .collect();
        assert_eq!(runs, [(false, true), (true, false), (true, true)]);
        let postgres = parse("q", "-- dbsweep:on=postgres\nSELECT 1;", &[]).unwrap();
        let Command::Sql(s) = &postgres.commands[0] else { panic!("a statement") };
        assert!(s.runs_on("postgres-row") && !s.runs_on("hyper"));
    }
}
