//! What one system declares, once, in its adapter module: the line `dbsweep targets`
//! lists, the URL schemes that open it and the URL options it takes, what it runs on (the
//! server `--spawn` starts, if any), the ops and queries its adapter runs (a bitset, not a
//! list written out), and how to open it. The registry is a list of these; scheme lookup,
//! "did you mean", URL option checks, `dbsweep targets` and docs/capabilities.md all read
//! them. Also `TargetInfoCell`, the "what is known before connecting, then what the server
//! said" pair every network adapter keeps.
//!
//! Must not connect to anything or name any adapter (the adapters name themselves here).

use super::{Capabilities, Execution, OpenContext, Target, TargetInfo, TargetUrl};
use crate::base::op::{OpKind, QueryId};
use crate::error::{Error, Result};
use crate::servers::ServerKind;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

/// What a system needs to run here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// Nothing: it is part of dbsweep.
    BuiltIn,
    /// Its engine is a library inside dbsweep (an embedded database).
    Library,
    /// The server `--spawn` starts (or one the user runs and names in the URL).
    Server(ServerKind),
    /// A command-line client program on PATH (`CliTarget` looks for it there), in front of
    /// the server `--spawn` starts.
    Client(ServerKind),
    /// It cannot run here: why, and what to use instead, in words for a user.
    Unavailable(&'static str),
}

/// The query parameters a system's URL takes besides a password (`?password=` and its
/// aliases are read by `TargetUrl`). Their values are checked by the adapter, which knows
/// what each means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlOptions {
    /// These and no others: a misspelt option (`?layuot=jsonb`) must not silently
    /// benchmark the default.
    Only(&'static [&'static str]),
    /// Every option goes on to the system's own driver, which checks them.
    Driver,
}

/// A set of op kinds, declared as a constant: `OpSet::ALL.without(OpKind::Query)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpSet(u32);

impl OpSet {
    pub const NONE: OpSet = OpSet(0);
    /// Every kind, `Mixed` included (report.json lists it for the SQL engines).
    pub const ALL: OpSet = OpSet::of(&OpKind::ALL);
    /// Every kind a store without SQL can run: all but `Query` and `Script` (and `Mixed`,
    /// never an op's own kind, and `Custom`, which a store declares with its family).
    pub const NO_SQL: OpSet = OpSet::ALL.without(OpKind::Query).without(OpKind::Script).without(OpKind::Mixed).without(OpKind::Custom);
    /// The ops that name their rows by key: a round trip, writes and reads of whole rows.
    pub const BY_KEY: OpSet =
        OpSet::of(&[OpKind::Echo, OpKind::Insert, OpKind::Get, OpKind::MultiGet, OpKind::Delete, OpKind::Update, OpKind::ReadModifyWrite]);

    pub const fn of(kinds: &[OpKind]) -> OpSet {
        let mut set = OpSet::NONE;
        let mut i = 0;
        while i < kinds.len() {
            set = set.with(kinds[i]);
            i += 1;
        }
        set
    }

    pub const fn with(self, kind: OpKind) -> OpSet {
        OpSet(self.0 | 1 << kind as u32)
    }

    pub const fn without(self, kind: OpKind) -> OpSet {
        OpSet(self.0 & !(1 << kind as u32))
    }

    pub const fn contains(self, kind: OpKind) -> bool {
        self.0 & 1 << kind as u32 != 0
    }

    /// The kinds in `OpKind::ALL`'s order (the order reports list them in).
    pub fn kinds(self) -> impl Iterator<Item = OpKind> {
        OpKind::ALL.into_iter().filter(move |kind| self.contains(*kind))
    }
}

/// What an adapter can do before it knows the tables: `Capabilities` as a constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CapabilitySet {
    pub ops: OpSet,
    pub queries: &'static [QueryId],
    /// `execute_batch` sends one request per batch (see `Capabilities::native_batch`).
    pub native_batch: bool,
    pub secondary_indexes: bool,
    /// The family of custom statements it runs (with `OpKind::Custom` in `ops`).
    pub statements: Option<crate::base::custom::Family>,
}

impl CapabilitySet {
    /// No ops at all: a system dbsweep has no adapter for.
    pub const NONE: CapabilitySet =
        CapabilitySet { ops: OpSet::NONE, queries: &[], native_batch: false, secondary_indexes: false, statements: None };

    /// The form a target reports (and report.json saves). Its `query` kind is whether the
    /// system runs any analytic query (`queries`), whatever the op set says: which queries
    /// run is the queries list's to say, and a kind that disagreed with it read as "cannot
    /// run TPC-H" for HyPer and Redis, which do.
    pub fn to_capabilities(&self) -> Capabilities {
        let ops = if self.queries.is_empty() { self.ops.without(OpKind::Query) } else { self.ops.with(OpKind::Query) };
        Capabilities {
            ops: ops.kinds().collect(),
            queries: self.queries.to_vec(),
            native_batch: self.native_batch,
            secondary_indexes: self.secondary_indexes,
            statements: self.statements,
        }
    }
}

/// Builds a system's adapter for a target URL (named `name`); must not connect.
pub type Open = fn(name: &str, url: &TargetUrl, ctx: &OpenContext) -> Result<Arc<dyn Target>>;

