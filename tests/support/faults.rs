//! Ways to make a real server reject requests under a run, for the tests of error
//! accounting: each breaks something the system itself then refuses.

use futures_util::future::BoxFuture;

/// Redis overwrites a repeated key, so the fault is a value of the wrong type: the `kv`
/// table's key set (a sorted set every insert `ZADD`s to) becomes a string, and every
/// insert gets WRONGTYPE from the server (inside MULTI/EXEC, or in a pipeline).
/// `target_url`: a `redis://` or `redis-cli://` target URL.
pub fn redis_key_set_string(target_url: String, _victim: i64) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let mut url = url::Url::parse(&target_url.replacen("redis-cli://", "redis://", 1)).unwrap();
        url.set_query(None);
        let mut conn = redis::Client::open(url.as_str()).unwrap().get_multiplexed_async_connection().await.unwrap();
        let () = redis::cmd("SET").arg("dbsweep:kv:pk").arg("not a sorted set").query_async(&mut conn).await.unwrap();
    })
}
