//! The servers `--spawn` starts for a run: started round by round (one round per data
//! root), only those a shard needs; stopped at the end (killed after a stop request); and
//! blamed, with their log, when one died during a run. The app owns their handles; their
//! targets reach the plan as values (`Plan::join_servers`). Must not run the plan.

use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::runner::stopping::Activity;
use crate::runner::{Cancel, StopCause};
use crate::servers;

/// A run's spawned servers, each with the label of its round (`Plan::spawn_rounds`).
pub(super) type Spawned = Vec<(Option<String>, servers::Server)>;

/// Starts the plan's servers round by round, each round's up before the next starts; a
/// shard starts only the servers whose targets it runs. At an error or a signal the starts
/// under way are killed and waited for, and those already up are killed with their
/// directories (dropped).
pub(super) async fn start_servers(plan: &Plan, cancel: &Cancel, activity: &Activity) -> Result<Spawned> {
    let mut servers = Vec::new();
    let names = plan.target_names();
    for (label, options) in plan.spawn_rounds() {
        let kinds: Vec<servers::ServerKind> =
            plan.spawn.iter().copied().filter(|kind| spawned_in_shard(plan, &names, *kind, label.as_deref())).collect();
        if kinds.is_empty() {
            continue;
        }
        activity.doing(format!("starting the servers ({})", kinds.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")));
        let Some(round) = servers::spawn_all_until(&kinds, &options, cancel.stopped()).await? else {
            return Err(cancel.cause().cloned().unwrap_or(StopCause::CtrlC).into_error(None));
        };
        round.iter().for_each(|s| activity.server_started(&s.kind().to_string()));
        servers.extend(round.into_iter().map(|s| (label.clone(), s)));
    }
    Ok(servers)
}

/// Stops the spawned servers; those of a stopped run are killed (dropped, directories
/// removed): a graceful shutdown would first write out data nobody keeps.
pub(super) async fn stop_servers(servers: Spawned, cancel: &Cancel, activity: &Activity) {
    for (_, server) in servers {
        if cancel.is_stopped() {
            continue;
        }
        activity.doing(format!("stopping the spawned {} server", server.kind()));
        if let Err(e) = server.stop().await {
            tracing::warn!("stopping a spawned server: {e}");
        }
    }
}

/// A run that failed while a spawned server was dead failed because of that server: exit 1
/// (never "fix the URL") with the last lines of the server's log.
pub(super) fn blame_dead_servers<'a>(e: Error, servers: impl Iterator<Item = &'a mut servers::Server>) -> Error {
    let dead: Vec<String> = servers
        .filter_map(|s| {
            let tail = s.died()?;
            Some(format!("the spawned {} server (pid {}) died during the run; the last lines of its log:\n{tail}", s.kind(), s.pid()))
        })
        .collect();
    if dead.is_empty() {
        return e;
    }
    Error::runtime(format!("{e}\n{}", dead.join("\n")))
}

/// Whether a shard runs anything on one of the targets server `kind` gets in the spawn
/// round labelled `label` (`names`: the plan's target names, `Plan::target_names`).
fn spawned_in_shard(plan: &Plan, names: &[String], kind: servers::ServerKind, label: Option<&str>) -> bool {
    let Some(work) = &plan.shard else { return true };
    let clients = kind.client_target_name().filter(|_| plan.cli_clients);
    kind.target_names().into_iter().chain(clients).any(|name| {
        let plain = match label {
            Some(label) => format!("{name}-{label}"),
            None => name,
        };
        [plain.clone(), format!("{plain}-spawned")].iter().any(|n| names.contains(n) && work.has_target(n))
    })
}
