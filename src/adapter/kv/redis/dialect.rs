//! The Redis-protocol servers the Redis adapter drives — Redis itself and LedisDB — and
//! everything that differs between them: names, the commands that store and remove a row
//! hash, transactions, how dbsweep's key prefix is listed and cleared, and what the server
//! says about itself.
//!
//! LedisDB (a Redis-protocol server on LevelDB, the design of SSDB) was checked command by
//! command against `ledis-server` built from github.com/ledisdb/ledisdb at d35789ec47e6
//! (`ledisdb_version` 0.5): it keeps each data type in its own key space (`DEL` and
//! `EXISTS` see only string keys; a hash is removed with `HCLEAR`, several with `HMCLEAR`),
//! `HSET` takes one field (`HMSET` several), there is no `MULTI`/`EXEC`, `SCAN` or
//! `UNLINK` (`XSCAN <type> <cursor> MATCH <regexp>` lists one type's keys), `INFO` has no
//! memory figure of the data (its `Mem` section is the Go heap; the data lives in LevelDB
//! files) and `CONFIG GET` knows only `databases`. `EVAL`/`EVALSHA`/`SCRIPT LOAD` work
//! (gopher-lua): scripts run one at a time, but other clients' commands run beside them.
//! `DEL` replies with the number of keys given, not the number removed, and `SET` takes no
//! options (`XX`): plain string keys are deleted and updated by scripts that ask `EXISTS`.
//! `ECHO`, `GET`/`SET`/`MGET`/`MSET`, `HMSET`/`HGETALL`/`HMGET`/`HLEN`, `ZADD` with several
//! members, `ZRANGE`, `ZRANGEBYSCORE ... LIMIT`, `ZCOUNT`, `ZCARD`, `ZREM` and `SELECT 0-15`
//! behave as in Redis.
//!
//! LedisDB sets a 4 KiB socket receive buffer on every connection it accepts (its
//! `conn_read_buffer_size`; Linux doubles it to 8 KiB), and a config file that raises it
//! crashes this build within a second (its TTL checker reads a nil lock). Over loopback,
//! whose segments are up to 64 KiB, that buffer stalls TCP once a large request has filled
//! it: from then on the client's kernel sends about 8 KiB per 200 ms (`ss`: snd_wnd 8192,
//! rwnd_limited 100 %) while the server waits in read, so a request over 8 KiB costs 0.2 s
//! per 8 KiB (a 1,000-record YCSB load pipeline, 1.2 MB, took minutes: the 10,000-record
//! load looked hung). A plain client sending the same bytes sees the same; what dbsweep
//! sends is ordinary Redis protocol. Its connections to LedisDB therefore use Ethernet's
//! segment size ([`Dialect::segment_size`]), with which the window keeps reopening as the
//! server reads; the bytes sent are unchanged.
//!
//! Must not: send FLUSHDB/FLUSHALL, or delete a key outside dbsweep's prefix.

use super::connection::Planned;
use super::replies::Reduce;
use redis::aio::ConnectionLike;
use redis::{Cmd, RedisResult};
use std::collections::BTreeMap;

/// Keys per listing page (and per delete command) when dbsweep's prefix is scanned.
const PAGE: usize = 1000;

/// Which Redis-protocol server a target is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Dialect {
    Redis,
    LedisDb,
}

/// One key space to list: the listing command and the command that deletes its keys.
#[derive(Debug, Clone, Copy)]
struct KeySpace {
    /// `None` for Redis' single key space (`SCAN`); else the `XSCAN` type name.
    ledis_type: Option<&'static str>,
    delete: &'static str,
}

const REDIS_SPACES: &[KeySpace] = &[KeySpace { ledis_type: None, delete: "UNLINK" }];
/// Every LedisDB data type, so that a key of any type under the prefix is seen.
const LEDIS_SPACES: &[KeySpace] = &[
    KeySpace { ledis_type: Some("KV"), delete: "DEL" },
    KeySpace { ledis_type: Some("HASH"), delete: "HMCLEAR" },
    KeySpace { ledis_type: Some("ZSET"), delete: "ZMCLEAR" },
    KeySpace { ledis_type: Some("LIST"), delete: "LMCLEAR" },
    KeySpace { ledis_type: Some("SET"), delete: "SMCLEAR" },
];

