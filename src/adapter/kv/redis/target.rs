//! The Redis target's life cycle: prepare (ownership marker, server settings), load,
//! attach (a worker joining what the coordinator prepared), connect, count, engine memory
//! and cleanup of the namespace's keys. Must never send FLUSHDB or FLUSHALL.

use super::connection::{Link, RedisConnection};
use super::dialect::Dialect;
use super::direct::DirectConnection;
use super::rows::{TableKeys, key_of, score, write_row};
use super::{CONNECT_TIMEOUT, Client, LOAD_CHUNK, MARKER_VALUE, Redis, strings};
use crate::adapter::lease::LeaseStore;
use crate::adapter::{Connection, ConnectionRoom, RowSource, Target, TargetInfo};
use crate::base::table::{ColumnType, Row, TableDef};
use crate::error::{Error, Result};
use async_trait::async_trait;
use redis::ConnectionAddr;
use std::sync::Arc;

#[async_trait]
impl Target for Redis {
    fn info(&self) -> &TargetInfo {
        self.info.get()
    }

    async fn prepare(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        for t in tables {
            if t.columns.first().map(|c| c.ty) != Some(ColumnType::Int) {
                return Err(Error::runtime(format!("redis: table {}: column 0 must be an Int key", t.name)));
            }
            if let Some(&c) = t.indexed.iter().find(|&&c| t.columns.get(c).is_none_or(|col| col.ty == ColumnType::Text)) {
                return Err(Error::runtime(format!("redis: table {}: column #{c} cannot be indexed by a sorted set", t.name)));
            }
            if self.dialect == Dialect::LedisDb
                && let Some(&c) = t.indexed.iter().find(|&&c| t.columns[c].ty == ColumnType::Float)
            {
                return Err(Error::runtime(format!(
                    "ledisdb: table {}: column {} holds floats, and LedisDB's sorted-set scores are integers, so it cannot be indexed there",
                    t.name, t.columns[c].name
                )));
            }
        }
        let names: Vec<&str> = tables.iter().map(|t| t.name.as_str()).collect();
        if let Some((a, b)) = strings::ambiguous_names(&names) {
            return Err(Error::runtime(format!("redis: tables {a} and {b} would share row keys (dbsweep:<table><key>); rename one")));
        }
        let mut conn = self.admin().await?;
        self.probe(&mut conn, tables).await;
        self.check_owned(&mut conn).await?;
        self.clear_namespace(&mut conn).await?;
        redis::cmd("SET")
            .arg(&self.marker_key)
            .arg(MARKER_VALUE)
            .query_async::<()>(&mut conn)
            .await
            .map_err(|e| self.setup_error("SET", e))?;
        for script in [&*self.update_script, &*self.max_script].into_iter().chain(self.query_scripts.all()) {
            script.load_async(&mut conn).await.map_err(|e| self.setup_error("SCRIPT LOAD", e))?;
        }
        *self.tables.write().unwrap() = Arc::new(tables.iter().map(|t| TableKeys::new(&self.prefix, t, self.is_cluster())).collect());
        Ok(())
    }

    async fn load(&self, table: &TableDef, rows: RowSource) -> Result<u64> {
        let tables = self.keys_of(table)?;
        let t = tables.iter().find(|t| t.def.name == table.name).expect("checked by keys_of");
        let mut conn = self.admin().await?;
        let mut loaded = 0u64;
        let mut rows = rows.peekable();
        if t.strings {
            // One MSET per chunk of rows.
            while rows.peek().is_some() {
                let chunk: Vec<Row> = rows.by_ref().take(LOAD_CHUNK).collect();
                let cmd = strings::mset(|k| t.row_key(k), chunk.iter()).map_err(|e| Error::runtime(e.message))?;
                cmd.query_async::<()>(&mut conn).await.map_err(|e| self.setup_error("MSET", e))?;
                loaded += chunk.len() as u64;
            }
            return Ok(loaded);
        }
        while rows.peek().is_some() {
            let mut pipe = redis::pipe();
            let mut pk_pairs = Vec::with_capacity(LOAD_CHUNK * 2);
            let mut index_pairs: Vec<Vec<(String, i64)>> = vec![Vec::new(); t.index_sets.len()];
            for row in rows.by_ref().take(LOAD_CHUNK) {
                let pk = key_of(&row).map_err(|e| Error::runtime(e.message))?;
                let mut write = Vec::with_capacity(1);
                write_row(self.dialect, t, pk, &row, &mut write);
                write.into_iter().for_each(|cmd| {
                    pipe.add_command(cmd).ignore();
                });
                pk_pairs.push((pk, pk));
                for (c, set) in t.index_sets.iter().enumerate() {
                    if set.is_some()
                        && let Some(s) = row.get(c).and_then(score)
                    {
                        index_pairs[c].push((s, pk));
                    }
                }
                loaded += 1;
            }
            pipe.cmd("ZADD").arg(&t.pk_set).arg(&pk_pairs).ignore();
            for (c, set) in t.index_sets.iter().enumerate() {
                if let Some(set) = set
                    && !index_pairs[c].is_empty()
                {
                    pipe.cmd("ZADD").arg(set).arg(&index_pairs[c]).ignore();
                }
            }
            pipe.query_async::<()>(&mut conn).await.map_err(|e| self.setup_error("load pipeline", e))?;
        }
        Ok(loaded)
    }

