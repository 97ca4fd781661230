//! Fuzzing of every parser of user input, as property tests (proptest, on stable Rust):
//! arbitrary `dbsweep` command lines as far as a dry run goes (clap, the plan, its bounds,
//! the estimate), target URLs, study TOML files and YCSB properties. For any input a user
//! must get no panic, and a refusal that is one line with exit code 2 that never shows a
//! password.
//!
//! Each target fuzzes for 45 s (`DBSWEEP_FUZZ_SECS`), about three minutes of a core together
//! in the debug build (`cargo test --lib app::fuzz`), in rounds of 500 cases from a seed of the
//! clock's (`DBSWEEP_FUZZ_SEED`). A failure names the shrunk input and its round's seed:
//! `DBSWEEP_FUZZ_SEED=N DBSWEEP_FUZZ_CASES=500` replays it; `DBSWEEP_FUZZ_TRACE=1` prints every
//! input, for one that aborts the process. Must not start, connect to or write anything but
//! its own temporary files.

use super::command_line;
use crate::cli::Command;
use crate::error::Error;
use crate::plan::{self, RunOptions};
use crate::runner::workers::Role;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::ffi::OsString;

/// A password no refusal may show.
const CANARY: &str = "canary-pw";

/// The seed of this test process's fuzzing: `DBSWEEP_FUZZ_SEED`, else the clock's.
fn seed() -> u64 {
    match std::env::var("DBSWEEP_FUZZ_SEED") {
        Ok(text) => text.trim().parse().expect("DBSWEEP_FUZZ_SEED is a whole number"),
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64),
    }
}

/// How long each of the four targets fuzzes (`DBSWEEP_FUZZ_SECS`): together about three
/// minutes of a core in the debug build, however busy the machine.
const SECS_PER_TARGET: u64 = 45;
/// Cases run with one seed; the next round takes the next seed.
const ROUND: u32 = 500;

/// Runs `check` on inputs from `strategy` in rounds of `ROUND` cases, seed after seed, for
/// `SECS_PER_TARGET` (or `DBSWEEP_FUZZ_CASES` cases from `DBSWEEP_FUZZ_SEED`, to replay); a
/// failure panics with the shrunk input and how to replay its round.
fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    use std::io::Write;
    let seed = seed();
    let replay: Option<u32> = std::env::var("DBSWEEP_FUZZ_CASES").ok().and_then(|c| c.parse().ok());
    let secs = std::env::var("DBSWEEP_FUZZ_SECS").ok().and_then(|c| c.parse().ok()).unwrap_or(SECS_PER_TARGET);
    // Past the test harness's capture: an input that aborts the process (an allocation
    // failure) leaves no panic to report, only these lines.
    let _ = writeln!(std::io::stderr(), "fuzz {name}: seed {seed} (DBSWEEP_FUZZ_TRACE=1 prints every input)");
    let trace = std::env::var_os("DBSWEEP_FUZZ_TRACE").is_some();
    let check = |value: S::Value| {
        if trace {
            let _ = writeln!(std::io::stderr(), "fuzz {name} input: {value:?}");
        }
        check(value)
    };
    let started = std::time::Instant::now();
    let mut done = 0u64;
    for round in 0u64.. {
        let cases = match replay {
            Some(cases) if done >= u64::from(cases) => break,
            Some(cases) => cases,
            None if started.elapsed().as_secs() >= secs => break,
            None => ROUND,
        };
        let round_seed = seed.wrapping_add(round);
        let config =
            Config { cases, rng_seed: RngSeed::Fixed(round_seed), failure_persistence: None, max_shrink_iters: 2000, ..Config::default() };
        if let Err(e) = TestRunner::new(config).run(&strategy, check) {
            panic!(
                "fuzz {name}: {e}\nreplay: DBSWEEP_FUZZ_SEED={round_seed} DBSWEEP_FUZZ_CASES={cases} cargo test --lib app::fuzz::{name}"
            );
        }
        done += u64::from(cases);
    }
    let _ = writeln!(std::io::stderr(), "fuzz {name}: {done} cases in {:.0?}", started.elapsed());
}

