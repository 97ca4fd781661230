//! What a point's runs add up to: the summary (median and spread of throughput, merged
//! latency, errors, retries, memory, the widest run's precision) and the flags (void,
//! retried, not converged under `--precision`, client-bound, answers that disagree with
//! each other or with the exact TPC-H reference).
//!
//! Owns every rule that turns measurements into a verdict; `merge` reuses the cross-target
//! ones. Must not run anything or write files.

use super::memory;
use crate::base::measurement::RunMeasurement;
use crate::base::op::{Answer, OpKind, QueryId};
use crate::report::model::{Flag, PointResult, PointSummary};
use crate::stats::{median, merge_summaries};
use std::collections::BTreeMap;

/// A result is flagged client-bound when it reaches this share of the NO-DB ceiling: the
/// client then spends at least a quarter of each op's time in its own machinery.
pub const CLIENT_BOUND_SHARE: f64 = 0.25;

/// Exact reference answers of analytic queries, from the TPC-H cache's manifest (computed
/// when the cache was generated).
#[derive(Default)]
pub(super) struct References {
    answers: BTreeMap<String, Answer>,
}

impl References {
    pub(super) fn answer(&mut self, data: &crate::data::DataSpec, query: QueryId) -> Option<&Answer> {
        let crate::data::DataSpec::Tpch { scale } = data else { return None };
        let key = format!("{query:?}");
        if !self.answers.contains_key(&key) {
            let not_stopped = std::sync::atomic::AtomicBool::new(false);
            match crate::data::tpch_cache::ensure(*scale, &not_stopped) {
                Ok(cache) => self.answers.insert(key.clone(), cache.answer(query)),
                Err(e) => {
                    tracing::warn!("no reference answer for {query:?}: {e}");
                    return None;
                }
            };
        }
        self.answers.get(&key)
    }
}

/// A query answer that differs from the exact reference voids that timing.
pub(super) fn flag_against_reference(results: &mut [PointResult], reference: &Answer) {
    for r in results.iter_mut() {
        let wrong = r.runs.iter().filter(|m| !m.warmup).filter_map(|m| m.sample_answer.as_ref()).any(|a| !a.agrees_with(reference));
        if wrong {
            r.flags.push(Flag::AnswerMismatch { detail: crate::report::answers::REFERENCE_MISMATCH.into() });
        }
    }
}

/// Fills in a finished result's summary and the flags of its own runs (void, retried).
pub(super) fn summarize_and_flag(result: &mut PointResult) {
    result.summary = summarize(result);
    result.flags.extend(void_flags(&result.runs));
    result.flags.extend(retry_flag(&result.runs));
    result.flags.extend(rate_flag(result));
}

/// Fixed-rate points: the share of late ops beyond which the schedule was missed. A busy
/// machine stalls a client now and then for longer than a slot (a few late ops, then it
/// catches up); a target that cannot keep the rate makes most of its ops late.
const LATE_SHARE_MISSED: f64 = 0.05;
/// Fixed-rate points: the share of the rate asked under which it was not kept.
const RATE_KEPT_SHARE: f64 = 0.95;

/// The flag of a fixed-rate point whose system could not keep the schedule.
pub(super) fn rate_flag(result: &PointResult) -> Option<Flag> {
    let asked = result.rate()?;
    let measured: Vec<&RunMeasurement> = result.runs.iter().filter(|r| !r.warmup && r.complete).collect();
    let (late_ops, ops) = measured.iter().fold((0, 0), |(late, all), r| (late + r.late_ops, all + r.ops));
    if ops == 0 {
        return None;
    }
    let achieved = result.summary.as_ref().and_then(|s| s.median_ops_per_sec);
    let late = late_ops as f64 > LATE_SHARE_MISSED * ops as f64;
    let slow = achieved.is_some_and(|a| a < RATE_KEPT_SHARE * asked);
    (late || slow).then_some(Flag::MissedRate { asked, achieved, late_ops, ops })
}

