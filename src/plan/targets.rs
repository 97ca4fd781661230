//! The plan's targets as values: a name, a parsed `TargetUrl` and where the target came
//! from (the study, `--target`, the NO-DB ceiling, or a server this run spawned, with that
//! server's process, version and settings). `--target NAME=URL` is parsed here, and the
//! spawned servers' targets join the plan here once the servers are up
//! (`Plan::join_servers`), typed, with no side tables: the runner and the report read a
//! spawned target's server from its `origin`. Must not start or open anything.

use super::Plan;
use crate::adapter::TargetUrl;
use crate::adapter::url::redact_text;
use crate::error::{Error, Result};
use crate::servers::{ServerKind, SpawnedServer};
use std::sync::Arc;

/// One target of a plan.
#[derive(Debug, Clone)]
pub struct TargetSpec {
    pub name: String,
    pub url: TargetUrl,
    pub origin: TargetOrigin,
}

/// Where a target of the plan came from.
#[derive(Debug, Clone, PartialEq)]
pub enum TargetOrigin {
    /// One of the study's own targets (its `[[targets]]`).
    Study,
    /// Named by the user: `--target NAME=URL`.
    Named,
    /// The NO-DB ceiling, which dbsweep adds to a run that names none.
    Ceiling,
    /// On a server this run started (`--spawn`), shared by all of that server's targets.
    Spawned(Arc<SpawnedServer>),
}

/// Longest target name: it labels table columns, chart legends and file names.
const MAX_TARGET_NAME: usize = 64;

impl TargetSpec {
    /// A target named `name` at `url`, both checked: the URL's scheme and options are a
    /// system's (`registry::check_scheme`), the name fits tables and file names.
    pub fn new(name: String, url: TargetUrl, origin: TargetOrigin) -> Result<TargetSpec> {
        crate::adapter::registry::check_scheme(&name, &url)?;
        if name.len() > MAX_TARGET_NAME {
            return Err(Error::usage(format!(
                "target name of {} characters is too long: at most {MAX_TARGET_NAME} (use --target NAME=URL with a shorter NAME)",
                name.chars().count()
            )));
        }
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err(Error::usage(format!("target name '{name}' must be letters, digits, '-' or '_' (use --target NAME=URL)")));
        }
        Ok(TargetSpec { name, url, origin })
    }

    /// The NO-DB ceiling, `nodb=nodb:`.
    pub fn ceiling() -> TargetSpec {
        let url = TargetUrl::parse("nodb:").expect("nodb: is a URL");
        TargetSpec { name: "nodb".into(), url, origin: TargetOrigin::Ceiling }
    }

    /// The server this run started for this target, if it did.
    pub fn server(&self) -> Option<&SpawnedServer> {
        match &self.origin {
            TargetOrigin::Spawned(server) => Some(server),
            _ => None,
        }
    }
}

/// Parses `--target NAME=URL`, or a bare URL named after its scheme.
pub fn parse_target(text: &str) -> Result<TargetSpec> {
    let (name, url) = match text.split_once('=') {
        Some((name, url)) if !name.contains(':') && !name.contains('/') => (name.trim().to_string(), url),
        _ => (String::new(), text),
    };
    if name.is_empty() && url.len() < text.len() {
        return Err(Error::usage(format!("target '{}' has an empty name before '=' (use --target NAME=URL)", redact_text(text))));
    }
    let url = TargetUrl::parse(url)?;
    let name = if name.is_empty() { url.scheme().to_string() } else { name };
    TargetSpec::new(name, url, TargetOrigin::Named)
}

impl Plan {
    /// Adds the targets of the servers started for this run, each with its round's label
    /// (`spawn_rounds`), in order: each server's targets, and its command-line client's
    /// when the study benchmarks those (`cli_clients`). A shard then keeps only its own
    /// targets, and `target_names` names the targets as they are.
    pub fn join_servers(&mut self, servers: Vec<(Option<String>, SpawnedServer)>) -> Result<()> {
        for (label, server) in servers {
            let server = Arc::new(server);
            let clients = if self.cli_clients { server.client_targets.as_slice() } else { &[] };
            for (name, url) in server.targets.iter().chain(clients) {
                let name = Plan::spawned_target_name(label.as_deref(), name, |n| self.targets.iter().any(|t| t.name == n));
                let url = self.spawned_target_url(server.kind, url)?;
                self.targets.push(TargetSpec::new(name, url, TargetOrigin::Spawned(server.clone()))?);
            }
        }
        if let Some(work) = &self.shard {
            self.targets.retain(|t| work.has_target(&t.name));
        }
        self.servers_joined = true;
        Ok(())
    }

    /// The name a spawned server's target gets: its own, with the data root's label when
    /// several are swept, and `-spawned` when a target of that name is already `taken`.
    pub fn spawned_target_name(label: Option<&str>, name: &str, taken: impl Fn(&str) -> bool) -> String {
        let name = match label {
            Some(label) => format!("{name}-{label}"),
            None => name.to_string(),
        };
        if taken(&name) { format!("{name}-spawned") } else { name }
    }

    /// The URL of a spawned server's target with the study's options for that server.
    /// A command-line client's target (`redis-cli://`) takes the options under its own
    /// name (`redis-cli`), the server's library targets those under the server's.
    pub fn spawned_target_url(&self, server: ServerKind, url: &str) -> Result<TargetUrl> {
        let url = TargetUrl::parse(url)?;
        let key = if url.scheme().ends_with("-cli") { server.client_target_name().unwrap_or_default() } else { server.name().to_string() };
        match self.spawn_target_options.get(&key) {
            Some(options) => url.with_options(options),
            None => Ok(url),
        }
    }