impl Dialect {
    /// The dialect of a URL scheme the Redis adapter accepts.
    pub(super) fn from_scheme(scheme: &str) -> Option<Dialect> {
        [Dialect::Redis, Dialect::LedisDb].into_iter().find(|dialect| dialect.declaration().schemes.contains(&scheme))
    }

    /// The system as the registry lists it.
    pub(super) fn declaration(self) -> &'static crate::adapter::declaration::Declaration {
        match self {
            Dialect::Redis => &super::REDIS,
            Dialect::LedisDb => &super::LEDISDB,
        }
    }

    /// The `system` of the target (results, reports).
    pub(super) fn system(self) -> &'static str {
        self.declaration().system
    }

    /// The server's name in messages.
    pub(super) fn label(self) -> &'static str {
        match self {
            Dialect::Redis => "Redis",
            Dialect::LedisDb => "LedisDB",
        }
    }

    /// Whether MULTI/EXEC exists (LedisDB: no; its batches are plain pipelines).
    pub(super) fn has_multi(self) -> bool {
        self == Dialect::Redis
    }

    /// The largest TCP segment dbsweep's connections send and ask for (`TCP_MAXSEG`, set
    /// before connecting); `None` keeps the system's own. LedisDB: Ethernet's 1,460 bytes,
    /// so that its 8 KiB receive buffer never stalls a request (see the module comment).
    pub(super) fn segment_size(self) -> Option<u32> {
        match self {
            Dialect::Redis => None,
            Dialect::LedisDb => Some(1460),
        }
    }

    /// The command that writes several fields of a hash.
    pub(super) fn hash_write(self) -> &'static str {
        match self {
            Dialect::Redis => "HSET",
            Dialect::LedisDb => "HMSET",
        }
    }

    /// The name of the command that removes a row hash.
    pub(super) fn row_delete_name(self) -> &'static str {
        match self {
            Dialect::Redis => "DEL",
            Dialect::LedisDb => "HCLEAR",
        }
    }

    /// The command that removes a row hash; its reply is > 0 when the row existed.
    pub(super) fn row_delete(self, key: &str) -> Cmd {
        redis::cmd(self.row_delete_name()).arg(key).clone()
    }

    /// Deletes plain string keys, counting how many existed. Redis: one `DEL`. LedisDB's
    /// `DEL` replies with the number of keys it was given, found or not, so an `EXISTS` of
    /// each key goes first in the same pipeline (one round trip, not isolated: LedisDB has
    /// no transactions, and within one point no other client writes the same keys).
    pub(super) fn string_delete(self, keys: Vec<String>) -> Planned {
        match self {
            Dialect::Redis => Planned::one(redis::cmd("DEL").arg(keys).clone(), Reduce::FirstInt),
            Dialect::LedisDb => {
                let mut cmds: Vec<Cmd> = keys.iter().map(|k| redis::cmd("EXISTS").arg(k).clone()).collect();
                cmds.push(redis::cmd("DEL").arg(&keys).clone());
                Planned { cmds, atomic: false, reduce: Reduce::ExistedOfFirst(keys.len()), undo: Vec::new() }
            }
        }
    }

    /// Overwrites a plain string key only if it exists; 1 row when it did. Redis: `SET …
    /// XX`. LedisDB's `SET` has no options: `EXISTS` and `SET` in one pipeline, and a key
    /// that was not there is deleted again in a second round trip.
    pub(super) fn string_update(self, key: String, value: String) -> Planned {
        match self {
            Dialect::Redis => Planned::one(redis::cmd("SET").arg(key).arg(value).arg("XX").clone(), Reduce::Written),
            Dialect::LedisDb => Planned {
                cmds: vec![redis::cmd("EXISTS").arg(&key).clone(), redis::cmd("SET").arg(&key).arg(value).clone()],
                atomic: false,
                reduce: Reduce::Existed,
                undo: vec![redis::cmd("DEL").arg(key).clone()],
            },
        }
    }

    /// What a delete and an update of a plain string key send, for the target's settings.
    pub(super) fn string_requests(self) -> [(&'static str, &'static str); 2] {
        match self {
            Dialect::Redis => {
                [("request.delete", "pairs: DEL <key> (a batch: one DEL of every key)"), ("request.update", "pairs: SET <key> <value> XX")]
            }
            Dialect::LedisDb => [
                (
                    "request.delete",
                    "pairs: one pipeline of EXISTS <key> per key, then one DEL of every key (LedisDB's DEL counts the keys given, not those removed)",
                ),
                (
                    "request.update",
                    "pairs: one pipeline: EXISTS <key>, SET <key> <value>; DEL <key> after, if it did not exist (LedisDB's SET has no XX)",
                ),
            ],
        }
    }

    /// The `INFO server` field that holds the version.
    pub(super) fn version_field(self) -> &'static str {
        match self {
            Dialect::Redis => "redis_version",
            Dialect::LedisDb => "ledisdb_version",
        }
    }

    /// Settings known without asking the server.
    pub(super) fn fixed_settings(self) -> BTreeMap<String, String> {
        let mut settings = BTreeMap::new();
        if self == Dialect::LedisDb {
            settings.insert(
                "server".into(),
                "LedisDB: a Redis-protocol server on LevelDB (on disk), the design of SSDB; SSDB itself has no package to run".into(),
            );
            settings.insert(
                "atomicity".into(),
                "none: no MULTI/EXEC, so a row and its index entries are written by one pipeline, not atomically; \
                 an update is HLEN (or EXISTS) and the write in one pipeline, with no Lua script"
                    .into(),
            );
            settings.insert(
                "tcp_segment".into(),
                "1460 bytes (TCP_MAXSEG on dbsweep's connections): with loopback's 64 KiB segments, LedisDB's 8 KiB socket \
                 receive buffer stalls any request over 8 KiB for 0.2 s per 8 KiB"
                    .into(),
            );
        }
        settings
    }

    fn spaces(self) -> &'static [KeySpace] {
        match self {
            Dialect::Redis => REDIS_SPACES,
            Dialect::LedisDb => LEDIS_SPACES,
        }
    }

    /// One page of the keys under `prefix` in one key space, except `keep`: (next cursor,
    /// keys).
    async fn page(
        self,
        conn: &mut (impl ConnectionLike + Send),
        space: KeySpace,
        prefix: &str,
        keep: &[&str],
        cursor: &str,
    ) -> RedisResult<(String, Vec<String>)> {
        let cmd = match space.ledis_type {
            // SCAN's MATCH is a glob; XSCAN's is a Go regular expression.
            None => redis::cmd("SCAN").arg(cursor).arg("MATCH").arg(format!("{}*", glob_quote(prefix))).arg("COUNT").arg(PAGE).clone(),
            Some(ty) => {
                redis::cmd("XSCAN").arg(ty).arg(cursor).arg("MATCH").arg(format!("^{}", regex_quote(prefix))).arg("COUNT").arg(PAGE).clone()
            }
        };
        let (next, keys): (String, Vec<String>) = cmd.query_async(conn).await?;
        // The matching is the server's; keep the check exact anyway.
        Ok((next, keys.into_iter().filter(|k| k.starts_with(prefix) && !keep.contains(&k.as_str())).collect()))
    }

    /// Where a listing starts, and the cursor that says it is done.
    pub(super) fn first_cursor(self) -> &'static str {
        match self {
            Dialect::Redis => "0",
            Dialect::LedisDb => "",
        }
    }

    /// One page of the plain string keys (Redis: keys of any type) under `prefix`, from
    /// `cursor` (start with `first_cursor`): the next cursor, `None` at the end, and the
    /// keys. A Redis SCAN may return a key twice while the key space is rehashed: callers
    /// that count keep the keys they have seen.
    pub(super) async fn string_key_page(
        self,
        conn: &mut (impl ConnectionLike + Send),
        prefix: &str,
        cursor: &str,
    ) -> RedisResult<(Option<String>, Vec<String>)> {
        let (next, keys) = self.page(conn, self.spaces()[0], prefix, &[], cursor).await?;
        Ok(((next != self.first_cursor()).then_some(next), keys))
    }

    /// The first key under `prefix` (of any type) other than `keep`, if any.
    pub(super) async fn any_key(self, conn: &mut (impl ConnectionLike + Send), prefix: &str, keep: &str) -> RedisResult<Option<String>> {
        for &space in self.spaces() {
            let mut cursor = self.first_cursor().to_string();
            loop {
                let (next, keys) = self.page(conn, space, prefix, &[keep], &cursor).await?;
                if let Some(key) = keys.into_iter().next() {
                    return Ok(Some(key));
                }
                if next == self.first_cursor() {
                    break;
                }
                cursor = next;
            }
        }
        Ok(None)
    }

    /// Deletes every key under `prefix` (of any type) but those in `keep`, page by page:
    /// listed on `lister` (one server, or one master of a cluster) and deleted through
    /// `deleter` (the same server, or the cluster, which splits a delete of several keys by
    /// slot).
    pub(super) async fn delete_all(
        self,
        lister: &mut (impl ConnectionLike + Send),
        deleter: &mut (impl ConnectionLike + Send),
        prefix: &str,
        keep: &[&str],
    ) -> RedisResult<()> {
        for &space in self.spaces() {
            let mut cursor = self.first_cursor().to_string();
            loop {
                let (next, keys) = self.page(lister, space, prefix, keep, &cursor).await?;
                if !keys.is_empty() {
                    redis::cmd(space.delete).arg(&keys).query_async::<()>(deleter).await?;
                }
                if next == self.first_cursor() {
                    break;
                }
                cursor = next;
            }
        }
        Ok(())
    }
}

