//! A custom operation's MongoDB command documents (a study's `mongodb = {...}`): each
//! document written from its template (the command's table as its `dbsweep_<table>`
//! collection, a placeholder alone as the value itself, `${id:k}` as the `_id` of key `k`)
//! and run with `runCommand` on dbsweep's database; the last one's result turned into rows
//! for the answer compared with the other systems'.
//!
//! Owns how a result reads as rows: `find` and `aggregate` a row per document (every page of
//! the cursor), `_id` first, then the fields named as the table's columns in column order
//! (read as the column's type, so a decimal's stored hundredths read as the decimal), then
//! any other field in the document's order; `count` a row of `n`; `distinct` a row per
//! value; writes a row per document changed (`n`). A document's NULL columns are left out
//! of it, so such a row is shorter than SQL's. Must not check templates (`plan::custom`
//! does) or name another database.

use super::collection_name;
use super::connection::MongoConnection;
use super::documents::{from_bson, key_id};
use super::op_error;
use crate::base::custom::{CustomOp, DocumentTemplate, Piece};
use crate::base::digest::reads_digest;
use crate::base::op::{Answer, OpError, OpKind, Outcome};
use crate::base::script::ScriptValue;
use crate::base::table::{TableDef, Value};
use futures_util::TryStreamExt;
use mongodb::bson::{Bson, Document};

impl MongoConnection {
    /// Runs one op of `op` with `values` (by slot).
    pub(super) async fn custom(&self, op: &CustomOp, values: &[ScriptValue]) -> Result<Outcome, OpError> {
        if op.mongodb.is_empty() {
            return Err(OpError::unsupported(OpKind::Custom, "mongodb (no mongodb statement for this experiment)"));
        }
        let mut rows = Vec::new();
        for template in &op.mongodb {
            rows = self.custom_command(template, values).await?;
        }
        Ok(match op.reads {
            true => Outcome::answer(rows.len() as u64, Answer::Scalar(Value::Int(reads_digest([rows.as_slice()]) as i64))),
            false => Outcome::rows(rows.len() as u64),
        })
    }

    async fn custom_command(&self, template: &DocumentTemplate, values: &[ScriptValue]) -> Result<Vec<Vec<Value>>, OpError> {
        let DocumentTemplate::Table(entries) = template else { return Err(OpError::client("mongodb: a command is a document")) };
        let (command, table) = match entries.first() {
            Some((command, DocumentTemplate::Text(pieces))) => match pieces.as_slice() {
                [Piece::Text(name)] => (command.as_str(), name.as_str()),
                _ => return Err(OpError::client("mongodb: the collection is a table's name")),
            },
            _ => return Err(OpError::client("mongodb: an empty command document")),
        };
        let table = self
            .tables
            .iter()
            .find(|t| t.name == table)
            .ok_or_else(|| OpError::client(format!("mongodb: no table {table} in this run")))?;
        let mut document = Document::new();
        document.insert(command, collection_name(table));
        for (key, value) in &entries[1..] {
            document.insert(key, bson(value, values)?);
        }
        match command {
            "find" | "aggregate" => {
                if command == "aggregate" && !document.contains_key("cursor") {
                    document.insert("cursor", Document::new());
                }
                let cursor = self.db.run_cursor_command(document).await.map_err(op_error)?;
                let documents: Vec<Document> = cursor.try_collect().await.map_err(op_error)?;
                Ok(documents.iter().map(|d| document_row(table, d)).collect())
            }
            _ => {
                let reply = self.db.run_command(document).await.map_err(op_error)?;
                Ok(match (command, reply.get("values")) {
                    ("distinct", Some(Bson::Array(items))) => items.iter().map(|v| vec![value(v)]).collect(),
                    ("count", _) => vec![vec![reply.get("n").map_or(Value::Null, value)]],
                    _ => {
                        let changed = reply.get("n").map_or(Value::Int(0), value).as_int().unwrap_or(0).max(0);
                        (0..changed).map(|_| Vec::new()).collect()
                    }
                })
            }
        }
    }
}

