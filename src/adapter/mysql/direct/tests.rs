//! Unit tests of `adapter::mysql::direct`.

use super::*;

#[test]
fn length_encoded_integers_round_trip_at_every_width() {
    for n in [0u64, 250, 251, 0xFFFF, 0x1_0000, 0xFF_FFFF, 0x100_0000, u64::MAX] {
        let mut out = vec![9];
        put_lenenc(&mut out, n);
        assert_eq!(lenenc(&out, 1), Some((n, out.len())), "{n}");
    }
    assert_eq!(lenenc(&[0xFB], 0), None);
}

#[test]
fn an_err_packet_reads_as_code_state_and_message() {
    let mut body = vec![0xFF, 0x7A, 0x04];
    body.extend_from_slice(b"#42S02Table 'x.y' doesn't exist");
    let e = server_error(&body);
    assert_eq!(e.to_string(), "ERROR 1146 (42S02): Table 'x.y' doesn't exist");
}

#[test]
fn ok_and_eof_packets_give_affected_rows_and_status() {
    // OK: 3 affected rows, last insert id 0, status SERVER_MORE_RESULTS_EXISTS, 0 warnings.
    let (affected, status) = ok_packet(&[0x00, 3, 0, 0x08, 0x00, 0, 0]).unwrap();
    assert_eq!(affected, 3);
    assert!(status.contains(StatusFlags::SERVER_MORE_RESULTS_EXISTS));
    assert!(eof_status(&[0xFE, 0, 0, 0x02, 0x00]).contains(StatusFlags::SERVER_STATUS_AUTOCOMMIT));
}

#[test]
fn an_execute_carries_types_nulls_and_binary_values() {
    let params = [MyValue::Int(-2), MyValue::NULL, MyValue::Double(1.5), MyValue::Bytes(b"ab".to_vec())];
    let mut out = Vec::new();
    write_execute(&mut out, 7, &params, false).unwrap();
    let mut want = vec![COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0];
    want.push(0b0000_0010); // null bitmap: the second parameter
    want.push(1);
    want.extend_from_slice(&[0x08, 0, 0x06, 0, 0x05, 0, 0xFD, 0]);
    want.extend_from_slice(&(-2i64).to_le_bytes());
    want.extend_from_slice(&1.5f64.to_le_bytes());
    want.extend_from_slice(&[2, b'a', b'b']);
    assert_eq!(out, want);
    // Strings sent as long data keep their type and leave their value out.
    let mut long = Vec::new();
    write_execute(&mut long, 7, &params[3..], true).unwrap();
    assert_eq!(long, [COM_STMT_EXECUTE, 7, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0xFD, 0]);
}
