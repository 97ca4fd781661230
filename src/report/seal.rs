//! The seal of a run's report.json: a SHA-256 digest of its contents, or with a worker
//! token in the environment an HMAC-SHA-256 tag, so that `dbsweep merge` can tell a shard's
//! report as its run wrote it from one edited since.
//!
//! Owns what the seal covers — everything the run wrote (plan and its hash, shard, targets,
//! every point, run, histogram and count, warnings, status) but the seal itself and what is
//! rendered again from it (the schema reference, the latency files' names, a paper study's
//! verdicts) — and how it is
//! made and checked. Must not decide what a merge does with a broken seal (`runner::merge`).

use super::model::{Report, Seal};
use crate::base::canonical::canonical_json;
use crate::base::secret::{Token, digest_hex};

/// Names what the parts are, so that a seal cannot pass for a tag of anything else.
const DOMAIN: &[u8] = b"dbsweep report seal 1";

/// Seals `report` as it is now: an HMAC with `token`, else a SHA-256 digest.
pub fn seal(report: &mut Report, token: Option<&Token>) {
    let sealed = Sealed::of(report);
    report.seal = Some(match token {
        Some(token) => Seal::HmacSha256 { tag: token.tag_hex(&sealed.parts()) },
        None => Seal::Sha256 { digest: digest_hex(&sealed.parts()) },
    });
}

/// Whether `report`'s seal matches its contents; `Err` says what is wrong and what to do,
/// as words that follow "report.json".
/// With `token`, only an HMAC made with that token passes: a digest (which anyone can
/// compute again) does not.
pub fn check(report: &Report, token: Option<&Token>) -> Result<(), String> {
    let parts = Sealed::of(report);
    let parts = parts.parts();
    match (&report.seal, token) {
        (None, _) => {
            Err("has no seal (written by an older dbsweep, or the seal was removed): run its shard again with this dbsweep".into())
        }
        (Some(Seal::HmacSha256 { tag }), Some(token)) if token.verify_hex(&parts, tag) => Ok(()),
        (Some(Seal::HmacSha256 { .. }), Some(_)) => {
            Err("does not match its HMAC under this worker token (edited after its run, or signed with another token)".into())
        }
        (Some(Seal::Sha256 { .. }), Some(_)) => {
            Err("is not signed with the worker token (its run had no DBSWEEP_WORKER_TOKEN): run the shard again with the token set".into())
        }
        (Some(Seal::HmacSha256 { .. }), None) => {
            Err("is signed with a worker token: set DBSWEEP_WORKER_TOKEN (or DBSWEEP_WORKER_TOKEN_FILE) to that token to merge it".into())
        }
        (Some(Seal::Sha256 { digest }), None) if *digest == digest_hex(&parts) => Ok(()),
        (Some(Seal::Sha256 { .. }), None) => Err("does not match its digest (edited after its run)".into()),
    }
}

/// What a seal covers: the plan hash and the shard (also in the contents; named first so
/// that they are what a seal is most plainly about) and the report's canonical contents.
struct Sealed {
    plan_hash: String,
    shard: String,
    contents: String,
}

impl Sealed {
    fn of(report: &Report) -> Sealed {
        Sealed {
            plan_hash: report.plan_hash.clone().unwrap_or_default(),
            shard: report.shard.map_or_else(|| "whole plan".to_string(), |s| s.to_string()),
            contents: sealed_contents(report),
        }
    }

    fn parts(&self) -> [&[u8]; 4] {
        [DOMAIN, self.plan_hash.as_bytes(), self.shard.as_bytes(), self.contents.as_bytes()]
    }
}

/// The report as canonical JSON without its seal, its schema reference, its points'
/// latency file names and a paper study's verdicts (`dbsweep report` and every save derive
/// those again from the rest).
fn sealed_contents(report: &Report) -> String {
    let mut value = serde_json::to_value(report).expect("a report always encodes as JSON");
    if let Some(map) = value.as_object_mut() {
        map.remove("seal");
        map.remove("schema");
        map.remove("paper_verdicts");
        if let Some(points) = map.get_mut("points").and_then(|p| p.as_array_mut()) {
            for point in points.iter_mut().filter_map(|p| p.as_object_mut()) {
                point.remove("exports");
            }
        }
    }
    canonical_json(&value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden() -> Report {
        serde_json::from_str(include_str!("../../tests/golden/report.json")).unwrap()
    }

    fn token(text: &str) -> Token {
        Token::from_text(text, "a test").unwrap()
    }

    /// The report as written to report.json and read back.
    fn reread(report: &Report) -> Report {
        serde_json::from_str(&serde_json::to_string_pretty(report).unwrap()).unwrap()
    }

    #[test]
    fn a_digest_survives_writing_and_reading_back_and_catches_any_edit() {
        let mut report = golden();
        seal(&mut report, None);
        assert!(matches!(&report.seal, Some(Seal::Sha256 { digest }) if digest.len() == 64));
        let mut back = reread(&report);
        assert_eq!(check(&back, None), Ok(()));
        // Sealed again after a read-back (a resumed run), the seal is the same.
        let before = back.seal.clone();
        seal(&mut back, None);
        assert_eq!(back.seal, before);
        // What `dbsweep report` renders again is not covered.
        back.schema = None;
        back.points[0].exports = None;
        assert_eq!(check(&back, None), Ok(()));

        let p = back.points.iter().position(|p| !p.runs.is_empty()).unwrap();
        let mut edited = back.clone();
        edited.points[p].runs[0].ops *= 1000;
        assert!(check(&edited, None).unwrap_err().contains("does not match its digest"));
        let mut edited = back.clone();
        edited.points.remove(p);
        assert!(check(&edited, None).is_err(), "a deleted point");
        let mut edited = back.clone();
        edited.seed += 1;
        assert!(check(&edited, None).is_err(), "an edited seed");
        let mut edited = back.clone();
        edited.complete = !edited.complete;
        assert!(check(&edited, None).is_err(), "an edited status");
        let mut edited = back;
        edited.seal = None;
        assert!(check(&edited, None).unwrap_err().contains("run its shard again"));
    }

    #[test]
    fn with_a_token_only_its_own_hmac_passes() {
        let (a, b) = (token("0123456789abcdef-first"), token("0123456789abcdef-second"));
        let mut signed = golden();
        seal(&mut signed, Some(&a));
        let signed = reread(&signed);
        assert!(matches!(&signed.seal, Some(Seal::HmacSha256 { tag }) if tag.len() == 64));
        assert_eq!(check(&signed, Some(&a)), Ok(()));
        assert!(check(&signed, Some(&b)).unwrap_err().contains("another token"));
        assert!(check(&signed, None).unwrap_err().contains("DBSWEEP_WORKER_TOKEN"));
        let mut edited = signed;
        edited.points[0].target.push('x');
        assert!(check(&edited, Some(&a)).is_err());
        // A digest, which anyone can compute again, is not enough when a token is given.
        let mut digested = golden();
        seal(&mut digested, None);
        assert!(check(&digested, Some(&a)).unwrap_err().contains("not signed with the worker token"));
    }
}