/// Median and spread over the measured runs. A point with a failed or short request in
/// any run (warm-up included: it shows something broke) is void: no throughput.
pub(super) fn summarize(result: &PointResult) -> Option<PointSummary> {
    let measured: Vec<&RunMeasurement> = result.runs.iter().filter(|r| !r.warmup && r.complete).collect();
    if measured.is_empty() {
        return None;
    }
    let void = result.runs.iter().any(RunMeasurement::is_void);
    let throughput: Vec<f64> = measured.iter().map(|r| r.ops_per_sec().unwrap_or(0.0)).collect();
    let rows: Vec<f64> = measured.iter().map(|r| r.rows_per_sec().unwrap_or(0.0)).collect();
    let valid = |v: f64| (!void).then_some(v);
    // A mixed (YCSB) point's latency merges every kind; per-kind latencies stay in the runs.
    let of_point = |m: &BTreeMap<OpKind, crate::base::measurement::LatencySummary>| -> Vec<crate::base::measurement::LatencySummary> {
        match result.op {
            OpKind::Mixed => m.values().cloned().collect(),
            kind => m.get(&kind).cloned().into_iter().collect(),
        }
    };
    let service: Vec<_> = measured.iter().flat_map(|r| of_point(&r.service)).collect();
    let response: Vec<_> = measured.iter().flat_map(|r| of_point(&r.response)).collect();
    let latency = merge_summaries(service.iter());
    let response_latency = merge_summaries(response.iter());
    let per_row_p50_us =
        (result.point.batched && result.point.batch > 1).then(|| latency.as_ref().map(|l| l.p50_us / result.point.batch as f64)).flatten();
    Some(PointSummary {
        measured_runs: measured.len(),
        median_ops_per_sec: valid(median(&throughput)),
        min_ops_per_sec: valid(throughput.iter().copied().fold(f64::INFINITY, f64::min)),
        max_ops_per_sec: valid(throughput.iter().copied().fold(0.0, f64::max)),
        median_rows_per_sec: valid(median(&rows)),
        latency,
        response_latency,
        per_row_p50_us,
        client_share: None,
        errors: result.runs.iter().map(RunMeasurement::error_count).sum(),
        failed_ops: result.runs.iter().map(|r| r.failed_ops).sum(),
        missing_rows: result.runs.iter().map(|r| r.missing_rows).sum(),
        retries: measured.iter().map(|r| r.retries).sum(),
        memory: memory::summarize(&measured),
        by_kind: if result.op == OpKind::Mixed { by_kind(&measured, void) } else { BTreeMap::new() },
        precision: measured.iter().map(|r| r.precision).try_fold(0.0, |widest: f64, p| p.map(|p| widest.max(p))),
    })
}

/// Per operation type of a mixed (YCSB) point: its ops per second of each run (median,
/// min, max; none for a void point) and its latency merged over the runs.
fn by_kind(measured: &[&RunMeasurement], void: bool) -> BTreeMap<OpKind, crate::report::model::KindSummary> {
    let kinds: std::collections::BTreeSet<OpKind> = measured.iter().flat_map(|r| r.service.keys().copied()).collect();
    kinds
        .into_iter()
        .filter_map(|kind| {
            let latency = merge_summaries(measured.iter().filter_map(|r| r.service.get(&kind)))?;
            let rates: Vec<f64> =
                measured.iter().map(|r| r.service.get(&kind).map_or(0, |l| l.count) as f64 / r.seconds.max(1e-12)).collect();
            let valid = |v: f64| (!void).then_some(v);
            let summary = crate::report::model::KindSummary {
                median_ops_per_sec: valid(median(&rates)),
                min_ops_per_sec: valid(rates.iter().copied().fold(f64::INFINITY, f64::min)),
                max_ops_per_sec: valid(rates.iter().copied().fold(0.0, f64::max)),
                latency,
            };
            Some((kind, summary))
        })
        .collect()
}

