//! What a run shows while it runs, on stderr: a spinner with the current step while
//! targets are prepared and loaded; then a bar over the run's forecast time (`forecast`:
//! the up-front estimate, corrected by the time the points done so far took) with the
//! time left, the current run's time against its duration (`--duration`) and what runs;
//! and a line per point as it lands on each target (`point_line`), printed above the bar.
//! When stderr is not a terminal (CI logs, `nohup`) there is no bar: the point lines, and a
//! plain line every `PLAIN_EVERY` with elapsed time, share done, time left and the
//! corrected total. With `show` false (`--no-progress`) it shows nothing at all.
//!
//! Must not slow the clients: they only touch the atomic work counter; the bar is redrawn
//! by a ticker thread of its own.

use super::forecast::{Forecast, PointOnTarget};
use crate::plan::estimate::human;
use crate::report::model::PointResult;
use crate::report::{console, format};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a plain progress line is written when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(30);
/// How often the bar's position and text are recomputed.
const BAR_EVERY: Duration = Duration::from_millis(100);
/// The bar's length: its position is the share of the forecast time done, in ‰.
const BAR_STEPS: u64 = 1000;

/// Time-based runs: the length of every run, and when the current one started. The
/// work counter then holds the milliseconds of the runs that are over.
#[derive(Default)]
struct RunClock {
    /// Milliseconds per run; 0 while the counter counts ops.
    per_run_ms: AtomicU64,
    current: Mutex<Option<Instant>>,
}

impl RunClock {
    /// The current run's time so far and its duration, in time-based mode.
    fn current_run(&self) -> Option<(Duration, Duration)> {
        let per_run = Duration::from_millis(self.per_run_ms.load(Ordering::Relaxed));
        let started = (*self.current.lock().ok()?)?;
        (!per_run.is_zero()).then(|| (started.elapsed().min(per_run), per_run))
    }

    /// The work done: ops, or milliseconds of runs over plus the current one's.
    fn position(&self, done: u64) -> u64 {
        done + self.current_run().map_or(0, |(so_far, _)| so_far.as_millis() as u64)
    }
}

/// What the display threads and the runner share.
struct Live {
    created: Instant,
    /// The counter clients add their finished ops to (time-based runs: milliseconds).
    done: Arc<AtomicU64>,
    clock: RunClock,
    /// What runs now.
    what: Mutex<String>,
    /// Set by `start`: when measuring began and the forecast.
    forecast: Mutex<Option<(Instant, Forecast)>>,
    /// Point lines printed or points kept from a resumed run, for "[12/40]".
    landed: AtomicUsize,
}

/// The run's state, as the bar and the plain lines say it.
#[derive(Debug, Clone, PartialEq)]
struct Status {
    /// Since the display was created (the run's setup included).
    elapsed: Duration,
    /// Work done and all work (ops, or milliseconds of time-based runs); 0 before `start`.
    work_done: u64,
    total_work: u64,
    /// Time-based runs: the current run's time and duration.
    run: Option<(Duration, Duration)>,
    /// The forecast once measuring began: seconds left, whether points were measured
    /// (else it is the up-front estimate), and the share of the time done.
    left_secs: Option<f64>,
    measured: bool,
    share: f64,
    /// The up-front estimate of the measuring, for "first estimate".
    up_front_secs: f64,
    /// Since measuring began.
    measuring: Duration,
    what: String,
}

impl Live {
    fn status(&self) -> Status {
        let work_done = self.clock.position(self.done.load(Ordering::Relaxed));
        let mut status = Status {
            elapsed: self.created.elapsed(),
            work_done,
            total_work: 0,
            run: self.clock.current_run(),
            left_secs: None,
            measured: false,
            share: 0.0,
            up_front_secs: 0.0,
            measuring: Duration::ZERO,
            what: self.what.lock().map(|w| w.clone()).unwrap_or_default(),
        };
        if let Ok(forecast) = self.forecast.lock()
            && let Some((began, forecast)) = forecast.as_ref()
        {
            let measuring = began.elapsed();
            let left = forecast.remaining_secs(measuring, work_done);
            let so_far = measuring.as_secs_f64();
            status.total_work = forecast.total_work();
            status.left_secs = Some(left);
            status.measured = forecast.measured();
            status.share = if so_far + left > 0.0 { so_far / (so_far + left) } else { 0.0 };
            status.up_front_secs = forecast.up_front_secs();
            status.measuring = measuring;
        }
        status
    }

