//! Redis Cluster (`redis://HOST:PORT/0?cluster=true`): the crate's connection the adapter
//! sets up through, and a cluster's clients send through — one server's multiplexed
//! connection, or the redis crate's cluster client (slots learned from the seed node, MOVED
//! and ASK followed, MGET/MSET/DEL/UNLINK split by slot); a client of one server sends
//! through a connection of its own instead (see [`super::direct`]) — and the cluster's
//! masters, reached one by one for what a cluster cannot do through one connection:
//! listing dbsweep's keys (SCAN is per node), INFO and CONFIG.
//!
//! Owns that connection type and reading the masters from `CLUSTER NODES`. Must not send
//! FLUSHALL, CLUSTER RESET or anything that changes the cluster's configuration.

use redis::aio::{ConnectionLike, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

/// A connection to one Redis server, or to a Redis Cluster.
#[derive(Clone)]
pub(super) enum Conn {
    Single(MultiplexedConnection),
    Cluster(ClusterConnection),
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Conn::Single(c) => c.req_packed_command(cmd),
            Conn::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(&'a mut self, pipeline: &'a Pipeline, offset: usize, count: usize) -> RedisFuture<'a, Vec<Value>> {
        match self {
            Conn::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Conn::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Conn::Single(c) => c.get_db(),
            Conn::Cluster(c) => c.get_db(),
        }
    }
}

/// The masters that serve slots, as (host, port), from the text of `CLUSTER NODES`
/// (`<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link>
/// <slot>...`); failed masters and masters without slots are left out. A node that does
/// not know its own address yet (an empty ip) is at `seed_host`.
pub(super) fn masters(nodes: &str, seed_host: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let flags: Vec<&str> = fields.get(2)?.split(',').collect();
            let serving = fields.len() > 8 && fields[7] == "connected";
            if !flags.contains(&"master") || flags.iter().any(|f| f.starts_with("fail") || *f == "noaddr") || !serving {
                return None;
            }
            let address = fields[1].split(['@', ',']).next()?;
            let (host, port) = address.rsplit_once(':')?;
            let host = if host.is_empty() { seed_host } else { host };
            Some((host.to_string(), port.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masters_serving_slots_are_read_from_cluster_nodes() {
        let text = "\
07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca :30001@31001 myself,master - 0 0 1 connected 0-5460
aaaa 127.0.0.1:30009@31009 master,fail - 0 0 9 disconnected 1-2
bbbb 127.0.0.1:30010@31010 master - 0 0 10 connected
";
        assert_eq!(
            masters(text, "10.0.0.7"),
            [("127.0.0.1".to_string(), 30002), ("127.0.0.1".to_string(), 30003), ("10.0.0.7".to_string(), 30001)]
        );
    }
}