/// The flags that void a point: failed requests and missing rows in any of its runs,
/// warm-up included.
pub(super) fn void_flags(runs: &[RunMeasurement]) -> Vec<Flag> {
    let count: u64 = runs.iter().map(RunMeasurement::error_count).sum();
    let failed_ops = runs.iter().map(|r| r.failed_ops).sum();
    let missing: u64 = runs.iter().map(|r| r.missing_rows).sum();
    let mut flags = Vec::new();
    if count > 0 {
        flags.push(Flag::Errors { count, failed_ops });
    }
    if missing > 0 {
        flags.push(Flag::MissingRows { count: missing });
    }
    let mismatches: Vec<&str> = runs.iter().filter_map(|r| r.share_mismatch.as_deref()).collect();
    if !mismatches.is_empty() {
        flags.push(Flag::WorkerShare { detail: mismatches.join("; ") });
    }
    flags
}

/// Under `--precision`: the flag of a measured point whose runs did not all reach the
/// precision asked before their caps.
pub(super) fn convergence_flag(result: &PointResult, asked: f64) -> Option<Flag> {
    let summary = result.summary.as_ref()?;
    let reached = summary.precision;
    reached.is_none_or(|p| p > asked).then_some(Flag::NotConverged { asked, reached })
}

/// The flag of a point whose measured runs retried requests after conflicts (not void).
pub(super) fn retry_flag(runs: &[RunMeasurement]) -> Option<Flag> {
    let count: u64 = runs.iter().filter(|r| !r.warmup).map(|r| r.retries).sum();
    (count > 0).then_some(Flag::Retried { count })
}

/// Cross-target flags for one point: the share of the NO-DB ceiling, and answers that
/// disagree with the other systems' (or change between runs of the same system). Whether
/// targets can be ranked is the findings' (`report::uncertainty`), which see every point
/// of the report at once.
pub(super) fn flag_point(results: &mut [PointResult]) {
    flag_client_bound(results);
    for r in results.iter_mut() {
        let seen = observed_answers(r);
        if seen.windows(2).any(|w| !w[0].agrees(&w[1])) {
            r.flags.push(Flag::AnswerMismatch { detail: "answers changed between runs of the same ops".into() });
        }
    }
    flag_differing_answers(results);
}

/// Each non-NO-DB result's share of the NO-DB ceiling at the same point; flagged
/// client-bound at `CLIENT_BOUND_SHARE` or more, except at a fixed rate, where every target
/// does the same ops per second as the ceiling and the share says nothing (`rate_flag`
/// says whether the schedule was kept).
pub(super) fn flag_client_bound(results: &mut [PointResult]) {
    let ceiling = results.iter().find(|r| r.system == "nodb").and_then(|r| r.summary.as_ref()).and_then(|s| s.median_ops_per_sec);
    for r in results.iter_mut().filter(|r| r.system != "nodb") {
        if let (Some(c), Some(s)) = (ceiling, r.summary.as_mut())
            && let Some(median) = s.median_ops_per_sec
            && c > 0.0
        {
            let share = median / c;
            s.client_share = Some(share);
            if share >= CLIENT_BOUND_SHARE && r.point.rate.is_none() {
                r.flags.push(Flag::ClientBound { share });
            }
        }
    }
}

/// How a mismatch across targets is described (`merge` recomputes exactly these).
pub(super) const DIFFER_FROM: &str = "answers differ from ";

