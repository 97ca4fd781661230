//! The zipfian of Gray et al., "Quickly generating billion-record synthetic databases"
//! (SIGMOD 1994), as YCSB implements it (ZipfianGenerator): item 0 most popular, drawn from
//! one uniform number, so it stays a pure function of a counter-based draw.
//!
//! Owns the math only (zeta and the draw). Must not hold state or know what the items are:
//! request distributions (`workload::distribution`) and value lengths (`data::ycsb`) use it.

/// YCSB's zipfian constant.
pub const ZIPFIAN_CONSTANT: f64 = 0.99;
/// Terms of zeta summed exactly before switching to the Euler–Maclaurin tail.
const ZETA_HEAD: usize = 64;

/// zeta(n, theta) = sum_{i=1..n} i^-theta in O(1) per call after an O(64) setup: exact
/// up to 64 terms, then an Euler–Maclaurin tail (error below 1e-9).
#[derive(Debug, Clone)]
pub struct Zeta {
    theta: f64,
    /// `head[k]` = zeta(k, theta) for k in 0..=ZETA_HEAD.
    head: Vec<f64>,
}

impl Zeta {
    pub fn new(theta: f64) -> Self {
        let mut head = Vec::with_capacity(ZETA_HEAD + 1);
        let mut sum = 0.0;
        head.push(0.0);
        for i in 1..=ZETA_HEAD {
            sum += (i as f64).powf(-theta);
            head.push(sum);
        }
        Zeta { theta, head }
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    pub fn value(&self, n: u64) -> f64 {
        if n as usize <= ZETA_HEAD {
            return self.head[n as usize];
        }
        let t = self.theta;
        let a = (ZETA_HEAD + 1) as f64;
        let b = n as f64;
        let f = |x: f64| x.powf(-t);
        let df = |x: f64| -t * x.powf(-t - 1.0);
        let integral = if (t - 1.0).abs() < 1e-12 { (b / a).ln() } else { (b.powf(1.0 - t) - a.powf(1.0 - t)) / (1.0 - t) };
        self.head[ZETA_HEAD] + integral + (f(a) + f(b)) / 2.0 + (df(b) - df(a)) / 12.0
    }
}

/// A zipfian over `[0, items)` (item 0 most popular), YCSB's ZipfianGenerator.
#[derive(Debug, Clone, Copy)]
pub struct Zipfian {
    items: u64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    /// 0.5^theta, so a draw computes one power, not two.
    half_pow_theta: f64,
    /// `alpha` rounded, when it is that whole number up to rounding (theta = 0.99: 100), so
    /// a draw can replace its power by multiplications (see `scaled_power`).
    whole_alpha: Option<i32>,
}

/// Relative distance within which `scaled_power`'s estimate and the exact power may differ
/// (the estimate is within about 2e-14 of it; the exact power within an ulp).
const ESTIMATE_TOLERANCE: f64 = 1e-13;

impl Zipfian {
    /// With `zetan` = zeta(items, theta) already known.
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        assert!(items > 0, "zipfian over no items");
        let zeta2 = 1.0 + 2f64.powf(-theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        let whole_alpha =
            (alpha.is_finite() && (alpha - alpha.round()).abs() < 1e-9 && (1.0..=1024.0).contains(&alpha)).then(|| alpha.round() as i32);
        Zipfian { items, alpha, zetan, eta, half_pow_theta: 0.5f64.powf(theta), whole_alpha }
    }

    pub fn new(items: u64, zeta: &Zeta) -> Self {
        Self::with_zetan(items, zeta.theta(), zeta.value(items))
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    /// The item for a uniform `u` in `[0, 1)`.
    pub fn from_unit(&self, u: f64) -> u64 {
        let uz = u * self.zetan;
        if uz < 1.0 || self.items == 1 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta {
            return 1.min(self.items - 1);
        }
        self.scaled_power(self.eta * u - self.eta + 1.0).min(self.items - 1)
    }

    /// `(items * y^alpha) as u64`, always exactly that value, mostly without `powf` (a
    /// fifth of a YCSB op's time): with a whole `alpha` = k + d (|d| tiny) it estimates
    /// y^k by multiplications times y^d ~ 1 + d ln y, and uses the estimate when the
    /// integer part is the same at both ends of its error bound; the rare draw near an
    /// integer boundary, and every `y` outside [0.01, 1], takes the exact `powf`.
    fn scaled_power(&self, y: f64) -> u64 {
        let items = self.items as f64;
        let exact = || (items * y.powf(self.alpha)) as u64;
        let Some(k) = self.whole_alpha else { return exact() };
        if !(0.01..=1.0).contains(&y) {
            return exact();
        }
        let estimate = items * y.powi(k) * (1.0 + (self.alpha - k as f64) * rough_ln(y));
        let low = (estimate * (1.0 - ESTIMATE_TOLERANCE)) as u64;
        let high = (estimate * (1.0 + ESTIMATE_TOLERANCE)) as u64;
        if low == high { low } else { exact() }
    }
}

/// ln y for a normal positive `y` within 0.07: the exponent plus the chord of ln over the
/// mantissa's [1, 2).
fn rough_ln(y: f64) -> f64 {
    let bits = y.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as f64 - 1023.0;
    let mantissa = f64::from_bits((bits & ((1u64 << 52) - 1)) | (1023u64 << 52));
    (exponent + mantissa - 1.0) * std::f64::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::rng::Stream;

    /// The draw as it was written before `scaled_power`: one `powf`.
    fn draw_with_powf(z: &Zipfian, u: f64) -> u64 {
        let uz = u * z.zetan;
        if uz < 1.0 || z.items == 1 {
            return 0;
        }
        if uz < 1.0 + z.half_pow_theta {
            return 1.min(z.items - 1);
        }
        ((z.items as f64 * (z.eta * u - z.eta + 1.0).powf(z.alpha)) as u64).min(z.items - 1)
    }

    #[test]
    fn draws_are_those_of_powf() {
        let zeta = Zeta::new(ZIPFIAN_CONSTANT);
        let s = Stream::new(5, 5);
        for items in [2u64, 3, 37, 1000, 123_457, 10_000_000, 10_000_000_000] {
            let z = Zipfian::new(items, &zeta);
            assert_eq!(z.whole_alpha, Some(100));
            for seq in 0..200_000 {
                let u = s.unit(seq, items);
                assert_eq!(z.from_unit(u), draw_with_powf(&z, u), "items {items}, u {u}");
            }
            // The largest u, where draws reach the top items.
            for i in 0..2000u64 {
                let u = 1.0 - i as f64 * f64::EPSILON / 2.0;
                assert_eq!(z.from_unit(u), draw_with_powf(&z, u), "items {items}, u {u}");
            }
        }
        // Another theta keeps `powf`.
        let z = Zipfian::new(1000, &Zeta::new(0.8));
        assert_eq!(z.whole_alpha, Some(5));
        assert!((0..10_000).all(|seq| z.from_unit(s.unit(seq, 0)) == draw_with_powf(&z, s.unit(seq, 0))));
        assert_eq!(Zipfian::new(1000, &Zeta::new(0.7)).whole_alpha, None);
    }

    #[test]
    fn rough_ln_is_within_its_bound() {
        for i in 1..=10_000 {
            let y = i as f64 / 10_000.0;
            assert!((rough_ln(y) - y.ln()).abs() < 0.07, "{y}");
        }
    }
}
