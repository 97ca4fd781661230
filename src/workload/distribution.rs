//! YCSB's request distributions over item numbers `[0, n)`, as pure functions of
//! (stream, sequence number, lane, n).
//!
//! Owns the shapes (uniform, scrambled zipfian, latest, hotspot, exponential); the zipfian
//! itself is `base::zipfian`. Must not hold state (no RNG, no counters) and must
//! not know about keys, tables or operations: `n` is whatever the caller says exists.

use crate::base::rng::Stream;
use crate::base::zipfian::{ZIPFIAN_CONSTANT, Zeta, Zipfian};
use crate::data::ycsb::fnv_hash64;

/// Item space of YCSB's ScrambledZipfianGenerator.
pub const SCRAMBLED_ITEM_COUNT: u64 = 10_000_000_000;
/// zeta(10^10, 0.99), YCSB's precomputed constant, so initialization is O(1).
pub const SCRAMBLED_ZETAN: f64 = 26.46902820178302;

/// A request distribution over `[0, n)`.
#[derive(Debug, Clone)]
pub enum Distribution {
    Uniform,
    /// YCSB's ScrambledZipfianGenerator: a zipfian(0.99) item of a 10^10-item space, hashed
    /// with FNV-64, mod n. Popular items are scattered over `[0, n)`.
    Zipfian(Zipfian),
    /// YCSB's SkewedLatestGenerator: `n - 1 - zipfian(n)`, so the highest (most recently
    /// inserted) numbers are most likely.
    Latest(Zeta),
    /// YCSB's HotspotIntegerGenerator: `opn_fraction` of samples fall uniformly in the first
    /// `data_fraction` of `[0, n)`, the rest uniformly in the remainder.
    Hotspot {
        data_fraction: f64,
        opn_fraction: f64,
    },
    /// YCSB's ExponentialGenerator used as CoreWorkload does: `n - 1 - x` with
    /// x ~ Exp(gamma), `gamma = -ln(1 - percentile/100) / range` (redrawn while x >= n).
    Exponential {
        gamma: f64,
    },
}

impl Distribution {
    pub fn uniform() -> Self {
        Distribution::Uniform
    }

    /// O(1): uses YCSB's precomputed zeta of the 10^10-item space.
    pub fn zipfian() -> Self {
        Distribution::Zipfian(Zipfian::with_zetan(SCRAMBLED_ITEM_COUNT, ZIPFIAN_CONSTANT, SCRAMBLED_ZETAN))
    }

    pub fn latest() -> Self {
        Distribution::Latest(Zeta::new(ZIPFIAN_CONSTANT))
    }

    /// YCSB defaults: 0.2 / 0.8.
    pub fn hotspot(data_fraction: f64, opn_fraction: f64) -> Self {
        Distribution::Hotspot { data_fraction, opn_fraction }
    }

    /// `percentile` percent of samples fall within the `range` highest items
    /// (YCSB: exponential.percentile=95, range = recordcount * exponential.frac).
    pub fn exponential(percentile: f64, range: f64) -> Self {
        Distribution::Exponential { gamma: -(1.0 - percentile / 100.0).ln() / range.max(1e-9) }
    }