/// Answers: every measured run of a point executes the same ops, so answers must agree
/// across targets. Query results are compared whole with numeric tolerance; COUNT/MAX
/// answers by digest.
pub(super) fn flag_differing_answers(results: &mut [PointResult]) {
    let answers: Vec<Vec<Observed>> = results.iter().map(observed_answers).collect();
    let firsts: Vec<Option<&Observed>> = answers.iter().map(|a| a.first()).collect();
    let present: Vec<&Observed> = firsts.iter().flatten().copied().collect();
    if present.len() < 2 {
        return;
    }
    let support = |o: &Observed| present.iter().filter(|p| p.agrees(o)).count();
    let best = present.iter().copied().max_by_key(|o| support(o)).expect("non-empty");
    let clear_majority = support(best) * 2 > present.len();
    let agreed_by: Vec<String> =
        results.iter().zip(&firsts).filter(|(_, o)| o.is_some_and(|o| o.agrees(best))).map(|(r, _)| r.target.clone()).collect();
    for (r, o) in results.iter_mut().zip(&firsts) {
        if let Some(o) = o
            && (!o.agrees(best) || !clear_majority)
        {
            r.flags.push(Flag::AnswerMismatch { detail: format!("{DIFFER_FROM}{}", agreed_by.join(", ")) });
        }
    }
}

/// The answers of a result's measured, complete, valid runs.
fn observed_answers(r: &PointResult) -> Vec<Observed> {
    r.runs.iter().filter(|m| !m.warmup && m.complete && !m.is_void()).filter_map(Observed::of).collect()
}

/// An answer a run produced, in the form it is compared in.
enum Observed {
    Digest(Digests),
    Whole(crate::base::op::Answer),
}

/// The answer digests of a run: of all its ops, and (runs that end early by design:
/// `--precision`, `--duration`) per complete leading block of sequence numbers.
struct Digests {
    whole: String,
    ops: u64,
    blocks: Vec<String>,
}

impl Digests {
    /// Runs of the same ops agree when their digests do. Runs that stopped after different
    /// numbers of ops (`--precision`, `--duration`), or after as many ops with different
    /// holes, agree when the leading blocks both answered in full agree (each run saves only
    /// its complete leading blocks).
    fn agrees(&self, other: &Digests) -> bool {
        if self.ops == other.ops && self.whole == other.whole {
            return true;
        }
        let common = self.blocks.len().min(other.blocks.len());
        if common > 0 {
            return self.blocks[..common] == other.blocks[..common];
        }
        // Nothing in common to compare when the ops differ and neither completed a block.
        self.ops != other.ops
    }
}

impl Observed {
    fn of(m: &RunMeasurement) -> Option<Observed> {
        match (&m.sample_answer, &m.answer_digest) {
            (Some(a), _) => Some(Observed::Whole(a.clone())),
            (None, Some(d)) => Some(Observed::Digest(Digests { whole: d.clone(), ops: m.ops, blocks: m.answer_blocks.clone() })),
            _ => None,
        }
    }