/// A refusal as the user gets it: one line, exit 2 (bad input), no password.
fn refusal_is_one_line(e: &Error) -> Result<(), TestCaseError> {
    let text = e.to_string();
    prop_assert_eq!(e.exit_code(), 2, "bad input must exit 2: {}", text);
    prop_assert!(!text.trim().is_empty() && !text.contains('\n'), "not one line: {:?}", text);
    prop_assert!(!text.contains(CANARY), "the password shows: {}", text);
    Ok(())
}

/// Values that break parsers: extreme and special numbers in every spelling the flags take,
/// lists, durations, percentages, shards, ranges, names and noise.
fn awkward_value() -> impl Strategy<Value = String> {
    let special = prop::sample::select(vec![
        "0",
        "-0",
        "1",
        "-1",
        "2",
        "3",
        "7",
        "NaN",
        "nan",
        "inf",
        "-inf",
        "infinity",
        "1e300",
        "1e-300",
        "-1e300",
        "5e-324",
        "1.7976931348623157e308",
        "18446744073709551615",
        "18446744073709551616",
        "99999999999999",
        "99999999999999999",
        "4294967295",
        "4294967296",
        "9223372036854775807",
        "0.5",
        "0.0",
        "1,2",
        "1,,2",
        ",",
        "",
        " ",
        "1, 2",
        "2%",
        "-2%",
        "100%",
        "0%",
        "1e3%",
        "%",
        "5ms",
        "0ms",
        "1e300s",
        "1e-300s",
        "90s",
        "8h",
        "169h",
        "-1m",
        "1.5h",
        "0/3",
        "2/3",
        "3/3",
        "-1/3",
        "1/0",
        "0/0",
        "1/99999999999999999999",
        "1:100:1",
        "1:99999999999999:1",
        "5:1:1",
        "1:2:0",
        "all",
        "redis",
        "postgres",
        "sqlite",
        "none",
        "commit",
        "x=mock:",
        "m=mock:?fail_every=3",
        "nodb",
        "=",
        "a=",
        "get",
        "get,insert",
        "workload-a",
        "ycsb",
        "embedded",
        "insert-find",
        "in-memory",
        "kv-vs-relational",
        "recordcount=10",
        "target=1e-300",
        "fieldlength=99999999999999",
        "operationcount=0",
        "threadcount=99999",
        "-",
        "--",
        "-x",
        "ä",
        "\u{0}",
    ])
    .prop_map(str::to_string);
    prop_oneof![
        4 => special,
        2 => (0u64..20_000).prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|x| x.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => "\\PC{0,12}",
    ]
}

/// `run`'s flags, as clap knows them (every option and switch, long and short).
fn run_flags() -> Vec<String> {
    let command = command_line::command();
    let run = command.find_subcommand("run").expect("run");
    let mut flags: Vec<String> = Vec::new();
    for arg in run.get_arguments() {
        if arg.get_id() == "resume" || arg.get_id() == "ycsb_files" {
            continue; // Given below with paths that do not exist.
        }
        flags.extend(arg.get_long().map(|l| format!("--{l}")));
        flags.extend(arg.get_short().map(|s| format!("-{s}")));
    }
    flags
}

/// An argument list of `run`: flags with awkward values, a study, stray words.
fn run_args() -> impl Strategy<Value = Vec<String>> {
    let flag = prop::sample::select(run_flags());
    let item = prop_oneof![
        8 => (flag, awkward_value()).prop_map(|(f, v)| vec![f, v]),
        1 => awkward_value().prop_map(|v| vec![v]),
        1 => prop::sample::select(vec!["--resume", "-P"]).prop_map(|f| vec![f.to_string(), "/nonexistent/dbsweep-fuzz".to_string()]),
        1 => awkward_value().prop_map(|v| vec![format!("--clients={v}")]),
    ];
    prop::collection::vec(item, 0..7).prop_map(|items| items.into_iter().flatten().collect())
}

