//! Targets and clients the tests open on servers themselves, beside what dbsweep runs:
//! adapters through the registry (as `--target` does) and a PostgreSQL admin client.

use dbsweep::adapter::registry;
use dbsweep::adapter::{OpenContext, Target, TargetUrl};
use std::path::Path;
use std::sync::Arc;

/// Opens `url` through the registry as target `name`, with its scratch files under the
/// system's temporary directory.
pub fn open(name: &str, url: &str) -> Arc<dyn Target> {
    open_in(name, url, &std::env::temp_dir())
}

/// Opens `url` through the registry as target `name`, with its scratch files in `scratch`.
pub fn open_in(name: &str, url: &str, scratch: &Path) -> Arc<dyn Target> {
    let url = TargetUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
    registry::open(name, &url, &OpenContext::new(scratch.to_path_buf())).unwrap_or_else(|e| panic!("open {name}: {e}"))
}

/// A tokio-postgres client on `url`, its connection driven on the current runtime.
pub async fn pg_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = url.parse::<tokio_postgres::Config>().unwrap().connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}
