//! Counter-based randomness: every random choice is a pure function of
//! (seed, stream, sequence number), so the same spec yields the same operations on every
//! system, in every run, whichever client happens to execute them.
//!
//! Hand-written on purpose: streaming RNGs (the `rand` family) carry state, which would
//! make an op depend on the order clients claim work. A keyed hash does not. Must not
//! hold state.

/// SplitMix64 finalizer applied to `a` combined with `b`: a fast, well-distributed hash.
#[inline]
pub fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(0x6A09_E667_F3BC_C909);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hash of a name, for deriving stream ids from experiment names.
pub fn hash_str(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| mix(h, b as u64))
}

/// A keyed source of random numbers for one stream.
#[derive(Debug, Clone, Copy)]
pub struct Stream {
    key: u64,
}

impl Stream {
    pub fn new(seed: u64, stream: u64) -> Self {
        Stream { key: mix(mix(seed, 0x5EED), stream) }
    }

    /// The `lane`-th random 64-bit number of item `seq` (lanes give one item several
    /// independent draws).
    #[inline]
    pub fn u64(&self, seq: u64, lane: u64) -> u64 {
        mix(mix(self.key, seq), lane)
    }

    /// Uniform in `[0, n)`; `n` must be > 0.
    #[inline]
    pub fn below(&self, seq: u64, lane: u64, n: u64) -> u64 {
        ((self.u64(seq, lane) as u128 * n as u128) >> 64) as u64
    }

    /// Uniform in `[0, 1)`.
    #[inline]
    pub fn unit(&self, seq: u64, lane: u64) -> f64 {
        (self.u64(seq, lane) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// A seeded bijection on `[0, n)`: a 4-round Feistel network over the next power of two,
/// cycle-walking values that land outside. Used for shuffled key orders in which a window
/// of up to `n` consecutive positions never repeats a key.
#[derive(Debug, Clone, Copy)]
pub struct Permutation {
    n: u64,
    half_bits: u32,
    key: u64,
}

impl Permutation {
    pub fn new(seed: u64, n: u64) -> Self {
        assert!(n > 0, "permutation of an empty range");
        let bits = 64 - (n.max(2) - 1).leading_zeros();
        let half_bits = bits.div_ceil(2).max(1);
        Permutation { n, half_bits, key: mix(seed, 0x0FE1_57E1) }
    }

    pub fn len(&self) -> u64 {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The position of `i` in the shuffled order; `i` must be < n.
    pub fn apply(&self, i: u64) -> u64 {
        debug_assert!(i < self.n);
        let mut x = i;
        loop {
            x = self.feistel(x);
            if x < self.n {
                return x;
            }
        }
    }

    fn feistel(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half_bits) - 1;
        let (mut left, mut right) = (x >> self.half_bits, x & mask);
        for round in 0..4 {
            let f = mix(self.key ^ round, right) & mask;
            (left, right) = (right, left ^ f);
        }
        (left << self.half_bits) | right
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 3, 7, 100, 1000, 4097] {
            let p = Permutation::new(7, n);
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let j = p.apply(i);
                assert!(j < n);
                assert!(!seen[j as usize], "n={n}: {j} twice");
                seen[j as usize] = true;
            }
        }
    }

    #[test]
    fn permutation_depends_on_seed_and_is_shuffled() {
        let a: Vec<u64> = (0..50).map(|i| Permutation::new(1, 1000).apply(i)).collect();
        let b: Vec<u64> = (0..50).map(|i| Permutation::new(2, 1000).apply(i)).collect();
        assert_ne!(a, b);
        let ascending = a.windows(2).filter(|w| w[1] == w[0] + 1).count();
        assert!(ascending < 5, "looks sequential: {a:?}");
    }

    #[test]
    fn streams_are_pure_and_uniform() {
        let s = Stream::new(42, 3);
        assert_eq!(s.u64(10, 0), Stream::new(42, 3).u64(10, 0));
        assert_ne!(s.u64(10, 0), Stream::new(42, 4).u64(10, 0));
        let mut buckets = [0u32; 10];
        for i in 0..100_000 {
            buckets[s.below(i, 0, 10) as usize] += 1;
        }
        for b in buckets {
            assert!((9_000..11_000).contains(&b), "{buckets:?}");
        }
        let mean: f64 = (0..100_000).map(|i| s.unit(i, 1)).sum::<f64>() / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01);
    }
}
