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
    /// Milliseconds this unit is estimated to take: what the split balances.
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

/// Shards whose estimated times differ by more than this factor are not balanced.
const BALANCED: f64 = 1.5;

/// The shard of each unit: units stay in plan order (target by target) and are cut into
/// `count` contiguous stretches whose estimated times are as even as can be
/// (`contiguous`), so each shard loads the data into as few targets as the balance allows;
/// when a few heavy units leave those stretches more than `BALANCED` apart, the units are
/// dealt out heaviest first, each to the shard with the least time so far (`dealt`).
/// Every unit is in exactly one shard; deterministic.
pub fn assign(units: &[WorkUnit], count: usize) -> Vec<usize> {
    let cut = contiguous(units, count);
    let times = |owners: &[usize]| {
        let mut secs = vec![0u128; count];
        units.iter().zip(owners).for_each(|(u, &o)| secs[o] += u.weight.max(1) as u128);
        secs
    };
    let spread = |secs: Vec<u128>| *secs.iter().max().unwrap_or(&0) as f64 / (*secs.iter().min().unwrap_or(&0)).max(1) as f64;
    if units.len() < count || spread(times(&cut)) <= BALANCED {
        return cut;
    }
    let dealt = dealt(units, count);
    if spread(times(&dealt)) < spread(times(&cut)) { dealt } else { cut }
}

/// Heaviest unit first, each to the shard with the least estimated time so far (the
/// lowest-numbered of equals).
fn dealt(units: &[WorkUnit], count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..units.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(units[i].weight), i));
    let mut secs = vec![0u128; count];
    let mut owners = vec![0; units.len()];
    for i in order {
        let shard = (0..count).min_by_key(|&s| (secs[s], s)).unwrap_or(0);
        secs[shard] += units[i].weight.max(1) as u128;
        owners[i] = shard;
    }
    owners
}

/// `count` contiguous stretches of `units` with the least sum of squared estimated times;
/// the first of equally good cuts.
fn contiguous(units: &[WorkUnit], count: usize) -> Vec<usize> {
    let n = units.len();
    let mut prefix = vec![0f64; n + 1];
    for (i, u) in units.iter().enumerate() {
        prefix[i + 1] = prefix[i] + u.weight.max(1) as f64;
    }
    let cost = |from: usize, to: usize| (prefix[to] - prefix[from]).powi(2);
    // best[k][j]: the least cost of the first j units in k shards; cut[k][j]: where the k-th begins.
    let mut best = vec![vec![f64::INFINITY; n + 1]; count + 1];
    let mut cut = vec![vec![0usize; n + 1]; count + 1];
    best[0][0] = 0.0;
    for k in 1..=count {
        for j in 0..=n {
            for i in 0..=j {
                let total = best[k - 1][i] + cost(i, j);
                if total < best[k][j] {
                    best[k][j] = total;
                    cut[k][j] = i;
                }
            }
        }
    }
    let mut owners = vec![0; n];
    let mut end = n;
    for k in (1..=count).rev() {
        let start = cut[k][end];
        owners[start..end].iter_mut().for_each(|o| *o = k - 1);
        end = start;
    }
    owners
}

/// Every target a run has, in order: the plan's own (`user`), then each spawned server's,
/// round by round (`rounds`: each data root's label, `None` for one root), named as they
/// will be once the servers are up (`Plan::spawned_target_name`).
pub fn target_names(user: Vec<String>, spawn: &[ServerKind], rounds: &[Option<String>], cli_clients: bool) -> Vec<String> {
    let user = user.into_iter().map(|name| (name, String::new())).collect();
    target_families(user, spawn, rounds, cli_clients).into_iter().map(|(name, _)| name).collect()
}

/// `target_names` with each target's system family: the user's (name, URL scheme) as
/// given, a spawned server's kind, `cli` for its command-line client's target.
pub fn target_families(
    mut user: Vec<(String, String)>,
    spawn: &[ServerKind],
    rounds: &[Option<String>],
    cli_clients: bool,
) -> Vec<(String, String)> {
    for label in rounds.iter().filter(|_| !spawn.is_empty()) {
        for kind in spawn {
            let clients = kind.client_target_name().filter(|_| cli_clients);
            for name in kind.target_names().into_iter().chain(clients.clone()) {
                // A command-line client target's family is its own name (mariadb-cli, redis-cli).
                let family = if clients.as_deref() == Some(name.as_str()) { name.clone() } else { kind.name().to_string() };
                let name = super::Plan::spawned_target_name(label.as_deref(), &name, |n| user.iter().any(|(t, _)| t == n));
                user.push((name, family));
            }
        }
    }
    user
}

