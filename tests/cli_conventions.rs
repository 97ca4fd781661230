//! End-to-end tests of the command-line conventions: short flags, `DBSWEEP_*` variables,
//! help (defaults, wrapping, examples).

mod support;

use std::process::{Command, Output};
use support::{csv_rows, report};

/// Runs dbsweep with `args` and the environment variables `vars` added.
fn dbsweep_with(vars: &[(&str, &str)], args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dbsweep")).args(args).envs(vars.iter().copied()).output().expect("run dbsweep")
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
