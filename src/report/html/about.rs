//! The page's frame around the figures: the header (study, targets, what ran), the notes on void
//! points, the folded "about this run" (targets, settings, environment, merged shards) and the
//! latency files' table.
//!
//! Owns only that HTML; must not compute statistics (the summary and findings do).

use super::*;

pub(super) fn shell_quote(arg: &str) -> String {
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+%".contains(c)) {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// The command as one shell line (the program name shortened to `dbsweep`).
pub(super) fn command_line(report: &Report) -> String {
    let mut args: Vec<String> = report.command.iter().map(|a| shell_quote(a)).collect();
    if let Some(first) = args.first_mut()
        && first.rsplit('/').next().is_some_and(|n| n == "dbsweep")
    {
        *first = "dbsweep".into();
    }
    args.join(" ")
}

/// The latency files of every point (`report::exports`), linked, in a folded table.
pub(super) fn latency_files(out: &mut String, r: &Report) {
    let points: Vec<_> = r.points.iter().filter_map(|p| p.exports.as_ref().map(|e| (p, e))).collect();
    if points.is_empty() {
        return;
    }
    let _ = write!(
        out,
        "<section id=\"latency-files\">\n<h2>Latency files</h2>\n<p class=\"note\">For HdrHistogram's tools (HistogramLogProcessor, HistoView, the hdrhistogram packages): the percentile distribution of each point's service time (<code>.hgrm</code>, microseconds) and an interval log per measured run (<code>.hlog</code>, nanoseconds per request, one histogram per interval), in <code>exports/</code> beside this page.</p>\n<details class=\"data\"><summary>files of {} points</summary>\n<div class=\"scroll\"><table id=\"latency-files-table\"><tr><th>experiment</th><th>target</th><th>point</th><th>percentiles</th><th>interval logs</th></tr>\n",
        points.len()
    );
    for (p, files) in points {
        let link = |path: &str, text: &str| format!("<a href=\"{}\">{text}</a>", esc(path));
        let logs: Vec<String> = files.hlog.iter().enumerate().map(|(i, f)| link(f, &format!("run {}", i + 1))).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.experiment),
            esc(&p.target),
            esc(&crate::report::format::point_words(&p.point, p.op)),
            link(&files.hgrm, ".hgrm"),
            logs.join(" · ")
        );
    }
    out.push_str("</table></div>\n</details>\n</section>\n");
}

/// What the echo floor measures, how to read the other results against it, and each
/// target's floor.
pub(super) fn echo_floor_meaning(out: &mut String, r: &Report) {
    let floors = crate::report::console::floor_latencies(&points_of(r, crate::plan::FLOOR_EXPERIMENT));
    let _ = writeln!(
        out,
        "<div class=\"method\" id=\"echo-floor-meaning\"><p>{}</p><p><b>Floor (p50 per request):</b> {}</p></div>",
        esc(&crate::report::console::ECHO_FLOOR_MEANING.join(" ")),
        esc(&floors)
    );
}

/// The study's two method lines (`[method]` in its TOML): what the paper measured and how
/// dbsweep's measurement differs.
pub(super) fn method(out: &mut String, r: &Report) {
    let line = |key: &str| r.plan.get("method").and_then(|m| m.get(key)).and_then(|v| v.as_str()).filter(|t| !t.is_empty());
    if let (Some(paper), Some(dbsweep)) = (line("paper"), line("dbsweep")) {
        let _ = writeln!(
            out,
            "<div class=\"method\" id=\"study-method\">\n<p><b>The paper measured:</b> {}</p>\n<p><b>dbsweep differs:</b> {}</p>\n</div>",
            esc(paper),
            esc(dbsweep)
        );
    }
}

/// "fixed rates, each point at 1k, 4k ops/s in total" or the closed loop.
pub(super) fn mode_text(r: &Report) -> String {
    // One number in reports before rates became a sweep axis, a list since.
    let rates: Vec<f64> = match r.plan.get("rate") {
        Some(serde_json::Value::Array(list)) => list.iter().filter_map(|v| v.as_f64()).collect(),
        Some(one) => one.as_f64().into_iter().collect(),
        None => Vec::new(),
    };
    match rates.as_slice() {
        [] => "closed loop (maximum throughput)".into(),
        [one] => format!("fixed rate, {} ops/s in total", chart::short(*one)),
        many => {
            format!("fixed rates, each point at {} ops/s in total", many.iter().map(|v| chart::short(*v)).collect::<Vec<_>>().join(", "))
        }
    }
}

