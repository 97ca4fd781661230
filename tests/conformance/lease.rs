//! The lease conformance body: every adapter whose data other runs can reach stores the
//! run's lease record with a real compare-and-swap (`adapter::lease::LeaseStore`): a
//! second taker loses, a swap from a record that is not stored changes nothing, two takers
//! at once never both win, and the target's own prepare/load/cleanup leave the record alone.

use dbsweep::adapter::lease::{Holder, Namespace};
use dbsweep::adapter::{OpenContext, Target};
use dbsweep::data::kv::{self, KvGen};
use std::sync::Arc;

/// Runs the lease body as its own `#[test]`; `$open` turns an `&OpenContext` into a target
/// on the adapter's test server (called twice: two runs opening the same target).
#[macro_export]
macro_rules! lease_conformance {
    ($name:ident, $open:expr) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            $crate::lease::check_lease($open).await;
        }
    };
}

fn run_context() -> OpenContext {
    OpenContext { namespace: Namespace::new(Some("lease_check")).unwrap(), ..OpenContext::new(std::env::temp_dir()) }
}

pub async fn check_lease(open: impl Fn(&OpenContext) -> Arc<dyn Target>) {
    let (first, second) = (open(&run_context()), open(&run_context()));
    let a = first.clone().lease().expect("a target other runs can reach has a lease store");
    let b = second.lease().expect("a lease store");
    assert_eq!(a.place(), b.place(), "two runs on one target meet at one place");
    assert!(a.place().contains("dbsweep_lease_check"), "the place names the namespace: {}", a.place());
    let [r1, r2, r3] = [0, 1, 2].map(|i| Holder { run: format!("run{i}"), ..Holder::this_process() }.encode());

    assert_eq!(a.read().await.unwrap(), None, "no lease yet (left over from an earlier test run?)");
    assert!(a.swap(None, Some(&r1)).await.unwrap());
    assert!(!b.swap(None, Some(&r2)).await.unwrap(), "a second taker loses");
    assert_eq!(b.read().await.unwrap().as_deref(), Some(r1.as_str()));
    assert!(!b.swap(Some(&r2), Some(&r3)).await.unwrap(), "a swap from a record that is not stored changes nothing");
    assert!(b.swap(Some(&r1), Some(&r2)).await.unwrap(), "a swap from the stored record wins");
    assert_eq!(a.read().await.unwrap().as_deref(), Some(r2.as_str()));

    // The holder's own work in the namespace leaves the record alone.
    let table = kv::shared_def();
    first.prepare(std::slice::from_ref(&table)).await.expect("prepare under the lease");
    let rowgen = KvGen::new(1, 50, 8);
    assert_eq!(first.load(&table, Box::new((0..50).map(move |k| rowgen.row(k)))).await.unwrap(), 50);
    first.cleanup().await.expect("cleanup under the lease");
    assert_eq!(a.read().await.unwrap().as_deref(), Some(r2.as_str()), "prepare and cleanup keep the lease record");

    assert!(!a.swap(Some(&r1), None).await.unwrap(), "another run's record is not removed");
    assert!(a.swap(Some(&r2), None).await.unwrap());
    assert_eq!(a.read().await.unwrap(), None);

    // Two takers at once: exactly one wins.
    for _ in 0..3 {
        let (x, y) = tokio::join!(a.swap(None, Some(&r1)), b.swap(None, Some(&r3)));
        assert_eq!(u8::from(x.unwrap()) + u8::from(y.unwrap()), 1, "exactly one of two simultaneous takers wins");
        let winner = a.read().await.unwrap().expect("the winner's record");
        assert!(winner == r1 || winner == r3);
        assert!(a.swap(Some(&winner), None).await.unwrap());
    }
    assert_eq!(a.read().await.unwrap(), None);
}
