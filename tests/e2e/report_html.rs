//! report.html in a real browser: real `--quick` runs through the binary, rendered by
//! headless Chromium (`scripts/setup-browser` installs it; DBSWEEP_CHROMIUM overrides
//! /usr/bin/chromium).
//!
//! The embedded study (few experiments): the screenshot is a real picture, the page loaded
//! without script errors, every planned figure has its SVG with point tooltips (latency at
//! every client count), the findings rank every experiment, and the page made no network
//! request: every request is routed to a local proxy that records the host asked for; apart
//! from Chromium's own service hosts (updater, account and time checks that headless
//! Chromium makes for itself whatever the page), there must be none. A control page with one
//! external image proves the proxy sees page requests.
//!
//! The layout as a user sees it at 1400 x 900, measured in the page (`MEASURE`) for a
//! 2-target report, a 12-target report and a rate sweep: the page is no wider than the
//! window (folded or unfolded), no numeric cell or target name wraps, the findings and the
//! first chart start within the first 1,500 px, each system keeps its colour from one
//! report to the next, and a quick rate sweep is a few screens tall.

use crate::support;
use dbsweep::report::{self, html::figures};
use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn chromium() -> PathBuf {
    let path = std::env::var_os("DBSWEEP_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(path.exists(), "{} not found: run scripts/setup-browser (as root) to install Chromium", path.display());
    path
}

/// Hosts headless Chromium contacts for itself, whatever page it shows.
const CHROMIUM_OWN_HOSTS: &[&str] = &["update.googleapis.com", "accounts.google.com", "clients2.google.com"];

/// What the recording proxy saw: the host of each request, and how many connections it
/// is still reading.
#[derive(Default)]
struct Recorded {
    hosts: Mutex<Vec<String>>,
    open: AtomicUsize,
}

/// A "proxy" that answers nothing and records the host of every request the browser sends.
/// Each connection is read on its own thread for up to 5 s, so a slow one under load is
/// not cut short; a connection that sends nothing (Chromium opens spare ones) records
/// nothing.
fn recording_proxy() -> (u16, Arc<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let recorded = Arc::new(Recorded::default());
    let seen = recorded.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.open.fetch_add(1, Ordering::SeqCst);
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
                let mut request = Vec::new();
                let mut buf = [0u8; 2048];
                while !request.contains(&b'\n') {
                    match stream.read(&mut buf) {
                        Ok(n) if n > 0 => request.extend_from_slice(&buf[..n]),
                        _ => break,
                    }
                }
                // "CONNECT host:443 HTTP/1.1" or "GET http://host/path HTTP/1.1".
                let line = String::from_utf8_lossy(&request).lines().next().unwrap_or("").to_string();
                if let Some(target) = line.split_whitespace().nth(1) {
                    let host =
                        target.trim_start_matches("http://").trim_start_matches("https://").split(['/', ':']).next().unwrap_or(target);
                    seen.hosts.lock().unwrap().push(host.to_string());
                }
                seen.open.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (port, recorded)
}

/// Hosts the page asked for (Chromium's own service hosts left out), once every
/// connection the proxy accepted has been read.
fn page_requests(recorded: &Recorded) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    std::thread::sleep(Duration::from_millis(300));
    while recorded.open.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    recorded.hosts.lock().unwrap().iter().filter(|h| !CHROMIUM_OWN_HOSTS.contains(&h.as_str())).cloned().collect()
}

/// Runs headless Chromium on the page with `extra` arguments in a 1400 x 4000 window;
/// returns its stdout.
fn browse(page: &Path, proxy_port: u16, extra: &[String]) -> String {
    browse_at(page, proxy_port, (1400, 4000), extra)
}

