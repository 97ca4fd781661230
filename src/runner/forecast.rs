//! How long the rest of a run will take: each point's up-front estimate per target
//! (`plan::estimate::one_run_secs`), corrected by the time the points done so far took,
//! so an estimate that was far off (a loaded machine, a slow server) is mended as the run
//! goes. The progress display asks it; the runner tells it which points begin and end.
//!
//! The correction is the ratio of measured to estimated seconds over the points done, of
//! the same target and experiment where there are some, else of the same target, else of
//! all; it scales the estimate of every point still to do. The point under way counts
//! what is left of it: by its own pace once a tenth of its work is done, else its
//! corrected estimate minus the time it has had. Must not measure or print anything.

use std::time::Duration;

/// The shortest estimate a point counts with, so that a point estimated at nothing (an
/// analytic query on NO-DB) still corrects by the time it took.
const MIN_ESTIMATE_SECS: f64 = 0.001;
/// The share of its work after which the point under way is forecast by its own pace.
const OWN_PACE_AFTER: f64 = 0.1;

/// One point of one experiment on one target: what the forecast counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointOnTarget {
    pub target: String,
    pub experiment: usize,
    pub point: usize,
}

/// A point of the plan on a target, with what it is expected to take.
#[derive(Debug, Clone)]
pub struct Planned {
    pub at: PointOnTarget,
    /// The up-front estimate of all its runs (warm-up included), in seconds.
    pub estimate_secs: f64,
    /// Its work in the progress counter's unit: ops, or milliseconds of time-based runs.
    pub work: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    ToDo,
    /// Done, and the seconds it took.
    Took(f64),
    /// Not measured here (kept from a resumed run, not supported, target failed).
    Skipped,
}

/// The forecast of one run. Times are the run's elapsed time since measuring began.
#[derive(Debug)]
pub struct Forecast {
    planned: Vec<Planned>,
    states: Vec<State>,
    /// The points under way, and the work counter when they began.
    current: Vec<usize>,
    work_at_begin: u64,
    /// When the last point ended or was skipped (what the next one is timed from).
    last_mark: Duration,
}

impl Forecast {
    pub fn new(planned: Vec<Planned>) -> Self {
        let states = vec![State::ToDo; planned.len()];
        Forecast { planned, states, current: Vec::new(), work_at_begin: 0, last_mark: Duration::ZERO }
    }

    /// The counter's work of all planned points.
    pub fn total_work(&self) -> u64 {
        self.planned.iter().map(|p| p.work).sum()
    }

    /// The sum of the up-front estimates: what the forecast says before anything ran.
    pub fn up_front_secs(&self) -> f64 {
        self.planned.iter().map(|p| p.estimate_secs).sum()
    }

    /// The counter's work of `points`.
    pub fn work_of(&self, points: &[PointOnTarget]) -> u64 {
        self.indices(points).into_iter().map(|i| self.planned[i].work).sum()
    }

    fn indices(&self, points: &[PointOnTarget]) -> Vec<usize> {
        points.iter().filter_map(|at| self.planned.iter().position(|p| &p.at == at)).collect()
    }

    /// `points` begin now (one target's point; a lifecycle target's phases at once), with
    /// the work counter at `work_done`.
    pub fn begin(&mut self, points: &[PointOnTarget], work_done: u64) {
        self.current = self.indices(points);
        self.work_at_begin = work_done;
    }

    /// `points` ended at `now`: the time since the last point ended is theirs, shared in
    /// proportion to their estimates.
    pub fn end(&mut self, points: &[PointOnTarget], now: Duration) {
        let indices = self.indices(points);
        let taken = now.saturating_sub(self.last_mark).as_secs_f64();
        let estimated: f64 = indices.iter().map(|&i| self.estimate(i)).sum();
        for &i in &indices {
            self.states[i] = State::Took(taken * self.estimate(i) / estimated);
        }
        self.current.clear();
        self.last_mark = now;
    }