/// A whole command line: mostly `run`, else another subcommand with awkward words.
fn command_lines() -> impl Strategy<Value = Vec<String>> {
    let other = (
        prop::sample::select(vec![
            "gen keys",
            "gen tpch -s",
            "gen",
            "compare a b --min-effect",
            "merge",
            "report",
            "studies -f",
            "completions",
            "man --dir",
            "bogus",
        ]),
        prop::collection::vec(awkward_value(), 0..4),
    )
        .prop_map(|(sub, words)| sub.split(' ').map(str::to_string).chain(words).collect::<Vec<_>>());
    let run = run_args().prop_map(|args| std::iter::once("run".to_string()).chain(args).collect::<Vec<_>>());
    prop_oneof![6 => run, 1 => other].prop_map(|args| std::iter::once("dbsweep".to_string()).chain(args).collect())
}

/// What `dbsweep ARGS --dry-run` does before it would print: clap, then for `run` the plan
/// (bounds included), the workers' role and checks, a resumed run's directory, and the dry
/// run's text. Other subcommands are only parsed (they would write or probe).
fn dry_run(args: &[String]) -> Result<(), TestCaseError> {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let command = command_line::command();
    let (cli, matches) = match command_line::parse(&command, &args) {
        Ok(parsed) => parsed,
        Err(e) => {
            if command_line::is_display(&e) {
                return Ok(());
            }
            let line = command_line::one_line_error(&e, &command, &args);
            prop_assert!(!line.trim().is_empty() && !line.contains('\n'), "not one line: {:?}", line);
            return Ok(());
        }
    };
    if command_line::check_resume_without_out(&matches).is_err() {
        return Ok(());
    }
    let Command::Run(run) = cli.command else { return Ok(()) };
    let result = (|| {
        let plan = plan::resolve(&run)?;
        let role = Role::resolve(run.workers, run.worker, run.coordinator.clone(), run.listen.clone(), |_| None)?;
        if role.is_some() {
            crate::runner::workers::check_plan(&plan)?;
        }
        if let Some(dir) = &run.resume {
            crate::runner::resume::Resume::open(dir, &plan)?;
        }
        Ok::<_, Error>(format!("{}{}", super::preview::budget_text(&plan), super::preview::announcement(&plan)))
    })();
    match result {
        Ok(text) => prop_assert!(!text.is_empty()),
        Err(e) => refusal_is_one_line(&e)?,
    }
    Ok(())
}

#[test]
fn command_lines_never_panic_and_refuse_in_one_line() {
    fuzz("command_lines_never_panic_and_refuse_in_one_line", command_lines(), |args| dry_run(&args));
}

/// Target URLs: every scheme, with and without a password, odd hosts and ports, options
/// given once, twice or misspelt; and plain noise.
fn target_urls() -> impl Strategy<Value = String> {
    // Every scheme the registry opens, and two it does not (a misspelling, noise).
    let scheme = prop::sample::select(crate::adapter::registry::schemes().chain(["postgress", "x"]).collect::<Vec<_>>());
    let user = prop::sample::select(vec!["".to_string(), "u@".into(), format!("u:{CANARY}@"), ":@".into(), "%zz@".into()]);
    let host = prop::sample::select(vec!["127.0.0.1", "", "[::1]", "h1:1,h2:2", "localhost", "ä", "h,", "[", "256.1.1.1"]);
    let port = prop::sample::select(vec!["", ":0", ":1", ":6379", ":65535", ":65536", ":-1", ":x", ":"]);
    let path = prop::sample::select(vec!["", "/", "/db", "/0", "/99999999999999999999", "/tmp/x.db", "/%00"]);
    let key = prop::sample::select(vec![
        "layout",
        "batch",
        "cluster",
        "password",
        "pass",
        "fail_every",
        "latency_us",
        "synchronous",
        "spawn",
        "affected",
        "replication_factor",
        "execution",
        "layuot",
        "",
    ]);
    let query = prop::collection::vec((key, awkward_value()), 0..4).prop_map(|pairs| {
        // A password parameter always holds the canary; other options may be shown.
        let value = |k: &str, v: &str| if k.starts_with("pass") { CANARY.to_string() } else { v.to_string() };
        let joined: Vec<String> = pairs.iter().map(|(k, v)| format!("{k}={}", value(k, v))).collect();
        if joined.is_empty() { String::new() } else { format!("?{}", joined.join("&")) }
    });
    let network = (scheme.clone(), user, host, port, path, query).prop_map(|(s, u, h, p, d, q)| format!("{s}://{u}{h}{p}{d}{q}"));
    let local = (scheme, prop::sample::select(vec!["", "/tmp/f.db", "?synchronous=off&synchronous=full"]))
        .prop_map(|(s, rest)| format!("{s}:{rest}"));
    prop_oneof![6 => network, 2 => local, 1 => "\\PC{0,30}"]
}

