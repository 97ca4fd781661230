//! When a run stops: the op count of the fixed-ops mode (the default, which reproduces
//! the papers exactly) or, with `--precision`, the precision of its throughput, within
//! the caps `--max-ops` and `--max-time`. Parses those flags' values.
//!
//! Owns the flags' syntax and checks and which experiments the rule applies to. Must not
//! measure or estimate anything (the runner and `stats::precision` do).

use super::bounds::{HORIZON_SECS, MIN_DURATION_SECS};
use crate::error::{Error, Result};
use crate::workload::experiment::Experiment;
use serde::Serialize;

/// Fewest measured runs per point under `--precision`: the spread between runs is part of
/// the result.
pub const MIN_PRECISION_RUNS: u32 = 3;
/// `--max-time` when not given: a run stops after this long even if not precise enough.
pub const DEFAULT_MAX_TIME_SECS: f64 = 120.0;
/// The precision `--budget` aims at when `--precision` is not given.
pub const DEFAULT_BUDGET_PRECISION: f64 = 0.02;

/// `--precision`: each run of a point stops once its throughput is known this well.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Precision {
    /// The relative half-width of the 95 % confidence interval to reach (0.02: ±2 %).
    pub target: f64,
    /// A run stops after this many seconds even if not precise enough (`--max-time`).
    pub max_time_secs: f64,
}

impl Precision {
    /// Whether the rule applies to `experiment`. Sized sweeps (the op count is the point's
    /// size) and lifecycle phases (write all N pairs, ...) do a fixed amount of work by
    /// definition; they run all of their ops.
    pub fn applies_to(experiment: &Experiment) -> bool {
        !experiment.sized && !experiment.lifecycle
    }
}

/// `--precision 2%` or `--precision 0.02`.
pub fn parse_precision(text: &str) -> Result<f64> {
    parse_fraction("--precision", text)
}

/// A relative amount given as a percentage or a fraction (`2%`, `0.02`), above 0 and
/// below 100 %.
pub fn parse_fraction(flag: &str, text: &str) -> Result<f64> {
    let bad = || Error::usage(format!("{flag} '{text}': give a relative amount such as 2% or 0.02 (above 0, below 100%)"));
    let value = match text.trim().strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map_err(|_| bad())? / 100.0,
        None => text.trim().parse::<f64>().map_err(|_| bad())?,
    };
    if !(value > 0.0 && value < 1.0) {
        return Err(bad());
    }
    Ok(value)
}

/// A duration flag's value: seconds, or a number with `ms`, `s`, `m` or `h` (`90`,
/// `500ms`, `30s`, `2m`, `8h`, `1.5h`).
pub fn parse_duration(flag: &str, text: &str) -> Result<f64> {
    let bad = || Error::usage(format!("{flag} '{text}': give a duration such as 500ms, 90s, 30m or 8h"));
    let text = text.trim();
    let (number, scale) = match text.strip_suffix("ms") {
        Some(number) => (number, 0.001),
        None => match text.char_indices().last() {
            Some((i, 's')) => (&text[..i], 1.0),
            Some((i, 'm')) => (&text[..i], 60.0),
            Some((i, 'h')) => (&text[..i], 3600.0),
            Some((_, c)) if c.is_ascii_alphabetic() => return Err(bad()),
            _ => (text, 1.0),
        },
    };
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    if !(value > 0.0 && value.is_finite()) {
        return Err(bad());
    }
    let secs = value * scale;
    if !(MIN_DURATION_SECS..=HORIZON_SECS).contains(&secs) {
        return Err(Error::usage(format!(
            "{flag} '{text}': give a duration from 1ms to {}h (a week, the longest a plan may take)",
            HORIZON_SECS / 3600.0
        )));
    }
    Ok(secs)
}

/// The stopping rule's flags, as given.
#[derive(Debug, Clone, Copy, Default)]
pub struct StopFlags<'a> {
    pub precision: Option<&'a str>,
    pub max_ops: Option<u64>,
    pub max_time: Option<&'a str>,
    /// `--budget` was given: it implies a stopping rule (±2 % unless `--precision` says).
    pub budget: bool,
    pub runs: Option<u32>,
}

