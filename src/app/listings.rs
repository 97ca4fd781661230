//! `dbsweep studies` and `dbsweep targets`: what dbsweep can run, as text or JSON. Must not
//! start servers or write files.

use super::say;
use crate::adapter::probe;
use crate::cli::StudiesFormat;
use crate::error::{Error, Result};
use crate::plan;
use std::fmt::Write as _;

/// `dbsweep studies`: each built-in study's name and description, or as JSON also its
/// paper (the `[method]` lines), its own targets, the servers `--spawn all` starts and the
/// systems it names that cannot run here.
pub(super) fn studies(format: StudiesFormat) -> Result<()> {
    let mut out = String::new();
    let mut listed = Vec::new();
    for (name, _) in plan::BUILT_IN {
        let study = plan::load_study(name)?;
        let _ = writeln!(out, "{name:<18} {}", study.description);
        listed.push(serde_json::json!({
            "name": name,
            "description": study.description,
            "paper": study.method.as_ref().map(|m| &m.paper),
            "targets": study.targets.iter().map(|t| &t.name).collect::<Vec<_>>(),
            "spawn_all": plan::spawn_all(&study)?.iter().map(|k| k.name()).collect::<Vec<_>>(),
            "unavailable": plan::unavailable_systems(&study)?
                .into_iter()
                .map(|(system, reason)| serde_json::json!({ "system": system, "reason": reason }))
                .collect::<Vec<_>>(),
            "experiments": study.experiments.iter().map(|e| &e.name).collect::<Vec<_>>(),
        }));
    }
    if format == StudiesFormat::Json {
        let json = serde_json::json!({ "studies": listed });
        out = serde_json::to_string_pretty(&json).map_err(|e| Error::runtime(format!("cannot write the JSON: {e}")))? + "\n";
    }
    say(&out)
}

/// `dbsweep targets`: what `probe::probe_all` found, as text or JSON.
pub(super) fn targets(format: probe::Format) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::runtime(format!("cannot start the async runtime: {e}")))?;
    let systems = runtime.block_on(probe::probe_all())?;
    if format == probe::Format::Json {
        let json = serde_json::json!({ "systems": systems });
        let text = serde_json::to_string_pretty(&json).map_err(|e| Error::runtime(format!("cannot write the JSON: {e}")))?;
        return say(&format!("{text}\n"));
    }
    let mut out = String::new();
    let indent = " ".repeat(26 + 1 + 11 + 1 + 13 + 1);
    let _ = writeln!(out, "{:<26} {:<11} {:<13} version / why not", "URL", "system", "status");
    for s in &systems {
        let detail = s.version.as_deref().or(s.reason.as_deref()).unwrap_or_default();
        let _ = writeln!(out, "{:<26} {:<11} {:<13} {detail}", s.scheme, s.system, s.status.word());
        if !s.files.is_empty() {
            let files: Vec<String> = s.files.iter().map(|f| f.display().to_string()).collect();
            let _ = writeln!(out, "{indent}found: {}", files.join(", "));
        }
        let _ = writeln!(out, "{indent}{}", s.description);
        if let Some(caps) = &s.capabilities {
            let ops: Vec<&str> = caps.ops.iter().map(|k| k.name()).collect();
            let queries: Vec<String> = caps.queries.iter().map(|q| format!("{q:?}")).collect();
            let _ = writeln!(out, "{indent}ops: {}{}", ops.join(" "), if caps.native_batch { "; native batches" } else { "" });
            if !queries.is_empty() {
                let _ = writeln!(out, "{indent}queries: {}", queries.join(" "));
            }
        }
    }
    if systems.iter().any(|s| s.status == probe::Status::NotInstalled && s.spawn.is_some()) {
        let _ = writeln!(
            out,
            "\nnot installed: --spawn cannot start that server here; one you run yourself can still be named with --target NAME=URL"
        );
    }
    say(&out)
}
