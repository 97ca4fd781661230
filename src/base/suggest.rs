//! "Did you mean …?" for names the user types (studies, URL schemes, servers to spawn):
//! the closest known name, when one is close enough. Owns only the matching; callers
//! word their own errors.

/// Similarity (Jaro) above which a known name is offered; clap uses the same measure and
/// threshold for misspelt flags.
const CLOSE_ENOUGH: f64 = 0.7;

/// The known name most like `typed`, if any is close enough.
pub fn closest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed = typed.to_ascii_lowercase();
    known
        .into_iter()
        .map(|k| (strsim::jaro(&typed, k), k))
        .filter(|(score, _)| *score > CLOSE_ENOUGH)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k)
}

/// " (did you mean 'NAME'?)", or nothing when no known name is close.
pub fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(typed, known).map(|k| format!(" (did you mean '{k}'?)")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelling_finds_its_name_and_nonsense_finds_none() {
        let studies = ["embedded", "kv-vs-relational", "insert-find", "ycsb", "in-memory"];
        assert_eq!(closest("embeded", studies), Some("embedded"));
        assert_eq!(closest("insert_find", studies), Some("insert-find"));
        assert_eq!(closest("postgress", ["postgres", "redis", "sqlite"]), Some("postgres"));
        assert_eq!(closest("REDSI", ["postgres", "redis", "sqlite"]), Some("redis"));
        assert_eq!(closest("zzzz", studies), None);
        assert_eq!(did_you_mean("zzzz", studies), "");
        assert_eq!(did_you_mean("ycbs", studies), " (did you mean 'ycsb'?)");
    }
}