/// The stopping rule of a run from its flags; `None` is the fixed-ops mode. `--max-ops`
/// and `--max-time` only mean something with `--precision` (or `--budget`).
pub fn resolve(flags: StopFlags) -> Result<Option<Precision>> {
    let StopFlags { precision, max_ops, max_time, budget, runs } = flags;
    if precision.is_none() && !budget {
        if max_ops.is_some() || max_time.is_some() {
            return Err(Error::usage("--max-ops and --max-time cap runs under --precision; without it every run does --ops ops"));
        }
        return Ok(None);
    }
    let target = precision.map(parse_precision).transpose()?.unwrap_or(DEFAULT_BUDGET_PRECISION);
    if max_ops == Some(0) {
        return Err(Error::usage("--max-ops must be at least 1"));
    }
    if let Some(runs) = runs
        && runs < MIN_PRECISION_RUNS
    {
        return Err(Error::usage(format!(
            "--precision needs at least {MIN_PRECISION_RUNS} measured runs per point: use --runs {MIN_PRECISION_RUNS} or more"
        )));
    }
    let max_time_secs = max_time.map(|t| parse_duration("--max-time", t)).transpose()?.unwrap_or(DEFAULT_MAX_TIME_SECS);
    Ok(Some(Precision { target, max_time_secs }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_is_a_percentage_or_a_fraction() {
        assert_eq!(parse_precision("2%").unwrap(), 0.02);
        assert_eq!(parse_precision("0.02").unwrap(), 0.02);
        assert_eq!(parse_precision(" 0.5 % ").unwrap(), 0.005);
        for bad in ["0", "1", "100%", "-2%", "two", "%", "2%%"] {
            let e = parse_precision(bad).unwrap_err().to_string();
            assert!(e.contains("--precision") && e.contains("2%"), "{bad}: {e}");
        }
    }

    #[test]
    fn durations_take_seconds_minutes_and_hours() {
        assert_eq!(parse_duration("--max-time", "90").unwrap(), 90.0);
        assert_eq!(parse_duration("--max-time", "30s").unwrap(), 30.0);
        assert_eq!(parse_duration("--max-time", "2m").unwrap(), 120.0);
        assert_eq!(parse_duration("--budget", "1.5h").unwrap(), 5400.0);
        assert_eq!(parse_duration("--duration", "500ms").unwrap(), 0.5);
        assert_eq!(parse_duration("--duration", " 2.5 ").unwrap(), 2.5);
        for bad in ["", "0s", "h", "3d", "-1m", "inf", "ms", "0ms", "-5ms", "1.5x", "2 mins", "NaN", "1e300", "1e-300s", "169h", "0.5ms"] {
            assert!(parse_duration("--budget", bad).unwrap_err().to_string().contains("--budget"), "{bad}");
        }
    }

    #[test]
    fn caps_need_precision_and_precision_needs_three_runs() {
        let flags = StopFlags::default;
        assert_eq!(resolve(StopFlags { runs: Some(1), ..flags() }).unwrap(), None);
        assert!(resolve(StopFlags { max_ops: Some(10), ..flags() }).unwrap_err().to_string().contains("--precision"));
        assert!(resolve(StopFlags { max_time: Some("1m"), ..flags() }).is_err());
        let two_runs = StopFlags { precision: Some("2%"), runs: Some(2), ..flags() };
        assert!(resolve(two_runs).unwrap_err().to_string().contains("--runs 3"));
        let capped = StopFlags { precision: Some("2%"), max_ops: Some(1000), max_time: Some("10s"), runs: Some(3), ..flags() };
        assert_eq!(resolve(capped).unwrap().unwrap(), Precision { target: 0.02, max_time_secs: 10.0 });
        assert_eq!(resolve(StopFlags { precision: Some("1%"), ..flags() }).unwrap().unwrap().max_time_secs, DEFAULT_MAX_TIME_SECS);
        // --budget alone stops at ±2 %.
        assert_eq!(resolve(StopFlags { budget: true, ..flags() }).unwrap().unwrap().target, DEFAULT_BUDGET_PRECISION);
    }
}
