//! The run's lease record in memcached: the key `<prefix>lease`, taken with `add` and
//! renewed or removed with `gets`/`cas`. Must not touch any other key.

use super::Memcached;
use super::wire::{StoreReply, push_store};
use crate::adapter::lease::LeaseStore;
use crate::error::Result;
use async_trait::async_trait;

/// The lease record's item, after the prefix.
pub(super) const LEASE_KEY: &str = "lease";

#[async_trait]
impl LeaseStore for Memcached {
    fn place(&self) -> String {
        format!("key prefix '{}' in memcached at {}", self.prefix, self.address)
    }

    fn alternatives(&self) -> String {
        "point the URL at another memcached server, or add --namespace NAME to run side by side under another key prefix".into()
    }

    async fn read(&self) -> Result<Option<String>> {
        let mut wire = self.admin().await?;
        let found = wire.get_multi(std::slice::from_ref(&self.lease_key)).await.map_err(|e| self.setup_error("get", e))?;
        Ok(found.into_iter().next().map(|(_, value, _)| String::from_utf8_lossy(&value).into_owned()))
    }

    async fn swap(&self, current: Option<&str>, next: Option<&str>) -> Result<bool> {
        let mut wire = self.admin().await?;
        let mut req = Vec::new();
        match current {
            None => {
                // A namespace with foreign items is refused before anything is written.
                let keys = self.our_keys().await?;
                self.check_owned(&mut wire, &keys).await?;
                let Some(next) = next else { return Ok(self.read().await?.is_none()) };
                push_store(&mut req, "add", &self.lease_key, next.as_bytes(), None);
            }
            Some(current) => {
                wire.send(format!("gets {}\r\n", self.lease_key).as_bytes()).await.map_err(|e| self.setup_error("gets", e))?;
                let found = wire.values().await.map_err(|e| self.setup_error("gets", e))?;
                let Some((_, value, Some(cas))) = found.into_iter().next() else { return Ok(false) };
                if value != current.as_bytes() {
                    return Ok(false);
                }
                match next {
                    Some(next) => push_store(&mut req, "cas", &self.lease_key, next.as_bytes(), Some(cas)),
                    // A negative expiry time expires the item at once: a removal only if unchanged.
                    None => req.extend_from_slice(format!("cas {} 0 -1 1 {cas}\r\n-\r\n", self.lease_key).as_bytes()),
                }
            }
        }
        wire.send(&req).await.map_err(|e| self.setup_error("lease", e))?;
        Ok(wire.stored().await.map_err(|e| self.setup_error("lease", e))? == StoreReply::Stored)
    }
}