    /// `points` will not be measured; the time since the last mark is nobody's.
    pub fn skip(&mut self, points: &[PointOnTarget], now: Duration) {
        for i in self.indices(points) {
            self.states[i] = State::Skipped;
        }
        self.current.retain(|i| self.states[*i] == State::ToDo);
        self.last_mark = now;
    }

    fn estimate(&self, i: usize) -> f64 {
        self.planned[i].estimate_secs.max(MIN_ESTIMATE_SECS)
    }

    /// The seconds the measured points of each target took.
    pub fn took_by_target(&self) -> std::collections::BTreeMap<String, f64> {
        let mut took = std::collections::BTreeMap::new();
        for (planned, state) in self.planned.iter().zip(&self.states) {
            if let State::Took(secs) = state {
                *took.entry(planned.at.target.clone()).or_insert(0.0) += secs;
            }
        }
        took
    }

    /// Points done (measured or skipped) and all points.
    pub fn points_done(&self) -> (usize, usize) {
        (self.states.iter().filter(|s| **s != State::ToDo).count(), self.states.len())
    }

    /// Whether any point was measured (the forecast is corrected, not only estimated).
    pub fn measured(&self) -> bool {
        self.states.iter().any(|s| matches!(s, State::Took(_)))
    }

    /// Measured over estimated seconds of the points done that `same` selects.
    fn ratio_of(&self, same: impl Fn(&PointOnTarget) -> bool) -> Option<f64> {
        let (mut took, mut estimated) = (0.0, 0.0);
        for (i, state) in self.states.iter().enumerate() {
            if let State::Took(secs) = state
                && same(&self.planned[i].at)
            {
                took += secs;
                estimated += self.estimate(i);
            }
        }
        (estimated > 0.0).then(|| took / estimated)
    }

    /// How much longer than estimated points like `at` take: measured over estimated of the
    /// same target and experiment, else of the same target, else of all points done; 1
    /// before any.
    fn correction(&self, at: &PointOnTarget) -> f64 {
        self.ratio_of(|p| p.target == at.target && p.experiment == at.experiment)
            .or_else(|| self.ratio_of(|p| p.target == at.target))
            .or_else(|| self.ratio_of(|_| true))
            .unwrap_or(1.0)
    }

