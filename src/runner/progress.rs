//! The progress display: a bar over all ops of the run, fed from an atomic counter that
//! clients bump, redrawn by indicatif's own ticker; or, when runs last a duration
//! (`--duration`), over all runs' time, with the current run's time against its duration.
//! When stderr is not a terminal (CI logs, `nohup`), a plain line every `PLAIN_EVERY`
//! instead: elapsed, share done, ETA, and what runs. Must not slow the clients: they only
//! touch the atomic.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a plain progress line is written when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(30);

/// Time-based runs: the length of every run, and when the current one started. The
/// display's counter then holds the milliseconds of the runs that are over.
#[derive(Default)]
struct RunClock {
    /// Milliseconds per run; 0 while the display counts ops.
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

    /// The bar's position: ops done, or milliseconds of runs over plus the current one's.
    fn position(&self, done: u64) -> u64 {
        done + self.current_run().map_or(0, |(so_far, _)| so_far.as_millis() as u64)
    }
}

pub struct Progress {
    bar: ProgressBar,
    done: Arc<AtomicU64>,
    clock: Arc<RunClock>,
    ticker: Option<std::thread::JoinHandle<()>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    /// Plain-line mode: what runs now and the run's total ops (0 until `start`).
    plain: Option<(Arc<std::sync::Mutex<String>>, Arc<AtomicU64>)>,
    plain_writer: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    pub fn new(show: bool) -> Self {
        let terminal = std::io::stderr().is_terminal();
        let target = if show && terminal { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        let mut progress = Progress {
            bar,
            done: Arc::default(),
            clock: Arc::default(),
            ticker: None,
            stop: Arc::default(),
            plain: None,
            plain_writer: None,
        };
        if show && !terminal {
            progress.start_plain_lines(PLAIN_EVERY, |line| eprintln!("{line}"));
        }
        progress
    }

    /// Writes `plain_line` through `write` every `every` until `finish`.
    fn start_plain_lines(&mut self, every: Duration, write: impl Fn(String) + Send + 'static) {
        let (what, total) = (Arc::new(std::sync::Mutex::new(String::new())), Arc::new(AtomicU64::new(0)));
        self.plain = Some((what.clone(), total.clone()));
        let (done, stop, clock) = (self.done.clone(), self.stop.clone(), self.clock.clone());
        self.plain_writer = Some(std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut next = every;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                let elapsed = started.elapsed();
                if elapsed >= next {
                    next += every;
                    let what = what.lock().map(|w| w.clone()).unwrap_or_default();
                    let done = clock.position(done.load(Ordering::Relaxed));
                    write(plain_line(elapsed, done, total.load(Ordering::Relaxed), clock.current_run(), &what));
                }
            }
        }));
    }

    /// The counter clients add their finished ops to.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    pub fn message(&self, msg: String) {
        if let Some((what, _)) = &self.plain
            && let Ok(mut what) = what.lock()
        {
            what.clone_from(&msg);
        }
        self.bar.set_message(msg);
    }

    /// Switches to a bar over `total` ops.
    pub fn start(&mut self, total: u64) {
        if let Some((_, plain_total)) = &self.plain {
            plain_total.store(total, Ordering::Relaxed);
        }
        self.bar.set_length(total);
        self.bar.set_style(
            ProgressStyle::with_template("{bar:30} {percent:>3}% {elapsed_precise} eta {eta} {prefix}{msg}").expect("valid template"),
        );
        let (bar, done, stop, clock) = (self.bar.clone(), self.done.clone(), self.stop.clone(), self.clock.clone());
        self.ticker = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                bar.set_position(clock.position(done.load(Ordering::Relaxed)));
                if let Some((so_far, per_run)) = clock.current_run() {
                    bar.set_prefix(format!("run {} of {}: ", seconds(so_far), seconds(per_run)));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }

    /// Switches to a bar over the time of `runs` runs of `per_run` each (`--duration`):
    /// the runner marks each run's start and end (`run_started`, `run_ended`).
    pub fn start_timed(&mut self, runs: u64, per_run: Duration) {
        self.clock.per_run_ms.store(per_run.as_millis().max(1) as u64, Ordering::Relaxed);
        self.start(runs * per_run.as_millis().max(1) as u64);
    }

    /// Time-based runs: a run starts now.
    pub fn run_started(&self) {
        if let Ok(mut current) = self.clock.current.lock() {
            *current = Some(Instant::now());
        }
    }

    /// Time-based runs: the current run is over (counted whole, whenever it ended).
    pub fn run_ended(&self) {
        if let Ok(mut current) = self.clock.current.lock() {
            *current = None;
        }
        self.skip_runs(1);
    }

    /// Time-based runs: `runs` runs not run here (kept from a resumed run) count as done.
    pub fn skip_runs(&self, runs: u64) {
        self.done.fetch_add(runs * self.clock.per_run_ms.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in [self.ticker.take(), self.plain_writer.take()].into_iter().flatten() {
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

/// "12 s", "1.5 s", "2 min": a run's time on the progress line.
fn seconds(d: Duration) -> String {
    match d.as_secs_f64() {
        s if s >= 120.0 => format!("{:.0} min", s / 60.0),
        s if s >= 10.0 => format!("{s:.0} s"),
        s => format!("{s:.1} s"),
    }
}

/// "progress 00:05:30: 12 % of 10.2M ops, eta 00:40:10: get c=4 on sqlite", or without
/// the share before the ops are counted (loading). Time-based runs (`run`: the current
/// run's time and duration; `done` and `total` in milliseconds): "progress 00:05:30: run
/// 12 s of 30 s, 40 % of 120 runs, eta ...".
fn plain_line(elapsed: Duration, done: u64, total: u64, run: Option<(Duration, Duration)>, what: &str) -> String {
    let clock = |d: Duration| {
        let s = d.as_secs();
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    };
    let mut line = format!("progress {}", clock(elapsed));
    if let Some((so_far, per_run)) = run {
        line.push_str(&format!(": run {} of {}", seconds(so_far), seconds(per_run)));
    }
    if total > 0 {
        let share = done.min(total) as f64 / total as f64;
        let of = match run {
            Some((_, per_run)) => format!("{} runs", total / (per_run.as_millis() as u64).max(1)),
            None => format!("{} ops", crate::report::console::rate(total as f64)),
        };
        line.push_str(&format!("{}{:.0} % of {of}", if run.is_some() { ", " } else { ": " }, share * 100.0));
        if done > 0 && done < total {
            line.push_str(&format!(", eta {}", clock(elapsed.mul_f64((total - done) as f64 / done as f64))));
        }
    }
    if !what.is_empty() {
        line.push_str(": ");
        line.push_str(what);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_line_says_elapsed_share_eta_and_what_runs() {
        let line = plain_line(Duration::from_secs(330), 1_200_000, 10_000_000, None, "get c=4 on sqlite");
        assert_eq!(line, "progress 00:05:30: 12 % of 10.00M ops, eta 00:40:20: get c=4 on sqlite");
        assert_eq!(plain_line(Duration::from_secs(61), 0, 0, None, "loading"), "progress 00:01:01: loading");
        // 48 of 120 runs of 30 s over, the 49th at 12 s.
        let run = Some((Duration::from_secs(12), Duration::from_secs(30)));
        let line = plain_line(Duration::from_secs(1452), 48 * 30_000 + 12_000, 120 * 30_000, run, "get c=4 on sqlite");
        assert_eq!(line, "progress 00:24:12: run 12 s of 30 s, 40 % of 120 runs, eta 00:35:48: get c=4 on sqlite");
    }

    #[test]
    fn time_based_runs_count_whole_runs_and_the_current_run_up_to_its_duration() {
        let mut progress = Progress::new(false);
        progress.start_timed(3, Duration::from_millis(200));
        let clock = progress.clock.clone();
        assert_eq!((clock.position(0), clock.current_run()), (0, None));
        progress.run_started();
        std::thread::sleep(Duration::from_millis(300));
        let (so_far, per_run) = clock.current_run().unwrap();
        assert_eq!((so_far, per_run), (per_run, Duration::from_millis(200)), "a run over its time counts its duration");
        assert_eq!(clock.position(progress.done.load(Ordering::Relaxed)), 200);
        progress.run_ended();
        progress.skip_runs(1);
        assert_eq!((clock.position(progress.done.load(Ordering::Relaxed)), clock.current_run()), (400, None));
        progress.finish();
    }

    #[test]
    fn plain_lines_come_at_their_interval_and_stop_with_the_run() {
        let lines = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = lines.clone();
        let mut progress = Progress::new(false);
        progress.start_plain_lines(Duration::from_millis(200), move |l| seen.lock().unwrap().push(l));
        progress.message("loading sqlite".into());
        progress.start(100);
        progress.counter().fetch_add(50, Ordering::Relaxed);
        // Waits for two lines (at most 10 s: a loaded machine may starve the writer).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while lines.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        progress.finish();
        let written = lines.lock().unwrap().len();
        assert!(written >= 2, "{:?}", lines.lock().unwrap());
        assert!(lines.lock().unwrap().iter().all(|l| l.contains("50 % of 100 ops") && l.ends_with(": loading sqlite")));
        std::thread::sleep(Duration::from_millis(500));
        assert_eq!(lines.lock().unwrap().len(), written, "nothing after finish");
    }
}