#[test]
fn target_urls_never_panic_and_refuse_in_one_line() {
    let scratch = tempfile::tempdir().unwrap();
    let ctx = crate::adapter::OpenContext::new(scratch.path());
    fuzz("target_urls_never_panic_and_refuse_in_one_line", target_urls(), |url| {
        match plan::parse_target(&format!("n={url}")) {
            Err(e) => refusal_is_one_line(&e),
            Ok(target) => {
                prop_assert!(!target.url.redacted().contains(CANARY), "{}", target.url.redacted());
                // Adapters that read their options without connecting or making files.
                let opens = ["nodb", "mock", "redis", "ledis", "memcached", "postgres", "postgresql", "mysql", "mariadb"];
                if opens.contains(&target.url.scheme())
                    && let Err(e) = crate::adapter::registry::open(&target.name, &target.url, &ctx)
                {
                    refusal_is_one_line(&e)?;
                }
                Ok(())
            }
        }
    });
}

/// A built-in study's TOML with some of its numbers, strings and lines changed.
fn study_texts() -> impl Strategy<Value = String> {
    let studies: Vec<&'static str> = plan::BUILT_IN.iter().map(|(_, text)| *text).collect();
    let edit = prop_oneof![
        3 => (any::<prop::sample::Index>(), awkward_value()).prop_map(|(i, v)| Edit::Number(i, v)),
        2 => (any::<prop::sample::Index>(), awkward_value()).prop_map(|(i, v)| Edit::Text(i, v)),
        1 => any::<prop::sample::Index>().prop_map(Edit::DropLine),
        1 => (any::<prop::sample::Index>(), "\\PC{0,20}").prop_map(|(i, v)| Edit::InsertLine(i, v)),
    ];
    (prop::sample::select(studies), prop::collection::vec(edit, 1..5))
        .prop_map(|(text, edits)| edits.iter().fold(text.to_string(), |text, edit| edit.apply(&text)))
}

#[derive(Debug, Clone)]
enum Edit {
    /// The i-th number becomes the value.
    Number(prop::sample::Index, String),
    /// The i-th quoted string's content becomes the value.
    Text(prop::sample::Index, String),
    DropLine(prop::sample::Index),
    InsertLine(prop::sample::Index, String),
}

impl Edit {
    fn apply(&self, text: &str) -> String {
        let lines: Vec<&str> = text.lines().collect();
        match self {
            Edit::Number(i, value) => {
                replace_nth(text, i, |c: char| c.is_ascii_digit(), |c| c.is_ascii_digit() || c == '.' || c == '_', value)
            }
            Edit::Text(i, value) => {
                let quoted: Vec<usize> = text.match_indices('"').map(|(at, _)| at).collect();
                let pairs: Vec<(usize, usize)> = quoted.chunks(2).filter(|p| p.len() == 2).map(|p| (p[0], p[1])).collect();
                if pairs.is_empty() {
                    return text.to_string();
                }
                let (start, end) = pairs[i.index(pairs.len())];
                format!("{}{}{}", &text[..=start], value.replace(['"', '\\', '\n'], ""), &text[end..])
            }
            Edit::DropLine(i) if !lines.is_empty() => {
                let drop = i.index(lines.len());
                lines.iter().enumerate().filter(|(n, _)| *n != drop).map(|(_, l)| *l).collect::<Vec<_>>().join("\n")
            }
            Edit::InsertLine(i, line) if !lines.is_empty() => {
                let mut lines = lines;
                lines.insert(i.index(lines.len()), line);
                lines.join("\n")
            }
            _ => text.to_string(),
        }
    }
}

