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
}

impl Zipfian {
    /// With `zetan` = zeta(items, theta) already known.
    pub fn with_zetan(items: u64, theta: f64, zetan: f64) -> Self {
        assert!(items > 0, "zipfian over no items");
        let zeta2 = 1.0 + 2f64.powf(-theta);
        let alpha = 1.0 / (1.0 - theta);
        let eta = (1.0 - (2.0 / items as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan);
        Zipfian { items, alpha, zetan, eta, half_pow_theta: 0.5f64.powf(theta) }
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
        let r = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.items - 1)
    }
}