    /// Seconds still to go at `now`, with the work counter at `work_done`.
    pub fn remaining_secs(&self, now: Duration, work_done: u64) -> f64 {
        let expected = |i: usize| self.estimate(i) * self.correction(&self.planned[i].at);
        let to_do = (0..self.planned.len()).filter(|i| self.states[*i] == State::ToDo && !self.current.contains(i));
        let rest: f64 = to_do.map(expected).sum();
        let current_work: u64 = self.current.iter().map(|&i| self.planned[i].work).sum();
        let current_expected: f64 = self.current.iter().map(|&i| expected(i)).sum();
        let had = now.saturating_sub(self.last_mark).as_secs_f64();
        let share = if current_work > 0 { work_done.saturating_sub(self.work_at_begin) as f64 / current_work as f64 } else { 0.0 };
        let current = if share >= OWN_PACE_AFTER { had * (1.0 - share.min(1.0)) / share } else { (current_expected - had).max(0.0) };
        rest + current
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(target: &str, experiment: usize, point: usize) -> PointOnTarget {
        PointOnTarget { target: target.into(), experiment, point }
    }

    /// Two targets, two experiments of two points each, every point estimated at 1 s and
    /// 100 ops.
    fn plan() -> Forecast {
        let mut planned = Vec::new();
        for experiment in 0..2 {
            for point in 0..2 {
                for target in ["a", "b"] {
                    planned.push(Planned { at: at(target, experiment, point), estimate_secs: 1.0, work: 100 });
                }
            }
        }
        Forecast::new(planned)
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn before_anything_ran_the_forecast_is_the_estimate_not_zero() {
        let f = plan();
        assert_eq!(f.remaining_secs(Duration::ZERO, 0), 8.0);
        assert_eq!(f.up_front_secs(), 8.0);
        assert!(!f.measured());
        assert_eq!(f.total_work(), 800);
        assert_eq!(f.work_of(&[at("a", 0, 0), at("b", 1, 1)]), 200);
    }

    #[test]
    fn measured_points_correct_the_rest_by_target_and_experiment() {
        let mut f = plan();
        // a's first point took 9 s (9x its estimate), b's took 2 s.
        f.begin(&[at("a", 0, 0)], 0);
        f.end(&[at("a", 0, 0)], secs(9.0));
        f.begin(&[at("b", 0, 0)], 100);
        f.end(&[at("b", 0, 0)], secs(11.0));
        assert!(f.measured());
        assert_eq!(f.points_done(), (2, 8));
        // Left: a's 3 points at 9 s each, b's 3 at 2 s each.
        assert!((f.remaining_secs(secs(11.0), 200) - 33.0).abs() < 1e-9, "{}", f.remaining_secs(secs(11.0), 200));
        // In experiment 1, a's point took 1 s: a's next point of experiment 1 expects 1 s,
        // but a's points of experiment 0 still 9 s.
        f.begin(&[at("a", 0, 1)], 200);
        f.end(&[at("a", 0, 1)], secs(20.0));
        f.begin(&[at("b", 0, 1)], 300);
        f.end(&[at("b", 0, 1)], secs(22.0));
        f.begin(&[at("a", 1, 0)], 400);
        f.end(&[at("a", 1, 0)], secs(23.0));
        let left = f.remaining_secs(secs(23.0), 500);
        // a: (1, 1) at 1 s; b: (1, 0) and (1, 1) at b's 2 s.
        assert!((left - 5.0).abs() < 1e-9, "{left}");
    }

    #[test]
    fn the_point_under_way_counts_what_is_left_of_it() {
        let mut f = plan();
        f.begin(&[at("a", 0, 0)], 0);
        // 0.5 s in and 5 % done: its estimate less the time it had.
        assert!((f.remaining_secs(secs(0.5), 5) - 7.5).abs() < 1e-9);
        // 4 s in and half done: its own pace says 4 s more, beside 7 points of 1 s.
        assert!((f.remaining_secs(secs(4.0), 50) - 11.0).abs() < 1e-9);
        // Past its estimate with little done: nothing negative.
        assert!((f.remaining_secs(secs(3.0), 1) - 7.0).abs() < 1e-9);
    }

    #[test]
    fn skipped_points_leave_the_forecast_and_their_time_is_nobodys() {
        let mut f = plan();
        f.skip(&[at("a", 0, 0), at("b", 0, 0)], secs(30.0));
        assert_eq!(f.points_done(), (2, 8));
        assert!(!f.measured());
        assert_eq!(f.remaining_secs(secs(30.0), 0), 6.0);
        // The next point is timed from the skip, not from the start.
        f.begin(&[at("a", 0, 1)], 0);
        f.end(&[at("a", 0, 1)], secs(32.0));
        // It took 2 s, twice its estimate: the 5 points left expect 2 s each.
        assert!((f.remaining_secs(secs(32.0), 100) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn points_ended_together_share_their_time_by_estimate() {
        let planned = vec![
            Planned { at: at("a", 0, 0), estimate_secs: 1.0, work: 10 },
            Planned { at: at("a", 1, 0), estimate_secs: 3.0, work: 10 },
            Planned { at: at("a", 0, 1), estimate_secs: 1.0, work: 10 },
            Planned { at: at("a", 1, 1), estimate_secs: 3.0, work: 10 },
        ];
        let mut f = Forecast::new(planned);
        let phases = [at("a", 0, 0), at("a", 1, 0)];
        f.begin(&phases, 0);
        f.end(&phases, secs(8.0));
        // Each took twice its estimate: the next two points expect 2 s and 6 s.
        assert!((f.remaining_secs(secs(8.0), 20) - 8.0).abs() < 1e-9);
    }
}
