//! Like-for-like figures for the paper verdicts: where a paper measured something other
//! than dbsweep's end-to-end throughput, the same thing read from a saved point — the
//! server's own time per request (`?timing=server`), the cold first call of a fresh
//! connection, the server's memory growth — and the comparison of two points on it
//! (medians over the measured runs, no interval). Also the split of a finding that has
//! such a figure into its like-for-like verdict and its labelled end-to-end one.
//! Must not judge anything but one pair of points.

use super::{FindingSpec, Pair, Quantity};
use crate::report::model::{MemoryDelta, PointResult};
use crate::stats::median;

/// Systems whose server is a JVM: their resident memory follows the garbage collector.
const GARBAGE_COLLECTED: &[&str] = &["h2", "cassandra"];

/// A finding with a like-for-like quantity, as two: judged on that quantity (the
/// finding's id), then on dbsweep's own (`<id>-end-to-end`, `-warm`, `-client`), labelled.
pub(super) fn split(f: &FindingSpec) -> Vec<FindingSpec> {
    let Some(like) = f.like_for_like else { return vec![f.clone()] };
    let (suffix, label, how) = match like {
        Quantity::ServerTime => (
            "end-to-end",
            "dbsweep's end-to-end time",
            "judged on the server's own time per request, as the paper timed it (redis-cli: TIME before and after the command in one MULTI; mariadb: SYSDATE(6) around the statement, what mysql -vvv's timer spans)",
        ),
        Quantity::ColdCall => (
            "warm",
            "dbsweep's warm time per request",
            "judged on the cold call (the first request of a fresh connection, median over the runs), as the paper's one call; warm requests are judged apart",
        ),
        Quantity::ServerMemory => (
            "client",
            "dbsweep's client's memory change, the paper's metric in kind",
            "judged on the server's memory growth over the operation (PSS of its process group, after minus before, median over the runs); H2 and Cassandra are JVMs, whose PSS follows their garbage collector",
        ),
        _ => return vec![f.clone()],
    };
    let primary = FindingSpec { quantity: like, like_for_like: None, by_construction: Some(how.to_string()), ..f.clone() };
    let own = FindingSpec { id: format!("{}-{suffix}", f.id), claim: format!("{} [{label}]", f.claim), like_for_like: None, ..f.clone() };
    vec![primary, own]
}

/// The median over the measured runs of a point's like-for-like figure, in the unit
/// `text` shows: server seconds per request, cold-call milliseconds.
fn figure(p: &PointResult, quantity: Quantity) -> Option<f64> {
    let values: Vec<f64> = p
        .measured_runs()
        .iter()
        .filter_map(|r| match quantity {
            Quantity::ServerTime => r.server_seconds.filter(|_| r.server_timed_requests > 0).map(|s| s / r.server_timed_requests as f64),
            Quantity::ColdCall => r.cold_call_us.map(|us| us / 1000.0),
            _ => None,
        })
        .collect();
    (!values.is_empty()).then(|| median(&values))
}

/// The pair on a like-for-like quantity: `Err` is the pair's outcome when it is not an
/// agreement; `Ok` the better's advantage (worse / better) and the text.
pub(super) fn compare(quantity: Quantity, (a, pa): (&str, &PointResult), (b, pb): (&str, &PointResult)) -> Result<(f64, String), Pair> {
    match quantity {
        Quantity::ServerTime | Quantity::ColdCall => {
            let (what, unit, missing) = if quantity == Quantity::ServerTime {
                ("server time per request", "s", "no server time at this point (its URL needs ?timing=server)")
            } else {
                ("cold call", "ms", "no cold call at this point (lifecycle studies record it)")
            };
            let (Some(x), Some(y)) = (figure(pa, quantity), figure(pb, quantity)) else {
                return Err(Pair::NotMeasured { text: format!("{a} or {b} has {missing}"), not_run: false });
            };
            let shown = |v: f64| format!("{} {unit}", significant(v));
            if x < y {
                let ratio = if x > 0.0 { y / x } else { f64::NAN };
                Ok((ratio, format!("{what} {a} {} < {b} {} (medians, no interval)", shown(x), shown(y))))
            } else {
                Err(Pair::Reversed { text: format!("{what} {b} {} <= {a} {} (medians)", shown(y), shown(x)) })
            }
        }
        Quantity::ServerMemory | Quantity::ClientMemory => {
            let server = quantity == Quantity::ServerMemory;
            let whose = if server { "server" } else { "client" };
            let delta =
                |p: &PointResult| p.summary.as_ref().and_then(|s| s.memory.as_ref()).map(|m| if server { m.server() } else { m.client() });
            let gc = |t: &str, p: &PointResult| server && GARBAGE_COLLECTED.iter().any(|s| p.target.contains(s) || t.contains(s));
            let note = if gc(a, pa) || gc(b, pb) { ", a JVM's PSS follows its garbage collector" } else { "" };
            let mib = |v: f64| format!("{:.1} MiB", v / 1048576.0);
            // A server whose memory fell gave back what earlier operations left (a JVM's
            // collector): that is no growth of this operation to rank.
            let fell = [(a, delta(pa)), (b, delta(pb))].into_iter().find_map(|(t, d)| match d {
                Some(MemoryDelta::Bytes(v)) if server && v < 0.0 => Some(format!("{t}'s server memory fell by {}", mib(-v))),
                _ => None,
            });
            if let Some(fell) = fell {
                return Err(Pair::CannotRank {
                    text: format!("{fell} over the operation: memory of earlier operations given back{note}, no growth to rank"),
                });
            }
            match (delta(pa), delta(pb)) {
                (Some(MemoryDelta::Bytes(x)), Some(MemoryDelta::Bytes(y))) if x < y => {
                    let ratio = if x > 0.0 { y / x } else { f64::NAN };
                    Ok((ratio, format!("{whose} memory {a} {} < {b} {} (medians, no interval{note})", mib(x), mib(y))))
                }
                (Some(MemoryDelta::Bytes(x)), Some(MemoryDelta::Bytes(y))) => {
                    Err(Pair::Reversed { text: format!("{whose} memory {b} {} <= {a} {} (medians{note})", mib(y), mib(x)) })
                }
                (None | Some(MemoryDelta::Missing), _) | (_, None | Some(MemoryDelta::Missing)) => {
                    Err(Pair::NotMeasured { text: format!("{a} or {b} has no {whose} memory reading at this point"), not_run: false })
                }
                _ => Err(Pair::CannotRank {
                    text: format!("the {whose}'s memory change of {a} or {b} is below the noise floor (< noise{note})"),
                }),
            }
        }
        Quantity::Time | Quantity::Throughput => unreachable!("throughput pairs have an interval, judged by the caller"),
    }
}

/// Three significant digits: "0.0312", "41.2", "1250".
fn significant(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    format!("{v:.decimals$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn significant_digits() {
        assert_eq!(significant(0.031234), "0.0312");
        assert_eq!(significant(41.23), "41.2");
        assert_eq!(significant(1250.4), "1250");
    }
}