    /// Tells the forecast about points, at the current time and work.
    fn update(&self, change: impl FnOnce(&mut Forecast, Duration, u64)) {
        let work = self.clock.position(self.done.load(Ordering::Relaxed));
        if let Ok(mut forecast) = self.forecast.lock()
            && let Some((began, forecast)) = forecast.as_mut()
        {
            change(forecast, began.elapsed(), work);
        }
    }
}

/// Where lines go when there is no bar to print them above.
type LineWriter = Arc<dyn Fn(&str) + Send + Sync>;

pub struct Progress {
    bar: ProgressBar,
    /// False with `--no-progress`: nothing is shown.
    show: bool,
    /// Lines are printed above the bar (a terminal), else through `write_line`.
    above_bar: bool,
    write_line: LineWriter,
    live: Arc<Live>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// The display of a run on stderr: a bar on a terminal, plain lines elsewhere, nothing
    /// unless `show`.
    pub fn new(show: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let target = if show && terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let mut progress = Progress::drawn_to(show, target, Arc::new(|line: &str| eprintln!("{line}")));
        if show && !terminal {
            progress.start_plain_lines(PLAIN_EVERY);
        }
        progress
    }

    /// A display that draws its bar to `target` (hidden: no bar) and writes lines through
    /// `write_line` when there is no bar.
    fn drawn_to(show: bool, target: ProgressDrawTarget, write_line: LineWriter) -> Self {
        let above_bar = !target.is_hidden();
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("{spinner} {wide_msg}").expect("valid template"));
        if above_bar {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        let live = Live {
            created: Instant::now(),
            done: Arc::default(),
            clock: RunClock::default(),
            what: Mutex::default(),
            forecast: Mutex::new(None),
            landed: AtomicUsize::new(0),
        };
        Progress { bar, show, above_bar, write_line, live: Arc::new(live), stop: Arc::default(), threads: Vec::new() }
    }

