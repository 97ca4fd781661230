//! The messages of the PostgreSQL protocol a direct session writes and reads itself:
//! fields read off a backend message's body, ErrorResponse and CommandComplete, a DataRow's
//! cells in their columns' types, and a prepared statement's Bind + Execute + Sync
//! (encoded by `postgres_protocol`, tokio-postgres's own encoder). Must not do I/O.

use super::{LoginError, Prepared};
use crate::adapter::pgwire::encode::Cell;
use crate::base::op::{ErrorClass, OpError};
use crate::base::table::Row;
use bytes::BytesMut;
use postgres_protocol::message::frontend;
use std::io;
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

/// Reads big-endian fields off a message body.
pub(super) struct Body<'a>(pub &'a [u8]);

impl<'a> Body<'a> {
    pub fn take(&mut self, n: usize) -> io::Result<&'a [u8]> {
        if self.0.len() < n {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "a message shorter than its fields"));
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub fn i16(&mut self) -> io::Result<i16> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().expect("two bytes")))
    }

    pub fn i32(&mut self) -> io::Result<i32> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    pub fn u32(&mut self) -> io::Result<u32> {
        Ok(u32::from_be_bytes(self.take(4)?.try_into().expect("four bytes")))
    }

    /// A NUL-terminated string's bytes.
    pub fn cstr(&mut self) -> io::Result<&'a [u8]> {
        let end =
            self.0.iter().position(|b| *b == 0).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "an unterminated string"))?;
        let text = self.take(end)?;
        self.take(1)?;
        Ok(text)
    }
}

/// The fields of an ErrorResponse: SQLSTATE and message.
fn error_fields(body: &[u8]) -> (String, String, String) {
    let (mut severity, mut code, mut message) = (String::from("ERROR"), String::new(), String::new());
    let mut body = Body(body);
    while let Ok(&[kind]) = body.take(1) {
        if kind == 0 {
            break;
        }
        let Ok(value) = body.cstr() else { break };
        let value = String::from_utf8_lossy(value).into_owned();
        match kind {
            b'V' => severity = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    (severity, code, message)
}

/// An ErrorResponse as a request's error, worded as `pgwire::describe` words the driver's.
pub(super) fn server_error(body: &[u8]) -> OpError {
    let (severity, code, message) = error_fields(body);
    OpError::new(ErrorClass::Server, format!("{severity} {code}: {message}"))
}

/// An ErrorResponse during login.
pub(super) fn refused(body: &[u8]) -> LoginError {
    let (_, code, message) = error_fields(body);
    LoginError::Refused { code, message }
}

/// The rows a CommandComplete names (`SELECT 3`, `INSERT 0 3`, `DELETE 3`); `None` for tags
/// without a count (`BEGIN`).
pub(super) fn rows_in_tag(body: &[u8]) -> Option<u64> {
    let tag = body.strip_suffix(&[0]).unwrap_or(body);
    let last = tag.rsplit(|b| *b == b' ').next()?;
    std::str::from_utf8(last).ok()?.parse().ok()
}

/// One DataRow's cells as values of the columns' types.
pub(super) fn decode_row(body: &[u8], columns: &[Option<Type>]) -> Result<Row, OpError> {
    let malformed = |e: io::Error| OpError::client(format!("a malformed row: {e}"));
    let mut body = Body(body);
    let n = body.i16().map_err(malformed)? as usize;
    if n != columns.len() {
        return Err(OpError::client(format!("a row of {n} cells where the statement describes {}", columns.len())));
    }
    let mut row = Vec::with_capacity(n);
    for column in columns {
        let length = body.i32().map_err(malformed)?;
        if length < 0 {
            row.push(crate::base::table::Value::Null);
            continue;
        }
        let raw = body.take(length as usize).map_err(malformed)?;
        let ty = column.as_ref().ok_or_else(|| OpError::client("a result column of a type dbsweep does not read"))?;
        let Cell(value) = Cell::from_sql(ty, raw).map_err(|e| OpError::client(format!("reading a {ty} cell: {e}")))?;
        row.push(value);
    }
    Ok(row)
}

/// Bind (binary parameters, binary results), Execute and Sync of a prepared statement.
pub(super) fn write_bind(out: &mut BytesMut, prepared: &Prepared, params: &[&(dyn ToSql + Sync)]) -> Result<(), OpError> {
    if params.len() != prepared.params.len() {
        return Err(OpError::client(format!("{} parameters for a statement of {}", params.len(), prepared.params.len())));
    }
    let formats = params.iter().zip(&prepared.params).map(|(p, ty)| p.encode_format(ty) as i16);
    let bound = frontend::bind(
        "",
        &prepared.name,
        formats,
        params.iter().zip(&prepared.params),
        |(param, ty), buf| match param.to_sql_checked(ty, buf)? {
            IsNull::Yes => Ok(postgres_protocol::IsNull::Yes),
            IsNull::No => Ok(postgres_protocol::IsNull::No),
        },
        Some(1),
        out,
    );
    if let Err(e) = bound {
        out.clear();
        return Err(OpError::client(match e {
            frontend::BindError::Conversion(e) => format!("binding a parameter: {e}"),
            frontend::BindError::Serialization(e) => format!("binding a parameter: {e}"),
        }));
    }
    frontend::execute("", 0, out).map_err(OpError::client)?;
    frontend::sync(out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_tags_name_their_rows() {
        assert_eq!(rows_in_tag(b"SELECT 3\0"), Some(3));
        assert_eq!(rows_in_tag(b"INSERT 0 12\0"), Some(12));
        assert_eq!(rows_in_tag(b"DELETE 0\0"), Some(0));
        assert_eq!(rows_in_tag(b"BEGIN\0"), None);
    }

    #[test]
    fn an_error_response_reads_as_severity_code_and_message() {
        let body = b"SERROR\0VERROR\0C23505\0Mduplicate key value\0\0";
        let e = server_error(body);
        assert_eq!(e.class, ErrorClass::Server);
        assert_eq!(e.message, "ERROR 23505: duplicate key value");
    }

    #[test]
    fn a_data_row_decodes_in_its_columns_types_and_nulls_stay_null() {
        use crate::base::table::Value;
        let mut body = Vec::new();
        body.extend(3i16.to_be_bytes());
        body.extend(8i32.to_be_bytes());
        body.extend(42i64.to_be_bytes());
        body.extend((-1i32).to_be_bytes());
        body.extend(2i32.to_be_bytes());
        body.extend(b"hi");
        let columns = [Some(Type::INT8), Some(Type::FLOAT8), Some(Type::TEXT)];
        assert_eq!(decode_row(&body, &columns).unwrap(), vec![Value::Int(42), Value::Null, Value::Text("hi".into())]);
        assert!(decode_row(&body, &columns[..2]).is_err(), "a row wider than its description is an error");
    }
}
