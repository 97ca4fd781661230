//! The safe MonetDBe binding's values: parameters bound in the types a statement declares,
//! columns for `monetdbe_append`, and result sets read as borrowed cells. Every `unsafe`
//! call keeps a rule of the library listed in `ffi` (rules 4, 6, 7). Must not know dbsweep's
//! tables, statements or ops.

use super::connection::{Connection, MonetError};
use super::ffi as sys;
use crate::base::table::Date;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::fmt;
use std::ptr;

/// MonetDB's string nil (what `NULL` is inside a string column).
const STR_NIL: &CStr = c"\u{80}";

/// A value to bind to a statement parameter; it is converted to the type the statement
/// declares for that parameter (an integer to a narrower integer when it fits).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Param<'a> {
    Null,
    /// Also a decimal's unscaled value (hundredths for `DECIMAL(15,2)`).
    Int(i64),
    Double(f64),
    Text(&'a str),
    Date(Date),
}

/// A parameter value in the parameter's C type, alive until the statement ran.
pub(super) enum Bound {
    Nil(c_int),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    I128(i128),
    F32(f32),
    F64(f64),
    Text(CString),
    Date(sys::monetdbe_data_date),
}

impl Bound {
    pub(super) fn new(param: &Param<'_>, ty: c_int) -> Result<Bound, MonetError> {
        let narrow = |v: i64| MonetError::new(format!("{v} does not fit the parameter's integer type"));
        Ok(match (*param, ty) {
            (Param::Null, ty) => Bound::Nil(ty),
            (Param::Int(v), sys::INT8 | sys::BOOL) => Bound::I8(i8::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT16) => Bound::I16(i16::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT32) => Bound::I32(i32::try_from(v).map_err(|_| narrow(v))?),
            (Param::Int(v), sys::INT64) => Bound::I64(v),
            (Param::Int(v), sys::INT128) => Bound::I128(i128::from(v)),
            (Param::Int(v), sys::DOUBLE) => Bound::F64(v as f64),
            (Param::Double(v), sys::DOUBLE) => Bound::F64(v),
            (Param::Double(v), sys::FLOAT) => Bound::F32(v as f32),
            (Param::Text(s), sys::STR) => Bound::Text(CString::new(s).map_err(|_| MonetError::new("text with a NUL byte"))?),
            (Param::Date(d), sys::DATE) => Bound::Date(date_struct(d)?),
            (param, ty) => return Err(MonetError::new(format!("cannot bind {param:?} to a parameter of MonetDB type {ty}"))),
        })
    }

    pub(super) fn as_ptr(&mut self) -> *mut c_void {
        match self {
            Bound::Nil(_) => ptr::null_mut(),
            Bound::I8(v) => (v as *mut i8).cast(),
            Bound::I16(v) => (v as *mut i16).cast(),
            Bound::I32(v) => (v as *mut i32).cast(),
            Bound::I64(v) => (v as *mut i64).cast(),
            Bound::I128(v) => (v as *mut i128).cast(),
            Bound::F32(v) => (v as *mut f32).cast(),
            Bound::F64(v) => (v as *mut f64).cast(),
            Bound::Text(s) => s.as_ptr().cast_mut().cast(),
            Bound::Date(d) => (d as *mut sys::monetdbe_data_date).cast(),
        }
    }
}

fn date_struct(date: Date) -> Result<sys::monetdbe_data_date, MonetError> {
    let (year, month, day) = date.to_civil();
    let year = i16::try_from(year).map_err(|_| MonetError::new(format!("date {} out of MonetDB's range", date.to_iso())))?;
    Ok(sys::monetdbe_data_date { day: day as u8, month: month as u8, year })
}

