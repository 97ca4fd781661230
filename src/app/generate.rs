//! `dbsweep gen`: input data for other tools — the insert-find study's shuffled keys as
//! CSV, and TPC-H's tables into dbsweep's cache. Must not run benchmarks.

use super::signals::{STOP_SIGNAL, stop_on_signals};
use super::{say, writable_file};
use crate::data::pairs::{PairGen, PairValue};
use crate::error::{Error, Result};
use crate::{plan, report};
use std::path::PathBuf;

/// `dbsweep gen keys`: keys 1..=N shuffled by `seed`, with their values, to `out` or stdout.
pub(super) fn keys(n: u64, seed: u64, value_bytes: Option<usize>, out: Option<PathBuf>) -> Result<()> {
    if n == 0 {
        return Err(Error::usage("gen keys: N must be at least 1"));
    }
    plan::bounds::check_keys(n, value_bytes, &plan::bounds::Machine::here())?;
    let out = out.map(|path| writable_file("gen keys --out", path)).transpose()?;
    let values = match value_bytes {
        Some(bytes) => PairGen::new(seed, PairValue::Text, bytes),
        None => PairGen::new(seed, PairValue::Int, 0),
    };
    let text = crate::data::keys::to_csv(n, seed, &values);
    match out {
        Some(path) => report::write_atomic(&path, text.as_bytes()),
        None => say(&text),
    }
}

/// `dbsweep gen tpch`: TPC-H's tables at `scale` into the cache; prints their directory.
/// Ctrl-C or SIGTERM stops it with no partial files left.
pub(super) fn tpch(scale: f64) -> Result<()> {
    crate::data::tpch::check_scale(scale).map_err(|e| Error::usage(e.replace("data.scale", "gen tpch --scale")))?;
    let root = crate::data::tpch_cache::root()?;
    let stop = stop_on_signals();
    if let Err(e) = crate::data::tpch_cache::generate_here(&root, scale, stop) {
        // Stopped: the partial files are gone (a run that started this generator
        // asks with SIGTERM).
        return Err(match STOP_SIGNAL.load(std::sync::atomic::Ordering::Relaxed) {
            libc::SIGINT => Error::Interrupted("interrupted; no TPC-H files were left".into()),
            libc::SIGTERM => Error::Terminated("terminated by SIGTERM; no TPC-H files were left".into()),
            _ => e,
        });
    }
    let cache = crate::data::tpch_cache::TpchCache::open(&root, scale)
        .ok_or_else(|| Error::runtime(format!("the TPC-H cache in {} is incomplete", root.display())))?;
    say(&format!("{}\n", cache.dir().display()))
}