/// One system, as its adapter module declares it (see the module doc). A system with
/// several lines in `dbsweep targets` on one adapter (PostgreSQL's layouts) declares each
/// line with `..` from the first and no schemes of its own.
#[derive(Clone, Copy)]
pub struct Declaration {
    /// The name `dbsweep targets` lists and studies use, e.g. `pg-hstore`.
    pub system: &'static str,
    /// The URL as `dbsweep targets` shows it, e.g. `sqlite:[PATH]`, `postgres://?layout=hstore`.
    pub url: &'static str,
    pub description: &'static str,
    pub needs: Needs,
    /// The URL schemes that open this system (the first is its own).
    pub schemes: &'static [&'static str],
    pub options: UrlOptions,
    /// Whether a URL may list several contact points (`h1:p,h2:p`).
    pub several_hosts: bool,
    pub capabilities: CapabilitySet,
    /// `None` for a system dbsweep cannot run (`Needs::Unavailable`).
    pub open: Option<Open>,
}

impl Declaration {
    /// A system dbsweep knows of but cannot run here, and `why`, in words for a user.
    /// Its `schemes` are refused with `why`.
    pub const fn cannot_run(
        system: &'static str,
        schemes: &'static [&'static str],
        url: &'static str,
        description: &'static str,
        why: &'static str,
    ) -> Declaration {
        Declaration {
            system,
            url,
            description,
            needs: Needs::Unavailable(why),
            schemes,
            options: UrlOptions::Only(&[]),
            several_hosts: false,
            capabilities: CapabilitySet::NONE,
            open: None,
        }
    }

    /// Why it cannot run here, if it cannot.
    pub fn unavailable(&self) -> Option<&'static str> {
        match self.needs {
            Needs::Unavailable(why) => Some(why),
            _ => None,
        }
    }

    /// What a target of this system says of itself when opened, before it reaches its
    /// server: its name, this system, the URL without its password, how its clients run,
    /// these capabilities, the version known so far and the settings that change results.
    pub fn target_info(
        &self,
        name: &str,
        url: &TargetUrl,
        execution: Execution,
        version: impl Into<String>,
        settings: BTreeMap<String, String>,
    ) -> TargetInfo {
        TargetInfo {
            name: name.to_string(),
            system: self.system.to_string(),
            url: url.redacted(),
            execution,
            capabilities: self.capabilities.to_capabilities(),
            version: version.into(),
            settings,
        }
    }

    /// Refuses a query parameter the adapter does not read.
    pub fn check_options(&self, name: &str, url: &TargetUrl) -> Result<()> {
        let UrlOptions::Only(accepted) = self.options else { return Ok(()) };
        let Some(unknown) = url.params().into_keys().find(|key| !accepted.contains(&key.as_str())) else { return Ok(()) };
        let known = if accepted.is_empty() { "it takes none".to_string() } else { format!("it takes: {}", accepted.join(", ")) };
        Err(Error::usage(format!("target '{name}': unknown URL option '{unknown}' for a {} URL ({known})", url.scheme())))
    }
}

/// A target's self-description: what is known when it is opened, replaced once by what
/// the server said (its version, settings) when the target first reaches it.
pub struct TargetInfoCell {
    opened: TargetInfo,
    reached: OnceLock<TargetInfo>,
}

impl TargetInfoCell {
    pub fn new(opened: TargetInfo) -> Self {
        TargetInfoCell { opened, reached: OnceLock::new() }
    }

    /// What the server said, else what was known when opened.
    pub fn get(&self) -> &TargetInfo {
        self.reached.get().unwrap_or(&self.opened)
    }

    /// What was known when the target was opened.
    pub fn opened(&self) -> &TargetInfo {
        &self.opened
    }

    /// Whether the server has been reached and described.
    pub fn is_reached(&self) -> bool {
        self.reached.get().is_some()
    }

    /// Records what the server said; the first description wins.
    pub fn set(&self, info: TargetInfo) {
        let _ = self.reached.set(info);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_op_set_keeps_the_kinds_in_report_order() {
        let set = OpSet::of(&[OpKind::Delete, OpKind::Echo, OpKind::FetchAll]);
        assert_eq!(set.kinds().collect::<Vec<_>>(), [OpKind::Echo, OpKind::Delete, OpKind::FetchAll]);
        assert!(set.contains(OpKind::Delete) && !set.contains(OpKind::Get));
        assert_eq!(OpSet::ALL.kinds().collect::<Vec<_>>(), OpKind::ALL);
        assert_eq!(OpSet::ALL.without(OpKind::Mixed).without(OpKind::Query).kinds().count(), OpKind::ALL.len() - 2);
        assert_eq!(OpSet::NONE.with(OpKind::Scan).kinds().collect::<Vec<_>>(), [OpKind::Scan]);
    }

    #[test]
    fn a_system_reports_the_query_kind_exactly_when_it_runs_a_query() {
        let runs_q1 = CapabilitySet {
            ops: OpSet::NO_SQL,
            queries: &[QueryId::TpchQ1],
            native_batch: false,
            secondary_indexes: false,
            statements: None,
        };
        assert!(runs_q1.to_capabilities().supports_kind(OpKind::Query));
        let none = CapabilitySet { ops: OpSet::ALL, queries: &[], ..runs_q1 };
        assert!(!none.to_capabilities().supports_kind(OpKind::Query));
        assert!(none.to_capabilities().supports_kind(OpKind::Script), "other kinds as declared");
        for system in crate::adapter::registry::SYSTEMS {
            let caps = system.capabilities.to_capabilities();
            assert_eq!(caps.supports_kind(OpKind::Query), !caps.queries.is_empty(), "{}", system.system);
        }
    }
}