/// The title and one line of what ran: the study's description, the targets, the mode,
/// the status when incomplete, where and when.
pub(super) fn header(out: &mut String, r: &Report) {
    let _ = write!(out, "<header>\n<h1>dbsweep: {}</h1>\n<p class=\"lede\">", esc(&r.study));
    let mut parts: Vec<String> = Vec::new();
    if let Some(description) = r.plan.get("description").and_then(|v| v.as_str()).filter(|d| !d.is_empty()) {
        parts.push(esc(description));
    }
    if !r.complete {
        parts.push(format!(
            "<span class=\"status-bad\">incomplete</span>: {}",
            esc(r.incomplete_reason.as_deref().unwrap_or("reason not recorded"))
        ));
    }
    let targets = r.targets.len();
    parts.push(format!("{targets} target{}", if targets == 1 { "" } else { "s" }));
    parts.push(esc(&mode_text(r)));
    parts.push(format!("{} on {}", esc(&r.started_at), esc(&r.environment.hostname)));
    out.push_str(&parts.join(" · "));
    out.push_str(" · <a href=\"#about\">about this run</a></p>\n</header>\n");
}

/// Points whose answers differ or whose timing is void: said once, loudly, under the findings.
pub(super) fn void_notes(out: &mut String, r: &Report) {
    let mismatches = r.points.iter().filter(|p| p.flags.iter().any(|f| matches!(f, Flag::AnswerMismatch { .. }))).count();
    if mismatches > 0 {
        let _ = writeln!(
            out,
            "<p><span class=\"flag loud\">ANSWER MISMATCH</span> at {mismatches} point{}: those timings are void (see the flagged rows).</p>",
            if mismatches == 1 { "" } else { "s" }
        );
    }
    let voided = r.points.iter().filter(|p| p.is_void()).count();
    if voided > 0 {
        let _ = writeln!(
            out,
            "<p id=\"voided\"><span class=\"flag loud\">VOID</span> at {voided} point{}: requests failed or rows were missing, so those timings are void; they are not plotted (a red × marks the gap) and have no throughput.</p>",
            if voided == 1 { "" } else { "s" }
        );
    }
}

/// After the charts: the study's method, the run's facts, the targets and their settings
/// (folded), what could not run, the warnings, how to reproduce it and how to read it.
pub(super) fn about(out: &mut String, r: &Report, colors: &Colors) {
    out.push_str("<section id=\"about\">\n<h2>About this run</h2>\n");
    method(out, r);
    let _ = writeln!(out, "<p class=\"note\" id=\"reading-findings\"><b>Reading the findings.</b> {}</p>", esc(findings::READING));
    let status = if r.complete {
        "<span class=\"status-ok\">complete</span>".to_string()
    } else {
        format!("<span class=\"status-bad\">incomplete</span>: {}", esc(r.incomplete_reason.as_deref().unwrap_or("reason not recorded")))
    };
    out.push_str("<details class=\"data\"><summary>the run: command, seed, times, status, host, versions</summary>\n<div class=\"scroll\"><table class=\"facts\" id=\"run-facts\">\n");
    let mut rows: Vec<(&str, String)> = vec![
        ("study", esc(&r.study)),
        ("command", format!("<code>{}</code>", esc(&command_line(r)))),
        ("seed", r.seed.to_string()),
        ("started", esc(&r.started_at)),
        ("finished", esc(r.finished_at.as_deref().unwrap_or("-"))),
        ("status", status),
        (
            "files",
            format!(
                "<a href=\"results.csv\">results.csv</a> · <a href=\"results_ops.csv\" title=\"one row per run and operation type (YCSB workloads' reads, updates, ...)\">results_ops.csv</a> · <a href=\"report.json\">report.json</a>{} (beside this page)",
                if r.points.iter().any(|p| p.exports.is_some()) {
                    " · <a href=\"#latency-files\">latency files</a> (exports/)"
                } else {
                    ""
                }
            ),
        ),
        ("mode", esc(&mode_text(r))),
        (
            "dbsweep",
            format!("{}{}", esc(&r.dbsweep_version), r.git_revision.as_deref().map(|g| format!(" (git {})", esc(g))).unwrap_or_default()),
        ),
        ("host", esc(&r.environment.hostname)),
        ("CPU", format!("{} ({} cores)", esc(&r.environment.cpu_model), r.environment.cores)),
        ("memory", fmt_bytes(r.environment.memory_bytes as f64)),
        ("OS", format!("{} (kernel {})", esc(&r.environment.os), esc(&r.environment.kernel))),
    ];
    if let Some(length) = crate::report::console::time_based_runs(&r.plan) {
        let mode = rows.iter().position(|(k, _)| *k == "mode").map_or(rows.len(), |i| i + 1);
        rows.insert(mode, ("runs", format!("{length} (time-based: a run's ops are what its clients sent in that time)")));
    }
    if !r.resumed.is_empty() {
        rows.insert(6, ("resumed", esc(&crate::report::console::resumptions(r).join("; "))));
    }
    for (k, v) in rows {
        let _ = writeln!(out, "<tr><td>{k}</td><td>{v}</td></tr>");
    }
    if let Some(shard) = r.shard {
        let hash = r.plan_hash.as_deref().unwrap_or("-");
        let _ = writeln!(
            out,
            "<tr><td>shard</td><td>{shard} of plan <code>{}</code>: join the shards with <code>dbsweep merge</code></td></tr>",
            esc(hash)
        );
    }
    out.push_str("</table></div></details>\n");
    merged_parts(out, r);
    targets_table(out, r, colors);
    if !r.unavailable.is_empty() {
        out.push_str("<h3>Not run here</h3>\n<ul id=\"unavailable\">");
        for u in &r.unavailable {
            let _ = write!(out, "<li><b>{}</b>: {}</li>", esc(&u.system), esc(&u.reason));
        }
        out.push_str("</ul>\n");
    }
    if !r.warnings.is_empty() {
        let _ = write!(
            out,
            "<details class=\"data\"{}><summary>warnings ({})</summary>\n<ul class=\"warnings\" id=\"warnings\">",
            if r.warnings.len() <= 3 { " open" } else { "" },
            r.warnings.len()
        );
        for w in &r.warnings {
            let _ = write!(out, "<li>{}</li>", esc(w));
        }
        out.push_str("</ul></details>\n");
    }
    let _ = write!(
        out,
        "<h3>Reproduce</h3>\n<pre id=\"reproduce\">{}</pre>\n<p class=\"note\">Same seed, same operations. Numbers are the median of the measured runs (warm-up excluded); error bars and ranges are the min and max of those runs (error bars widened to the 95% confidence interval where that is wider; ±95% CI: the widest relative half-width of a run's throughput interval, by batch means); latency percentiles come from the runs' merged HDR histograms. Flags: <span class=\"flag warn\">client-bound (N%)</span> throughput is N% of the NO-DB ceiling's, so the client may be the bottleneck, <span class=\"flag loud\">ANSWER MISMATCH</span> the timing is void, <span class=\"flag loud\">ERRORS</span> requests failed and <span class=\"flag loud\">MISSING ROWS</span> requests returned or affected fewer rows than the plan expects: the point is void, it has no throughput and is not plotted (a red × on the axis marks the gap), <span class=\"flag na\">not supported</span>; other flagged points have a red ring in the charts.</p>\n</section>\n",
        esc(&command_line(r))
    );
}

