//! Which share of a plan's work one process runs (`--shard I/N`): the vocabulary the plan
//! (which units) and saved reports (which shard a run directory holds) share. Must not
//! decide the split; `plan::shard` does.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// `--shard I/N`: this process runs shard I (counted from 0, as Slurm array task ids and
/// Kubernetes completion indexes are) of N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` with `0 <= I < N`.
    pub fn parse(text: &str) -> Result<Shard> {
        let bad = || Error::usage(format!("--shard '{text}': write I/N with 0 <= I < N, e.g. --shard 0/3"));
        let (index, count) = text.split_once('/').ok_or_else(bad)?;
        let index: usize = index.trim().parse().map_err(|_| bad())?;
        let count: usize = count.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_text_is_index_over_count() {
        assert_eq!(Shard::parse("0/3").unwrap(), Shard { index: 0, count: 3 });
        assert_eq!(Shard::parse(" 2 / 3 ").unwrap().to_string(), "2/3");
        for bad in ["3/3", "1/0", "1", "a/3", "-1/3", "1/3/4"] {
            let e = Shard::parse(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.to_string().contains("--shard"), "{e}");
        }
    }
}