/// One column for `Connection::append`; `None` is SQL `NULL`.
#[derive(Debug, Clone, PartialEq)]
pub enum AppendColumn {
    /// `BIGINT`, or a `DECIMAL(15,2)` as unscaled hundredths (`i64::MIN` is MonetDB's nil).
    Int64(Vec<i64>),
    /// `DOUBLE` (NaN is MonetDB's nil).
    Double(Vec<f64>),
    Text(Vec<Option<CString>>),
    Date(Vec<AppendDate>),
}

/// A date in an append column (MonetDB's date struct); `AppendDate::NULL` is nil.
#[derive(Clone, Copy)]
pub struct AppendDate(sys::monetdbe_data_date);

impl AppendDate {
    /// MonetDB's nil date in the struct form (`date_nil` converted by MonetDBe).
    pub const NULL: AppendDate = AppendDate(sys::monetdbe_data_date { day: 0, month: 0, year: i16::MIN });

    pub fn new(date: Date) -> Result<AppendDate, MonetError> {
        date_struct(date).map(AppendDate)
    }
}

impl fmt::Debug for AppendDate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.0.year, self.0.month, self.0.day)
    }
}

impl PartialEq for AppendDate {
    fn eq(&self, other: &Self) -> bool {
        (self.0.year, self.0.month, self.0.day) == (other.0.year, other.0.month, other.0.day)
    }
}

impl AppendColumn {
    pub fn len(&self) -> usize {
        match self {
            AppendColumn::Int64(v) => v.len(),
            AppendColumn::Double(v) => v.len(),
            AppendColumn::Text(v) => v.len(),
            AppendColumn::Date(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The outcome of one statement: its result set (none for DDL and changes) and the rows
/// changed. Borrows the connection until dropped, which frees the result.
pub struct Rows<'c> {
    pub(super) conn: &'c mut Connection,
    pub(super) result: *mut sys::monetdbe_result,
    pub(super) affected: i64,
}

impl Rows<'_> {
    /// Rows changed by an insert, update or delete (-1 when the statement reports none).
    pub fn affected(&self) -> i64 {
        self.affected
    }

    /// Rows in the result set (0 without one).
    pub fn len(&self) -> usize {
        // SAFETY: a result of this connection, alive until `drop`.
        if self.result.is_null() { 0 } else { usize::try_from(unsafe { (*self.result).nrows }).unwrap_or(0) }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Columns in the result set (0 without one).
    pub fn width(&self) -> usize {
        // SAFETY: as in `len`.
        if self.result.is_null() { 0 } else { unsafe { (*self.result).ncols } }
    }

    /// Column `index` of the result set (converted by MonetDB on first fetch).
    pub fn column(&self, index: usize) -> Result<Column<'_>, MonetError> {
        if index >= self.width() {
            return Err(MonetError::new(format!("column {index} of a result with {} columns", self.width())));
        }
        let mut raw: *mut c_void = ptr::null_mut();
        // SAFETY: a live result and an index in range; the column belongs to the result
        // and lives until it is cleaned up, which `Column`'s borrow of `self` outlasts.
        if let Some(e) = unsafe { MonetError::from_raw(sys::monetdbe_result_fetch(self.result, &mut raw, index)) } {
            return Err(e);
        }
        if raw.is_null() {
            return Err(MonetError::new(format!("MonetDB returned no column {index}")));
        }
        // SAFETY: every `monetdbe_column_<type>` starts with the type code.
        let ty = unsafe { *raw.cast::<c_int>() };
        Ok(Column { raw, ty, len: self.len(), _rows: std::marker::PhantomData })
    }
}

impl Drop for Rows<'_> {
    fn drop(&mut self) {
        if !self.result.is_null() {
            // SAFETY: made by this connection, cleaned up once; no `Column` outlives `self`.
            unsafe { sys::monetdbe_cleanup_result(self.conn.handle, self.result) };
        }
    }
}

/// One column of a result set.
pub struct Column<'r> {
    raw: *mut c_void,
    ty: c_int,
    len: usize,
    _rows: std::marker::PhantomData<&'r ()>,
}

