//! Shuffled key sets (the insert-find study): N unique integer keys with values, in an
//! order shuffled by Fisher-Yates from a seed, so other tools can be fed the same input
//! (`dbsweep gen keys`). Must not hold state beyond the returned vector.

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

/// The value stored under `key`: `len` printable characters.
pub fn value(seed: u64, key: u64, len: usize) -> String {
    let stream = Stream::new(seed, hash_str("key-values"));
    (0..len).map(|i| (b'a' + (stream.below(key, i as u64, 26)) as u8) as char).collect()
}

/// The key set as CSV text (`key,value` per line, with a header).
pub fn to_csv(n: u64, seed: u64, value_len: usize) -> String {
    let mut out = String::with_capacity((n as usize) * (value_len + 10) + 10);
    out.push_str("key,value\n");
    for k in shuffled(n, seed) {
        out.push_str(&k.to_string());
        out.push(',');
        out.push_str(&value(seed, k, value_len));
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
        let text = to_csv(50, 0, 8);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "key,value");
        assert_eq!(lines.len(), 51);
        assert!(lines[1..].iter().all(|l| l.split(',').nth(1).unwrap().len() == 8));
    }
}
