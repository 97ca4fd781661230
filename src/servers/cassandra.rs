//! Cassandra as a throwaway server. Skeleton: the `cassandra` helper branch replaces this file
//! with the real spawn (see issue #6); until then spawning Cassandra reports it as missing.

use super::{Context, Ready};
use crate::error::{Error, Result};
use std::io;
use tokio::process::Command;

/// Where the server's files come from (for the "not found" message).
pub(super) const PACKAGE: &str = "cassandra (Maven Central)";
pub(super) const PROGRAMS: &[&str] = &["java"];

pub(super) fn url(port: u16) -> String {
    format!("cassandra://127.0.0.1:{port}")
}

pub(super) fn init(_ctx: Context) -> Result<Context> {
    Err(Error::Missing("Cassandra spawning is not built yet".into()))
}

pub(super) fn command(ctx: &Context, _port: u16) -> Command {
    Command::new(ctx.program(0))
}

pub(super) async fn probe(_ctx: &Context, _port: u16, _pid: u32) -> io::Result<Ready> {
    Err(io::Error::other("not built yet"))
}
