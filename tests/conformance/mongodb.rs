//! The MongoDB adapter against FerretDB (SQLite backend) started by dbsweep's spawn code.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::sync::Arc;

async fn open() -> (Arc<dyn Target>, ()) {
    let url = crate::support::url(dbsweep::servers::ServerKind::FerretDb);
    let target = registry::open("ferretdb", &TargetUrl::parse(&url).unwrap(), &OpenContext::new(std::env::temp_dir())).unwrap();
    (target, ())
}

conformance!(ferretdb, open());

// No database in the URL: the namespace's (`dbsweep_lease_check`).
lease_conformance!(ferretdb_lease, |ctx: &OpenContext| {
    let url = crate::support::url(dbsweep::servers::ServerKind::FerretDb);
    registry::open("ferretdb", &TargetUrl::parse(&url).unwrap(), ctx).unwrap()
});