    fn agrees(&self, other: &Observed) -> bool {
        match (self, other) {
            (Observed::Digest(a), Observed::Digest(b)) => a.agrees(b),
            (Observed::Whole(a), Observed::Whole(b)) => a.agrees_with(b),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::op::OpKind;
    use crate::report::model::PointStatus;
    use crate::workload::experiment::Point;
    use std::collections::BTreeMap;

    fn result(target: &str, system: &str, ops_per_sec: f64, digests: &[&str]) -> PointResult {
        let runs = digests
            .iter()
            .enumerate()
            .map(|(i, d)| RunMeasurement {
                run: i as u32,
                warmup: false,
                complete: true,
                ops: ops_per_sec as u64,
                ok_ops: ops_per_sec as u64,
                failed_ops: 0,
                short_ops: 0,
                missing_rows: 0,
                requests: ops_per_sec as u64,
                rows: 0,
                retries: 0,
                seconds: 1.0,
                client_cpu_seconds: 0.0,
                errors: BTreeMap::new(),
                error_samples: vec![],
                late_ops: 0,
                sample_answer: None,
                answer_digest: (!d.is_empty()).then(|| d.to_string()),
                answer_blocks: vec![],
                precision: None,
                service: BTreeMap::new(),
                response: BTreeMap::new(),
                memory: None,
                intervals: None,
                load: None,
                share_mismatch: None,
                server_seconds: None,
                server_timed_requests: 0,
                cold_call_us: None,
            })
            .collect();
        let mut r = PointResult {
            experiment: "e".into(),
            op: OpKind::RangeCount,
            target: target.into(),
            system: system.into(),
            point: Point { clients: 1, batch: 1, batched: false, param: None, rate: None },
            status: PointStatus::Measured,
            runs,
            summary: None,
            flags: vec![],
            exports: None,
        };
        r.summary = summarize(&r);
        r
    }

    fn flags(r: &PointResult) -> Vec<&'static str> {
        r.flags.iter().map(|f| f.short()).collect()
    }

    #[test]
    fn near_the_ceiling_is_client_bound_far_below_is_not() {
        let mut results = vec![
            result("nodb", "nodb", 1_000_000.0, &["", ""]),
            result("fast", "x", 400_000.0, &["a", "a"]),
            result("slow", "y", 10_000.0, &["a", "a"]),
        ];
        flag_point(&mut results);
        assert_eq!(flags(&results[1]), ["client_bound"]);
        assert!(flags(&results[2]).is_empty());
        assert!((results[2].summary.as_ref().unwrap().client_share.unwrap() - 0.01).abs() < 1e-9);
    }

    #[test]
    fn at_a_fixed_rate_no_target_is_client_bound_and_a_missed_schedule_is_flagged() {
        let at_rate = |target: &str, system: &str, ops_per_sec: f64, late_ops: u64| {
            let mut r = result(target, system, ops_per_sec, &["a", "a"]);
            r.point.rate = crate::workload::experiment::Rate::new(1000.0);
            r.runs.iter_mut().for_each(|m| m.late_ops = late_ops);
            r.summary = summarize(&r);
            r
        };
        let mut results = vec![at_rate("nodb", "nodb", 1000.0, 0), at_rate("kept", "x", 998.0, 5), at_rate("behind", "y", 1000.0, 300)];
        flag_point(&mut results);
        assert!(results.iter().all(|r| flags(r).is_empty()), "the same rate as the ceiling is not client-bound");
        assert_eq!(rate_flag(&results[1]), None, "0.5 % late and 99.8 % of the rate: kept");
        assert_eq!(rate_flag(&results[2]), Some(Flag::MissedRate { asked: 1000.0, achieved: Some(1000.0), late_ops: 600, ops: 2000 }));
        let slow = at_rate("slow", "z", 900.0, 0);
        assert!(matches!(rate_flag(&slow), Some(Flag::MissedRate { achieved: Some(a), .. }) if a == 900.0), "90 % of the rate");
        assert_eq!(rate_flag(&result("closed", "x", 10.0, &["a"])), None, "closed-loop points have no schedule");
    }

    #[test]
    fn an_error_or_a_missing_row_in_any_run_voids_the_point() {
        let clean = result("a", "x", 1000.0, &["d", "d"]);
        assert_eq!(clean.summary.as_ref().unwrap().median_ops_per_sec, Some(1000.0));
        assert!(void_flags(&clean.runs).is_empty() && !clean.is_void());
        // A warm-up run that failed shows that something broke: the point is void.
        let mut warm = clean.clone();
        let mut w = warm.runs[0].clone();
        w.warmup = true;
        w.errors.insert("server".into(), 2);
        (w.ok_ops, w.failed_ops) = (w.ops - 20, 20);
        warm.runs.insert(0, w);
        warm.summary = summarize(&warm);
        warm.flags = void_flags(&warm.runs);
        let s = warm.summary.as_ref().unwrap();
        assert_eq!((s.median_ops_per_sec, s.min_ops_per_sec, s.max_ops_per_sec, s.median_rows_per_sec), (None, None, None, None));
        assert_eq!((s.errors, s.failed_ops, s.measured_runs), (2, 20, 2));
        assert_eq!(warm.flags, vec![Flag::Errors { count: 2, failed_ops: 20 }]);
        assert!(warm.is_void());
        // Missing rows in a measured run do the same.
        let mut short = clean.clone();
        (short.runs[1].ok_ops, short.runs[1].short_ops, short.runs[1].missing_rows) = (990, 10, 4);
        short.summary = summarize(&short);
        short.flags = void_flags(&short.runs);
        assert_eq!(short.summary.as_ref().unwrap().missing_rows, 4);
        assert_eq!(short.flags, vec![Flag::MissingRows { count: 4 }]);
        assert!(short.is_void());
        // So does a worker's result that did not fit its share, with the reason.
        let mut misfit = clean.clone();
        misfit.runs[1].share_mismatch = Some("worker 2's result does not fit its share: 300000 ops, its share has 300".into());
        misfit.summary = summarize(&misfit);
        misfit.flags = void_flags(&misfit.runs);
        assert_eq!(misfit.summary.as_ref().unwrap().median_ops_per_sec, None);
        assert_eq!(
            misfit.flags,
            vec![Flag::WorkerShare { detail: "worker 2's result does not fit its share: 300000 ops, its share has 300".into() }]
        );
        assert!(misfit.is_void());
        // A void point is neither compared with the NO-DB ceiling nor ranked.
        let mut results = vec![result("nodb", "nodb", 1000.0, &["", ""]), short];
        flag_point(&mut results);
        assert!(results[1].summary.as_ref().unwrap().client_share.is_none());
        assert_eq!(flags(&results[1]), ["missing_rows"]);
    }

    #[test]
    fn runs_that_stopped_at_different_ops_compare_the_blocks_both_completed() {
        let digests =
            |ops: u64, blocks: &[&str]| Digests { whole: blocks.join("+"), ops, blocks: blocks.iter().map(|b| b.to_string()).collect() };
        // Blocks end at 64, 128, 256, 512: 300 ops complete the first three (a run saves
        // only its complete leading blocks).
        let short = digests(300, &["a", "b", "c"]);
        let long = digests(1000, &["a", "b", "c", "d", "e"]);
        assert!(short.agrees(&long) && long.agrees(&short));
        assert!(!digests(300, &["a", "z", "c"]).agrees(&long), "a different answer in a shared block");
        // As many ops with holes in other places (clients stopped at a deadline): the blocks.
        let holes = Digests { whole: "other".into(), ..digests(1000, &["a", "b", "c", "d"]) };
        assert!(holes.agrees(&long) && long.agrees(&holes));
        // The same ops without blocks (a fixed number of ops) compare whole.
        let fixed = |whole: &str| Digests { whole: whole.into(), ops: 300, blocks: vec![] };
        assert!(fixed("w").agrees(&fixed("w")));
        assert!(!fixed("w").agrees(&fixed("v")));
        // Runs of a few slow ops that completed no block have nothing to compare.
        assert!(Digests { whole: "w".into(), ops: 20, blocks: vec![] }.agrees(&Digests { whole: "v".into(), ops: 31, blocks: vec![] }));
    }

    #[test]
    fn the_odd_answer_out_is_flagged() {
        let mut results = vec![
            result("a", "x", 1.0, &["d1", "d1"]),
            result("b", "y", 1.0, &["d1", "d1"]),
            result("c", "z", 1.0, &["d2", "d2"]),
            result("d", "w", 1.0, &["d1", "d3"]),
        ];
        flag_point(&mut results);
        assert!(flags(&results[0]).is_empty());
        assert!(flags(&results[1]).is_empty());
        assert_eq!(flags(&results[2]), ["answer_mismatch"]);
        assert_eq!(flags(&results[3]), ["answer_mismatch"], "answers changed between runs");
    }
}
