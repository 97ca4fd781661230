//! How report numbers and points read, in the console, report.html, `compare` and the
//! runner's progress lines: rates ("12.3k"), latencies with three significant digits
//! ("1.23µs"), memory changes, the short point label ("c=4 b=100 w=10") and the long one
//! ("4 clients, batch 100"), and plain left-aligned tables.
//!
//! Owns only the words and columns; must not decide what is shown (the exporters do) or
//! import any report module but the model (console, html, compare, summary and the runner
//! all stand on it, so none of them imports another for its words).

use super::model::{Flag, MemoryDelta};
use crate::base::op::OpKind;
use crate::workload::experiment::Point;
use std::fmt::Write as _;

/// Human-friendly rate: 950, 12.3k, 4.56M.
pub fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Human-friendly microseconds with three significant digits at every scale: 850ns,
/// 1.23µs, 12.3µs, 3.40ms, 1.20s.
pub fn micros(us: f64) -> String {
    let (value, unit) = if us < 0.9995 {
        (us * 1000.0, "ns")
    } else if us < 999.5 {
        (us, "µs")
    } else if us < 999_500.0 {
        (us / 1000.0, "ms")
    } else {
        (us / 1e6, "s")
    };
    let digits = three_significant_decimals(value);
    format!("{value:.digits$}{unit}")
}

/// Decimals that give a value from 1 to 999 three significant digits (rounding included).
pub fn three_significant_decimals(value: f64) -> usize {
    if value >= 99.95 {
        0
    } else if value >= 9.995 {
        1
    } else {
        2
    }
}

pub fn memory_delta(d: MemoryDelta) -> String {
    match d {
        MemoryDelta::Missing => "-".into(),
        MemoryDelta::BelowNoise { .. } => "<noise".into(),
        MemoryDelta::Bytes(b) => format!("{:+.2}MiB", b / MIB),
    }
}

/// A point's parameters in a few characters: `c=4 b=100 w=10`.
pub fn point_label(p: &Point, op: OpKind) -> String {
    let mut label = format!("c={}", p.clients);
    if p.batched {
        let _ = write!(label, " b={}", p.batch);
    }
    if let Some(v) = p.param {
        let name = if matches!(op, OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax) { "w" } else { "n" };
        let _ = write!(label, " {name}={v}");
    }
    if let Some(rate) = p.rate {
        let _ = write!(label, " r={}", rate_text(rate.ops_per_sec()));
    }
    label
}

/// A fixed rate in ops/s as the user types it (`2000`, `2.5`), so labels match the flag.
pub fn rate_text(ops_per_sec: f64) -> String {
    if ops_per_sec.fract() == 0.0 { format!("{ops_per_sec:.0}") } else { format!("{ops_per_sec}") }
}

/// Characters of `text`, as the console counts columns.
pub fn columns_of(text: &str) -> usize {
    text.chars().count()
}

/// Rows as left-aligned columns, indented by two spaces.
pub fn write_table(out: &mut String, rows: &[Vec<String>]) {
    let widths: Vec<usize> = (0..rows[0].len()).map(|c| rows.iter().map(|r| columns_of(&r[c])).max().unwrap_or(0)).collect();
    for row in rows {
        let line: Vec<String> = row.iter().zip(&widths).map(|(c, w)| format!("{c:<w$}")).collect();
        let _ = writeln!(out, "{TABLE_INDENT}{}", line.join(COLUMN_GAP).trim_end());
    }
}

/// Bytes per MiB.
pub const MIB: f64 = 1024.0 * 1024.0;

/// The indent of table rows.
pub const TABLE_INDENT: &str = "  ";

/// The gap between table columns.
pub const COLUMN_GAP: &str = "  ";

/// Operations whose point parameter is a width (ranges, scans), not a size.
pub fn is_range(op: OpKind) -> bool {
    matches!(op, OpKind::RangeRows | OpKind::RangeCount | OpKind::RangeMax | OpKind::Scan)
}

/// "4 clients", "1 client, batch 100", "8 clients, width 10", "1 client, N 1000".
pub fn point_words(p: &Point, op: OpKind) -> String {
    let mut s = format!("{} client{}", p.clients, if p.clients == 1 { "" } else { "s" });
    if p.batched {
        s.push_str(&format!(", batch {}", p.batch));
    }
    if let Some(v) = p.param {
        s.push_str(&format!(", {} {v}", if is_range(op) { "width" } else { "N" }));
    }
    if let Some(rate) = p.rate {
        s.push_str(&format!(", {} ops/s", rate_text(rate.ops_per_sec())));
    }
    s
}

/// "could not keep the rate: 30 % of ops late, 950/s of 1.0k/s", for the console, the
/// findings and report.html alike.
pub fn missed_rate(flag: &Flag) -> Option<String> {
    let Flag::MissedRate { asked, achieved, late_ops, ops } = flag else { return None };
    let late = 100.0 * *late_ops as f64 / (*ops).max(1) as f64;
    let done = achieved.map_or("void".to_string(), |a| format!("{}/s", rate(a)));
    Some(format!("could not keep the rate: {late:.0} % of ops late, {done} of {}/s", rate(*asked)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_naturally() {
        assert_eq!(rate(950.0), "950");
        assert_eq!(rate(12_345.0), "12.3k");
        assert_eq!(rate(4_560_000.0), "4.56M");
        assert_eq!(micros(0.25), "250ns");
        assert_eq!(micros(12.0), "12.0µs");
        assert_eq!(micros(3400.0), "3.40ms");
        // Three significant digits at every scale, never "0.0 µs".
        for (us, text) in [(0.04, "40.0ns"), (1.234, "1.23µs"), (123.4, "123µs"), (999.7, "1.00ms"), (1.2e6, "1.20s")] {
            assert_eq!(micros(us), text, "{us} µs");
        }
        assert_eq!(memory_delta(MemoryDelta::Bytes(2.5 * MIB)), "+2.50MiB");
        assert_eq!(memory_delta(MemoryDelta::Bytes(-0.25 * MIB)), "-0.25MiB");
        assert_eq!(memory_delta(MemoryDelta::BelowNoise { floor: 4096.0 }), "<noise");
        assert_eq!(memory_delta(MemoryDelta::Missing), "-");
    }

    #[test]
    fn short_and_long_point_labels_name_the_same_parameters() {
        let p = Point { clients: 4, batch: 100, batched: true, param: Some(10), rate: None };
        assert_eq!(point_label(&p, OpKind::RangeCount), "c=4 b=100 w=10");
        assert_eq!(point_words(&p, OpKind::RangeCount), "4 clients, batch 100, width 10");
        assert_eq!(point_label(&p, OpKind::Insert), "c=4 b=100 n=10");
        assert_eq!(point_words(&p, OpKind::Insert), "4 clients, batch 100, N 10");
    }
}
