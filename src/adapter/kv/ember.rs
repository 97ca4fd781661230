//! Ember, a hypothetical key-value store that speaks Redis's protocol: the whole adapter
//! of a new Redis-protocol system. It reuses the Redis adapter (the mapping of rows to
//! hashes and sorted sets, batches, Lua) and reports itself as `ember`. Must not connect
//! anywhere but in the Redis adapter's `prepare`/`connect`.

use crate::adapter::declaration::{Declaration, Needs, UrlOptions};
use crate::adapter::kv::redis::{self, Redis};
use crate::servers::ServerKind;
use std::sync::Arc;

pub const SYSTEM: Declaration = Declaration {
    system: "ember",
    url: "ember://",
    description: "Ember, a Redis-protocol store: a hash per row, sorted sets for keys and indexes (Redis' mapping)",
    // The server `--spawn` starts for it: Redis's, until `servers/` can start Ember's own.
    needs: Needs::Server(ServerKind::Redis),
    schemes: &["ember"],
    options: UrlOptions::Only(&["batch"]),
    several_hosts: false,
    capabilities: redis::CAPABILITIES,
    open: Some(|name, url, ctx| Ok(Arc::new(Redis::speaking_redis(&SYSTEM, name, url, ctx)?))),
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::adapter::registry::{Registry, SYSTEMS};
    use crate::adapter::{OpenContext, TargetUrl, nodb};

    /// dbsweep's registry with Ember's line added, as `SYSTEMS` would have it.
    const WITH_EMBER: Registry = Registry(&[nodb::SYSTEM, redis::REDIS, SYSTEM]);

    fn open(registry: Registry, url: &str) -> crate::error::Result<crate::adapter::TargetInfo> {
        let dir = tempfile::tempdir().unwrap();
        registry.open("e", &TargetUrl::parse(url).unwrap(), &OpenContext::new(dir.path())).map(|target| target.info().clone())
    }

    #[test]
    fn one_registry_line_makes_the_new_system_known() {
        let info = open(WITH_EMBER, "ember://127.0.0.1:1/0?batch=pipeline").unwrap();
        assert_eq!(info.system, "ember");
        assert_eq!(info.capabilities, redis::REDIS.capabilities.to_capabilities());
        assert!(info.settings["batch"].starts_with("pipeline"), "{:?}", info.settings);
        let refused = |url: &str| open(WITH_EMBER, url).unwrap_err().to_string();
        assert_eq!(
            refused("ember://127.0.0.1:1/0?cluster=true"),
            "target 'e': unknown URL option 'cluster' for a ember URL (it takes: batch)"
        );
        assert!(refused("embr://127.0.0.1:1").contains("(did you mean 'ember'?)"), "{}", refused("embr://127.0.0.1:1"));
        // It is hypothetical: dbsweep's own registry does not list it.
        assert!(open(Registry(SYSTEMS), "ember://127.0.0.1:1").unwrap_err().to_string().contains("unknown URL scheme 'ember:'"));
    }

    /// The page shows this file's adapter, so that the example a newcomer copies compiles.
    #[test]
    fn docs_adding_a_system_shows_this_file() {
        let page = include_str!("../../../docs/adding-a-system.md");
        let shown = page.split("```rust\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a rust block in the page");
        let file = include_str!("ember.rs");
        let adapter = file.split("#[cfg(test)]").next().unwrap().trim_end();
        assert_eq!(
            shown.trim_end(),
            adapter,
            "docs/adding-a-system.md's first rust block must be src/adapter/kv/ember.rs up to its tests; copy the file's text into it"
        );
    }
}