    /// The server this run started for target `name`, if it did.
    pub fn spawned_server(&self, name: &str) -> Option<&SpawnedServer> {
        self.targets.iter().find(|t| t.name == name).and_then(TargetSpec::server)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, resolve};
    use std::collections::BTreeMap;

    #[test]
    fn in_memory_sends_plain_cassandra_deletes_to_spawned_servers_only() {
        let plan = resolve(&RunOptions { study: Some("in-memory".into()), ..Default::default() }).unwrap();
        let url = |plan: &Plan, kind, url| plan.spawned_target_url(kind, url).unwrap().to_string();
        assert_eq!(url(&plan, ServerKind::Cassandra, "cassandra://127.0.0.1:9"), "cassandra://127.0.0.1:9?affected=plain");
        assert_eq!(url(&plan, ServerKind::Redis, "redis://127.0.0.1:9"), "redis://127.0.0.1:9");
        let kv = resolve(&RunOptions { study: Some("kv-vs-relational".into()), ..Default::default() }).unwrap();
        assert_eq!(url(&kv, ServerKind::Cassandra, "cassandra://h:9/ks?x=1"), "cassandra://h:9/ks?x=1");
        let with = |options: &str| {
            let mut plan = plan.clone();
            plan.spawn_target_options.insert("postgres".into(), options.into());
            plan.spawned_target_url(ServerKind::Postgres, "postgres://h:9/db?layout=hstore")
        };
        assert_eq!(with("a=b").unwrap().to_string(), "postgres://h:9/db?layout=hstore&a=b");
        assert_eq!(with("layout=row").unwrap_err().exit_code(), 2, "an option the URL gives already");
    }

    #[test]
    fn targets_parse_with_names_and_redact() {
        let t = parse_target("pg=postgres://u:hunter2@127.0.0.1:5432/db").unwrap();
        assert_eq!((t.name.as_str(), &t.origin), ("pg", &TargetOrigin::Named));
        assert!(!format!("{:?}", t).contains("hunter2"));
        assert_eq!(parse_target("sqlite:/tmp/x.db").unwrap().name, "sqlite");
        assert_eq!(parse_target("pg=postgres://:1/x").unwrap_err().exit_code(), 2);
        assert!(parse_target("=nodb:").unwrap_err().to_string().contains("empty name"));
        assert!(parse_target(&format!("{}=nodb:", "n".repeat(65))).unwrap_err().to_string().contains("65 characters is too long"));
        assert_eq!(parse_target(&format!("{}=nodb:", "n".repeat(64))).unwrap().name.len(), 64);
    }

    fn redis(pid: u32, port: u16) -> SpawnedServer {
        SpawnedServer {
            kind: ServerKind::Redis,
            pid,
            version: "7.2.4".into(),
            settings: BTreeMap::from([("appendonly".to_string(), "no".to_string())]),
            targets: vec![("redis".into(), format!("redis://127.0.0.1:{port}"))],
            client_targets: vec![("redis-cli".into(), format!("redis-cli://127.0.0.1:{port}"))],
        }
    }

    #[test]
    fn a_spawned_server_joins_the_plan_as_typed_targets_with_its_process_and_settings() {
        let opts = RunOptions { spawn: vec!["redis".into()], data_roots: vec!["a=/tmp/a".into(), "b=/tmp/b".into()], ..Default::default() };
        let mut plan = resolve(&opts).unwrap();
        assert_eq!(plan.targets.iter().map(|t| (t.name.as_str(), &t.origin)).collect::<Vec<_>>(), [("nodb", &TargetOrigin::Ceiling)]);
        assert!(plan.spawned_server("redis-a").is_none(), "not up yet");
        let planned = plan.target_names();
        plan.join_servers(vec![(Some("a".into()), redis(4242, 6390)), (Some("b".into()), redis(4343, 6391))]).unwrap();
        assert_eq!(plan.target_names(), planned, "named as the plan said they would be");
        let on_a = &plan.targets[1];
        assert_eq!(on_a.name, "redis-a");
        assert_eq!((on_a.url.scheme(), on_a.url.port()), ("redis", Some(6390)));
        let server = on_a.server().expect("a spawned target carries its server");
        assert_eq!((server.pid, server.version.as_str(), server.settings["appendonly"].as_str()), (4242, "7.2.4", "no"));
        assert_eq!(plan.spawned_server("redis-b").map(|s| s.pid), Some(4343));
        assert!(plan.spawned_server("nodb").is_none());
        assert!(plan.targets.iter().all(|t| t.url.scheme() != "redis-cli"), "no client targets unless the study asks");
    }

    #[test]
    fn a_spawned_target_takes_the_studys_options_and_a_free_name() {
        let opts = RunOptions { targets: vec!["redis=redis://127.0.0.1:1".into()], spawn: vec!["redis".into()], ..Default::default() };
        let mut plan = resolve(&opts).unwrap();
        plan.cli_clients = true;
        plan.spawn_target_options.insert("redis-cli".into(), "batch=8".into());
        plan.join_servers(vec![(None, redis(7, 6390))]).unwrap();
        let names: Vec<(&str, String)> = plan.targets.iter().map(|t| (t.name.as_str(), t.url.to_string())).collect();
        assert_eq!(
            names,
            [
                ("nodb", "nodb:".to_string()),
                ("redis", "redis://127.0.0.1:1".into()),
                ("redis-spawned", "redis://127.0.0.1:6390".into()),
                ("redis-cli", "redis-cli://127.0.0.1:6390?batch=8".into())
            ]
        );
        assert!(plan.targets[1].server().is_none() && plan.spawned_server("redis-cli").is_some_and(|s| s.pid == 7));
    }
}
