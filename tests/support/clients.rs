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

/// The `INFO section` text of the Redis server at `url`.
pub fn redis_info(url: &str, section: &str) -> String {
    let mut conn = redis::Client::open(url).unwrap().get_connection().unwrap();
    redis::cmd("INFO").arg(section).query(&mut conn).unwrap()
}

/// `calls=` of `command` in an `INFO commandstats` text (0 when the server has not run it).
pub fn redis_calls(commandstats: &str, command: &str) -> u64 {
    commandstats
        .lines()
        .find(|l| l.starts_with(&format!("cmdstat_{command}:")))
        .and_then(|l| l.split("calls=").nth(1))
        .and_then(|v| v.split(',').next())
        .map(|v| v.parse().unwrap())
        .unwrap_or(0)
}
