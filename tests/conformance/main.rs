//! Conformance: the same body (`body.rs`) against every adapter, the command-line client
//! adapters included (`cli_clients`). Embedded adapters use throwaway files; server
//! adapters use servers started by dbsweep's own spawn code (`tests/support`).

#[macro_use]
mod body;
#[macro_use]
mod lease;
#[path = "../support/mod.rs"]
mod support;

mod cassandra;
mod cli_clients;
mod embedded;
mod h2;
mod hyper;
mod ledisdb;
mod memcached;
mod mongodb;
mod mysql;
mod postgres;
mod redis;
