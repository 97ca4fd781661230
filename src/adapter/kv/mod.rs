//! The key-value and document stores, each on its own driver: Redis (and LedisDB, with its
//! TPC-H Lua and plain-string mapping), memcached, Cassandra and MongoDB (and FerretDB).
//!
//! Each system is a directory: `mod.rs` (the target's configuration, ownership checks and
//! errors), `target.rs` (its `Target` life cycle), `connection.rs` (one client's ops) and
//! what only that system needs (row encodings, wire protocol, lease record). Must not use
//! the SQL layer (`sql`, `pgwire`, `embedded`): these systems speak no SQL.

pub mod cassandra;
/// The worked example of docs/adding-a-system.md: a hypothetical system, compiled and
/// tested, never registered.
#[cfg(test)]
mod ember;
pub mod memcached;
pub mod mongodb;
pub mod redis;
