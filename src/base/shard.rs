//! Which share of a plan's work one process runs (`--shard I/N`): the vocabulary the plan
//! (which units) and saved reports (which shard a run directory holds) share. Must not
//! decide the split or read `--shard` text; `plan::shard` does both.

use serde::{Deserialize, Serialize};
use std::fmt;

/// `--shard I/N`: this process runs shard I (counted from 0, as Slurm array task ids and
/// Kubernetes completion indexes are) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}
