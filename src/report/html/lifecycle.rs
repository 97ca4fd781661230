//! Lifecycle studies' parts of the page (in-memory): time against record count, memory per
//! record, and the per-phase tables.
//!
//! Owns only that HTML; must not measure memory or decide what counts as noise.

use super::*;

/// Record counts (params) of a lifecycle report, ascending.
pub(super) fn record_counts(r: &Report) -> Vec<u64> {
    let set: BTreeSet<u64> = r.points.iter().filter_map(|p| p.point.param).collect();
    set.into_iter().collect()
}

pub(super) fn by_count<'a>(r: &'a Report, experiment: &str) -> Vec<(String, Vec<&'a PointResult>)> {
    record_counts(r)
        .into_iter()
        .map(|n| (format!("{n}"), points_of(r, experiment).into_iter().filter(|p| p.point.param == Some(n)).collect()))
        .collect()
}

/// Lifecycle time: per key for single-key operations (read one, delete one: the run's time
/// over its keys), else the whole operation (write all, fetch all).
pub(super) fn lifecycle_value(p: &PointResult) -> Option<(f64, f64, f64)> {
    if figures::per_key(p.op) { seconds_per_op(p) } else { run_seconds(p) }
}

pub(super) fn lifecycle_time(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let groups = by_count(r, experiment);
    let per_key = groups.iter().flat_map(|(_, ps)| ps.iter()).any(|p| figures::per_key(p.op));
    let what = if per_key { "time per key" } else { "time" };
    grouped_bars(out, colors, &groups, what, &lifecycle_value, true, &Tip { value: &lifecycle_value, fmt: &fmt_secs });
    let what =
        if per_key { "Time per key (the run's wall time over the keys it read or deleted)" } else { "Wall time of the whole operation" };
    let _ = writeln!(out, "<p class=\"note\">x: record count N. {what}; median of the measured runs, whiskers min–max.</p>");
}

/// Bytes per record of a point and where the figure comes from: the engine's own
/// figure, else the spawned server's PSS, else the dbsweep process's resident memory.
pub(super) fn bytes_per_record(p: &PointResult) -> Option<(f64, &'static str)> {
    if p.is_void() {
        return None;
    }
    let m = p.summary.as_ref()?.memory.as_ref()?;
    if let Some(b) = m.engine_bytes_per_row {
        return Some((b, "engine"));
    }
    if let Some(b) = m.server_bytes_per_row {
        return Some((b, "server PSS"));
    }
    let rows = measured(p).first().map(|r| r.rows).unwrap_or(0);
    (rows > 0).then(|| (m.client_delta_bytes / rows as f64, "client RSS"))
}

pub(super) fn memory_per_record(out: &mut String, r: &Report, colors: &Colors, experiment: &str) {
    let groups = by_count(r, experiment);
    let value = |p: &PointResult| bytes_per_record(p).map(|(b, _)| (b, b, b));
    let tip = Tip { value: &value, fmt: &|b| format!("{} per record", fmt_bytes(b)) };
    grouped_bars(out, colors, &groups, "bytes per record", &value, false, &tip);
    let sources: Vec<String> = groups
        .iter()
        .flat_map(|(_, ps)| ps.iter())
        .filter_map(|p| bytes_per_record(p).map(|(_, s)| format!("{}: {s}", p.target)))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let _ = writeln!(
        out,
        "<p class=\"note\">x: record count N. Memory added per record written (median over the measured runs). Source per target — engine: as the engine reports it; server PSS: the spawned server's process group; client RSS: dbsweep's own process (embedded engines live there). {}</p>",
        esc(&sources.join("; "))
    );
}

