//! The connection check before a run: every server target must accept as many more
//! connections as the run will hold open to it at once, or the run is refused (exit 2,
//! one line naming the fix) before its leases are taken or anything is touched, instead of
//! failing mid-run with connection errors.
//!
//! Owns the count of connections a run holds to one target at its peak. Must not change
//! anything on a server; a target that cannot tell its limit is not checked.

use crate::adapter::{ConnectionRoom, Target};
use crate::error::{Error, Result};
use crate::plan::Plan;
use std::sync::Arc;

/// Connections a run holds to a target with a lease beside its clients' own, at most: the
/// lease renewal's (every `lease::RENEW_EVERY`, also while a point runs; renewals of
/// several leases go one after another). Everything else dbsweep opens to a target
/// (preparing, loading, row counts, memory figures, read-backs) is opened and closed
/// between points, when no client is connected.
const LEASE_RENEWAL: u64 = 1;

/// The connections a point of `clients` clients holds at its peak (each client opens
/// one), with the lease renewal's when the target keeps a lease.
fn connections_needed(clients: usize, has_lease: bool) -> u64 {
    clients as u64 + if has_lease { LEASE_RENEWAL } else { 0 }
}

/// The point of the plan with the most clients on one target: the clients, the flag that
/// sets them and the experiment.
#[derive(Debug, PartialEq, Eq)]
struct Busiest<'a> {
    clients: usize,
    flag: &'static str,
    experiment: &'a str,
}

/// The busiest point this process runs on `target` (only experiments it can run).
fn busiest_point<'a>(plan: &'a Plan, target: &dyn Target) -> Option<Busiest<'a>> {
    let info = target.info();
    plan.experiments
        .iter()
        .enumerate()
        .filter(|(ei, e)| plan.runs_unit(&info.name, *ei) && info.capabilities.meets(&e.needs()))
        .filter_map(|(_, e)| {
            let clients = e.points.iter().map(|p| p.clients).max()?;
            // The batch and widths sweeps take their clients from flags of their own.
            let busiest: Vec<_> = e.points.iter().filter(|p| p.clients == clients).collect();
            let flag = if busiest.iter().any(|p| p.batched) {
                "--batch-clients"
            } else if e.op.is_range() && busiest.iter().any(|p| p.param.is_some()) {
                "--range-clients"
            } else {
                "--clients"
            };
            Some(Busiest { clients, flag, experiment: &e.name })
        })
        .max_by_key(|b| b.clients)
}

/// The refusal when the busiest point needs more connections than the server has room
/// for (`has_lease`: the target keeps a lease, renewed while points run); `None` when it
/// fits.
fn refusal(target: &str, busiest: &Busiest<'_>, has_lease: bool, room: &ConnectionRoom) -> Option<Error> {
    let needed = connections_needed(busiest.clients, has_lease);
    let each = if has_lease { "one per client and one for the run's lease" } else { "one per client" };
    (needed > room.free).then(|| {
        Error::usage(format!(
            "{} {} needs {needed} connections to target {target} (experiment {}: {each}), but the server allows {} more ({}); lower {} or raise {}",
            busiest.flag, busiest.clients, busiest.experiment, room.free, room.limit, busiest.flag, room.setting
        ))
    })
}

/// Refuses the run when any target's server has too little room for the connections its
/// busiest point needs. Targets that cannot tell their limit pass unchecked.
pub(super) async fn check_connection_room(plan: &Plan, targets: &[Arc<dyn Target>]) -> Result<()> {
    for target in targets {
        let Some(busiest) = busiest_point(plan, target.as_ref()) else { continue };
        let Some(room) = target.connection_room().await? else { continue };
        if let Some(refused) = refusal(&target.info().name, &busiest, target.clone().lease().is_some(), &room) {
            return Err(refused);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::{OpenContext, TargetUrl, registry};
    use crate::plan::{RunOptions, resolve};

    /// The busiest point of the embedded study on SQLite (which runs all of it) under
    /// these client counts.
    fn busiest_on_sqlite(clients: &[usize], batch_clients: usize, range_clients: usize) -> (usize, &'static str) {
        let opts = RunOptions {
            clients: Some(clients.to_vec()),
            batch_clients: Some(batch_clients),
            range_clients: Some(range_clients),
            ..Default::default()
        };
        let plan = resolve(&opts).unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let target = registry::open("sq", &TargetUrl::parse("sqlite:").unwrap(), &OpenContext::new(scratch.path())).unwrap();
        let busiest = busiest_point(&plan, target.as_ref()).expect("the study runs on sqlite");
        (busiest.clients, busiest.flag)
    }

    #[test]
    fn the_busiest_point_names_the_flag_that_set_its_clients() {
        assert_eq!(busiest_on_sqlite(&[1, 32], 8, 4), (32, "--clients"));
        assert_eq!(busiest_on_sqlite(&[1, 2], 8, 4), (8, "--batch-clients"));
        assert_eq!(busiest_on_sqlite(&[1, 2], 1, 16), (16, "--range-clients"));
    }

    fn room(free: u64) -> ConnectionRoom {
        ConnectionRoom { free, limit: "max_connections=100, 3 reserved, 2 in use".into(), setting: "max_connections" }
    }

    #[test]
    fn a_client_holds_one_connection_and_the_lease_one_more() {
        assert_eq!(connections_needed(500, true), 501);
        assert_eq!(connections_needed(500, false), 500);
        assert_eq!(connections_needed(1, true), 2);
    }

    #[test]
    fn a_point_that_fits_exactly_runs_and_one_more_client_is_refused() {
        let busiest = Busiest { clients: 94, flag: "--clients", experiment: "get" };
        assert!(refusal("pg", &busiest, true, &room(95)).is_none());
        let busiest = Busiest { clients: 95, ..busiest };
        let refused = refusal("pg", &busiest, true, &room(95)).expect("96 > 95");
        assert_eq!(refused.exit_code(), 2);
        assert_eq!(
            refused.to_string(),
            "--clients 95 needs 96 connections to target pg (experiment get: one per client and one for the run's lease), but the server allows 95 more (max_connections=100, 3 reserved, 2 in use); lower --clients or raise max_connections"
        );
        let without_lease = refusal("redis", &busiest, false, &room(94)).expect("95 > 94").to_string();
        assert!(
            without_lease.starts_with("--clients 95 needs 95 connections to target redis (experiment get: one per client),"),
            "{without_lease}"
        );
        assert!(refusal("redis", &busiest, false, &room(95)).is_none());
    }
}
