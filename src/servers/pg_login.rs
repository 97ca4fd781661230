//! One short PostgreSQL-protocol session for the readiness probes of the servers that speak
//! it through tokio-postgres (HyPer, H2): log in, ask, log out.
//!
//! Owns how a refused login is told apart from a server that is not ready yet. Must not
//! send anything that changes data (the probes' questions are read-only).

use std::io;
use tokio_postgres::{Client, Config, NoTls};

/// Logs in with `config`, runs `ask` on the session and logs out again. A refused login
/// (SQLSTATE class 28) is `PermissionDenied`, which ends the readiness wait at once; any
/// other failure is `Other`, which the wait retries.
pub(super) async fn ask<T>(config: &Config, ask: impl AsyncFnOnce(&Client) -> Result<T, tokio_postgres::Error>) -> io::Result<T> {
    let (client, connection) = config.connect(NoTls).await.map_err(|e| {
        if e.as_db_error().is_some_and(|db| db.code().code().starts_with("28")) {
            io::Error::new(io::ErrorKind::PermissionDenied, e.to_string())
        } else {
            io::Error::other(e.to_string())
        }
    })?;
    let driver = tokio::spawn(connection);
    let answer = ask(&client).await;
    drop(client);
    let _ = driver.await;
    answer.map_err(|e| io::Error::other(e.to_string()))
}