/// Runs headless Chromium on the page in a window of `size` (CSS pixels).
fn browse_at(page: &Path, proxy_port: u16, size: (u32, u32), extra: &[String]) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
        ])
        .arg(format!("--window-size={},{}", size.0, size.1))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{proxy_port}"))
        .arg("--proxy-bypass-list=<-loopback>")
        .args(extra)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(out.status.success(), "chromium failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Decodes an RGB(A) PNG; returns (width, height, distinct colours, share of non-white pixels).
fn picture_stats(path: &Path) -> (u32, u32, usize, f64) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut buf).unwrap();
    let channels = info.color_type.samples();
    assert!(channels >= 3, "expected an RGB screenshot, got {:?}", info.color_type);
    let bytes = &buf[..info.buffer_size()];
    let mut colours = std::collections::HashSet::new();
    let mut ink = 0usize;
    let pixels = bytes.len() / channels;
    for px in bytes.chunks_exact(channels) {
        colours.insert((px[0], px[1], px[2]));
        if px[0] < 240 || px[1] < 240 || px[2] < 240 {
            ink += 1;
        }
    }
    (info.width, info.height, colours.len(), ink as f64 / pixels as f64)
}

#[test]
fn report_html_renders_in_headless_chromium_with_every_figure_and_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let run_dir = dir.path().join("run");
    let out = support::command()
        .args(["run", "embedded", "--quick", "--experiments", "echo,insert,get,range-count", "--ops", "100", "--no-progress", "--out"])
        .arg(&run_dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "run failed: {}", String::from_utf8_lossy(&out.stderr));
    let page = run_dir.join(report::REPORT_HTML);
    let html = std::fs::read_to_string(&page).expect("the run wrote report.html");
    let saved = report::load(&run_dir).unwrap();
    assert_eq!(html, report::html::render(&saved), "report.html is rendered from report.json alone");

    // Everything inline: no external resources referenced at all.
    for needle in ["<link", "src=", "url(", "@import", "href=\"http", "href=\"//"] {
        assert!(!html.contains(needle), "report.html references an external resource ({needle})");
    }

    let (port, hosts) = recording_proxy();
    let shot = dir.path().join("report.png");
    browse(&page, port, &[format!("--screenshot={}", shot.display())]);
    let dom = browse(&page, port, &["--dump-dom".to_string(), "--virtual-time-budget=3000".to_string()]);

    // The screenshot is a picture with charts, not a blank page.
    let (w, h, colours, ink) = picture_stats(&shot);
    assert_eq!((w, h), (1400, 4000));
    assert!(colours > 200, "only {colours} distinct colours in the screenshot: blank or unstyled page");
    assert!(ink > 0.03, "only {:.1}% of the screenshot is not white", ink * 100.0);
    if let Some(keep) = std::env::var_os("DBSWEEP_KEEP_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }

    // Loaded, and no script or resource error.
    assert!(dom.contains("data-loaded=\"1\""), "the load event did not fire: {}", &dom[..dom.len().min(400)]);
    assert!(dom.contains("data-errors=\"\""), "the page reported errors: {}", &dom[..dom.len().min(600)]);

    // Every planned figure is in the DOM with SVG content, including the study's axes.
    let ids = figures::figure_ids(&saved);
    for expected in
        ["fig-echo-clients", "fig-insert-clients", "fig-insert-batch", "fig-get-batch", "fig-range-count-width", "fig-get-latency"]
    {
        assert!(ids.iter().any(|i| i == expected), "figure {expected} not planned: {ids:?}");
    }
    for id in &ids {
        let at = dom.find(&format!("id=\"{id}\"")).unwrap_or_else(|| panic!("figure {id} missing from the DOM"));
        let end = at + dom[at..].find("</figure>").unwrap();
        let fig = &dom[at..end];
        let marks = fig.matches("<polyline").count() + fig.matches("<circle").count() + fig.matches("<rect").count().saturating_sub(1);
        assert!(fig.contains("<svg") && marks > 0, "figure {id} has an empty chart");
        assert!(fig.contains("<table>"), "figure {id} has no data table");
        assert!(fig.contains("<title>") && fig.contains(" · "), "figure {id} has no point tooltips");
    }
    assert!(dom.contains(&format!("data-svg-count=\"{}\"", ids.len())), "the browser counted a different number of charts");
    // Latency at every client count: one small chart per client count of the echo sweep.
    let echo_clients: std::collections::BTreeSet<usize> =
        saved.points.iter().filter(|p| p.experiment == "echo" && !p.point.batched).map(|p| p.point.clients).collect();
    assert!(echo_clients.len() >= 2, "{echo_clients:?}");
    let at = dom.find("id=\"fig-echo-latency\"").expect("the echo latency figure");
    let fig = &dom[at..at + dom[at..].find("</figure>").unwrap()];
    for c in &echo_clients {
        assert!(fig.contains(&format!("data-clients=\"{c}\"")), "no latency chart at {c} clients");
    }

    // The findings come first, one headline per experiment, and the page fits the window.
    let layout = Layout::of(&page, port);
    layout.assert_reads_at_a_glance("the embedded study's report");
    let findings = &dom[dom.find("id=\"findings\"").unwrap()..];
    let findings = &findings[..findings.find("</section>").unwrap()];
    let mut experiments: Vec<&str> = saved.points.iter().map(|p| p.experiment.as_str()).filter(|e| *e != "echo-floor").collect();
    experiments.dedup();
    assert!(experiments.len() >= 4, "{experiments:?}");
    for e in &experiments {
        assert!(findings.contains(&format!("<li data-experiment=\"{e}\">")), "the findings do not rank {e}");
    }
    assert!(findings.contains("id=\"relative-table\"") && findings.contains("geometric mean"), "no relative-performance table");
    for t in &saved.targets {
        assert!(dom.contains(&t.version), "target {} version missing", t.name);
    }

    assert_eq!(page_requests(&hosts), Vec::<String>::new(), "report.html made network requests");

    // The detector works: a page with one external image does reach the proxy.
    let control = dir.path().join("control.html");
    std::fs::write(&control, "<!DOCTYPE html><html><body><img src=\"http://dbsweep.invalid/x.png\"></body></html>").unwrap();
    browse(&control, port, &["--dump-dom".to_string(), "--virtual-time-budget=3000".to_string()]);
    assert!(page_requests(&hosts).iter().any(|h| h == "dbsweep.invalid"), "the proxy did not see the control page's request");
}