/// Every target with its system, version, URL, capabilities and settings, folded.
pub(super) fn targets_table(out: &mut String, r: &Report, colors: &Colors) {
    let _ = write!(
        out,
        "<details class=\"data\" id=\"targets\"><summary>targets and their settings ({})</summary>\n<div class=\"scroll\"><table id=\"targets-table\"><tr><th>target</th><th>system</th><th>version</th><th>URL</th><th>execution</th><th>native batches</th><th>secondary indexes</th><th>settings</th></tr>\n",
        r.targets.len()
    );
    for t in &r.targets {
        let settings: Vec<String> = t.settings.iter().map(|(k, v)| format!("<code>{}={}</code>", esc(k), esc(v))).collect();
        let _ = writeln!(
            out,
            "<tr><td class=\"target\"><span class=\"sw\" style=\"background:{}\"></span>{}</td><td>{}</td><td>{}</td><td class=\"url\"><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td class=\"settings\">{}</td></tr>",
            css(colors.of(&t.name)),
            esc(&t.name),
            esc(&t.system),
            esc(&t.version),
            esc(&t.url),
            t.execution.name(),
            if t.capabilities.native_batch { "yes" } else { "no" },
            if t.capabilities.secondary_indexes { "yes" } else { "no" },
            settings.join(" ")
        );
    }
    out.push_str("</table></div></details>\n");
}

/// The run directories `dbsweep merge` joined, with where and how each ran.
pub(super) fn merged_parts(out: &mut String, r: &Report) {
    if r.merged_from.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Merged from {} run directories (plan <code>{}</code>)</h3>\n<div class=\"scroll\"><table id=\"merged-from\"><tr><th>directory</th><th>shard</th><th>host</th><th>started</th><th>finished</th><th>status</th><th>points</th><th>command</th></tr>",
        r.merged_from.len(),
        esc(r.plan_hash.as_deref().unwrap_or("-"))
    );
    for part in &r.merged_from {
        let status = if part.complete {
            "complete".to_string()
        } else {
            format!("incomplete: {}", part.incomplete_reason.as_deref().unwrap_or("-"))
        };
        let command: Vec<String> = part.command.iter().map(|a| shell_quote(a)).collect();
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td></tr>",
            esc(&part.dir),
            part.shard.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            esc(&part.hostname),
            esc(&part.started_at),
            esc(part.finished_at.as_deref().unwrap_or("-")),
            esc(&status),
            part.points,
            esc(&command.join(" "))
        );
    }
    out.push_str("</table></div>\n");
}
