//! Variances that borrow strength across points: the empirical-Bayes ("moderated")
//! variance of Smyth, "Linear Models and Empirical Bayes Methods for Assessing
//! Differential Expression in Microarray Experiments", Statistical Applications in
//! Genetics and Molecular Biology 3(1), 2004 (the method of limma's moderated t).
//!
//! A benchmark point has two or three measured runs: a variance from them has one or two
//! degrees of freedom, and Student's t at one degree of freedom makes a 95 % interval 6.4
//! times (99 %: 25 times) wider than the normal one. A run measures hundreds of points on
//! one machine at one time, and their run-to-run variances share a distribution. Each
//! point's variance is shrunk toward that distribution's centre, and gains its degrees of
//! freedom: a point whose runs agree by chance is not trusted to be exact, a point whose
//! runs disagree keeps most of its own variance. How far to shrink is estimated from the
//! spread of the points' variances (a wide spread means little shrinking), not chosen.
//!
//! Owns the arithmetic only (digamma, trigamma and its inverse, the prior's fit, the
//! moderated variance); must not know about reports, runs or systems.

use statrs::function::gamma::digamma;

/// The distribution the points' true variances are drawn from: a scaled inverse
/// chi-square with `degrees_of_freedom` and scale `variance`. Infinite degrees of freedom:
/// every point has the same variance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    pub variance: f64,
    pub degrees_of_freedom: f64,
}

/// Fewest points whose variances can say how the variances spread.
pub const MIN_POINTS: usize = 3;
/// Sample variances are floored here before their logarithm (two runs that took exactly
/// the same time are possible with coarse clocks): a relative spread of 1e-6.
const VARIANCE_FLOOR: f64 = 1e-12;
/// The fitted prior's degrees of freedom are capped: beyond this the variances are
/// indistinguishable from equal, and a cap keeps Student's t defined.
const MAX_PRIOR_DF: f64 = 1e6;

/// A sample variance and its degrees of freedom (runs - 1).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleVariance {
    pub variance: f64,
    pub degrees_of_freedom: f64,
}

/// Smyth's method-of-moments fit of the prior from many points' sample variances (each
/// with at least one degree of freedom): the mean and variance of the log variances,
/// corrected for the log chi-square's own mean and variance, give the prior's scale and
/// degrees of freedom. `None` from fewer than `MIN_POINTS` variances.
pub fn fit_prior(samples: &[SampleVariance]) -> Option<Prior> {
    let samples: Vec<&SampleVariance> = samples.iter().filter(|s| s.degrees_of_freedom >= 1.0 && s.variance.is_finite()).collect();
    if samples.len() < MIN_POINTS {
        return None;
    }
    let n = samples.len() as f64;
    let logs: Vec<f64> = samples
        .iter()
        .map(|s| {
            let half = s.degrees_of_freedom / 2.0;
            s.variance.max(VARIANCE_FLOOR).ln() - digamma(half) + half.ln()
        })
        .collect();
    let mean = logs.iter().sum::<f64>() / n;
    let spread = logs.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let own = samples.iter().map(|s| trigamma(s.degrees_of_freedom / 2.0)).sum::<f64>() / n;
    let excess = spread - own;
    let degrees_of_freedom = if excess > 0.0 { (2.0 * trigamma_inverse(excess)).min(MAX_PRIOR_DF) } else { MAX_PRIOR_DF };
    let half = degrees_of_freedom / 2.0;
    let variance = (mean + digamma(half) - half.ln()).exp();
    Some(Prior { variance, degrees_of_freedom })
}

/// The moderated variance of one point and its degrees of freedom: the prior's and the
/// point's own, weighted by their degrees of freedom. A point without a variance of its
/// own (one run) gets the prior's.
pub fn moderate(own: Option<SampleVariance>, prior: Prior) -> SampleVariance {
    match own.filter(|s| s.degrees_of_freedom > 0.0 && s.variance.is_finite()) {
        Some(s) => SampleVariance {
            variance: (prior.degrees_of_freedom * prior.variance + s.degrees_of_freedom * s.variance)
                / (prior.degrees_of_freedom + s.degrees_of_freedom),
            degrees_of_freedom: prior.degrees_of_freedom + s.degrees_of_freedom,
        },
        None => SampleVariance { variance: prior.variance, degrees_of_freedom: prior.degrees_of_freedom },
    }
}

/// The sample variance of `values` (n - 1 in the denominator) with n - 1 degrees of
/// freedom; `None` for fewer than two values.
pub fn sample_variance(values: &[f64]) -> Option<SampleVariance> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let variance = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(SampleVariance { variance, degrees_of_freedom: n - 1.0 })
}

/// The trigamma function (the derivative of digamma) for x > 0: the recurrence
/// ψ'(x) = ψ'(x + 1) + 1/x² up to x >= 10, then the asymptotic series.
pub fn trigamma(x: f64) -> f64 {
    let mut x = x;
    let mut sum = 0.0;
    while x < 10.0 {
        sum += 1.0 / (x * x);
        x += 1.0;
    }
    let inv = 1.0 / x;
    let inv2 = inv * inv;
    // 1/x + 1/(2x²) + 1/(6x³) - 1/(30x⁵) + 1/(42x⁷) - 1/(30x⁹)
    sum + inv + inv2 / 2.0 + inv * inv2 * (1.0 / 6.0 - inv2 * (1.0 / 30.0 - inv2 * (1.0 / 42.0 - inv2 / 30.0)))
}

