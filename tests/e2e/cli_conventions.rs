//! End-to-end tests of the command-line conventions: short flags, `DBSWEEP_*` variables,
//! help (defaults, wrapping, examples).

use crate::support;

use std::process::Output;
use support::{csv_rows, report};

/// Runs dbsweep with `args` and the environment variables `vars` added.
fn dbsweep_with(vars: &[(&str, &str)], args: &[&str]) -> Output {
    support::command().args(args).envs(vars.iter().copied()).output().expect("run dbsweep")
}

/// Measured ops of target `m`'s get experiment, by (clients, batched), summed over runs, and
/// the number of runs per point.
fn get_ops_by_point(out: &std::path::Path) -> std::collections::BTreeMap<(String, String), (u64, usize)> {
    let mut points = std::collections::BTreeMap::new();
    for r in csv_rows(out).into_iter().filter(|r| r["target"] == "m" && r["experiment"] == "get") {
        let entry = points.entry((r["clients"].clone(), r["batched"].clone())).or_insert((0, 0));
        entry.0 += r["ops"].parse::<u64>().unwrap();
        entry.1 += 1;
    }
    points
}

#[test]
fn short_flags_and_environment_variables_shape_the_run_and_are_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let vars = [("DBSWEEP_CLIENTS", "1,2"), ("DBSWEEP_ROWS", "1000"), ("DBSWEEP_NO_PROGRESS", "1")];
    let args = ["run", "-t", "m=mock:", "-e", "get", "-n", "200", "-r", "2", "-w", "0", "-b", "5", "-o", out.to_str().unwrap()];
    let o = dbsweep_with(&vars, &args);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let points = get_ops_by_point(&out);
    let expected = [(("1", "false"), (400, 2)), (("1", "true"), (400, 2)), (("2", "false"), (400, 2))];
    let expected = expected.map(|((c, b), v)| ((c.to_string(), b.to_string()), v)).into_iter().collect();
    assert_eq!(points, expected, "clients 1,2 from DBSWEEP_CLIENTS, batch 5, 2 runs of 200 ops");
    let json = report(&out);
    let command: Vec<&str> = json["command"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    assert_eq!(&command[1..args.len() + 1], &args, "the arguments as given come first");
    let from_env = &command[args.len() + 1..];
    for flag in [&["--clients", "1,2"][..], &["--rows", "1000"], &["--no-progress"]] {
        assert!(from_env.windows(flag.len()).any(|w| w == flag), "{flag:?} recorded from the environment: {command:?}");
    }
    assert_eq!(json["plan"]["data"]["rows"], 1000, "{}", json["plan"]["data"]);

    // A flag given on the command line wins over its variable.
    let out = tmp.path().join("flag-wins");
    let o = dbsweep_with(
        &vars,
        &["run", "-t", "m=mock:", "-e", "get", "-n", "50", "-r", "1", "-w", "0", "-b", "4", "-c", "3", "-o", out.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let clients: std::collections::BTreeSet<String> = get_ops_by_point(&out).into_keys().map(|(c, _)| c).collect();
    assert_eq!(clients, ["1", "3"].map(String::from).into(), "-c 3 (and the batch sweep's one client), not DBSWEEP_CLIENTS");
}

#[test]
fn a_bad_environment_variable_is_bad_input_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = dbsweep_with(&[("DBSWEEP_CLIENTS", "0")], &["run", "-t", "m=mock:", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--clients") && err.contains("at least 1"), "{err}");
    assert!(!out.exists(), "nothing written");
}

#[test]
fn run_help_is_wrapped_shows_defaults_variables_and_examples() {
    let o = dbsweep_with(&[("COLUMNS", "80")], &["run", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout);
    let widest = help.lines().map(|l| l.chars().count()).max().unwrap();
    assert!(widest <= 80, "wrapped to COLUMNS=80, widest line {widest}:\n{help}");
    for expected in ["-c, --clients", "-n, --ops", "-o, --out", "-t, --target", "-q, --quick", "-S, --spawn", "Examples:", "dbsweep run -q"]
    {
        assert!(help.contains(expected), "{expected}:\n{help}");
    }
    let one_line = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(one_line.contains("[default: the study's; embedded: 1,4]"), "{one_line}");
    assert!(one_line.contains("[env: DBSWEEP_CLIENTS="), "{one_line}");
    // A target URL may hold a password: its variable's value is never shown.
    let o = dbsweep_with(&[("DBSWEEP_TARGET", "pg=postgres://u:hunter2@h/db")], &["run", "--help"]);
    assert!(!String::from_utf8_lossy(&o.stdout).contains("hunter2"));
}

#[test]
fn completions_and_man_page_name_every_subcommand_and_run_flag() {
    let subcommands = ["run", "studies", "targets", "gen", "compare", "merge", "completions", "man", "report"];
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let o = dbsweep_with(&[], &["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", String::from_utf8_lossy(&o.stderr));
        let script = String::from_utf8_lossy(&o.stdout);
        for name in subcommands.iter().chain(&["clients", "spawn", "durability"]) {
            assert!(script.contains(name), "{shell} completes {name}");
        }
    }
    let o = dbsweep_with(&[], &["completions", "tcsh"]);
    assert_eq!(o.status.code(), Some(2), "an unknown shell is bad input");
    assert!(String::from_utf8_lossy(&o.stderr).contains("bash"), "names the shells");

    let o = dbsweep_with(&[], &["man"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(page.contains(".TH dbsweep 1") && page.contains(".SH SUBCOMMANDS"), "a roff page:\n{page}");
    for name in subcommands {
        assert!(page.contains(&format!("dbsweep\\-{name}(1)")), "lists {name}:\n{page}");
    }
    // Every page the main page refers to is written by --dir.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man1");
    let o = dbsweep_with(&[], &["man", "--dir", dir.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    for name in subcommands {
        let run = std::fs::read_to_string(dir.join(format!("dbsweep-{name}.1"))).unwrap_or_else(|e| panic!("dbsweep-{name}.1: {e}"));
        assert!(run.contains(&format!(".TH dbsweep-{name} 1")), "{run}");
    }
    let run = std::fs::read_to_string(dir.join("dbsweep-run.1")).unwrap();
    assert!(run.contains("\\-\\-clients") && run.contains("DBSWEEP_CLIENTS"), "{run}");
    let main_page = std::fs::read_to_string(dir.join("dbsweep.1")).unwrap();
    assert!(main_page.contains(".TH dbsweep 1") && main_page.contains("dbsweep\\-run(1)"), "{main_page}");
}

/// Runs dbsweep with `args` and its stdout a pipe whose reader has already closed, as in
/// `dbsweep targets | true`.
fn with_stdout_closed(args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().expect("a pipe");
    drop(reader);
    support::command().args(args).stdout(writer).output().expect("run dbsweep")
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = |name: &str| tmp.path().join(name).to_str().unwrap().to_string();
    let (a, b) = (dir("a"), dir("b"));
    let run =
        ["run", "-t", "m=mock:", "-e", "get", "-n", "50", "-r", "2", "-w", "0", "-c", "1", "-b", "1", "--rows", "100", "--no-progress"];
    let first = dbsweep_with(&[], &[&run[..], &["-o", &a]].concat());
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let commands: Vec<Vec<&str>> = vec![
        [&run[..], &["-o", &b]].concat(),
        vec!["run", "-t", "m=mock:", "-e", "get", "--dry-run"],
        vec!["studies"],
        vec!["studies", "--format", "json"],
        vec!["targets"],
        vec!["targets", "--format", "json"],
        vec!["gen", "keys", "1000"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["report", &a],
        vec!["compare", &a, &b],
        vec!["--help"],
        vec!["run", "--help"],
        vec!["--version"],
    ];
    for args in &commands {
        let o = with_stdout_closed(args);
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{args:?} on a closed stdout: {stderr}");
        assert!(!stderr.contains("panicked") && !stderr.contains("Broken pipe"), "{args:?}: {stderr}");
    }
    assert!(std::path::Path::new(&b).join("report.json").exists(), "a run whose stdout closed still writes its report");

    // `dbsweep gen keys 200000 | head -1`: the reader takes a line, then closes.
    let mut child = support::command()
        .args(["gen", "keys", "200000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(line, "key,value\n");
    assert_eq!((o.status.code(), String::from_utf8_lossy(&o.stderr).into_owned()), (Some(0), String::new()));
}

/// The one line on stderr and the exit code of `dbsweep ARGS`.
fn refusal(args: &[&str]) -> (Option<i32>, String) {
    let o = dbsweep_with(&[], args);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: one line: {stderr}");
    (o.status.code(), stderr.trim_end().to_string())
}

#[test]
fn usage_errors_name_what_is_missing_or_wrong_and_the_subcommands_help() {
    assert_eq!(
        refusal(&["compare"]),
        (
            Some(2),
            "dbsweep: missing <RUN_DIR> <RUN_DIR>...: two or more run directories written by `dbsweep run` (usage: dbsweep compare <RUN_DIR> <RUN_DIR>...; see dbsweep compare --help)".into()
        )
    );
    assert_eq!(
        refusal(&["run", "--rate", "abc"]),
        (
            Some(2),
            "dbsweep: --rate: 'abc' is not a rate; use ops per second, e.g. --rate 1000 or --rate 1000,4000 (see dbsweep run --help)"
                .into()
        )
    );
    // Every numeric flag says which flag and what it takes, never the parser's words.
    for (args, said) in [
        (&["run", "--rate", "1000,x"][..], "dbsweep: --rate: 'x' is not a rate; use ops per second"),
        (&["run", "--scale", "big"], "dbsweep: --scale: 'big' is not a scale factor; use e.g. 0.01 or 1 (see dbsweep run --help)"),
        (&["run", "--timeout", "1m"], "dbsweep: --timeout: '1m' is not a number of seconds; use e.g. 60 or 0.5"),
        (&["run", "--hlog-interval", "x"], "dbsweep: --hlog-interval: 'x' is not a number of seconds"),
        (&["run", "--widths", "1,ten"], "dbsweep: --widths: 'ten' is not a whole number of at least 1; use e.g. 4"),
        (&["run", "--clients", "two"], "dbsweep: --clients: 'two' is not a whole number of at least 1"),
        (&["run", "--seed", "-3"], "dbsweep: --seed: '-3' is not a whole number (0 or more)"),
        (&["gen", "tpch", "--scale", "x"], "dbsweep: --scale: 'x' is not a scale factor; use e.g. 0.01 or 1 (see dbsweep gen tpch --help)"),
        (&["gen", "keys", "many"], "dbsweep: N: 'many' is not a whole number of at least 1; use e.g. 4 (see dbsweep gen keys --help)"),
        (&["gen", "keys", "5", "--seed", "x"], "dbsweep: --seed: 'x' is not a whole number (0 or more)"),
    ] {
        let (code, line) = refusal(args);
        assert_eq!(code, Some(2), "{args:?}: {line}");
        assert!(line.starts_with(said), "{args:?}: {line}");
        assert!(!line.contains("invalid float literal") && !line.contains("invalid digit"), "{line}");
    }
    // Errors point at the help of the subcommand the user ran.
    for (args, help) in [
        (&["run", "--client", "4"][..], "(a similar argument exists: '--clients'; see dbsweep run --help)"),
        (&["studies", "--format", "yaml"], "[possible values: text, json] (see dbsweep studies --help)"),
        (&["gen", "keys"], "(usage: dbsweep gen keys <N>; see dbsweep gen keys --help)"),
        (&["merge"], "see dbsweep merge --help)"),
        (&["bogus"], "(see dbsweep --help)"),
    ] {
        let (code, line) = refusal(args);
        assert_eq!(code, Some(2), "{args:?}: {line}");
        assert!(line.ends_with(help), "{args:?}: {line}");
    }
}

#[test]
fn run_help_states_which_targets_run_every_spawnable_server_and_what_workers_start() {
    let o = dbsweep_with(&[("COLUMNS", "100")], &["run", "--help"]);
    assert!(o.status.success());
    let help = String::from_utf8_lossy(&o.stdout).split_whitespace().collect::<Vec<_>>().join(" ");
    let servers: Vec<&str> = dbsweep::servers::ServerKind::ALL.iter().map(|k| k.name()).collect();
    assert!(help.contains(&format!("[servers: {}]", servers.join(", "))), "every server --spawn starts: {help}");
    for rule in [
        "With --target or --spawn the run measures exactly the systems named, beside the NO-DB ceiling (nodb), on the study's experiments; the study's own targets run only with --with-study-targets.",
        "--with-study-targets With --target or --spawn: also run the study's own targets",
    ] {
        assert!(help.contains(rule), "{rule}: {help}");
    }
    assert!(help.contains("this process is worker 0 and starts the other N-1 (indices 1 to N-1) on this machine"), "{help}");
    assert!(!help.contains("workers 1..N"), "{help}");
}

#[test]
fn studies_list_as_json() {
    let o = dbsweep_with(&[], &["studies", "--format", "json"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let studies = json["studies"].as_array().unwrap();
    let names: Vec<&str> = studies.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["embedded", "kv-vs-relational", "insert-find", "ycsb", "in-memory", "pgbench"]);
    let study = |name: &str| studies.iter().find(|s| s["name"] == name).unwrap();
    let text = String::from_utf8_lossy(&dbsweep_with(&[], &["studies"]).stdout).into_owned();
    for s in studies {
        let line = format!("{:<18} {}", s["name"].as_str().unwrap(), s["description"].as_str().unwrap());
        assert!(text.lines().any(|l| l == line), "the text's line for {}: {text}", s["name"]);
        assert!(s["paper"].as_str().is_some_and(|p| p.len() > 80), "{s}");
    }
    let strings = |v: &serde_json::Value| v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(strings(&study("embedded")["targets"]), ["nodb", "sqlite", "duckdb", "monetdb", "redb"]);
    assert!(strings(&study("in-memory")["spawn_all"]).contains(&"ferretdb".to_string()));
    assert!(strings(&study("ycsb")["experiments"]).contains(&"workload-a".to_string()));
    let aerospike = &study("kv-vs-relational")["unavailable"][0];
    assert_eq!(aerospike["system"], "aerospike");
    assert!(aerospike["reason"].as_str().is_some_and(|r| !r.is_empty()), "{aerospike}");
}

#[test]
fn completions_offer_studies_servers_and_durability_levels() {
    let o = dbsweep_with(&[], &["completions", "bash"]);
    assert!(o.status.success());
    let script = String::from_utf8_lossy(&o.stdout);
    // The words offered after `--spawn` / `--durability`, not file names.
    let offered = |flag: &str| {
        let at = script.find(&format!("\n                {flag})")).unwrap_or_else(|| panic!("no case for {flag}"));
        script[at..].lines().nth(2).unwrap().trim().to_string()
    };
    let servers: Vec<&str> = dbsweep::servers::ServerKind::ALL.iter().map(|k| k.name()).collect();
    assert_eq!(offered("--spawn"), format!("COMPREPLY=($(compgen -W \"{} all\" -- \"${{cur}}\"))", servers.join(" ")));
    assert_eq!(offered("-S"), offered("--spawn"));
    assert_eq!(offered("--durability"), "COMPREPLY=($(compgen -W \"none periodic commit\" -- \"${cur}\"))");
    // The study argument: the built-in studies among run's words.
    let run_words = script.lines().find(|l| l.contains("opts=\"") && l.contains("--with-study-targets")).unwrap();
    assert!(run_words.ends_with(" embedded kv-vs-relational insert-find ycsb in-memory pgbench\""), "{run_words}");
    // Still any value: a study file, a list of servers with all.
    let tmp = tempfile::tempdir().unwrap();
    let o = dbsweep_with(
        &[],
        &["run", "-S", "redis,all", "-t", "m=mock:", "--durability", "commit", "--dry-run", "-o", tmp.path().join("x").to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_man_page_has_examples_exit_status_and_environment() {
    let o = dbsweep_with(&[], &["man"]);
    assert!(o.status.success());
    let page = String::from_utf8_lossy(&o.stdout);
    assert!(!page.contains(".SH EXTRA"), "{page}");
    let section = |name: &str| {
        let start = page.find(&format!(".SH {name}\n")).unwrap_or_else(|| panic!("no {name} section:\n{page}"));
        let rest = &page[start + 4..];
        rest[..rest.find("\n.SH ").map_or(rest.len(), |end| end + 1)].to_string()
    };
    let examples = section("EXAMPLES");
    assert!(examples.contains("\ndbsweep run \\-q ") && examples.contains("\\-\\-with\\-study\\-targets"), "{examples}");
    let exit = section("\"EXIT STATUS\"");
    for (code, meaning) in dbsweep::error::EXIT_CODES {
        assert!(exit.contains(&format!(".TP\n.B {code}\n")), "exit code {code}: {exit}");
        assert!(exit.contains(&meaning.replace('-', "\\-")), "{meaning}: {exit}");
    }
    let environment = section("ENVIRONMENT");
    for variable in ["DBSWEEP_CLIENTS", "DBSWEEP_SPAWN", "DBSWEEP_WITH_STUDY_TARGETS", "DBSWEEP_STUDY"] {
        assert!(environment.contains(&format!(".B {variable}\n")), "{variable}: {environment}");
    }
    assert!(environment.contains("Sets \\-\\-clients of dbsweep\\-run(1)"), "{environment}");
    // Each subcommand's page: its own variables; run's also its examples.
    let tmp = tempfile::tempdir().unwrap();
    let o = dbsweep_with(&[], &["man", "--dir", tmp.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let run = std::fs::read_to_string(tmp.path().join("dbsweep-run.1")).unwrap();
    assert!(run.contains(".SH EXAMPLES\n") && run.contains(".SH \"EXIT STATUS\"\n") && run.contains(".B DBSWEEP_CLIENTS\n"), "{run}");
    let studies = std::fs::read_to_string(tmp.path().join("dbsweep-studies.1")).unwrap();
    assert!(studies.contains(".SH \"EXIT STATUS\"\n") && !studies.contains(".SH ENVIRONMENT"), "{studies}");
}
