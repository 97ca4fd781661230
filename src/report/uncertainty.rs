//! How well each point's throughput (or response p99) is known, and whether two points
//! can be told apart: the one statistical model behind the findings and `compare`.
//!
//! A point's measured runs give its value on the log scale (the mean of the runs'
//! logarithms: a geometric mean, so ratios are symmetric). Its uncertainty has three parts:
//! - each run's own noise, seen within the run: the batch-means interval of its throughput
//!   (`RunMeasurement::precision`, when the run was long enough) is a floor under the
//!   point's run-to-run variance;
//! - run-to-run noise, from the spread of the point's runs — two or three runs say little
//!   alone, so the variance is moderated across all points of the report
//!   (`stats::moderated`: Smyth's empirical Bayes), which gives it the degrees of freedom
//!   of hundreds of runs;
//! - drift: the runs of one point follow each other within seconds, so a slow minute on a
//!   shared machine moves them together and their spread cannot show it. Two points of
//!   one report (findings) are charged, each, one typical run's variance (the prior's
//!   scale) for it; two reports (`compare`) estimate it from how far all their common
//!   points moved, robustly, as a trend over the runs' length (short runs drift more),
//!   and calibrate it by an empirical null (`compare`).
//!
//! A difference is "called" only when its interval excludes 1; where it does not and the
//! interval is wide, the words say that the data are too few and name the fix.
//! Owns the model and its words; must not read anything but saved measurements.

use super::model::PointResult;
use crate::stats::moderated::{self, Prior, SampleVariance};
use serde::Serialize;
use statrs::distribution::{ContinuousCDF, StudentsT};

/// Student's t quantile 0.975 for 19 degrees of freedom: the 20 batches of a run's
/// precision (`stats::precision`), to turn its 95 % half-width back into a standard error.
const PRECISION_T: f64 = 2.093;
/// An interval of a ratio wider than this (high / low) is not printed: it says only that
/// the data are too few.
pub const WIDEST_SHOWN: f64 = 100.0;
/// An interval that includes 1 and is narrower than this (high / low) says the two are
/// the same within it; a wider one says the data cannot rank them.
pub const TIED_WITHIN: f64 = 1.25;

/// The measured runs' ok throughputs; empty when the point is void.
pub fn run_throughputs(p: &PointResult) -> Vec<f64> {
    if p.is_void() {
        return Vec::new();
    }
    p.measured_runs().iter().filter(|r| r.seconds > 0.0 && r.ok_ops > 0).map(|r| r.ok_ops as f64 / r.seconds).collect()
}

/// The measured runs' response p99s (µs) of the point's op kind; empty when the point is
/// void or has no response times (a closed loop).
pub fn run_response_p99s(p: &PointResult) -> Vec<f64> {
    if p.is_void() {
        return Vec::new();
    }
    p.measured_runs().iter().filter_map(|r| r.response.get(&p.op)).map(|l| l.p99_us).filter(|us| *us > 0.0).collect()
}

/// The median of the finite values; `None` without any.
pub fn median(values: &[f64]) -> Option<f64> {
    let finite: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    (!finite.is_empty()).then(|| crate::stats::median(&finite))
}

/// What a point's runs say of its value on the log scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogEstimate {
    /// The mean of the runs' logarithms.
    pub mean: f64,
    /// The variance of that mean from run-to-run noise (moderated, floored by the runs'
    /// own noise); drift is not in it.
    pub variance: f64,
    pub degrees_of_freedom: f64,
    pub runs: usize,
    /// The median length of the measured runs, in seconds, where known: how far a point
    /// drifts between two reports depends on it (`compare`).
    pub run_seconds: Option<f64>,
}

/// One quantity's model over the points of one report: the prior of its run-to-run
/// variances.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Model {
    prior: Option<Prior>,
}