/// A template as BSON with `values` bound.
fn bson(template: &DocumentTemplate, values: &[ScriptValue]) -> Result<Bson, OpError> {
    Ok(match template {
        DocumentTemplate::Text(pieces) => match pieces.as_slice() {
            [Piece::Variable(slot)] => match &values[*slot] {
                ScriptValue::Int(i) => Bson::Int64(*i),
                ScriptValue::Float(x) => Bson::Double(*x),
                ScriptValue::Text(t) => Bson::String(t.clone()),
            },
            _ => {
                let mut text = String::new();
                for piece in pieces {
                    match piece {
                        Piece::Text(t) => text.push_str(t),
                        Piece::Variable(slot) => text.push_str(&values[*slot].raw()),
                        Piece::DocumentId(slot) => match &values[*slot] {
                            ScriptValue::Int(key) => text.push_str(&key_id(*key)),
                            other => return Err(OpError::client(format!("mongodb: ${{id:...}} of '{}', not a key", other.raw()))),
                        },
                        _ => return Err(OpError::client("mongodb: a placeholder of another family")),
                    }
                }
                Bson::String(text)
            }
        },
        DocumentTemplate::Int(i) => Bson::Int64(*i),
        DocumentTemplate::Float(x) => Bson::Double(*x),
        DocumentTemplate::Bool(b) => Bson::Boolean(*b),
        DocumentTemplate::Array(items) => Bson::Array(items.iter().map(|i| bson(i, values)).collect::<Result<_, _>>()?),
        DocumentTemplate::Table(entries) => {
            let mut document = Document::new();
            for (key, value) in entries {
                document.insert(key, bson(value, values)?);
            }
            Bson::Document(document)
        }
    })
}

/// A result document as a row (see the module comment).
fn document_row(table: &TableDef, document: &Document) -> Vec<Value> {
    let id = document.get("_id").map(value);
    let columns =
        table.columns.iter().filter_map(|c| Some(from_bson(c.ty, document.get(&c.name)?).unwrap_or_else(|| value(&document[&c.name]))));
    let others = document.iter().filter(|(k, _)| *k != "_id" && !table.columns.iter().any(|c| &c.name == *k)).map(|(_, v)| value(v));
    id.into_iter().chain(columns).chain(others).collect()
}

/// A BSON value as a cell: numbers as numbers, text as text (a key's zero-padded `_id`
/// reads as its number when digested), anything else as its JSON-like text.
fn value(b: &Bson) -> Value {
    match b {
        Bson::Null | Bson::Undefined => Value::Null,
        Bson::Int32(i) => Value::Int(i64::from(*i)),
        Bson::Int64(i) => Value::Int(*i),
        Bson::Double(x) => Value::Float(*x),
        Bson::Boolean(b) => Value::Int(i64::from(*b)),
        Bson::String(s) => Value::Text(s.as_str().into()),
        other => Value::Text(other.to_string().into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mongodb::bson::doc;

    #[test]
    fn documents_read_as_rows_id_then_columns_in_table_order() {
        let table = crate::data::kv::table_def();
        let d = doc! {"payload": "p", "_id": "0000000000000000017", "val": 1.5, "grp": 3_i64, "extra": true};
        assert_eq!(
            document_row(&table, &d),
            [Value::Text("0000000000000000017".into()), Value::Int(3), Value::Float(1.5), Value::Text("p".into()), Value::Int(1)]
        );
        let group = doc! {"_id": 4_i32, "n": 2_i32};
        assert_eq!(document_row(&table, &group), [Value::Int(4), Value::Int(2)]);
    }

    #[test]
    fn a_placeholder_alone_keeps_its_type_and_ids_are_padded() {
        let values = [ScriptValue::Int(0), ScriptValue::Int(17)];
        let filter = DocumentTemplate::Table(vec![
            ("_id".into(), DocumentTemplate::Text(vec![Piece::DocumentId(1)])),
            ("grp".into(), DocumentTemplate::Text(vec![Piece::Variable(1)])),
            ("note".into(), DocumentTemplate::Text(vec![Piece::Text("k=".into()), Piece::Variable(1)])),
        ]);
        assert_eq!(bson(&filter, &values).unwrap(), Bson::Document(doc! {"_id": "0000000000000000017", "grp": 17_i64, "note": "k=17"}));
    }
}