/// Escapes the characters a Redis glob pattern treats specially.
fn glob_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Escapes the characters a Go regular expression treats specially.
fn regex_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_pick_the_dialect() {
        assert_eq!(Dialect::from_scheme("redis"), Some(Dialect::Redis));
        assert_eq!(Dialect::from_scheme("ledis"), Some(Dialect::LedisDb));
        assert_eq!(Dialect::from_scheme("ledisdb"), Some(Dialect::LedisDb));
        assert_eq!(Dialect::from_scheme("ssdb"), None);
        assert_eq!(Dialect::LedisDb.system(), "ledisdb");
        let server = &Dialect::LedisDb.fixed_settings()["server"];
        assert!(server.starts_with("LedisDB: a Redis-protocol server on LevelDB"), "{server}");
        assert!(Dialect::Redis.fixed_settings().is_empty());
    }

    #[test]
    fn ledis_rows_are_removed_with_hclear_and_written_with_hmset() {
        let cmd = Dialect::LedisDb.row_delete("dbsweep:kv1");
        assert_eq!(cmd.args_iter().count(), 2);
        assert!(String::from_utf8_lossy(&cmd.get_packed_command()).contains("HCLEAR"));
        assert_eq!(Dialect::LedisDb.hash_write(), "HMSET");
        assert_eq!(Dialect::Redis.hash_write(), "HSET");
    }

    #[test]
    fn prefixes_are_quoted_for_xscan() {
        assert_eq!(regex_quote("dbsweep:"), "dbsweep:");
        assert_eq!(regex_quote("a.b*c"), r"a\.b\*c");
        assert_eq!(glob_quote("dbsweep:a*b[1]"), r"dbsweep:a\*b\[1\]");
    }
}