/// `text` with the i-th run of characters that starts with `first` and goes on while `rest`
/// holds replaced by `value`.
fn replace_nth(text: &str, i: &prop::sample::Index, first: impl Fn(char) -> bool, rest: impl Fn(char) -> bool, value: &str) -> String {
    let mut runs = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        if first(c) {
            let mut end = at + c.len_utf8();
            while let Some(&(next, c)) = chars.peek().filter(|(_, c)| rest(*c)) {
                end = next + c.len_utf8();
                chars.next();
            }
            runs.push((at, end));
        }
    }
    if runs.is_empty() {
        return text.to_string();
    }
    let (start, end) = runs[i.index(runs.len())];
    format!("{}{value}{}", &text[..start], &text[end..])
}

#[test]
fn study_files_never_panic_and_refuse_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzzed.toml");
    fuzz("study_files_never_panic_and_refuse_in_one_line", study_texts(), |text| {
        std::fs::write(&path, &text).unwrap();
        let opts = RunOptions { study: Some(path.display().to_string()), ..Default::default() };
        if let Err(e) = plan::resolve(&opts) {
            refusal_is_one_line(&e)?;
        }
        Ok(())
    });
}

/// YCSB properties: every property dbsweep knows (and some it does not) with awkward
/// values, as `-p` and as a `-P` file.
fn ycsb_properties() -> impl Strategy<Value = Vec<String>> {
    let key = prop::sample::select(vec![
        "recordcount",
        "operationcount",
        "threadcount",
        "target",
        "maxexecutiontime",
        "workload",
        "readproportion",
        "updateproportion",
        "insertproportion",
        "scanproportion",
        "readmodifywriteproportion",
        "requestdistribution",
        "minscanlength",
        "maxscanlength",
        "scanlengthdistribution",
        "fieldcount",
        "fieldlength",
        "minfieldlength",
        "fieldlengthdistribution",
        "insertorder",
        "hotspotdatafraction",
        "hotspotopnfraction",
        "exponential.percentile",
        "exponential.frac",
        "readallfields",
        "writeallfields",
        "insertstart",
        "insertcount",
        "zeropadding",
        "table",
        "measurementtype",
        "nosuchproperty",
        "",
    ]);
    let value = prop_oneof![
        3 => awkward_value(),
        1 => prop::sample::select(vec!["zipfian", "uniform", "latest", "hotspot", "exponential", "sequential", "constant", "hashed", "ordered", "true", "false"]).prop_map(str::to_string),
    ];
    let line = prop_oneof![8 => (key, value).prop_map(|(k, v)| format!("{k}={v}")), 1 => "\\PC{0,20}"];
    prop::collection::vec(line, 1..6)
}

#[test]
fn ycsb_properties_never_panic_and_refuse_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("workload");
    fuzz("ycsb_properties_never_panic_and_refuse_in_one_line", (ycsb_properties(), any::<bool>()), |(lines, as_file)| {
        let opts = match as_file {
            true => {
                std::fs::write(&file, lines.join("\n")).unwrap();
                RunOptions { study: Some("ycsb".into()), ycsb_files: vec![file.clone()], ..Default::default() }
            }
            false => RunOptions { study: Some("ycsb".into()), ycsb_properties: lines, ..Default::default() },
        };
        if let Err(e) = plan::resolve(&opts) {
            refusal_is_one_line(&e)?;
        }
        Ok(())
    });
}