    /// A sample in `[0, n)` (`n > 0`), pure in (stream, seq, lane, n). One sample draws on
    /// lanes `8*lane .. 8*lane+7` of `seq`, so callers give independent samples distinct
    /// lanes.
    pub fn sample(&self, stream: &Stream, seq: u64, lane: u64, n: u64) -> u64 {
        assert!(n > 0, "sample from an empty range");
        let l = lane.wrapping_mul(8);
        match self {
            Distribution::Uniform => stream.below(seq, l, n),
            Distribution::Zipfian(z) => fnv_hash64(z.from_unit(stream.unit(seq, l))) % n,
            Distribution::Latest(zeta) => {
                let z = Zipfian::new(n, zeta);
                n - 1 - z.from_unit(stream.unit(seq, l))
            }
            Distribution::Hotspot { data_fraction, opn_fraction } => {
                let hot = ((n as f64 * data_fraction) as u64).min(n);
                let cold = n - hot;
                let want_hot = stream.unit(seq, l) < *opn_fraction;
                if (want_hot && hot > 0) || cold == 0 { stream.below(seq, l + 1, hot) } else { hot + stream.below(seq, l + 1, cold) }
            }
            Distribution::Exponential { gamma } => {
                for j in 0..7 {
                    // 1 - unit is in (0, 1], so ln is finite.
                    let x = (-(1.0 - stream.unit(seq, l + j)).ln() / gamma) as u64;
                    if x < n {
                        return n - 1 - x;
                    }
                }
                n - 1 - ((-(1.0 - stream.unit(seq, l + 7)).ln() / gamma) as u64 % n)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    const SAMPLES: u64 = 200_000;

    fn counts(d: &Distribution, n: u64) -> Vec<u64> {
        let s = Stream::new(11, 5);
        let mut c = vec![0u64; n as usize];
        for seq in 0..SAMPLES {
            let v = d.sample(&s, seq, 0, n);
            assert!(v < n);
            c[v as usize] += 1;
        }
        c
    }

    #[test]
    fn zeta_matches_exact_sum_and_ycsb_constant() {
        let z = Zeta::new(0.99);
        for n in [1u64, 2, 10, 64, 65, 100, 1000, 123_457] {
            let exact: f64 = (1..=n).map(|i| (i as f64).powf(-0.99)).sum();
            assert!((z.value(n) - exact).abs() < 1e-8, "n={n}: {} vs {exact}", z.value(n));
        }
        assert!((z.value(SCRAMBLED_ITEM_COUNT) - SCRAMBLED_ZETAN).abs() < 1e-6, "{}", z.value(SCRAMBLED_ITEM_COUNT));
    }

    #[test]
    fn zipfian_init_is_instant_for_large_n() {
        // Construction is O(1) in the item count: an O(n) zeta loop over 10M items would
        // take far longer than this in a debug build.
        let t = Instant::now();
        let d = Distribution::zipfian();
        let l = Distribution::latest();
        let z = Zipfian::new(10_000_000, &Zeta::new(ZIPFIAN_CONSTANT));
        assert!(t.elapsed().as_millis() < 50, "construction took {:?}", t.elapsed());
        assert!(z.from_unit(0.5) < 10_000_000);
        // Latest recomputes zeta(n) on every sample, for a growing n: also O(1).
        let t = Instant::now();
        let s = Stream::new(1, 1);
        for seq in 0..1000 {
            assert!(d.sample(&s, seq, 0, 10_000_000) < 10_000_000);
            assert!(l.sample(&s, seq, 0, 10_000_000 + seq) < 10_000_000 + seq);
        }
        assert!(t.elapsed().as_millis() < 500, "2000 samples took {:?}", t.elapsed());
    }

    #[test]
    fn scrambled_zipfian_is_skewed() {
        let n = 10_000;
        let mut c = counts(&Distribution::zipfian(), n);
        c.sort_unstable_by(|a, b| b.cmp(a));
        let top1: u64 = c[..(n / 100) as usize].iter().sum();
        // Uniform would give 1%; zipfian(0.99) over 10^10 items folded onto 10^4 gives far more.
        assert!(top1 as f64 > 0.15 * SAMPLES as f64, "top 1% got {top1}");
        // Sorted frequencies fall from head to tail: compare decile sums.
        let deciles: Vec<u64> = c.chunks((n / 10) as usize).map(|ch| ch.iter().sum()).collect();
        assert!(deciles.windows(2).all(|w| w[0] >= w[1]), "{deciles:?}");
        assert!(deciles[0] > 3 * deciles[9], "{deciles:?}");
        // Scrambled: the hottest items are not simply the lowest numbers.
        let unsorted = counts(&Distribution::zipfian(), n);
        let low1: u64 = unsorted[..(n / 100) as usize].iter().sum();
        assert!((low1 as f64) < 0.5 * top1 as f64, "low {low1} vs top {top1}");
    }

    #[test]
    fn plain_zipfian_head_is_item_zero() {
        let z = Zipfian::new(1000, &Zeta::new(0.99));
        let s = Stream::new(3, 3);
        let mut c = vec![0u64; 1000];
        for seq in 0..SAMPLES {
            c[z.from_unit(s.unit(seq, 0)) as usize] += 1;
        }
        // P(item 0) = 1/zeta(1000) ~ 0.13.
        let p0 = c[0] as f64 / SAMPLES as f64;
        let expect = 1.0 / Zeta::new(0.99).value(1000);
        assert!((p0 - expect).abs() < 0.01, "{p0} vs {expect}");
        assert!(c[0] > c[1] && c[1] > c[10] && c[10] > c[500]);
    }

    #[test]
    fn uniform_is_flat() {
        let n = 100;
        let c = counts(&Distribution::uniform(), n);
        let e = SAMPLES as f64 / n as f64;
        let chi2: f64 = c.iter().map(|&o| (o as f64 - e).powi(2) / e).sum();
        // 99 degrees of freedom: mean 99, sd ~14; 160 is beyond 4 sd.
        assert!(chi2 < 160.0, "chi2 {chi2}");
    }

    #[test]
    fn hotspot_puts_80_percent_in_20_percent() {
        let n = 1000;
        let c = counts(&Distribution::hotspot(0.2, 0.8), n);
        let hot: u64 = c[..200].iter().sum();
        let frac = hot as f64 / SAMPLES as f64;
        assert!((frac - 0.8).abs() < 0.01, "{frac}");
        // Within each set, uniform.
        assert!(c[..200].iter().all(|&x| x > 500 && x < 1100), "hot set not uniform");
        // Degenerate fractions stay in range.
        let s = Stream::new(1, 1);
        for seq in 0..1000 {
            assert!(Distribution::hotspot(0.0, 0.8).sample(&s, seq, 0, 3) < 3);
            assert!(Distribution::hotspot(1.0, 0.8).sample(&s, seq, 0, 3) < 3);
            assert_eq!(Distribution::hotspot(0.5, 0.8).sample(&s, seq, 0, 1), 0);
        }
    }

    #[test]
    fn latest_favours_highest() {
        let n = 1000;
        let c = counts(&Distribution::latest(), n);
        let top: u64 = c[990..].iter().sum();
        let bottom: u64 = c[..10].iter().sum();
        assert!(c[999] > c[998] && c[998] > c[900], "{:?}", &c[990..]);
        assert!(top as f64 > 0.25 * SAMPLES as f64, "top {top}");
        assert!(bottom * 20 < top, "bottom {bottom} top {top}");
    }

    #[test]
    fn exponential_favours_highest() {
        let n = 1000;
        let c = counts(&Distribution::exponential(95.0, 100.0), n);
        let top100: u64 = c[900..].iter().sum();
        let frac = top100 as f64 / SAMPLES as f64;
        assert!((frac - 0.95).abs() < 0.01, "{frac}");
    }

    #[test]
    fn samples_are_pure_and_lanes_independent() {
        let d = Distribution::zipfian();
        let s = Stream::new(9, 9);
        let a: Vec<u64> = (0..100).map(|q| d.sample(&s, q, 0, 1_000_000)).collect();
        let b: Vec<u64> = (0..100).map(|q| d.sample(&s, q, 0, 1_000_000)).collect();
        let c: Vec<u64> = (0..100).map(|q| d.sample(&s, q, 1, 1_000_000)).collect();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