/// The x > 0 with trigamma(x) = y, for y > 0: Newton's method on 1/trigamma, which is
/// nearly linear (Smyth 2004, as limma's `trigammaInverse`).
pub fn trigamma_inverse(y: f64) -> f64 {
    if y > 1e7 {
        return 1.0 / y.sqrt();
    }
    if y < 1e-6 {
        return 1.0 / y;
    }
    let mut x = 0.5 + 1.0 / y;
    for _ in 0..50 {
        let t = trigamma(x);
        // d/dx (1/trigamma(x)) = -tetragamma/trigamma²; tetragamma by a central difference
        // is enough for the step (the iteration converges from any start above 0).
        let h = 1e-5 * x;
        let tetragamma = (trigamma(x + h) - trigamma(x - h)) / (2.0 * h);
        let step = t * (1.0 - t / y) / tetragamma;
        x += step;
        if x <= 0.0 {
            x = 1e-8;
        }
        if (-step / x) < 1e-10 {
            break;
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigamma_matches_known_values_and_its_inverse_undoes_it() {
        let pi2 = std::f64::consts::PI.powi(2);
        assert!((trigamma(1.0) - pi2 / 6.0).abs() < 1e-10, "{}", trigamma(1.0));
        assert!((trigamma(0.5) - pi2 / 2.0).abs() < 1e-10);
        // ψ'(2) = π²/6 - 1.
        assert!((trigamma(2.0) - (pi2 / 6.0 - 1.0)).abs() < 1e-10);
        for x in [0.01, 0.3, 1.0, 2.5, 10.0, 400.0] {
            let back = trigamma_inverse(trigamma(x));
            assert!((back - x).abs() / x < 1e-6, "{x} -> {back}");
        }
    }

    /// A small deterministic generator for the simulations below.
    struct Lcg(u64);
    impl Lcg {
        fn uniform(&mut self) -> f64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
        }
        fn normal(&mut self) -> f64 {
            (-2.0 * self.uniform().ln()).sqrt() * (std::f64::consts::TAU * self.uniform()).cos()
        }
    }

    /// Sample variances of `points` points with `runs` runs each, true standard deviation
    /// of point i `sd(i)`.
    fn simulated(points: usize, runs: usize, sd: impl Fn(usize) -> f64, rng: &mut Lcg) -> Vec<SampleVariance> {
        (0..points).map(|i| sample_variance(&(0..runs).map(|_| sd(i) * rng.normal()).collect::<Vec<_>>()).unwrap()).collect()
    }

    #[test]
    fn equal_true_variances_give_a_prior_near_them_with_many_degrees_of_freedom() {
        let mut rng = Lcg(7);
        let prior = fit_prior(&simulated(4000, 2, |_| 0.1, &mut rng)).unwrap();
        assert!((prior.variance.sqrt() - 0.1).abs() < 0.005, "{prior:?}");
        assert!(prior.degrees_of_freedom > 20.0, "{prior:?}");
    }

    #[test]
    fn unequal_true_variances_give_few_prior_degrees_of_freedom() {
        let mut rng = Lcg(11);
        // Standard deviations spread over a factor of 30.
        let prior = fit_prior(&simulated(400, 3, |i| 0.01 * 30f64.powf((i % 10) as f64 / 9.0), &mut rng)).unwrap();
        assert!(prior.degrees_of_freedom < 5.0, "{prior:?}");
    }

    #[test]
    fn a_moderated_variance_lies_between_the_points_own_and_the_prior() {
        let prior = Prior { variance: 0.04, degrees_of_freedom: 3.0 };
        let own = SampleVariance { variance: 0.0001, degrees_of_freedom: 1.0 };
        let m = moderate(Some(own), prior);
        assert!((m.variance - (3.0 * 0.04 + 0.0001) / 4.0).abs() < 1e-12);
        assert_eq!(m.degrees_of_freedom, 4.0);
        assert_eq!(moderate(None, prior).variance, 0.04);
        assert_eq!(fit_prior(&[own, own]), None, "two points cannot say how variances spread");
    }

    /// The moderated interval keeps its coverage: over points whose true variances spread
    /// widely, a 95 % interval from two runs each misses the true mean about 5 % of the
    /// time, and is far narrower than Student's t on each point's own two runs.
    #[test]
    fn moderated_intervals_cover_and_are_narrower_than_each_points_own() {
        use statrs::distribution::{ContinuousCDF, StudentsT};
        let mut rng = Lcg(3);
        let points = 2000;
        let sd = |i: usize| 0.02 * 10f64.powf((i % 7) as f64 / 6.0);
        let runs: Vec<Vec<f64>> = (0..points).map(|i| (0..2).map(|_| sd(i) * rng.normal()).collect()).collect();
        let own: Vec<SampleVariance> = runs.iter().map(|r| sample_variance(r).unwrap()).collect();
        let prior = fit_prior(&own).unwrap();
        let (mut missed, mut width_moderated, mut width_own) = (0, 0.0, 0.0);
        for (r, s) in runs.iter().zip(&own) {
            let m = moderate(Some(*s), prior);
            let t = StudentsT::new(0.0, 1.0, m.degrees_of_freedom).unwrap().inverse_cdf(0.975);
            let half = t * (m.variance / 2.0).sqrt();
            let mean = (r[0] + r[1]) / 2.0;
            missed += usize::from(mean.abs() > half);
            width_moderated += half;
            width_own += 12.706 * (s.variance / 2.0).sqrt();
        }
        let miss_rate = missed as f64 / points as f64;
        assert!((0.02..0.08).contains(&miss_rate), "{miss_rate}");
        assert!(width_moderated * 3.0 < width_own, "{width_moderated} vs {width_own}");
    }
}
