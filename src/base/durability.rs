//! Durability: how much of a commit survives a crash, in one vocabulary for every system.
//!
//! Owns the three levels (`none`, `periodic`, `commit`), the `durability` setting every
//! target reports (`"commit: fsync at every commit (synchronous=FULL)"`: the level, then
//! the system's own words) and reading the level back from such a setting. Must not know
//! any system: adapters and spawned servers map their own knobs onto these levels.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The setting, in every target's settings, that states its durability.
pub const SETTING: &str = "durability";

/// How much of a commit survives a crash of the machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Durability {
    /// Nothing is forced to disk: a crash may lose every change since the last snapshot
    /// (or everything, for a system without persistence).
    None,
    /// Changes are flushed in the background (about every second, or at checkpoints): a
    /// crash of the machine loses the last moments, a crash of the process usually not.
    Periodic,
    /// A commit returns only after its log is on stable storage (an fsync per commit).
    Commit,
}

impl Durability {
    pub const ALL: [Durability; 3] = [Durability::None, Durability::Periodic, Durability::Commit];

    pub fn name(self) -> &'static str {
        match self {
            Durability::None => "none",
            Durability::Periodic => "periodic",
            Durability::Commit => "commit",
        }
    }

    /// `none`, `periodic` or `commit` (any case); `None` for anything else.
    pub fn parse(text: &str) -> Option<Durability> {
        Durability::ALL.into_iter().find(|d| d.name().eq_ignore_ascii_case(text.trim()))
    }

    /// The value of the `durability` setting: the level, then what it means for this system.
    pub fn describe(self, detail: &str) -> String {
        format!("{}: {detail}", self.name())
    }

    /// The level a `durability` setting states; `None` for a setting in other words (an
    /// adapter that cannot tell).
    pub fn of_setting(value: &str) -> Option<Durability> {
        Durability::parse(value.split(':').next()?)
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_states_its_level_first() {
        let setting = Durability::Commit.describe("fsync at every commit (synchronous=FULL)");
        assert_eq!(setting, "commit: fsync at every commit (synchronous=FULL)");
        assert_eq!(Durability::of_setting(&setting), Some(Durability::Commit));
        assert_eq!(Durability::of_setting("WAL synced at each commit"), None);
        assert_eq!(Durability::parse(" Periodic "), Some(Durability::Periodic));
        assert_eq!(Durability::parse("always"), None);
        assert!(Durability::None < Durability::Periodic && Durability::Periodic < Durability::Commit);
    }
}