    fn joins_workers(&self) -> bool {
        true
    }

    async fn attach(&self, tables: &[Arc<TableDef>]) -> Result<()> {
        let mut conn = self.admin().await?;
        let marker: Option<String> =
            redis::cmd("GET").arg(&self.marker_key).query_async(&mut conn).await.map_err(|e| self.setup_error("GET", e))?;
        if marker.as_deref() != Some(MARKER_VALUE) {
            return Err(Error::runtime(format!(
                "{}: no dbsweep data under '{}' at {} to join: the coordinator has not prepared it",
                self.name(),
                self.prefix,
                self.address
            )));
        }
        self.probe(&mut conn, tables).await;
        *self.tables.write().unwrap() = Arc::new(tables.iter().map(|t| TableKeys::new(&self.prefix, t, self.is_cluster())).collect());
        Ok(())
    }

    async fn connect(&self) -> Result<Box<dyn Connection>> {
        let (conn, nodes) = match &self.client {
            // One server: the client's own connection (no driver task), which also loads the
            // scripts and lists keys. No second connection is opened, so a client holds one
            // connection, as the connection-limit check counts.
            Client::Single(client) => {
                let info = client.get_connection_info();
                let ConnectionAddr::Tcp(host, port) = info.addr() else {
                    return Err(Error::runtime(format!("target '{}': only TCP addresses are supported", self.name())));
                };
                let segment = self.dialect.segment_size();
                let mut direct =
                    DirectConnection::connect(host, *port, info.redis_settings(), CONNECT_TIMEOUT, segment).await.map_err(|e| {
                        self.busy_error(&e).unwrap_or_else(|| {
                            Error::unreachable(self.name(), format!("cannot connect to {} at {}: {e}", self.dialect.label(), self.address))
                        })
                    })?;
                self.load_scripts(&mut direct).await?;
                (Link::Direct(direct), Vec::new())
            }
            Client::Cluster { .. } => {
                let mut conn = self.admin().await?;
                self.load_scripts(&mut conn).await?;
                let nodes = self.nodes(&mut conn).await?;
                (Link::Cluster(conn), nodes)
            }
        };
        Ok(Box::new(RedisConnection {
            conn,
            nodes,
            dialect: self.dialect,
            tables: self.tables.read().unwrap().clone(),
            batch: self.batch,
            update_script: self.update_script.clone(),
            max_script: self.max_script.clone(),
            query_scripts: self.query_scripts.clone(),
            prefix: self.prefix.clone(),
        }))
    }

    async fn count_rows(&self, table: &TableDef) -> Result<u64> {
        let tables = self.keys_of(table)?;
        let t = tables.iter().find(|t| t.def.name == table.name).expect("checked by keys_of");
        let mut conn = self.admin().await?;
        if t.strings {
            // Plain string keys have no key set: count the table's row keys, each once.
            let mut seen = std::collections::HashSet::new();
            for mut node in self.nodes(&mut conn).await? {
                let mut cursor = Some(self.dialect.first_cursor().to_string());
                while let Some(at) = cursor {
                    let page = self.dialect.string_key_page(&mut node, &t.row_prefix, &at).await;
                    let (next, keys) = page.map_err(|e| self.setup_error("listing keys", e))?;
                    seen.extend(keys.into_iter().filter(|k| strings::is_row_key(&t.row_prefix, k)));
                    cursor = next;
                }
            }
            return Ok(seen.len() as u64);
        }
        redis::cmd("ZCARD").arg(&t.pk_set).query_async::<u64>(&mut conn).await.map_err(|e| self.setup_error("ZCARD", e))
    }