/// Measures the page as a user sees it, in the page itself: run after load by a copy of
/// the page with this script added, it writes its measurements as JSON into a `<pre>`
/// that `--dump-dom` returns. With every `<details>` closed (as the page opens) and
/// again with all of them open (a user who unfolds every table): the page's width;
/// with them closed, its height, where the findings start and where the first chart
/// starts; with them open, the numeric and target-name cells whose text takes more than
/// one line, and each target's colour swatch in the targets table.
const MEASURE: &str = r#"<script>window.addEventListener('load',function(){
var de=document.documentElement,out={window:window.innerWidth};
function width(){return Math.max(de.scrollWidth,document.body.scrollWidth);}
function top(el){return el?Math.round(el.getBoundingClientRect().top+window.scrollY):-1;}
out.width=width();out.height=de.scrollHeight;
out.findings_top=top(document.getElementById('findings'));
out.first_chart_top=top(document.querySelector('figure svg'));
var details=Array.prototype.slice.call(document.querySelectorAll('details'));
var was=details.map(function(d){return d.open;});details.forEach(function(d){d.open=true;});
out.width_unfolded=width();
var numeric=/^[-+±~<>]?\d[\d.,]*\s?(x|%|[kMG]|ns|µs|ms|s|B|KiB|MiB|GiB|ops\/s|\/s)?(\s*([-–]|of)\s*\d[\d.,]*\s?(x|%|[kMG]|ns|µs|ms|s|B|KiB|MiB|GiB|ops\/s|\/s)?)?$/;
var checked=0,wrapped=[];
document.querySelectorAll('td').forEach(function(c){
  var text=c.textContent.replace(/\s+/g,' ').trim();
  var name=c.firstElementChild&&c.firstElementChild.classList.contains('sw');
  if(!text||c.querySelector('br')||!(name||c.classList.contains('num')||numeric.test(text))){return;}
  checked++;var range=document.createRange();range.selectNodeContents(c);
  var rects=Array.prototype.filter.call(range.getClientRects(),function(r){return r.width>0&&r.height>0;});
  if(rects.length&&rects.some(function(r){return r.top>=rects[0].bottom-1||r.bottom<=rects[0].top+1;})){wrapped.push(text);}
});
out.checked_cells=checked;out.wrapped=wrapped;out.colors={};
document.querySelectorAll('#targets-table tr').forEach(function(tr){var c=tr.querySelector('td');var sw=c&&c.querySelector('.sw');
  if(sw){out.colors[c.textContent.trim()]=getComputedStyle(sw).backgroundColor;}});