impl Model {
    /// Fits the prior from every point's runs (`values` of each point: positive numbers,
    /// e.g. its runs' throughputs).
    pub fn fit<'a>(points: impl IntoIterator<Item = &'a [f64]>) -> Model {
        let samples: Vec<SampleVariance> = points.into_iter().filter_map(|v| moderated::sample_variance(&logs(v))).collect();
        Model { prior: moderated::fit_prior(&samples) }
    }

    /// The throughput model of a report's points.
    pub fn throughput(points: &[PointResult]) -> Model {
        let runs: Vec<Vec<f64>> = points.iter().map(run_throughputs).collect();
        Model::fit(runs.iter().map(Vec::as_slice))
    }

    /// One typical run's variance (the prior's scale): what the findings charge each
    /// point for drift. Zero without a prior.
    pub fn drift(&self) -> f64 {
        self.prior.map_or(0.0, |p| p.variance)
    }

    /// The estimate of a point from its runs' `values`, with `floor` the smallest variance
    /// one run can have (its own noise; 0 when unknown). `None` without a value, or with
    /// one run and no prior to lend it a variance.
    pub fn estimate(&self, values: &[f64], floor: f64) -> Option<LogEstimate> {
        let logs = logs(values);
        if logs.is_empty() {
            return None;
        }
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let own = moderated::sample_variance(&logs);
        let moderated = match (self.prior, own) {
            (Some(prior), own) => moderated::moderate(own, prior),
            (None, Some(own)) => own,
            (None, None) => return None,
        };
        Some(LogEstimate {
            mean,
            variance: moderated.variance.max(floor) / n,
            degrees_of_freedom: moderated.degrees_of_freedom,
            runs: logs.len(),
            run_seconds: None,
        })
    }

    /// A point's throughput estimate, floored by its runs' own batch-means precision.
    pub fn throughput_of(&self, p: &PointResult) -> Option<LogEstimate> {
        let estimate = self.estimate(&run_throughputs(p), run_noise_floor(p))?;
        Some(LogEstimate { run_seconds: p.run_seconds().map(|s| s.median).filter(|s| *s > 0.0), ..estimate })
    }
}

/// The logarithms of the positive, finite values.
fn logs(values: &[f64]) -> Vec<f64> {
    values.iter().filter(|x| **x > 0.0 && x.is_finite()).map(|x| x.ln()).collect()
}

/// The mean variance of the log throughput one of the point's runs has from its own
/// noise (batch means within the run); 0 when no run was long enough to tell.
fn run_noise_floor(p: &PointResult) -> f64 {
    let variances: Vec<f64> = p.measured_runs().iter().filter_map(|r| r.precision).map(|h| (h / PRECISION_T).powi(2)).collect();
    if variances.is_empty() { 0.0 } else { variances.iter().sum::<f64>() / variances.len() as f64 }
}

/// One part of a difference's variance, with the degrees of freedom it was estimated with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VariancePart {
    pub variance: f64,
    pub degrees_of_freedom: f64,
}

impl From<LogEstimate> for VariancePart {
    fn from(e: LogEstimate) -> VariancePart {
        VariancePart { variance: e.variance, degrees_of_freedom: e.degrees_of_freedom }
    }
}

/// An interval for a ratio.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RatioInterval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

impl RatioInterval {
    /// The interval of exp(`difference`) at `confidence`, its variance the sum of `parts`,
    /// Student's t with their Welch-Satterthwaite degrees of freedom.
    pub fn of(difference: f64, parts: &[VariancePart], confidence: f64) -> RatioInterval {
        let variance: f64 = parts.iter().map(|p| p.variance).sum();
        let tails: f64 = parts.iter().filter(|p| p.variance > 0.0).map(|p| p.variance.powi(2) / p.degrees_of_freedom.max(1.0)).sum();
        let degrees_of_freedom = if tails > 0.0 { variance.powi(2) / tails } else { f64::INFINITY };
        let quantile = if degrees_of_freedom.is_finite() {
            StudentsT::new(0.0, 1.0, degrees_of_freedom.max(1.0)).map_or(f64::NAN, |t| t.inverse_cdf(0.5 + confidence / 2.0))
        } else {
            statrs::distribution::Normal::standard().inverse_cdf(0.5 + confidence / 2.0)
        };
        let half = if variance > 0.0 { quantile * variance.sqrt() } else { 0.0 };
        RatioInterval { estimate: difference.exp(), low: (difference - half).exp(), high: (difference + half).exp() }
    }

    /// high / low.
    pub fn width(&self) -> f64 {
        self.high / self.low
    }

    pub fn excludes_one(&self) -> bool {
        self.low > 1.0 || self.high < 1.0
    }

