//! A two-node Apache Cassandra ring as a throwaway server (`--spawn cassandra:2`, target
//! `cassandra-cluster`): node `i` listens on the loopback address 127.0.0.(2 + i) (Linux
//! routes all of 127/8 to `lo`), every node on the same CQL and internode ports (the
//! internode port is the CQL port + 1), each with its own data directory, one token each
//! (the Murmur3 range split evenly), the first node the seed, and a 512 MiB heap per node.
//! The nodes join without streaming (they start empty); `form` waits until every node
//! lists the others as peers. The target URL names both nodes as contact points; the
//! keyspace's replication factor is the URL's `?replication_factor=N` (1 by default:
//! each row on one node; 2: on both).
//!
//! The spawn machinery starts the nodes one by one like any server (`NODES`,
//! `System::shares_port`). Must not touch a node it did not start, or change data.

use super::cassandra::{self, Node};
use super::{Context, Installed, Ready, System};
use crate::error::{Error, Result};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::process::Command;

/// The nodes of a spawned ring.
const NODES: usize = 2;

/// Each node's fixed heap: two nodes of about 0.75 GB resident each.
const HEAP: &str = "512m";

/// How long the nodes may take to see each other after both started.
const FORM_TIMEOUT: Duration = Duration::from_secs(120);

/// The two-node ring's part of the spawn machinery (one node; see `NODES` and `form`).
pub(super) struct CassandraCluster;

#[async_trait::async_trait]
impl System for CassandraCluster {
    fn name(&self) -> &'static str {
        "cassandra-cluster"
    }
    fn aliases(&self) -> &'static [&'static str] {
        &["cassandra:2"]
    }
    fn package(&self) -> &'static str {
        "cassandra (Maven Central)"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["java"]
    }
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        cassandra::installed(programs).await
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        let node = node(ctx.node);
        cassandra::init(ctx, &node)
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        cassandra::command(ctx, port, port.wrapping_add(1), &node(ctx.node))
    }
    async fn probe(&self, ctx: &Context, port: u16, _pid: u32) -> io::Result<Ready> {
        cassandra::probe(ctx, port, &node(ctx.node)).await
    }
    /// Two JVMs, the second joining the first, on a loaded 2-core machine.
    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(240)
    }
    fn port_taken_words(&self) -> &'static [&'static str] {
        &["is in use by another process"]
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        let hosts: Vec<String> = (0..NODES).map(|i| format!("{}:{port}", address(i))).collect();
        format!("cassandra://{}", hosts.join(","))
    }
    fn nodes(&self) -> usize {
        NODES
    }
    fn shares_port(&self) -> bool {
        true
    }
    fn node_address(&self, node: usize) -> String {
        address(node)
    }
    async fn form(&self, ports: &[u16]) -> Result<()> {
        form(ports).await.map_err(|e| Error::runtime(format!("cassandra-cluster: the nodes did not form one ring: {e}")))
    }
}

/// The loopback address of node `i`.
fn address(i: usize) -> String {
    format!("127.0.0.{}", 2 + i)
}

/// Node `i`'s layout: its address, the first node as seed, its share of the token ring.
fn node(i: usize) -> Node {
    Node { address: address(i), seed: address(0), token: token(i, NODES), nodes: NODES, heap: HEAP }
}

/// The token of node `i` of `n`: the Murmur3 range [-2^63, 2^63) split evenly.
fn token(i: usize, n: usize) -> i64 {
    (i64::MIN as i128 + (1i128 << 64) * i as i128 / n as i128) as i64
}

/// Waits until every node lists all the others in `system.peers`.
async fn form(ports: &[u16]) -> io::Result<()> {
    let started = Instant::now();
    loop {
        let mut missing = Vec::new();
        for (i, port) in ports.iter().enumerate() {
            let peers = peers(&address(i), *port).await.unwrap_or_default();
            for other in (0..ports.len()).filter(|&j| j != i) {
                if !peers.contains(&address(other)) {
                    missing.push(format!("{} does not see {}", address(i), address(other)));
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        if started.elapsed() > FORM_TIMEOUT {
            return Err(io::Error::other(format!("after {} s: {}", FORM_TIMEOUT.as_secs(), missing.join("; "))));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The peers node `address:port` knows, by address.
async fn peers(address: &str, port: u16) -> io::Result<Vec<String>> {
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(format!("{address}:{port}"))
        .connection_timeout(Duration::from_secs(2))
        .fetch_schema_metadata(false)
        .build()
        .await
        .map_err(io::Error::other)?;
    let rows = session.query_unpaged("SELECT peer FROM system.peers", ()).await.map_err(io::Error::other)?;
    let rows = rows.into_rows_result().map_err(io::Error::other)?;
    let peers = rows.rows::<(std::net::IpAddr,)>().map_err(io::Error::other)?.filter_map(|r| r.ok()).map(|(ip,)| ip.to_string()).collect();
    Ok(peers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nodes_split_the_token_ring_evenly_on_their_own_addresses() {
        assert_eq!((token(0, 2), token(1, 2)), (i64::MIN, 0));
        assert_eq!(token(1, 4), i64::MIN / 2);
        assert_eq!((node(0).address, node(1).address, node(1).seed), ("127.0.0.2".into(), "127.0.0.3".into(), "127.0.0.2".into()));
        assert_eq!(
            CassandraCluster.url(9100, Path::new("/d")),
            "cassandra://127.0.0.2:9100,127.0.0.3:9100",
            "both nodes are contact points"
        );
        assert_eq!("cassandra:2".parse::<super::super::ServerKind>().unwrap().name(), "cassandra-cluster");
    }
}