details.forEach(function(d,i){d.open=was[i];});
var pre=document.createElement('pre');pre.id='dbsweep-layout';pre.textContent=JSON.stringify(out);document.body.appendChild(pre);});
</script>"#;

/// The layout of one report at 1400 x 900, as `MEASURE` finds it.
#[derive(Debug)]
struct Layout {
    window: f64,
    /// The page's scroll width as it opens, and with every folded table unfolded.
    width: f64,
    width_unfolded: f64,
    height: f64,
    findings_top: f64,
    first_chart_top: f64,
    /// Numeric and target-name table cells looked at, and the text of those that wrap.
    checked_cells: usize,
    wrapped: Vec<String>,
    /// Target name to its swatch's CSS colour.
    colors: BTreeMap<String, String>,
}

impl Layout {
    /// Renders a copy of `page` with `MEASURE` added in headless Chromium at 1400 x 900.
    fn of(page: &Path, proxy_port: u16) -> Layout {
        let html = std::fs::read_to_string(page).unwrap();
        let measured = page.with_file_name("measured-report.html");
        let end = html.rfind("</body>").expect("the page has a body");
        std::fs::write(&measured, format!("{}{MEASURE}{}", &html[..end], &html[end..])).unwrap();
        let dom = browse_at(&measured, proxy_port, (1400, 900), &["--dump-dom".to_string(), "--virtual-time-budget=5000".to_string()]);
        let start =
            dom.find("<pre id=\"dbsweep-layout\">").unwrap_or_else(|| panic!("the measuring script did not run on {}", page.display()))
                + "<pre id=\"dbsweep-layout\">".len();
        let text = dom[start..start + dom[start..].find("</pre>").unwrap()].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&");
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        let number = |key: &str| v[key].as_f64().unwrap_or_else(|| panic!("no {key} in {text}"));
        Layout {
            window: number("window"),
            width: number("width"),
            width_unfolded: number("width_unfolded"),
            height: number("height"),
            findings_top: number("findings_top"),
            first_chart_top: number("first_chart_top"),
            checked_cells: number("checked_cells") as usize,
            wrapped: v["wrapped"].as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect(),
            colors: v["colors"].as_object().unwrap().iter().map(|(k, c)| (k.clone(), c.as_str().unwrap().to_string())).collect(),
        }
    }

    /// What issue #32 asks of every report: no wider than a 1400 px window (folded or not),
    /// no numeric cell or target name on two lines, and the findings and the first chart
    /// within the first 1,500 px.
    fn assert_reads_at_a_glance(&self, what: &str) {
        eprintln!("{what}: {self:?}");
        assert_eq!(self.window, 1400.0, "{what}: the window is not 1400 px wide");
        assert!(self.width <= self.window, "{what}: the page is {} px wide in a {} px window", self.width, self.window);
        assert!(
            self.width_unfolded <= self.window,
            "{what}: with its tables unfolded the page is {} px wide in a {} px window",
            self.width_unfolded,
            self.window
        );
        assert!(self.checked_cells >= 20, "{what}: only {} numeric cells found: {self:?}", self.checked_cells);
        assert!(
            self.wrapped.is_empty(),
            "{what}: {} of {} numeric or target-name cells wrap, e.g. {:?}",
            self.wrapped.len(),
            self.checked_cells,
            &self.wrapped[..self.wrapped.len().min(8)]
        );
        assert!(
            self.findings_top >= 0.0 && self.findings_top < 1500.0,
            "{what}: the findings start {} px down (-1: none)",
            self.findings_top
        );
        assert!(
            self.first_chart_top > self.findings_top && self.first_chart_top < 1500.0,
            "{what}: the first chart starts {} px down, the findings {} px",
            self.first_chart_top,
            self.findings_top
        );
    }
}

