//! Shards of a plan (`--shard I/N`): the deterministic split of a plan's work units — one
//! (target, experiment) pair each, or a target's whole lifecycle in lifecycle studies —
//! across N processes, so that N machines run one study in parallel and `dbsweep merge`
//! joins their run directories; and the plan hash that says whether run directories came
//! from the same plan.
//!
//! Owns reading `--shard I/N`, which shard runs which unit and the hash's definition. Must not run, spawn or
//! write anything.

pub use crate::base::shard::Shard;
use crate::error::{Error, Result};
use std::collections::BTreeSet;

/// Parses `--shard I/N` with `0 <= I < N`.
pub fn parse(text: &str) -> Result<Shard> {
    let bad = || Error::usage(format!("--shard '{text}': write I/N with 0 <= I < N, e.g. --shard 0/3"));
    let (index, count) = text.split_once('/').ok_or_else(bad)?;
    let index: usize = index.trim().parse().map_err(|_| bad())?;
    let count: usize = count.trim().parse().map_err(|_| bad())?;
    if count == 0 || index >= count {
        return Err(bad());
    }
    Ok(Shard { index, count })
}

/// One indivisible piece of a plan's work on one target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkUnit {
    pub target: String,
    /// The experiment's index in the plan, or `None` for all lifecycle experiments of the
    /// target together (their phases run in order on one table and cannot be split).
    pub experiment: Option<usize>,
    /// Ops this unit sends (the plan's budget): what the split balances.
    pub weight: u64,
}

/// The units one shard runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardWork {
    pub shard: Shard,
    units: BTreeSet<(String, Option<usize>)>,
}

impl ShardWork {
    /// Whether this shard runs `experiment` (index in the plan) on `target`. Lifecycle
    /// experiments belong to their target's lifecycle unit.
    pub fn runs(&self, target: &str, experiment: usize, lifecycle: bool) -> bool {
        let key = if lifecycle { None } else { Some(experiment) };
        self.units.contains(&(target.to_string(), key))
    }

    /// Whether this shard runs anything on `target` (only those are spawned and opened).
    pub fn has_target(&self, target: &str) -> bool {
        self.units.iter().any(|(t, _)| t == target)
    }

    /// Whether this shard runs the lifecycle unit of `target`.
    pub fn runs_lifecycle(&self, target: &str) -> bool {
        self.units.contains(&(target.to_string(), None))
    }

    /// How many units this shard runs.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }
}

/// The shard of each unit: units stay in plan order (target by target) and are cut into
/// `count` contiguous stretches of about equal weight, so each shard sends about the same
/// number of ops and loads the data into as few targets as the balance allows. A unit goes
/// to the shard its weight's midpoint falls in; every unit is in exactly one shard.
pub fn assign(units: &[WorkUnit], count: usize) -> Vec<usize> {
    let weights: Vec<u128> = units.iter().map(|u| u.weight.max(1) as u128).collect();
    let total: u128 = weights.iter().sum();
    let mut before: u128 = 0;
    weights
        .iter()
        .map(|&w| {
            let middle2 = 2 * before + w; // twice the midpoint, to stay in integers
            before += w;
            ((middle2 * count as u128) / (2 * total.max(1))).min(count as u128 - 1) as usize
        })
        .collect()
}

/// The units shard `shard` runs out of `units`.
pub fn select(units: &[WorkUnit], shard: Shard) -> ShardWork {
    let owners = assign(units, shard.count);
    let units =
        units.iter().zip(owners).filter(|(_, owner)| *owner == shard.index).map(|(u, _)| (u.target.clone(), u.experiment)).collect();
    ShardWork { shard, units }
}

/// A plan's hash: SHA-256 of its JSON (without the output directory or the shard) with
/// object keys sorted, as 16 hex digits. Equal hashes mean the same study, data, seed,
/// experiments, points, runs, ops and targets (user targets by name and URL, spawned
/// servers by kind), so run directories with equal hashes can be merged.
pub fn plan_hash(plan_json: &serde_json::Value) -> String {
    use sha2::Digest;
    let mut text = String::new();
    canonical(plan_json, &mut text);
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// JSON text with every object's keys in sorted order, whatever map type serde_json uses.
fn canonical(value: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_text_is_index_over_count() {
        assert_eq!(parse("0/3").unwrap(), Shard { index: 0, count: 3 });
        assert_eq!(parse(" 2 / 3 ").unwrap().to_string(), "2/3");
        for bad in ["3/3", "1/0", "1", "a/3", "-1/3", "1/3/4"] {
            let e = parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--shard"), "{e}");
        }
    }

    fn units(weights: &[u64]) -> Vec<WorkUnit> {
        weights.iter().enumerate().map(|(i, &weight)| WorkUnit { target: format!("t{}", i / 3), experiment: Some(i % 3), weight }).collect()
    }

    #[test]
    fn every_unit_is_in_exactly_one_shard_in_contiguous_balanced_stretches() {
        let all = units(&[10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10]);
        for count in 1..=7 {
            let owners = assign(&all, count);
            assert!(owners.windows(2).all(|w| w[0] <= w[1]), "contiguous: {owners:?}");
            assert!(owners.iter().all(|&o| o < count));
            let shards: Vec<ShardWork> = (0..count).map(|index| select(&all, Shard { index, count })).collect();
            assert_eq!(shards.iter().map(ShardWork::len).sum::<usize>(), all.len());
            for u in &all {
                let holders = shards.iter().filter(|s| s.units.contains(&(u.target.clone(), u.experiment))).count();
                assert_eq!(holders, 1, "{u:?} with {count} shards");
            }
            // Equal weights: the sizes differ by at most one unit.
            let sizes: Vec<usize> = shards.iter().map(ShardWork::len).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{count}: {sizes:?}");
        }
        // Deterministic.
        assert_eq!(assign(&all, 4), assign(&all, 4));
    }

    #[test]
    fn heavy_units_get_shards_of_their_own() {
        let owners = assign(&units(&[1000, 1, 1, 1, 1, 1000]), 2);
        assert_eq!(owners, [0, 0, 0, 1, 1, 1]);
        let owners = assign(&units(&[90, 5, 5]), 3);
        assert_eq!(owners, [1, 2, 2], "the midpoint of the first unit is in the middle shard");
    }

    #[test]
    fn lifecycle_units_cover_every_lifecycle_experiment_of_their_target() {
        let all = vec![
            WorkUnit { target: "a".into(), experiment: Some(0), weight: 1 },
            WorkUnit { target: "a".into(), experiment: None, weight: 1 },
            WorkUnit { target: "b".into(), experiment: None, weight: 4 },
        ];
        let first = select(&all, Shard { index: 0, count: 2 });
        assert!(first.runs("a", 0, false) && first.runs("a", 4, true) && first.runs_lifecycle("a"));
        assert!(!first.has_target("b") && !first.runs("b", 4, true));
    }

    #[test]
    fn the_hash_ignores_key_order_and_sees_every_value() {
        let a: serde_json::Value = serde_json::from_str(r#"{"seed": 1, "data": {"rows": 10, "kind": "kv"}}"#).unwrap();
        let b: serde_json::Value = serde_json::from_str(r#"{"data": {"kind": "kv", "rows": 10}, "seed": 1}"#).unwrap();
        let c: serde_json::Value = serde_json::from_str(r#"{"data": {"kind": "kv", "rows": 11}, "seed": 1}"#).unwrap();
        assert_eq!(plan_hash(&a), plan_hash(&b));
        assert_ne!(plan_hash(&a), plan_hash(&c));
        assert_eq!(plan_hash(&a).len(), 16);
    }
}
