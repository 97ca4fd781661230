//! The progress display: a bar over all ops of the run, fed from an atomic counter that
//! clients bump, redrawn by indicatif's own ticker. When stderr is not a terminal (CI logs,
//! `nohup`), a plain line every `PLAIN_EVERY` instead: elapsed, share done, ETA, and what
//! runs. Must not slow the clients: they only touch the atomic.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// How often a plain progress line is written when stderr is not a terminal.
const PLAIN_EVERY: Duration = Duration::from_secs(30);

pub struct Progress {
    bar: ProgressBar,
    done: Arc<AtomicU64>,
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
        let mut progress =
            Progress { bar, done: Arc::new(AtomicU64::new(0)), ticker: None, stop: Arc::default(), plain: None, plain_writer: None };
        if show && !terminal {
            progress.start_plain_lines(PLAIN_EVERY, |line| eprintln!("{line}"));
        }
        progress
    }

    /// Writes `plain_line` through `write` every `every` until `finish`.
    fn start_plain_lines(&mut self, every: Duration, write: impl Fn(String) + Send + 'static) {
        let (what, total) = (Arc::new(std::sync::Mutex::new(String::new())), Arc::new(AtomicU64::new(0)));
        self.plain = Some((what.clone(), total.clone()));
        let (done, stop) = (self.done.clone(), self.stop.clone());
        self.plain_writer = Some(std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let mut next = every;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50).min(every));
                let elapsed = started.elapsed();
                if elapsed >= next {
                    next += every;
                    let what = what.lock().map(|w| w.clone()).unwrap_or_default();
                    write(plain_line(elapsed, done.load(Ordering::Relaxed), total.load(Ordering::Relaxed), &what));
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
        self.bar
            .set_style(ProgressStyle::with_template("{bar:30} {percent:>3}% {elapsed_precise} eta {eta} {msg}").expect("valid template"));
        let (bar, done, stop) = (self.bar.clone(), self.done.clone(), self.stop.clone());
        self.ticker = Some(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                bar.set_position(done.load(Ordering::Relaxed));
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
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

/// "progress 00:05:30: 12 % of 10.2M ops, eta 00:40:10: get c=4 on sqlite", or without
/// the share before the ops are counted (loading).
fn plain_line(elapsed: Duration, done: u64, total: u64, what: &str) -> String {
    let clock = |d: Duration| {
        let s = d.as_secs();
        format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
    };
    let mut line = format!("progress {}", clock(elapsed));
    if total > 0 {
        let share = done.min(total) as f64 / total as f64;
        line.push_str(&format!(": {:.0} % of {} ops", share * 100.0, crate::report::console::rate(total as f64)));
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
        let line = plain_line(Duration::from_secs(330), 1_200_000, 10_000_000, "get c=4 on sqlite");
        assert_eq!(line, "progress 00:05:30: 12 % of 10.00M ops, eta 00:40:20: get c=4 on sqlite");
        assert_eq!(plain_line(Duration::from_secs(61), 0, 0, "loading"), "progress 00:01:01: loading");
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
