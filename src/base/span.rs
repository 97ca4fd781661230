//! How a length of time reads in dbsweep's words: "85 µs", "6.27 ms", "1.5 s", "2 min",
//! "1 h" — three significant digits, whole minutes and hours by name; and how any number a
//! user gave reads back in a message (`number`: `0.5`, `2000`, `1e300`, never 300 digits),
//! and a count with thousands separators (`count`: "100,000").
//! Owns only the words; must not measure or round anything that is saved.

/// "1,234,567": a count with thousands separators.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number as a flag takes it: plain when that is short (`0.5`, `2000`), else in
/// scientific notation (`1e300`, `1e-300`); `NaN`, `inf` as Rust writes them.
pub fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-4..1e15).contains(&x.abs()) { format!("{x}") } else { format!("{x:e}") }
}

/// `secs` in words (see the module doc); a length beyond a year, or none at all (infinite,
/// negative, NaN), as `number` seconds.
pub fn words(secs: f64) -> String {
    match secs {
        s if !(0.0..=366.0 * 86_400.0).contains(&s) => format!("{} s", number(s)),
        s if s >= 3600.0 && s % 3600.0 == 0.0 => format!("{} h", s / 3600.0),
        s if s >= 60.0 && s % 60.0 == 0.0 => format!("{} min", s / 60.0),
        s if s >= 1.0 => format!("{} s", significant(s)),
        s if s >= 1e-3 => format!("{} ms", significant(s * 1e3)),
        s => format!("{} µs", significant(s * 1e6)),
    }
}

/// Three significant digits, without trailing zeros ("30", "1.5", "6.27", "1234").
fn significant(value: f64) -> String {
    // At most three decimals: below a nanosecond nothing dbsweep times has a digit.
    let digits = if value > 0.0 { (2 - value.log10().floor() as i32).clamp(0, 3) as usize } else { 0 };
    let text = format!("{value:.digits$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_with_thousands_separators() {
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(count(100_000), "100,000");
        assert_eq!(count(100), "100");
        assert_eq!(count(0), "0");
    }

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
        for (secs, text) in [(1e300, "1e300 s"), (f64::INFINITY, "inf s"), (f64::NAN, "NaN s"), (-2.0, "-2 s"), (1e-300, "0 µs")] {
            assert_eq!(words(secs), text, "{secs}");
        }
    }

    #[test]
    fn numbers_read_back_short() {
        let cases =
            [(0.5, "0.5"), (2000.0, "2000"), (1e300, "1e300"), (1e-300, "1e-300"), (-0.0, "-0"), (f64::NAN, "NaN"), (1e9, "1000000000")];
        for (x, text) in cases {
            assert_eq!(number(x), text);
        }
    }
}
