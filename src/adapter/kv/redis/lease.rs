//! The run's lease record in Redis: the key `<prefix>lease`, taken with `SETNX` and renewed
//! or removed by a compare-and-swap Lua script. Must not touch any other key.

use super::{Redis, is_wrong_type};
use crate::adapter::lease::LeaseStore;
use crate::error::{Error, Result};
use async_trait::async_trait;

/// The lease record's key, after the prefix.
pub(super) const LEASE_KEY: &str = "lease";

/// Replaces the lease record KEYS[1] by ARGV[2] ('' = delete it) if it is ARGV[1].
const LEASE_SWAP_LUA: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1
";

#[async_trait]
impl LeaseStore for Redis {
    fn place(&self) -> String {
        format!("key prefix '{}' in {} {}", self.prefix, self.dialect.label(), self.address)
    }

    fn alternatives(&self) -> String {
        "point the URL at another DB index (redis://host:port/N), or add --namespace NAME to run side by side under another key prefix"
            .into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let mut conn = self.admin().await?;
        redis::cmd("GET").arg(&self.lease_key).query_async(&mut conn).await.map_err(|e| {
            if is_wrong_type(&e) {
                Error::not_owned(
                    self.name(),
                    format!(
                        "key '{}' in {} {} is not a dbsweep lease; delete it yourself or use another DB index",
                        self.lease_key,
                        self.dialect.label(),
                        self.address
                    ),
                )
            } else {
                self.setup_error("GET", e)
            }
        })
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let mut conn = self.admin().await?;
        match (current, next) {
            (None, None) => Ok(self.read().await?.is_none()),
            (None, Some(next)) => {
                // A namespace with foreign keys is refused before anything is written.
                self.check_owned(&mut conn).await?;
                // SETNX rather than SET ... NX: LedisDB knows only the former.
                let set: i64 = redis::cmd("SETNX")
                    .arg(&self.lease_key)
                    .arg(next)
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.setup_error("SETNX", e))?;
                Ok(set == 1)
            }
            (Some(current), next) => {
                // A plain EVAL, not the script cache's EVALSHA: the lease's calls stay apart
                // from the measured ops' scripts in the server's command statistics.
                let swapped: i64 = redis::cmd("EVAL")
                    .arg(LEASE_SWAP_LUA)
                    .arg(1)
                    .arg(&self.lease_key)
                    .arg(current)
                    .arg(next.unwrap_or(""))
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| self.setup_error("the lease script", e))?;
                Ok(swapped == 1)
            }
        }
    }
}