/// The binary whose reports are measured: this build's, or `DBSWEEP_LAYOUT_BIN` (to see
/// the checks fail on another build's reports).
fn dbsweep_bin() -> PathBuf {
    std::env::var_os("DBSWEEP_LAYOUT_BIN").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(support::BIN))
}

/// A real `--quick` run of the binary into `dir/name`; returns its report.html.
fn quick_run(dir: &Path, name: &str, args: &[&str]) -> PathBuf {
    let run_dir = dir.join(name);
    let out = Command::new(dbsweep_bin()).args(["run", "--quick", "--no-progress"]).args(args).arg("--out").arg(&run_dir).output().unwrap();
    assert!(out.status.success(), "{name}: run failed: {}", String::from_utf8_lossy(&out.stderr));
    run_dir.join(report::REPORT_HTML)
}

/// `--target NAME=URL` for each pair.
fn targets(list: &[(&str, &str)]) -> Vec<String> {
    list.iter().flat_map(|(name, url)| ["--target".to_string(), format!("{name}={url}")]).collect()
}

#[test]
fn reports_of_2_and_12_targets_fit_the_window_wrap_no_number_and_keep_each_systems_colour() {
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = recording_proxy();
    let two = targets(&[("sqlite", "sqlite:"), ("duckdb", "duckdb:")]);
    let two: Vec<&str> = two.iter().map(String::as_str).collect();
    let small = Layout::of(&quick_run(dir.path(), "two", &two), port);
    small.assert_reads_at_a_glance("a 2-target report");

    // Twelve targets, the known systems among mocks of different speeds, in another order.
    let mut twelve = vec![("duckdb", "duckdb:".to_string()), ("redb", "redb:".to_string())];
    let mocks: Vec<String> = (1..=8).map(|i| format!("mock-store-{i}")).collect();
    for (i, name) in mocks.iter().enumerate() {
        twelve.push((name, format!("mock:?latency_us={}", 5 * i)));
    }
    twelve.extend([("monetdb", "monetdb:".to_string()), ("sqlite", "sqlite:".to_string())]);
    let twelve = targets(&twelve.iter().map(|(n, u)| (*n, u.as_str())).collect::<Vec<_>>());
    let mut args: Vec<&str> = twelve.iter().map(String::as_str).collect();
    args.extend(["--experiments", "insert,get,range-count,delete"]);
    let large = Layout::of(&quick_run(dir.path(), "twelve", &args), port);
    large.assert_reads_at_a_glance("a 12-target report");
    assert_eq!(large.colors.len(), 13, "twelve targets and NO-DB: {:?}", large.colors);
    let distinct: std::collections::BTreeSet<&String> = large.colors.values().collect();
    assert_eq!(distinct.len(), 13, "one colour per target: {:?}", large.colors);
    for system in ["sqlite", "duckdb"] {
        assert_eq!(small.colors.get(system), large.colors.get(system), "{system} changed colour between reports");
    }
}

#[test]
fn a_rate_sweep_report_is_a_few_screens_and_fits_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (port, _) = recording_proxy();
    let args = targets(&[("sqlite", "sqlite:"), ("duckdb", "duckdb:"), ("redb", "redb:")]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    args.extend(["--rate", "1000,4000"]);
    let layout = Layout::of(&quick_run(dir.path(), "rates", &args), port);
    layout.assert_reads_at_a_glance("a rate sweep's report");
    assert!(layout.height <= 8.0 * 900.0, "a quick rate sweep's report is {} px tall: more than 8 screens of 900 px", layout.height);
}
