//! Latency files for HdrHistogram's own tools, per target and point, under `exports/` in the
//! run directory: one interval log (`.hlog`) per measured run and one percentile
//! distribution (`.hgrm`) of the whole point.
//!
//! Owns their paths (stable, made safe from user-chosen experiment and target names) and
//! their text formats: the `.hlog` is written by the `hdrhistogram` crate's interval log
//! writer with its V2 + deflate serializer; the `.hgrm` is the table HdrHistogram's
//! `outputPercentileDistribution` prints. Both are made from what report.json holds, so
//! `dbsweep report` and `dbsweep merge` write them again. Must not measure or decide flags.

use super::model::{PointExports, PointResult, Report};
use crate::error::{Error, Result};
use crate::stats::merge_summaries;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::IntervalLogWriterBuilder;
use sha2::Digest as _;
use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// The directory of the files, inside the run directory.
pub const DIR: &str = "exports";

/// Longest name part kept as given (file systems allow 255 bytes per name).
const MAX_PART: usize = 60;

/// Writes every point's files (`dbsweep report`, `dbsweep merge`) and lists them in the
/// points.
pub fn write_all(dir: &Path, report: &mut Report) -> Result<()> {
    for point in &mut report.points {
        point.exports = write_point(dir, point)?;
    }
    Ok(())
}

/// Writes one point's files and returns their paths relative to `dir`; `None` when the
/// point has no measured run with latencies.
pub fn write_point(dir: &Path, point: &PointResult) -> Result<Option<PointExports>> {
    let measured = point.measured_runs();
    let Some(whole) = merge_summaries(measured.iter().flat_map(|r| r.service.values())) else { return Ok(None) };
    let Some(whole) = whole.decode() else { return Ok(None) };
    let stem = format!("{DIR}/{}/{}/{}", safe_part(&point.experiment), safe_part(&point.target), point_stem(point));
    std::fs::create_dir_all(dir.join(&stem).parent().expect("the stem has directories"))
        .map_err(|e| Error::runtime(format!("cannot create {}: {e}", dir.join(DIR).display())))?;
    let hgrm = format!("{stem}.us.hgrm");
    super::write_atomic(&dir.join(&hgrm), percentile_distribution(&whole, 1000.0).as_bytes())?;
    let mut hlog = Vec::new();
    for (n, run) in measured.iter().enumerate() {
        let Some(intervals) = &run.intervals else { continue };
        let Some(histograms) = intervals.decoded() else { continue };
        let path = format!("{stem}.run{}.ns.hlog", n + 1);
        let about = format!(
            "dbsweep {}: {} / {} / {}, measured run {} of {}",
            env!("CARGO_PKG_VERSION"),
            point.experiment,
            point.target,
            point_stem(point),
            n + 1,
            measured.len()
        );
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs_f64(intervals.started_at_unix_seconds);
        let text = interval_log(&about, started, Duration::from_secs_f64(intervals.interval_seconds), &histograms)?;
        super::write_atomic(&dir.join(&path), &text)?;
        hlog.push(path);
    }
    Ok(Some(PointExports { hgrm, hlog }))
}

/// The point's part of the file names: clients, ops per request, range width or N, rate.
fn point_stem(point: &PointResult) -> String {
    let p = &point.point;
    let mut stem = format!("c{}-b{}", p.clients, p.batch);
    if p.batched {
        stem.push_str("-batched");
    }
    if let Some(param) = p.param {
        let _ = write!(stem, "-p{param}");
    }
    if let Some(rate) = point.rate() {
        let _ = write!(stem, "-r{rate}");
    }
    stem
}

/// A user-chosen name as one safe path component: ASCII letters, digits, `-`, `_` and
/// inner `.` are kept; anything else becomes `_`, and a name that had to change (or was
/// cut to `MAX_PART` bytes) gets a short digest of the original, so different names never
/// meet in one file.
pub fn safe_part(name: &str) -> String {
    let mut safe: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).take(MAX_PART).collect();
    if safe.starts_with('.') {
        safe.replace_range(0..1, "_");
    }
    if safe != name || safe.is_empty() {
        let digest = sha2::Sha256::digest(name.as_bytes());
        let _ = write!(safe, "-{:02x}{:02x}{:02x}{:02x}", digest[0], digest[1], digest[2], digest[3]);
    }
    safe
}

/// An interval log: comments, `#[StartTime:`, `#[BaseTime:`, the legend line, then one
/// line per interval (start relative to StartTime, length, max in milliseconds, histogram).
fn interval_log(about: &str, started: SystemTime, width: Duration, histograms: &[Histogram<u64>]) -> Result<Vec<u8>> {
    let failed = |e: &dyn std::fmt::Debug| Error::runtime(format!("cannot write an interval log: {e:?}"));
    let mut text = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    IntervalLogWriterBuilder::new()
        .add_comment(about)
        .add_comment("Service time per request (send to reply) of the ok requests, in nanoseconds; one histogram per interval, all op kinds together")
        .with_start_time(started)
        .with_base_time(started)
        .begin_log_with(&mut text, &mut serializer)
        .map_err(|e| failed(&e))?;
    text.extend_from_slice(b"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n");
    // A second builder for the lines: the max column in milliseconds, as HdrHistogram's
    // own writer puts it (it adds a `#[MaxValueDivisor` comment that says so).
    let mut writer =
        IntervalLogWriterBuilder::new().with_max_value_divisor(1e6).begin_log_with(&mut text, &mut serializer).map_err(|e| failed(&e))?;
    for (i, h) in histograms.iter().enumerate() {
        writer.write_histogram(h, width * i as u32, width, None).map_err(|e| failed(&e))?;
    }
    Ok(text)
}

