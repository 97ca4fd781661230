//! Shards of a plan (`--shard I/N`): the deterministic split of a plan's work units — one
//! (target, experiment) pair each, or a target's whole lifecycle in lifecycle studies —
//! across N processes, so that N machines run one study in parallel and `dbsweep merge`
//! joins their run directories; and the plan hash that says whether run directories came
//! from the same plan.
//!
//! Owns reading `--shard I/N`, which shard runs which unit (from a plan, or from the plan a
//! report saved: `SavedPlan`) and the hash's definition. Must not run, spawn or write
//! anything.

pub use crate::base::shard::Shard;
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use crate::workload::experiment::Experiment;
use std::collections::{BTreeMap, BTreeSet};

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

/// Every target a run has, in order: the plan's own (`user`), then each spawned server's,
/// round by round (`rounds`: each data root's label, `None` for one root), named as they
/// will be once the servers are up (`Plan::spawned_target_name`).
pub fn target_names(mut user: Vec<String>, spawn: &[ServerKind], rounds: &[Option<String>], cli_clients: bool) -> Vec<String> {
    for label in rounds.iter().filter(|_| !spawn.is_empty()) {
        for kind in spawn {
            let clients = kind.client_target_name().filter(|_| cli_clients);
            for name in kind.target_names().into_iter().chain(clients) {
                let name = super::Plan::spawned_target_name(label.as_deref(), &name, |n| user.iter().any(|t| t == n));
                user.push(name);
            }
        }
    }
    user
}

/// A plan's work units, in plan order: per target, each experiment, with all lifecycle
/// experiments of a target as one unit; weighted by their ops (warm-up included), or by
/// their runs when every run lasts the same duration (`--duration`).
pub fn work_units(targets: &[String], experiments: &[Experiment]) -> Vec<WorkUnit> {
    let timed = experiments.iter().any(|e| e.duration_secs.is_some());
    let weights: Vec<u64> = experiments
        .iter()
        .map(|e| {
            let runs = u64::from(e.warmup + e.runs);
            if timed { e.points.len() as u64 * runs } else { e.points.iter().map(|p| e.ops_at(p)).sum::<u64>() * runs }
        })
        .collect();
    let lifecycle_ops: u64 = experiments.iter().zip(&weights).filter(|(e, _)| e.lifecycle).map(|(_, w)| w).sum();
    let has_lifecycle = experiments.iter().any(|e| e.lifecycle);
    let mut units = Vec::new();
    for target in targets {
        for (i, (_, &weight)) in experiments.iter().zip(&weights).enumerate().filter(|(_, (e, _))| !e.lifecycle) {
            units.push(WorkUnit { target: target.clone(), experiment: Some(i), weight });
        }
        if has_lifecycle {
            units.push(WorkUnit { target: target.clone(), experiment: None, weight: lifecycle_ops });
        }
    }
    units
}

/// The plan a report saved (its `plan`, with the targets its hash was computed over), read
/// back as far as a merge needs it: every target, the experiments, and the shard of each
/// work unit.
#[derive(Debug, Clone)]
pub struct SavedPlan {
    pub seed: u64,
    pub experiments: Vec<Experiment>,
    /// Every target the run has, spawned servers' included (`target_names`).
    pub targets: Vec<String>,
    /// `--precision`: runs may stop before their ops.
    pub precision: bool,
    /// YCSB record counts loaded one after the other (empty or one: a single load).
    pub record_counts: Vec<u64>,
    units: Vec<WorkUnit>,
}