    /// Writes `plain_line` every `every` until `finish`.
    fn start_plain_lines(&mut self, every: Duration) {
        let (live, stop, write) = (self.live.clone(), self.stop.clone(), self.write_line.clone());
        self.threads.push(std::thread::spawn(move || {
            let mut next = every;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                let status = live.status();
                if status.elapsed >= next {
                    next += every;
                    write(&console::fit(&plain_line(&status), console::width()));
                }
            }
        }));
    }

    /// The seconds the measured points of each target took (`Forecast::took_by_target`).
    pub fn took_by_target(&self) -> std::collections::BTreeMap<String, f64> {
        self.live.forecast.lock().ok().and_then(|f| f.as_ref().map(|(_, f)| f.took_by_target())).unwrap_or_default()
    }

    /// The counter clients add their finished ops to.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.live.done.clone()
    }

    /// What runs now, on the bar, the plain lines and the spinner.
    pub fn message(&self, msg: String) {
        if let Ok(mut what) = self.live.what.lock() {
            what.clone_from(&msg);
        }
        if self.live.forecast.lock().is_ok_and(|f| f.is_none()) {
            self.bar.set_message(msg);
        }
    }

    /// Switches from the spinner to a bar over the forecast's points.
    pub fn start(&mut self, forecast: Forecast) {
        if let Ok(mut slot) = self.live.forecast.lock() {
            *slot = Some((Instant::now(), forecast));
        }
        self.bar.set_length(BAR_STEPS);
        self.bar.set_style(ProgressStyle::with_template("{bar:30} {wide_msg}").expect("valid template"));
        let (bar, live, stop) = (self.bar.clone(), self.live.clone(), self.stop.clone());
        self.threads.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let status = live.status();
                bar.set_position((status.share * BAR_STEPS as f64) as u64);
                bar.set_message(bar_text(&status));
                std::thread::sleep(BAR_EVERY);
            }
        }));
    }

    /// `start` for runs that last `per_run` each (`--duration`): the runner marks each
    /// run's start and end (`run_started`, `run_ended`).
    pub fn start_timed(&mut self, per_run: Duration, forecast: Forecast) {
        self.live.clock.per_run_ms.store(per_run_ms(per_run), Ordering::Relaxed);
        self.start(forecast);
    }

    /// Time-based runs: a run starts now.
    pub fn run_started(&self) {
        if let Ok(mut current) = self.live.clock.current.lock() {
            *current = Some(Instant::now());
        }
    }

    /// Time-based runs: the current run is over (counted whole, whenever it ended).
    pub fn run_ended(&self) {
        if let Ok(mut current) = self.live.clock.current.lock() {
            *current = None;
        }
        self.live.done.fetch_add(self.live.clock.per_run_ms.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// `points` begin: one target's point, or a lifecycle target's phases.
    pub fn began(&self, points: &[PointOnTarget]) {
        self.live.update(|f, _, work| f.begin(points, work));
    }

    /// `points` are done: their time corrects the forecast.
    pub fn ended(&self, points: &[PointOnTarget]) {
        self.live.update(|f, now, _| f.end(points, now));
    }

    /// `points` are not measured (not supported, or their target failed earlier).
    pub fn skipped(&self, points: &[PointOnTarget]) {
        self.live.update(|f, now, _| f.skip(points, now));
    }

    /// `points` were kept from the resumed run: not measured, and counted as landed and
    /// as work done.
    pub fn kept(&self, points: &[PointOnTarget]) {
        self.live.update(|f, now, _| {
            self.live.done.fetch_add(f.work_of(points), Ordering::Relaxed);
            f.skip(points, now);
        });
        self.live.landed.fetch_add(points.len(), Ordering::Relaxed);
    }

    /// A line per result as it lands: "[12/40] sqlite · get · c=4 b=1: 12.3k/s ±2% p50 …"
    /// (`lifecycle`: the points of a lifecycle study, which read as times).
    pub fn landed(&self, results: &[PointResult], lifecycle: bool) {
        let all = self.live.forecast.lock().ok().and_then(|f| f.as_ref().map(|(_, f)| f.points_done().1)).unwrap_or(0);
        let width = console::width();
        for r in results {
            let count = self.live.landed.fetch_add(1, Ordering::Relaxed) + 1;
            self.println(&console::fit(&format!("[{count}/{all}] {}", console::point_line(r, lifecycle)), width));
        }
    }

    /// Prints `text` above the bar, or as plain lines without one; nothing unless shown.
    pub fn println(&self, text: &str) {
        if !self.show {
            return;
        }
        for line in text.lines() {
            if self.above_bar {
                self.bar.println(line);
            } else {
                (self.write_line)(line);
            }
        }
    }

    /// Runs `f` (which prints) with the bar cleared, and redraws it after.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Stops the display and clears the bar, leaving no trace of it.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A run's length in whole milliseconds (at least 1), the unit time-based work counts in.
pub fn per_run_ms(per_run: Duration) -> u64 {
    per_run.as_millis().max(1) as u64
}

/// "12 s", "1.5 s", "2 min": a run's time on the progress line.
fn seconds(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s >= 120.0 => format!("{:.0} min", s / 60.0),
        s if s >= 10.0 => format!("{s:.0} s"),
        s => format!("{s:.1} s"),
    }
}

/// "00:05:30".
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

/// The time left: "eta 1m 35s of 2m 45s" once points were measured, "eta ~18.0s
/// (estimate)" before; never "eta 0s" at 0 %.
fn eta(status: &Status) -> Option<String> {
    let left = status.left_secs?;
    Some(match status.measured {
        true => format!("eta {} of {}", human(left), human(status.measuring.as_secs_f64() + left)),
        false => format!("eta ~{} (estimate)", human(left)),
    })
}

/// The bar's text: "42 % 00:01:10 eta 1m 35s of 2m 45s · run 12 s of 30 s · measuring …".
fn bar_text(status: &Status) -> String {
    let mut parts = vec![format!("{:>3.0} % {}", status.share * 100.0, clock(status.elapsed))];
    parts.extend(eta(status));
    if let Some((so_far, per_run)) = status.run {
        parts.push(format!("run {} of {}", seconds(so_far), seconds(per_run)));
    }
    if !status.what.is_empty() {
        parts.push(status.what.clone());
    }
    parts.join(" · ")
}

/// "progress 00:05:30: 12 % done, 1.20M of 10.00M ops, eta 00:40:20, 00:45:50 in all
/// (first estimate 00:00:18): get c=4 on sqlite", or without the forecast before measuring
/// (loading). Time-based runs: "progress 00:24:12: run 12 s of 30 s, 40 % done, 48 of 120
/// runs, eta …".
fn plain_line(status: &Status) -> String {
    let mut line = format!("progress {}", clock(status.elapsed));
    if let Some((so_far, per_run)) = status.run {
        line.push_str(&format!(": run {} of {}", seconds(so_far), seconds(per_run)));
    }
    if let Some(left) = status.left_secs {
        let of = match status.run.map(|(_, per_run)| per_run_ms(per_run)) {
            Some(ms) => format!("{} of {} runs", status.work_done / ms, status.total_work / ms),
            None => format!("{} of {} ops", format::rate(status.work_done as f64), format::rate(status.total_work as f64)),
        };
        let separator = if status.run.is_some() { ", " } else { ": " };
        line.push_str(&format!("{separator}{:.0} % done, {of}", status.share * 100.0));
        let left = Duration::from_secs_f64(left);
        match status.measured {
            true => line.push_str(&format!(
                ", eta {}, {} in all (first estimate {})",
                clock(left),
                clock(status.elapsed + left),
                clock(Duration::from_secs_f64(status.up_front_secs) + status.elapsed.saturating_sub(status.measuring))
            )),
            false => line.push_str(&format!(", eta {} (estimated)", clock(left))),
        }
    }
    if !status.what.is_empty() {
        line.push_str(": ");
        line.push_str(&status.what);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::forecast::Planned;

    fn at(target: &str, point: usize) -> PointOnTarget {
        PointOnTarget { target: target.into(), experiment: 0, point }
    }

    /// Two points on one target, estimated at 9 s and 1,000 ops each.
    fn forecast() -> Forecast {
        Forecast::new((0..2).map(|p| Planned { at: at("sqlite", p), estimate_secs: 9.0, work: 1000 }).collect())
    }

    fn status() -> Status {
        Status {
            elapsed: Duration::from_secs(330),
            work_done: 1_200_000,
            total_work: 10_000_000,
            run: None,
            left_secs: Some(2420.0),
            measured: true,
            share: 0.12,
            up_front_secs: 18.0,
            measuring: Duration::from_secs(300),
            what: "get c=4 on sqlite".into(),
        }
    }

    #[test]
    fn a_plain_line_says_elapsed_share_eta_corrected_total_and_what_runs() {
        assert_eq!(
            plain_line(&status()),
            "progress 00:05:30: 12 % done, 1.20M of 10.00M ops, eta 00:40:20, 00:45:50 in all (first estimate 00:00:48): get c=4 on sqlite"
        );
        let loading = Status { left_secs: None, what: "loading".into(), ..status() };
        assert_eq!(plain_line(&loading), "progress 00:05:30: loading");
        // 48 of 120 runs of 30 s over, the 49th at 12 s.
        let timed = Status {
            run: Some((Duration::from_secs(12), Duration::from_secs(30))),
            work_done: 48 * 30_000 + 12_000,
            total_work: 120 * 30_000,
            share: 0.4,
            measured: false,
            ..status()
        };
        assert_eq!(
            plain_line(&timed),
            "progress 00:05:30: run 12 s of 30 s, 40 % done, 48 of 120 runs, eta 00:40:20 (estimated): get c=4 on sqlite"
        );
    }

    #[test]
    fn at_zero_percent_the_eta_is_the_estimate_not_zero() {
        let live = Live {
            created: Instant::now(),
            done: Arc::default(),
            clock: RunClock::default(),
            what: Mutex::new("measuring get".into()),
            forecast: Mutex::new(Some((Instant::now(), forecast()))),
            landed: AtomicUsize::new(0),
        };
        let status = live.status();
        assert!(status.share < 0.01 && !status.measured, "{status:?}");
        let text = bar_text(&status);
        assert!(text.starts_with("  0 % 00:00:00 · eta ~18.0s (estimate) · measuring get"), "{text}");
        assert!(!text.contains("eta 0"), "{text}");
        assert!(plain_line(&status).contains("0 % done, 0 of 2.0k ops, eta 00:00:18 (estimated)"), "{}", plain_line(&status));
    }

    #[test]
    fn the_bar_says_the_corrected_time_left_and_the_total() {
        let text = bar_text(&Status { run: Some((Duration::from_secs(12), Duration::from_secs(30))), ..status() });
        assert_eq!(text, " 12 % 00:05:30 · eta 40m 20s of 45m 20s · run 12 s of 30 s · get c=4 on sqlite");
    }

    #[test]
    fn time_based_runs_count_whole_runs_and_the_current_run_up_to_its_duration() {
        let mut progress = Progress::new(false);
        progress.start_timed(Duration::from_millis(200), forecast());
        let clock = &progress.live.clock;
        assert_eq!((clock.position(0), clock.current_run()), (0, None));
        progress.run_started();
        std::thread::sleep(Duration::from_millis(300));
        let (so_far, per_run) = clock.current_run().unwrap();
        assert_eq!((so_far, per_run), (per_run, Duration::from_millis(200)), "a run over its time counts its duration");
        assert_eq!(clock.position(progress.live.done.load(Ordering::Relaxed)), 200);
        progress.run_ended();
        progress.run_started();
        progress.run_ended();
        assert_eq!((clock.position(progress.live.done.load(Ordering::Relaxed)), clock.current_run()), (400, None));
        progress.finish();
    }

    /// Collects the lines written without a bar.
    fn collecting() -> (LineWriter, Arc<Mutex<Vec<String>>>) {
        let lines = Arc::new(Mutex::new(Vec::new()));
        let seen = lines.clone();
        (Arc::new(move |l: &str| seen.lock().unwrap().push(l.to_string())), lines)
    }

    #[test]
    fn plain_lines_come_at_their_interval_and_stop_with_the_run() {
        let (write, lines) = collecting();
        let mut progress = Progress::drawn_to(true, ProgressDrawTarget::hidden(), write);
        progress.start_plain_lines(Duration::from_millis(200));
        progress.message("loading sqlite".into());
        progress.start(forecast());
        progress.counter().fetch_add(1000, Ordering::Relaxed);
        // Waits for two lines (at most 10 s: a loaded machine may starve the writer).
        let deadline = Instant::now() + Duration::from_secs(10);
        while lines.lock().unwrap().len() < 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        progress.finish();
        let written = lines.lock().unwrap().len();
        assert!(written >= 2, "{:?}", lines.lock().unwrap());
        assert!(lines.lock().unwrap().iter().all(|l| l.contains("1.0k of 2.0k ops") && l.ends_with(": loading sqlite")));
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(lines.lock().unwrap().len(), written, "nothing after finish");
    }

    fn landed_point() -> PointResult {
        let report: crate::report::model::Report = serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap();
        report.points.into_iter().find(|p| p.experiment == "insert" && p.summary.is_some() && !p.is_void()).unwrap()
    }

    #[test]
    fn each_landed_point_is_a_numbered_line_unless_progress_is_off() {
        let (write, lines) = collecting();
        let mut progress = Progress::drawn_to(true, ProgressDrawTarget::hidden(), write);
        progress.start(forecast());
        let p = landed_point();
        progress.kept(&[at("sqlite", 0)]);
        assert_eq!(progress.live.status().work_done, 1000, "kept points count as work done");
        progress.landed(std::slice::from_ref(&p), false);
        progress.finish();
        let lines = lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 1, "{lines:?}");
        let expected = format!("[2/2] {} · insert · {}: ", p.target, format::point_label(&p.point, p.op));
        assert!(lines[0].starts_with(&expected) && lines[0].contains("/s ±") && lines[0].contains(" p50 "), "{lines:?}");

        let (write, quiet) = collecting();
        let mut progress = Progress::drawn_to(false, ProgressDrawTarget::hidden(), write);
        progress.start(forecast());
        progress.landed(&[p], false);
        progress.finish();
        assert!(quiet.lock().unwrap().is_empty(), "--no-progress prints no point lines");
    }

    /// What a terminal shows: the text of each row, and the cursor.
    #[derive(Debug, Default)]
    struct Cells {
        rows: Vec<Vec<char>>,
        row: usize,
        col: usize,
    }

    /// A terminal that keeps what is on its screen (clones show the same screen).
    #[derive(Debug, Default, Clone)]
    struct Screen {
        cells: Arc<Mutex<Cells>>,
    }

    impl Screen {
        fn put(&self, text: &str) {
            let mut guard = self.cells.lock().unwrap();
            let Cells { rows, row, col } = &mut *guard;
            for c in text.chars() {
                match c {
                    '\n' => (*row, *col) = (*row + 1, 0),
                    '\r' => *col = 0,
                    // A character past the last column wraps to the next row, as terminals do.
                    _ if *col >= SCREEN_WIDTH => (*row, *col) = (*row + 1, 0),
                    _ => {}
                }
                if c == '\n' || c == '\r' {
                    continue;
                }
                while rows.len() <= *row {
                    rows.push(Vec::new());
                }
                let line = &mut rows[*row];
                while line.len() <= *col {
                    line.push(' ');
                }
                line[*col] = c;
                *col += 1;
            }
        }

        fn text(&self) -> Vec<String> {
            let rows = &self.cells.lock().unwrap().rows;
            let mut text: Vec<String> = rows.iter().map(|r| r.iter().collect::<String>().trim_end().to_string()).collect();
            while text.last().is_some_and(|l| l.is_empty()) {
                text.pop();
            }
            text
        }
    }

    /// The test terminal's columns.
    const SCREEN_WIDTH: usize = 100;

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            SCREEN_WIDTH as u16
        }
        fn move_cursor_up(&self, n: usize) -> std::io::Result<()> {
            let mut cells = self.cells.lock().unwrap();
            cells.row = cells.row.saturating_sub(n);
            Ok(())
        }
        fn move_cursor_down(&self, n: usize) -> std::io::Result<()> {
            self.cells.lock().unwrap().row += n;
            Ok(())
        }
        fn move_cursor_right(&self, n: usize) -> std::io::Result<()> {
            self.cells.lock().unwrap().col += n;
            Ok(())
        }
        fn move_cursor_left(&self, n: usize) -> std::io::Result<()> {
            let mut cells = self.cells.lock().unwrap();
            cells.col = cells.col.saturating_sub(n);
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.put(s);
            self.put("\n");
            Ok(())
        }
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            self.put(s);
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            let mut guard = self.cells.lock().unwrap();
            let Cells { rows, row, col } = &mut *guard;
            if let Some(line) = rows.get_mut(*row) {
                line.clear();
            }
            *col = 0;
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn on_a_terminal_lines_land_above_the_bar_and_the_bar_leaves_no_glyph() {
        let screen = Screen::default();
        let target = ProgressDrawTarget::term_like(Box::new(screen.clone()));
        let mut progress = Progress::drawn_to(true, target, Arc::new(|_: &str| panic!("a terminal prints above the bar")));
        // The spinner turns while the targets load, and something prints meanwhile.
        progress.message("loading sqlite".into());
        std::thread::sleep(Duration::from_millis(300));
        assert!(screen.text().last().is_some_and(|l| l.ends_with("loading sqlite")), "{:?}", screen.text());
        progress.suspend(|| screen.put("estimated duration: 18.0s\n"));
        progress.start(forecast());
        progress.message("measuring insert".into());
        progress.began(&[at("sqlite", 0)]);
        std::thread::sleep(Duration::from_millis(300));
        assert!(
            screen.text().last().is_some_and(|l| l.contains(" · eta ~") && l.ends_with("(estimate) · measuring insert")),
            "{:?}",
            screen.text()
        );
        progress.ended(&[at("sqlite", 0)]);
        progress.landed(&[landed_point()], false);
        std::thread::sleep(Duration::from_millis(300));
        progress.finish();
        let text = screen.text();
        assert_eq!(text.len(), 2, "the estimate and the point line, no bar, no spinner: {text:?}");
        assert_eq!(text[0], "estimated duration: 18.0s");
        assert!(text[1].starts_with("[1/2] "), "{text:?}");
    }
}
