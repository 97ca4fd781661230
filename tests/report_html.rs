//! report.html in a real browser: a real run of the embedded study (few experiments,
//! `--quick`) through the binary, rendered by headless Chromium (`scripts/setup-browser`
//! installs it; DBSWEEP_CHROMIUM overrides /usr/bin/chromium). Checks the screenshot is a
//! real picture, the page loaded without script errors, every planned figure has its SVG
//! with point tooltips (latency at every client count), the findings are on the first screen and rank every experiment, no
//! table overflows its container, and the page made no network request: every request is
//! routed to a local proxy that records the host asked for; apart from Chromium's own
//! service hosts (updater, account and time checks that headless Chromium makes for itself
//! whatever the page), there must be none. A control page with one external image proves the proxy sees page requests.

use dbsweep::report::{self, html::figures};
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

/// Runs headless Chromium on the page with `extra` arguments; returns its stdout.
fn browse(page: &Path, proxy_port: u16, extra: &[String]) -> String {
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
            "--window-size=1400,4000",
        ])
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

/// The value of an attribute the page's script set on <html>.
fn attribute(dom: &str, name: &str) -> String {
    let at = dom.find(&format!("{name}=\"")).unwrap_or_else(|| panic!("the page did not set {name}")) + name.len() + 2;
    dom[at..at + dom[at..].find('"').unwrap()].to_string()
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
    let out = Command::new(env!("CARGO_BIN_EXE_dbsweep"))
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

    // The findings come first: on the first screen (1400 x 900), one headline per experiment.
    let top: f64 = attribute(&dom, "data-findings-top").parse().expect("the page has a findings section");
    assert!(top < 600.0, "the findings start {top} px down: not on the first screen");
    let findings = &dom[dom.find("id=\"findings\"").unwrap()..];
    let findings = &findings[..findings.find("</section>").unwrap()];
    let mut experiments: Vec<&str> = saved.points.iter().map(|p| p.experiment.as_str()).filter(|e| *e != "echo-floor").collect();
    experiments.dedup();
    assert!(experiments.len() >= 4, "{experiments:?}");
    for e in &experiments {
        assert!(findings.contains(&format!("<li data-experiment=\"{e}\">")), "the findings do not rank {e}");
    }
    assert!(findings.contains("id=\"relative-table\"") && findings.contains("geometric mean"), "no relative-performance table");
    // No table is wider than its container or clipped inside it (folded ones opened).
    assert_eq!(attribute(&dom, "data-overflowing"), "", "tables overflow their container");
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