impl SavedPlan {
    /// Reads `plan` (a report's plan, its `targets` those it was hashed with). `Err` names
    /// what cannot be read.
    pub fn read(plan: &serde_json::Value) -> std::result::Result<SavedPlan, String> {
        fn field<T: serde::de::DeserializeOwned>(plan: &serde_json::Value, key: &str) -> std::result::Result<T, String> {
            serde_json::from_value(plan.get(key).cloned().unwrap_or(serde_json::Value::Null))
                .map_err(|e| format!("its saved plan's {key} cannot be read ({e})"))
        }
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
        }
        #[derive(serde::Deserialize)]
        struct Labelled {
            label: String,
        }
        let experiments: Vec<Experiment> = field(plan, "experiments")?;
        let user: Vec<Named> = field(plan, "targets")?;
        let spawn: Vec<String> = field(plan, "spawn")?;
        let spawn = spawn.iter().map(|k| k.parse::<ServerKind>().map_err(|e| e.to_string())).collect::<std::result::Result<Vec<_>, _>>()?;
        let roots: Vec<Labelled> = field(plan, "data_roots")?;
        let rounds: Vec<Option<String>> = match roots.len() {
            0 | 1 => vec![None],
            _ => roots.into_iter().map(|r| Some(r.label)).collect(),
        };
        let cli_clients: bool = field(plan, "cli_clients")?;
        let data: Option<crate::data::DataSpec> = field(plan, "data")?;
        let targets = target_names(user.into_iter().map(|t| t.name).collect(), &spawn, &rounds, cli_clients);
        let units = work_units(&targets, &experiments);
        Ok(SavedPlan {
            seed: field(plan, "seed")?,
            precision: plan.get("precision").is_some_and(|p| !p.is_null()),
            record_counts: data.map(|d| d.record_counts()).unwrap_or_default(),
            experiments,
            targets,
            units,
        })
    }

    /// The shard (of `count`) that runs each work unit, by `unit_key`.
    pub fn owners(&self, count: usize) -> BTreeMap<(String, Option<usize>), usize> {
        self.units.iter().zip(assign(&self.units, count)).map(|(u, owner)| ((u.target.clone(), u.experiment), owner)).collect()
    }

    /// The key of `experiment`'s unit in `owners` (lifecycle experiments share one).
    pub fn unit_key(&self, target: &str, experiment: usize) -> (String, Option<usize>) {
        let lifecycle = self.experiments.get(experiment).is_some_and(|e| e.lifecycle);
        (target.to_string(), (!lifecycle).then_some(experiment))
    }
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
    let text = crate::base::canonical::canonical_json(plan_json);
    let digest = sha2::Sha256::digest(text.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
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

    /// The plan JSON a report saves and `plan_hash` hashes, for a plan as resolved.
    fn saved(plan: &crate::plan::Plan) -> serde_json::Value {
        let json = plan.to_json();
        assert_eq!(json["targets"], plan.planned_targets);
        // Through report.json's text, as a merge reads it.
        serde_json::from_str(&serde_json::to_string_pretty(&json).unwrap()).unwrap()
    }

    #[test]
    fn a_saved_plan_gives_the_targets_units_and_owners_of_the_plan_it_was() {
        use crate::plan::{RunOptions, resolve};
        let cases = [
            RunOptions::default(),
            RunOptions { study: Some("kv-vs-relational".into()), quick: true, spawn: vec!["all".into()], ..Default::default() },
            RunOptions { study: Some("in-memory".into()), quick: true, spawn: vec!["redis".into()], ..Default::default() },
            RunOptions { study: Some("ycsb".into()), quick: true, ..Default::default() },
            RunOptions {
                spawn: vec!["redis".into(), "postgres".into()],
                data_roots: vec!["a=/tmp/a".into(), "b=/tmp/b".into()],
                duration: Some("1s".into()),
                ..Default::default()
            },
        ];
        for options in cases {
            let plan = resolve(&options).unwrap();
            let json = saved(&plan);
            assert_eq!(plan_hash(&json), plan.hash, "{options:?}: the saved plan hashes to the plan's hash");
            let read = SavedPlan::read(&json).unwrap();
            assert_eq!(read.targets, plan.target_names(), "{options:?}");
            assert_eq!(read.seed, plan.seed);
            assert_eq!(read.experiments, plan.experiments);
            assert_eq!(read.units, plan.work_units());
            for count in [1, 2, 5] {
                let owners = read.owners(count);
                for index in 0..count {
                    let work = select(&plan.work_units(), Shard { index, count });
                    for (ei, e) in plan.experiments.iter().enumerate() {
                        for t in &read.targets {
                            let owned = owners[&read.unit_key(t, ei)] == index;
                            assert_eq!(owned, work.runs(t, ei, e.lifecycle), "{t} / {} in shard {index}/{count}", e.name);
                        }
                    }
                }
            }
        }
        // The budget's weights are the units' weights.
        let plan = resolve(&RunOptions::default()).unwrap();
        let budget: Vec<u64> = plan.budget().iter().map(|b| b.ops).collect();
        let units: Vec<u64> = plan.work_units().iter().take(budget.len()).map(|u| u.weight).collect();
        assert_eq!(units, budget);
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
