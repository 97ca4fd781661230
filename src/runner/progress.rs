//! The progress display: a bar over all ops of the run, fed from an atomic counter that
//! clients bump, redrawn by indicatif's own ticker. Hidden when stderr is not a terminal.
//! Must not slow the clients: they only touch the atomic.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub struct Progress {
    bar: ProgressBar,
    done: Arc<AtomicU64>,
    ticker: Option<std::thread::JoinHandle<()>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
}

impl Progress {
    pub fn new(show: bool) -> Self {
        let target = if show && std::io::stderr().is_terminal() { ProgressDrawTarget::stderr() } else { ProgressDrawTarget::hidden() };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(ProgressStyle::with_template("{spinner} {msg}").expect("valid template"));
        bar.enable_steady_tick(Duration::from_millis(120));
        Progress { bar, done: Arc::new(AtomicU64::new(0)), ticker: None, stop: Arc::default() }
    }

    /// The counter clients add their finished ops to.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.done.clone()
    }

    pub fn message(&self, msg: String) {
        self.bar.set_message(msg);
    }

    /// Switches to a bar over `total` ops.
    pub fn start(&mut self, total: u64) {
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
        if let Some(t) = self.ticker.take() {
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