/// A plan's work units, in plan order: per target (name, family), each experiment, with
/// all lifecycle experiments of a target as one unit; weighted by their estimated time in
/// milliseconds (warm-up included) at the family's typical costs (`estimate::fixed_secs`:
/// the same on every machine, so every shard splits alike), over TPC-H data of `scale`.
pub fn work_units(targets: &[(String, String)], experiments: &[Experiment], scale: f64) -> Vec<WorkUnit> {
    let has_lifecycle = experiments.iter().any(|e| e.lifecycle);
    let millis = |secs: f64| (secs * 1000.0).round().max(1.0) as u64;
    let mut units = Vec::new();
    for (target, family) in targets {
        let secs: Vec<f64> = experiments.iter().map(|e| super::estimate::fixed_secs(family, e, scale)).collect();
        for (i, _) in experiments.iter().enumerate().filter(|(_, e)| !e.lifecycle) {
            units.push(WorkUnit { target: target.clone(), experiment: Some(i), weight: millis(secs[i]) });
        }
        if has_lifecycle {
            let lifecycle: f64 = experiments.iter().zip(&secs).filter(|(e, _)| e.lifecycle).map(|(_, s)| s).sum();
            units.push(WorkUnit { target: target.clone(), experiment: None, weight: millis(lifecycle) });
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
        struct Labelled {
            label: String,
        }
        let experiments: Vec<Experiment> = field(plan, "experiments")?;
        #[derive(serde::Deserialize)]
        struct Named {
            name: String,
            #[serde(default)]
            url: String,
        }
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
        let user = user.into_iter().map(|t| (t.name, t.url.split(':').next().unwrap_or_default().to_string())).collect();
        let families = target_families(user, &spawn, &rounds, cli_clients);
        let scale = match &data {
            Some(crate::data::DataSpec::Tpch { scale }) => *scale,
            _ => 0.0,
        };
        let units = work_units(&families, &experiments, scale);
        let targets = families.into_iter().map(|(name, _)| name).collect();
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
    fn a_few_heavy_units_are_dealt_out_when_stretches_cannot_balance() {
        let owners = assign(&units(&[10, 50, 10, 10, 50, 10, 10, 50, 10]), 3);
        assert_eq!(owners, [0, 0, 0, 1, 1, 1, 2, 2, 2], "stretches balance: kept");
        let owners = assign(&units(&[90, 90, 10, 10, 10, 10, 10, 10, 10]), 2);
        assert_eq!(owners, [0, 1, 0, 1, 0, 1, 0, 1, 0], "dealt: {owners:?}");
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
        assert_eq!(owners, [0, 1, 2], "each unit its own shard");
        let owners = assign(&units(&[90, 5, 5, 5, 5, 90]), 2);
        assert_eq!(owners, [0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn the_shards_of_a_study_are_within_one_and_a_half_times_of_each_other_in_estimated_time() {
        use crate::plan::{RunOptions, resolve};
        let studies = [
            RunOptions { study: Some("kv-vs-relational".into()), scale: Some(0.1), ..Default::default() },
            RunOptions { study: Some("kv-vs-relational".into()), quick: true, spawn: vec!["all".into()], ..Default::default() },
            RunOptions::default(),
            RunOptions { study: Some("ycsb".into()), spawn: vec!["redis".into(), "ledisdb".into()], ..Default::default() },
        ];
        for options in studies {
            let plan = resolve(&options).unwrap();
            let units = plan.work_units();
            for count in [2, 3] {
                let owners = assign(&units, count);
                let mut secs = vec![0u64; count];
                for (u, &owner) in units.iter().zip(&owners) {
                    secs[owner] += u.weight;
                }
                let (least, most) = (*secs.iter().min().unwrap(), *secs.iter().max().unwrap());
                assert!(most as f64 <= 1.5 * least as f64, "{:?} in {count} shards: {secs:?} ms", options.study);
            }
        }
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
        // A unit weighs its experiment's estimated milliseconds on its target's system.
        let plan = resolve(&RunOptions::default()).unwrap();
        for u in plan.work_units() {
            let (_, family) = plan.target_families().into_iter().find(|(t, _)| *t == u.target).unwrap();
            let e = &plan.experiments[u.experiment.unwrap()];
            let ms = (crate::plan::estimate::fixed_secs(&family, e, 0.0) * 1000.0).round().max(1.0) as u64;
            assert_eq!(u.weight, ms, "{} / {}", u.target, e.name);
        }
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
