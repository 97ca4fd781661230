//! A statement of a user's script on the direct session: one simple query (as pgbench's
//! `-M simple`), its rows read as text cells (numbers are compared by value, so text
//! serves every column type), or the rows it changed.
//!
//! Must not prepare statements or time anything.

use super::DirectSession;
use super::wire::{Body, rows_in_tag, server_error};
use crate::adapter::sql::plan::Answered;
use crate::base::op::OpError;
use crate::base::table::{Row, Value};
use postgres_protocol::message::frontend;
use std::io;

impl DirectSession {
    /// Runs `sql` as a simple query: its rows (`reads`), else the rows its command tag names.
    pub(super) fn simple_rows(&mut self, sql: &str, reads: bool) -> Result<Answered, OpError> {
        self.socket()?;
        frontend::query(sql, self.out()).map_err(OpError::client)?;
        let socket = self.socket.as_mut().expect("logged in");
        let read = (|| -> io::Result<Result<Answered, OpError>> {
            socket.send()?;
            let (mut rows, mut tagged, mut error) = (Vec::new(), None, None);
            loop {
                let message = socket.receive()?;
                match message.tag {
                    b'D' => match text_row(message.body) {
                        Ok(row) => rows.push(row),
                        Err(e) => error = error.or(Some(e)),
                    },
                    b'C' => tagged = rows_in_tag(message.body),
                    b'E' => error = error.or(Some(server_error(message.body))),
                    b'Z' => break,
                    _ => {} // RowDescription, notices, parameter changes
                }
            }
            Ok(match error {
                Some(e) => Err(e),
                None if reads => Ok(Answered::Table(rows)),
                None => Ok(Answered::Rows(tagged.unwrap_or(0))),
            })
        })();
        match read {
            Ok(result) => result,
            Err(e) => Err(self.cut_off(e)),
        }
    }
}

/// One DataRow of a simple query: every cell text, or NULL.
fn text_row(body: &[u8]) -> Result<Row, OpError> {
    let malformed = |e: io::Error| OpError::client(format!("a malformed row: {e}"));
    let mut body = Body(body);
    let n = body.i16().map_err(malformed)?.max(0) as usize;
    let mut row = Vec::with_capacity(n);
    for _ in 0..n {
        let length = body.i32().map_err(malformed)?;
        if length < 0 {
            row.push(Value::Null);
            continue;
        }
        let raw = body.take(length as usize).map_err(malformed)?;
        row.push(Value::Text(String::from_utf8_lossy(raw).into()));
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_row_keeps_its_cells_and_nulls() {
        let mut body = Vec::new();
        body.extend(2i16.to_be_bytes());
        body.extend(2i32.to_be_bytes());
        body.extend(b"42");
        body.extend((-1i32).to_be_bytes());
        assert_eq!(text_row(&body).unwrap(), vec![Value::Text("42".into()), Value::Null]);
        assert!(text_row(&body[..5]).is_err());
    }
}