    /// `INFO memory` `used_memory`: everything the allocator holds for the dataset and
    /// the server's own structures (the whole server; deltas isolate dbsweep's data).
    async fn engine_memory(&self) -> Result<Option<crate::adapter::EngineMemory>> {
        if self.dialect == Dialect::LedisDb {
            // Its INFO `Mem` section is the Go heap, not the data, which lives in LevelDB.
            return Ok(None);
        }
        let mut conn = self.admin().await?;
        // A cluster: the sum over its masters.
        let mut used = Some(0u64);
        for mut node in self.nodes(&mut conn).await? {
            let info: String =
                redis::cmd("INFO").arg("memory").query_async(&mut node).await.map_err(|e| self.setup_error("INFO memory", e))?;
            let node_used = info.lines().find_map(|line| line.trim_end().strip_prefix("used_memory:")).and_then(|v| v.parse::<u64>().ok());
            used = used.zip(node_used).map(|(a, b)| a + b);
        }
        Ok(used.map(|bytes| crate::adapter::EngineMemory { bytes, source: "INFO memory used_memory".into() }))
    }

    /// `CONFIG GET maxclients` less the other connected clients (`INFO clients`). A cluster
    /// (a limit per node), or a server that will not tell (LedisDB, a renamed CONFIG), is
    /// not checked.
    async fn connection_room(&self) -> Result<Option<ConnectionRoom>> {
        if self.is_cluster() {
            return Ok(None);
        }
        let mut conn = self.admin().await?;
        let config: redis::RedisResult<std::collections::HashMap<String, String>> =
            redis::cmd("CONFIG").arg("GET").arg("maxclients").query_async(&mut conn).await;
        let info: redis::RedisResult<String> = redis::cmd("INFO").arg("clients").query_async(&mut conn).await;
        let max = config.ok().and_then(|c| c.get("maxclients").and_then(|v| v.parse::<u64>().ok()));
        let connected = info.ok().and_then(|i| {
            i.lines().find_map(|line| line.trim_end().strip_prefix("connected_clients:")).and_then(|v| v.parse::<u64>().ok())
        });
        // This connection is closed before the run connects.
        Ok(max.zip(connected).map(|(max, connected)| redis_room(max, connected.saturating_sub(1))))
    }

    async fn cleanup(&self) -> Result<()> {
        let mut conn = self.admin().await?;
        // Without our marker nothing under the prefix is ours (or nothing is there).
        if self.check_owned(&mut conn).await? {
            self.clear_namespace(&mut conn).await?;
        }
        Ok(())
    }

    fn lease(self: Arc<Self>) -> Option<Arc<dyn LeaseStore>> {
        Some(self)
    }
}

/// The room of a Redis server: `maxclients` less the clients others hold.
fn redis_room(maxclients: u64, others: u64) -> ConnectionRoom {
    ConnectionRoom {
        free: maxclients.saturating_sub(others),
        limit: format!("maxclients={maxclients}, {others} in use"),
        setting: "maxclients",
    }
}

impl Redis {
    /// Loads the run's Lua scripts (idempotent; makes EVALSHA safe even after a server
    /// restart between prepare and run).
    async fn load_scripts<C: redis::aio::ConnectionLike + Send>(&self, conn: &mut C) -> Result<()> {
        for script in [&*self.update_script, &*self.max_script].into_iter().chain(self.query_scripts.all()) {
            script.load_async(conn).await.map_err(|e| self.setup_error("SCRIPT LOAD", e))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_maxclients_less_the_other_clients() {
        let room = redis_room(10, 3);
        assert_eq!((room.free, room.limit.as_str(), room.setting), (7, "maxclients=10, 3 in use", "maxclients"));
        assert_eq!(redis_room(10, 11).free, 0);
    }
}
