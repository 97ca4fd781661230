//! Worker 0 of a run with workers (`--workers`): refuses targets the workers cannot share,
//! listens for the workers, starts the local ones and waits until every worker has joined.
//! Must not run the plan: `runner::workers` shares each run out.

use crate::base::secret::Token;
use crate::error::{Error, Result};
use crate::plan::Plan;
use crate::runner::{self, RunContext};
use std::ffi::OsString;
use std::sync::Arc;

/// Worker 0 of a run with workers: listens at `listen` (only there: `--listen` or the host
/// of `--coordinator`; a free loopback port when `None`), starts the local workers when
/// asked to (with `token` in their environment), and waits until every worker has joined.
pub(super) async fn gather_workers(
    plan: &Plan,
    ctx: &RunContext,
    count: usize,
    listen: Option<&str>,
    spawn_local: bool,
    token: Arc<Token>,
    raw_args: &[OsString],
) -> Result<(runner::workers::coordinator::Coordinator, Option<runner::workers::local::LocalWorkers>)> {
    // Before any worker starts: a target the workers cannot share is refused once, by the
    // coordinator, not again by every local worker.
    let scratch = tempfile::Builder::new()
        .prefix("dbsweep-scratch-")
        .tempdir()
        .map_err(|e| Error::runtime(format!("cannot create a scratch directory: {e}")))?;
    let open_ctx = crate::adapter::OpenContext::new(scratch.path());
    let targets = plan.targets.iter().map(|t| crate::adapter::registry::open(&t.name, &t.url, &open_ctx)).collect::<Result<Vec<_>>>()?;
    runner::workers::check_targets(&targets)?;
    drop(targets);
    let bind = listen.unwrap_or("127.0.0.1:0");
    if bind.rsplit_once(':').and_then(|(host, port)| port.parse::<u16>().ok().filter(|_| !host.is_empty())).is_none() {
        return Err(Error::usage(format!("{bind}: write the coordinator's address as HOST:PORT, e.g. node1:7070 or [::1]:7070")));
    }
    let listener = tokio::net::TcpListener::bind(bind).await.map_err(|e| {
        let message = format!("the coordinator cannot listen on {bind}: {e}");
        if e.kind() == std::io::ErrorKind::AddrNotAvailable {
            Error::usage(format!("{message}; give --listen HOST:PORT with an address of this machine"))
        } else {
            Error::runtime(message)
        }
    })?;
    let mut bound = listener.local_addr().map_err(|e| Error::runtime(e.to_string()))?;
    // Local workers reach a coordinator listening on every address through loopback.
    if bound.ip().is_unspecified() {
        bound.set_ip(if bound.is_ipv4() { std::net::Ipv4Addr::LOCALHOST.into() } else { std::net::Ipv6Addr::LOCALHOST.into() });
    }
    let local = if spawn_local { Some(runner::workers::local::start(count, &bound.to_string(), &token, raw_args)?) } else { None };
    let gathering = runner::workers::coordinator::Gathering {
        count,
        plan_hash: plan.hash.clone(),
        token,
        targets: plan.targets.iter().map(|t| (t.name.clone(), t.url.clone())).collect(),
        holder: ctx.holder.clone(),
        timeout_secs: plan.timeout_secs,
        cancel: ctx.cancel.clone(),
    };
    let coordinator = runner::workers::coordinator::Coordinator::gather(listener, gathering).await?;
    Ok((coordinator, local))
}