    /// What the interval lets one say of the ratio (see `Call`).
    pub fn call(&self) -> Call {
        if self.excludes_one() {
            Call::Different
        } else if self.width() <= TIED_WITHIN {
            Call::Tied
        } else {
            Call::TooFewSamples
        }
    }

    /// "4.31x-22.4x", or `None` when wider than `WIDEST_SHOWN`.
    pub fn text(&self) -> Option<String> {
        (self.width() <= WIDEST_SHOWN).then(|| format!("{}-{}", super::summary::times(self.low), super::summary::times(self.high)))
    }
}

/// What the data say of two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Call {
    /// The interval excludes 1.
    Different,
    /// The interval includes 1 and is narrow (`TIED_WITHIN`): the same within it.
    Tied,
    /// The interval includes 1 and is wide: the data cannot rank them.
    TooFewSamples,
}

/// How to get enough data, for a point measured with `runs` runs of `seconds` each
/// (median): "2 runs of 40 ms each; use --runs 5 or --duration 10s".
pub fn too_few_hint(runs: usize, seconds: Option<f64>) -> String {
    let length = seconds.map(|s| format!(" of {}", crate::base::span::words(s))).unwrap_or_default();
    let each = if runs == 1 { "" } else { " each" };
    let more_runs = (runs + 3).max(5);
    format!("{runs} run{}{length}{each}; use --runs {more_runs} or --duration 10s", if runs == 1 { "" } else { "s" })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_students_t_on_the_summed_variance() {
        let part = VariancePart { variance: 0.001, degrees_of_freedom: 10.0 };
        let i = RatioInterval::of(0.0, &[part, part], 0.95);
        // Two equal parts: Satterthwaite gives 20 degrees of freedom; t(0.975, 20) = 2.086.
        let half = 2.086 * 0.002f64.sqrt();
        assert!((i.high.ln() - half).abs() < 1e-3, "{i:?}");
        assert!((i.low.ln() + half).abs() < 1e-3);
        assert_eq!(i.call(), Call::Tied);
        assert_eq!(RatioInterval::of(1.0, &[part], 0.95).call(), Call::Different);
        // Without any variance the interval is the point.
        assert_eq!(RatioInterval::of(0.5, &[], 0.95).width(), 1.0);
        let wide = RatioInterval::of(0.1, &[VariancePart { variance: 1.0, degrees_of_freedom: 3.0 }], 0.95);
        assert_eq!(wide.call(), Call::TooFewSamples);
        assert_eq!(wide.text(), None, "{wide:?} is too wide to print");
    }

    #[test]
    fn a_point_with_agreeing_runs_borrows_the_spread_of_the_others() {
        // Many points whose runs spread by about 10 %, and one whose two runs agree to 0.1 %.
        let spread: Vec<Vec<f64>> = (0..50).map(|i| vec![100.0, if i % 2 == 0 { 110.0 } else { 91.0 }]).collect();
        let model = Model::fit(spread.iter().map(Vec::as_slice));
        let lucky = model.estimate(&[100.0, 100.1], 0.0).unwrap();
        assert!(lucky.variance > 0.001, "not trusted to be exact: {lucky:?}");
        assert!(lucky.degrees_of_freedom > 10.0, "{lucky:?}");
        // One run: the prior lends it a variance.
        let single = model.estimate(&[100.0], 0.0).unwrap();
        assert!(single.variance > 0.0 && single.runs == 1);
        // Its own noise is a floor.
        assert!(model.estimate(&[100.0, 100.1], 0.5).unwrap().variance >= 0.25);
        // No prior and one run: nothing to say.
        assert_eq!(Model::fit(std::iter::empty()).estimate(&[100.0], 0.0), None);
    }

    #[test]
    fn the_hint_names_the_runs_their_length_and_the_fix() {
        assert_eq!(too_few_hint(2, Some(0.04)), "2 runs of 40 ms each; use --runs 5 or --duration 10s");
        assert_eq!(too_few_hint(1, None), "1 run; use --runs 5 or --duration 10s");
        assert_eq!(too_few_hint(5, Some(2.0)), "5 runs of 2 s each; use --runs 8 or --duration 10s");
    }
}
