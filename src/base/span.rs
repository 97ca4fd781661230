//! How a length of time reads in dbsweep's words: "85 µs", "6.27 ms", "1.5 s", "2 min",
//! "1 h" — three significant digits, whole minutes and hours by name. Owns only the words;
//! must not measure or round anything that is saved.

/// `secs` in words (see the module doc).
pub fn words(secs: f64) -> String {
    match secs {
        s if s >= 3600.0 && s % 3600.0 == 0.0 => format!("{} h", s / 3600.0),
        s if s >= 60.0 && s % 60.0 == 0.0 => format!("{} min", s / 60.0),
        s if s >= 1.0 => format!("{} s", significant(s)),
        s if s >= 1e-3 => format!("{} ms", significant(s * 1e3)),
        s => format!("{} µs", significant(s * 1e6)),
    }
}

/// Three significant digits, without trailing zeros ("30", "1.5", "6.27", "1234").
fn significant(value: f64) -> String {
    let digits = if value > 0.0 { (2 - value.log10().floor() as i32).max(0) as usize } else { 0 };
    let text = format!("{value:.digits$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_read_with_three_significant_digits_and_whole_minutes_by_name() {
        let cases = [
            (0.5, "500 ms"),
            (30.0, "30 s"),
            (1.5, "1.5 s"),
            (120.0, "2 min"),
            (7200.0, "2 h"),
            (90.5, "90.5 s"),
            (0.0062713, "6.27 ms"),
            (0.0002793, "279 µs"),
            (1234.0, "1234 s"),
        ];
        for (secs, text) in cases {
            assert_eq!(words(secs), text, "{secs}");
        }
    }
}