/// The rows of a lifecycle table: one per experiment and target, one cell per record
/// count; missing points show "–", unsupported ones their flag, the rest `cell`.
pub(super) fn lifecycle_rows(
    out: &mut String,
    r: &Report,
    colors: &Colors,
    experiments: &[(String, OpKind)],
    counts: &[u64],
    cell: &mut dyn FnMut(&str, &PointResult) -> String,
) {
    for (e, _) in experiments {
        let points = points_of(r, e);
        for t in targets_of(colors, &points) {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td>",
                esc(e),
                css(colors.of(&t)),
                esc(&t)
            );
            for n in counts {
                match points.iter().find(|p| p.target == t && p.point.param == Some(*n)) {
                    None => out.push_str("<td>–</td>"),
                    Some(p) if matches!(p.status, PointStatus::NotSupported { .. }) => {
                        let _ = write!(out, "<td>{}</td>", flags_html(p));
                    }
                    Some(p) => out.push_str(&cell(&t, p)),
                }
            }
            out.push_str("</tr>\n");
        }
    }
}

pub(super) fn lifecycle_tables(out: &mut String, r: &Report, colors: &Colors) {
    let counts = record_counts(r);
    let experiments = figures::lifecycle_experiments(r);
    let head = |out: &mut String, id: &str, caption: &str| {
        let _ = write!(
            out,
            "<details class=\"data\"><summary>{}</summary>\n<div class=\"scroll\"><table id=\"{id}\"><tr><th>operation</th><th>target</th>",
            esc(caption)
        );
        for n in &counts {
            let _ = write!(out, "<th>N = {n}</th>");
        }
        out.push_str("</tr>\n");
    };
    head(out, "lifecycle-time", "Time per operation (write all and fetch all: the whole operation; read one and delete one: per key)");
    lifecycle_rows(out, r, colors, &experiments, &counts, &mut |_, p| match lifecycle_value(p) {
        _ if p.is_void() => format!("<td class=\"void\">VOID {}</td>", flags_html(p)),
        Some((m, lo, hi)) => {
            format!("<td class=\"num\">{}<br><small>{} – {}</small> {}</td>", fmt_secs(m), fmt_secs(lo), fmt_secs(hi), flags_html(p))
        }
        None => format!("<td>{}</td>", flags_html(p)),
    });
    table_close(out);
    head(out, "lifecycle-memory", "Memory per operation (MiB: change over the whole operation, median of the measured runs)");
    let mut sources = BTreeSet::new();
    lifecycle_rows(out, r, colors, &experiments, &counts, &mut |t, p| match p.summary.as_ref().and_then(|s| s.memory.as_ref()) {
        Some(m) => {
            if let Some(src) = &m.engine_source {
                sources.insert(format!("{t}: {src}"));
            }
            let parts = [("client", m.client()), ("server", m.server()), ("engine", m.engine())]
                .into_iter()
                .filter(|(_, d)| *d != MemoryDelta::Missing)
                .map(|(what, d)| format!("{what} {}", memory_delta_html(d)))
                .collect::<Vec<_>>();
            format!("<td class=\"num\">{} {}</td>", parts.join("<br>"), flags_html(p))
        }
        None => {
            format!("<td>no reading {}</td>", flags_html(p))
        }
    });
    table_close(out);
    let _ = writeln!(
        out,
        "<p class=\"note\">client: dbsweep's own resident memory, the paper's metric (its Java client's heap change over each operation); for embedded engines it includes the engine. server: PSS of the spawned server's process group (/proc/PID/smaps_rollup). engine: memory as the engine reports it ({}). Each cell is after − before the whole operation, as the paper's tables, in MiB. &lt; noise: the change is not above the noise floor (one 4 KiB page, or half the min–max spread of the measured runs' changes if larger) or the runs disagree in sign, e.g. a garbage collection gave memory back during the operation.</p>",
        if sources.is_empty() {
            "no engine figure in this run".to_string()
        } else {
            esc(&sources.into_iter().collect::<Vec<_>>().join("; "))
        }
    );
}

/// A memory change in MiB, or `< noise` with the floor in its title.
pub(super) fn memory_delta_html(d: MemoryDelta) -> String {
    match d {
        MemoryDelta::BelowNoise { floor } => {
            format!("<span class=\"noise\" title=\"noise floor {}\">&lt; noise</span>", fmt_bytes(floor))
        }
        other => esc(&crate::report::format::memory_delta(other)),
    }
}
