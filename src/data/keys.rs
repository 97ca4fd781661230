//! Shuffled key sets (the insert-find study): N unique integer keys in an order shuffled by
//! Fisher-Yates from a seed — the one generator behind the study's rows and `dbsweep gen
//! keys`, so other tools can be fed the same input. Must not hold state beyond the returned
//! vector.

use super::pairs::PairGen;
use crate::base::rng::{Stream, hash_str};

/// Keys `1..=n` in Fisher-Yates order: for i from n-1 down to 1, swap position i with a
/// uniformly chosen position in `0..=i`; every choice is a pure function of (seed, i).
pub fn shuffled(n: u64, seed: u64) -> Vec<u64> {
    let stream = Stream::new(seed, hash_str("fisher-yates"));
    let mut keys: Vec<u64> = (1..=n).collect();
    for i in (1..keys.len()).rev() {
        let j = stream.below(i as u64, 0, i as u64 + 1) as usize;
        keys.swap(i, j);
    }
    keys
}

/// The key set as CSV text (`key,value` per line, with a header): keys `1..=n` in
/// Fisher-Yates order with the values of `values` — exactly the rows a `pairs` data set
/// with `keys = "shuffled"` holds.
pub fn to_csv(n: u64, seed: u64, values: &PairGen) -> String {
    let mut out = String::with_capacity((n as usize) * (values.value_bytes.max(7) + 10) + 10);
    out.push_str("key,value\n");
    for k in shuffled(n, seed) {
        out.push_str(&k.to_string());
        out.push(',');
        out.push_str(&values.value(k as i64).to_string());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seeded_shuffle_of_unique_keys() {
        let a = shuffled(1000, 0);
        let mut sorted = a.clone();
        sorted.sort();
        assert_eq!(sorted, (1..=1000).collect::<Vec<_>>());
        assert_eq!(a, shuffled(1000, 0));
        assert_ne!(a, shuffled(1000, 1));
        assert_ne!(a, sorted, "not shuffled");
        // Fisher-Yates is unbiased: over many seeds, key 1 lands in each tenth equally often.
        let mut tenths = [0u32; 10];
        for seed in 0..2000 {
            let pos = shuffled(100, seed).iter().position(|k| *k == 1).unwrap();
            tenths[pos / 10] += 1;
        }
        assert!(tenths.iter().all(|t| (140..260).contains(t)), "{tenths:?}");
    }

    #[test]
    fn csv_has_a_header_and_n_lines() {
        use crate::data::pairs::PairValue;
        let text = to_csv(50, 0, &PairGen::new(0, PairValue::Text, 8));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "key,value");
        assert_eq!(lines.len(), 51);
        assert!(lines[1..].iter().all(|l| l.split(',').nth(1).unwrap().len() == 8));
        let ints = to_csv(50, 0, &PairGen::new(0, PairValue::Int, 0));
        let first: Vec<&str> = ints.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(first[0], shuffled(50, 0)[0].to_string());
        assert!(first[1].parse::<i64>().is_ok(), "{first:?}");
    }
}