/// HdrHistogram's percentile distribution text (`outputPercentileDistribution` with 5
/// ticks per half distance), values divided by `scale` (1000: nanoseconds to microseconds).
pub fn percentile_distribution(h: &Histogram<u64>, scale: f64) -> String {
    let digits = usize::from(h.sigfig());
    let mut out = format!("{:>12} {:>14} {:>10} {:>14}\n\n", "Value", "Percentile", "TotalCount", "1/(1-Percentile)");
    let mut total = 0u64;
    for v in h.iter_quantiles(5) {
        total += v.count_since_last_iteration();
        let value = h.highest_equivalent(v.value_iterated_to()) as f64 / scale;
        let q = v.quantile_iterated_to();
        if q < 1.0 {
            let _ = writeln!(out, "{value:12.digits$} {q:2.12} {:10} {:14.2}", total, 1.0 / (1.0 - q));
        } else {
            let _ = writeln!(out, "{value:12.digits$} {q:2.12} {:10}", total);
        }
    }
    let _ = writeln!(out, "#[Mean    = {:12.digits$}, StdDeviation   = {:12.digits$}]", h.mean() / scale, h.stdev() / scale);
    let _ = writeln!(out, "#[Max     = {:12.digits$}, Total count    = {:12}]", h.max() as f64 / scale, h.len());
    let sub_buckets = (2 * 10u64.pow(h.sigfig().into())).next_power_of_two();
    let _ = writeln!(out, "#[Buckets = {:12}, SubBuckets     = {:12}]", h.buckets(), sub_buckets);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    #[test]
    fn names_are_safe_and_distinct() {
        assert_eq!(safe_part("sqlite"), "sqlite");
        assert_eq!(safe_part("pg-ssd_1.2"), "pg-ssd_1.2");
        for bad in ["../etc", "a/b", "", "..", ".hidden", "é", &"x".repeat(500)] {
            let safe = safe_part(bad);
            assert!(!safe.is_empty() && !safe.starts_with('.') && !safe.contains('/') && safe.len() <= MAX_PART + 9, "{bad:?} -> {safe:?}");
        }
        assert_ne!(safe_part("a/b"), safe_part("a_b"), "a changed name never meets the name it became");
        assert_ne!(safe_part(&"x".repeat(500)), safe_part(&"x".repeat(501)));
    }

    #[test]
    fn interval_log_has_the_headers_and_one_readable_line_per_interval() {
        let mut first = Histogram::<u64>::new(3).unwrap();
        first.record(1_000).unwrap();
        first.record(2_000_000).unwrap();
        let empty = Histogram::<u64>::new(3).unwrap();
        let started = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250);
        let text = interval_log("about", started, Duration::from_millis(500), &[first, empty]).unwrap();
        let s = String::from_utf8(text.clone()).unwrap();
        assert!(s.contains("#about\n"), "{s}");
        assert!(s.contains("#[StartTime: 1700000000.250 (seconds since epoch)]\n"), "{s}");
        assert!(s.contains("#[BaseTime: 1700000000.250"), "{s}");
        assert!(s.contains("\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n"), "{s}");
        let lines: Vec<_> = IntervalLogIterator::new(&text)
            .filter_map(|e| match e.unwrap() {
                LogEntry::Interval(h) => Some(h),
                _ => None,
            })
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[1].start_timestamp(), Duration::from_millis(500));
        assert_eq!(lines[0].duration(), Duration::from_millis(500));
        assert!((lines[0].max() - 2.0).abs() < 0.01, "max in ms: {}", lines[0].max());
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, lines[0].encoded_histogram()).unwrap();
        let h: Histogram<u64> = Deserializer::new().deserialize(&mut bytes.as_slice()).unwrap();
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn percentile_distribution_has_hdrhistograms_columns_and_footer() {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000_000, 3).unwrap();
        for v in 1..=1000u64 {
            h.record(v * 1000).unwrap();
        }
        let text = percentile_distribution(&h, 1000.0);
        let mut lines = text.lines();
        assert_eq!(lines.next().unwrap(), "       Value     Percentile TotalCount 1/(1-Percentile)");
        assert_eq!(lines.next().unwrap(), "");
        let first: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
        assert_eq!(first, ["1.000", "0.000000000000", "1", "1.00"]);
        let rows: Vec<&str> = text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')).skip(1).collect();
        let last: Vec<&str> = rows.last().unwrap().split_whitespace().collect();
        assert_eq!(last, ["1000.447", "1.000000000000", "1000"], "the 100 % line has no 1/(1-p) column");
        assert!(text.contains("#[Max     =     1000.447, Total count    =         1000]"), "{text}");
        assert!(text.contains("#[Mean    =      500.") && text.contains("#[Buckets = "), "{text}");
    }
}