/// One value of a result set, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'r> {
    Null,
    /// Any integer type; `scale` is the number of decimal digits (2 for `DECIMAL(15,2)`,
    /// 0 for integers), `value` the unscaled number.
    Int {
        value: i128,
        scale: u32,
    },
    Double(f64),
    Text(&'r str),
    Date(Date),
}

impl<'r> Column<'r> {
    /// Reads row `row`; `None` past the end or for a type dbsweep never reads (blobs,
    /// times, timestamps).
    pub fn get(&self, row: usize) -> Option<Cell<'r>> {
        if row >= self.len {
            return None;
        }
        // SAFETY (every arm): `raw` is a `monetdbe_column_<type>` of the type code `ty`,
        // whose `data` has `len` elements (the result's row count) alive as long as the
        // result, which outlives `'r`.
        unsafe {
            Some(match self.ty {
                sys::BOOL | sys::INT8 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i8>>(), row),
                sys::INT16 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i16>>(), row),
                sys::INT32 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i32>>(), row),
                sys::INT64 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i64>>(), row),
                sys::INT128 => int_cell(self.raw.cast::<sys::monetdbe_column_typed<i128>>(), row),
                sys::SIZE_T => int_cell(self.raw.cast::<sys::monetdbe_column_typed<usize>>(), row),
                sys::FLOAT => {
                    let v = *(*self.raw.cast::<sys::monetdbe_column_typed<f32>>()).data.add(row);
                    if v.is_nan() { Cell::Null } else { Cell::Double(f64::from(v)) }
                }
                sys::DOUBLE => {
                    let v = *(*self.raw.cast::<sys::monetdbe_column_typed<f64>>()).data.add(row);
                    if v.is_nan() { Cell::Null } else { Cell::Double(v) }
                }
                sys::STR => {
                    let column = &*self.raw.cast::<sys::monetdbe_column_typed<*mut c_char>>();
                    let s = *column.data.add(row);
                    if s.is_null() {
                        return Some(Cell::Null);
                    }
                    let bytes = CStr::from_ptr(s).to_bytes();
                    if bytes == STR_NIL.to_bytes() {
                        Cell::Null
                    } else {
                        // MonetDB stores UTF-8 only (it validates text on the way in).
                        Cell::Text(std::str::from_utf8(bytes).unwrap_or("\u{fffd}"))
                    }
                }
                sys::DATE => {
                    let column = &*self.raw.cast::<sys::monetdbe_column_typed<sys::monetdbe_data_date>>();
                    let d = *column.data.add(row);
                    let null = column.null_value;
                    if (d.year, d.month, d.day) == (null.year, null.month, null.day) {
                        Cell::Null
                    } else {
                        Date::from_civil(i64::from(d.year), u32::from(d.month), u32::from(d.day)).map_or(Cell::Null, Cell::Date)
                    }
                }
                _ => return None,
            })
        }
    }

    /// Values in the column.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// An integer cell: nil (the type's null value) is `Null`.
///
/// SAFETY: `column` is a live `monetdbe_column_<T>` with more than `row` values.
unsafe fn int_cell<'r, T: Copy + PartialEq + Into<Wide>>(column: *const sys::monetdbe_column_typed<T>, row: usize) -> Cell<'r> {
    let column = unsafe { &*column };
    let v = unsafe { *column.data.add(row) };
    if v == column.null_value {
        return Cell::Null;
    }
    // `scale` is 10^digits.
    let scale = column.scale.max(1.0).log10().round() as u32;
    Cell::Int { value: v.into().0, scale }
}

/// Widening of MonetDB's integer types (`usize` included) to `i128`.
struct Wide(i128);

macro_rules! widen {
    ($($t:ty),*) => {$(
        impl From<$t> for Wide {
            fn from(v: $t) -> Self {
                Wide(v as i128)
            }
        }
    )*};
}
widen!(i8, i16, i32, i64, i128, usize);
