//! Redis Cluster as a throwaway server (`--spawn redis-cluster`): three `redis-server`
//! processes in cluster mode on loopback ports, each a master with a third of the 16384
//! slots (`CLUSTER ADDSLOTSRANGE`), joined with `CLUSTER MEET`; persistence off as for
//! `redis`, each node with its own data directory and `nodes.conf`.
//!
//! The spawn machinery starts the nodes one by one like any server (`NODES`); `form`
//! joins them once all answer and waits until every node reports `cluster_state:ok`.
//! Must not touch a node it did not start, or send anything that changes data.

use super::{Context, Installed, Ready, System, process, redis};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::process::Command;

/// The masters of a spawned cluster.
pub(super) const NODES: usize = 3;

/// How long the nodes may take to agree that every slot is served.
const FORM_TIMEOUT: Duration = Duration::from_secs(60);

/// Redis Cluster's part of the spawn machinery (one node; see `NODES` and `form`).
pub(super) struct RedisCluster;

#[async_trait::async_trait]
impl System for RedisCluster {
    fn name(&self) -> &'static str {
        "redis-cluster"
    }
    fn package(&self) -> &'static str {
        "redis-server"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["redis-server"]
    }
    async fn installed(&self, programs: Vec<PathBuf>) -> crate::error::Result<Installed> {
        redis::installed(programs).await
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        let mut command = redis::command(ctx, port);
        // The cluster bus on a port of its own (the default, port + 10000, may not exist).
        let bus = process::free_port().unwrap_or(0);
        command
            .args(["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-announce-ip", "127.0.0.1"])
            .arg("--cluster-port")
            .arg(bus.to_string());
        command
    }
    async fn probe(&self, ctx: &Context, port: u16, pid: u32) -> io::Result<Ready> {
        let mut ready = redis::probe(ctx, port, pid).await?;
        ready.settings.insert("cluster".into(), format!("{NODES} masters on loopback ports, slots split evenly, no replicas"));
        Ok(ready)
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("redis://127.0.0.1:{port}/0?cluster=true")
    }
    fn nodes(&self) -> usize {
        NODES
    }
    async fn form(&self, ports: &[u16]) -> crate::error::Result<()> {
        form(ports).await.map_err(|e| crate::error::Error::runtime(format!("redis-cluster: forming the cluster failed: {e}")))
    }
}

/// Gives node `i` of `ports` the `i`-th share of the slots, introduces every node to the
/// first, and waits until each reports the cluster ok with all nodes known.
async fn form(ports: &[u16]) -> ::redis::RedisResult<()> {
    let mut conns = Vec::new();
    for port in ports {
        let client = ::redis::Client::open(format!("redis://127.0.0.1:{port}/"))?;
        conns.push(client.get_multiplexed_async_connection().await?);
    }
    for (i, conn) in conns.iter_mut().enumerate() {
        let (first, last) = slot_range(i, ports.len());
        ::redis::cmd("CLUSTER").arg("ADDSLOTSRANGE").arg(first).arg(last).query_async::<()>(conn).await?;
    }
    for (i, port) in ports.iter().enumerate().skip(1) {
        // The bus is on a port of its own (see `command`), which MEET must be told.
        let (_, bus): (String, u16) = ::redis::cmd("CONFIG").arg("GET").arg("cluster-port").query_async(&mut conns[i]).await?;
        ::redis::cmd("CLUSTER").arg("MEET").arg("127.0.0.1").arg(*port).arg(bus).query_async::<()>(&mut conns[0]).await?;
    }
    let started = Instant::now();
    loop {
        let mut ok = true;
        for conn in conns.iter_mut() {
            let info: String = ::redis::cmd("CLUSTER").arg("INFO").query_async(conn).await?;
            let field = |name: &str| info.lines().find_map(|l| l.trim_end().strip_prefix(name)?.strip_prefix(':').map(str::to_string));
            ok &= field("cluster_state").as_deref() == Some("ok") && field("cluster_known_nodes") == Some(ports.len().to_string());
        }
        if ok {
            return Ok(());
        }
        if started.elapsed() > FORM_TIMEOUT {
            return Err(::redis::RedisError::from(io::Error::other(format!(
                "the nodes did not agree within {} s that every slot is served",
                FORM_TIMEOUT.as_secs()
            ))));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The first and last slot of node `i` of `n`.
fn slot_range(i: usize, n: usize) -> (usize, usize) {
    (16384 * i / n, 16384 * (i + 1) / n - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slots_are_split_without_gaps_or_overlaps() {
        let ranges: Vec<(usize, usize)> = (0..3).map(|i| slot_range(i, 3)).collect();
        assert_eq!(ranges, [(0, 5460), (5461, 10921), (10922, 16383)]);
    }
}
