//! Keeps the docs true: every `dbsweep ...` command in a shell code block of README.md and
//! docs/*.md runs as written (with `--dry-run` appended to `run`, so nothing is started or
//! measured; for real where it is quick: `studies`, `targets`, `gen keys`, `--help`, `man`,
//! `completions`), every repository path a command names exists, and docs/cli.md is what
//! `dbsweep man --markdown` prints.
//!
//! A command that needs a server or a file made by an earlier command (`report DIR`,
//! `compare A B`, `run --resume DIR`) sits in a code block right after the line
//! `<!-- docs-test: not run (REASON) -->`: its flags are still checked (the command runs
//! with `--help` appended, which clap answers only when every argument before it parses)
//! and so are its paths.

use crate::support;
use crate::support::root;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

const NOT_RUN: &str = "<!-- docs-test: not run";

/// Top-level directories a repository path starts with, also when one of them is missing
/// (a command naming `workloads/workloada` must fail when workloads/ is gone).
const REPOSITORY_DIRS: [&str; 8] = ["bench", "docs", "recipes", "scripts", "src", "tests", "workloads", ".ci"];

/// One documented command: where it is, its words, and whether the docs mark it not run.
#[derive(Debug)]
struct DocCommand {
    origin: String,
    env: Vec<(String, String)>,
    args: Vec<String>,
    not_run: bool,
}

/// The words of a shell line up to its first comment, pipe, redirection or `&&`, with
/// quotes removed: `a "b c" # d` -> `[a, b c]`. Variables and `~` are left as written.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            None if matches!(c, '#' | '|' | '>' | '<' | ';' | '&') && !in_word => break,
            None => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// The `dbsweep` commands in the shell code blocks (```sh, ```bash, ```shell) of `text`.
fn commands_in(text: &str, name: &str) -> Vec<DocCommand> {
    let mut out = Vec::new();
    let mut in_shell_block = false;
    let mut in_other_block = false;
    let mut not_run = false;
    let mut previous = "";
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if let Some(language) = trimmed.strip_prefix("```") {
            if in_shell_block || in_other_block {
                (in_shell_block, in_other_block, not_run) = (false, false, false);
            } else if matches!(language.trim(), "sh" | "bash" | "shell") {
                in_shell_block = true;
                not_run = previous.trim_start().starts_with(NOT_RUN);
            } else {
                in_other_block = true;
            }
        } else if in_shell_block {
            let words = shell_words(trimmed);
            let assignments = words.iter().take_while(|w| w.contains('=') && !w.starts_with('-')).count();
            if words.get(assignments).map(String::as_str) == Some("dbsweep") {
                let env =
                    words[..assignments].iter().filter_map(|w| w.split_once('=').map(|(k, v)| (k.to_string(), v.to_string()))).collect();
                out.push(DocCommand { origin: format!("{name}:{}", i + 1), env, args: words[assignments + 1..].to_vec(), not_run });
            }
        }
        previous = line;
    }
    out
}

/// The words of `args` (and the values of `KEY=VALUE` words) that name a path inside the
/// repository (`workloads/workloada`, `src/plan/studies/embedded.toml`) and do not exist
/// under `root`.
fn missing_repository_paths(args: &[String], root: &Path) -> Vec<String> {
    let top_level: Vec<String> = std::fs::read_dir(root)
        .map(|entries| entries.filter_map(|e| e.ok()).map(|e| e.file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let mut missing = Vec::new();
    for word in args {
        let candidate = word.rsplit_once('=').map_or(word.as_str(), |(_, value)| value);
        let Some((first, _)) = candidate.split_once('/') else { continue };
        let names_repository = REPOSITORY_DIRS.contains(&first) || (top_level.iter().any(|t| t == first) && first != "target");
        if names_repository && !candidate.contains("://") && !root.join(candidate).exists() {
            missing.push(candidate.to_string());
        }
    }
    missing
}

/// Every documented command, from README.md and docs/*.md.
fn documented_commands() -> Vec<DocCommand> {
    let root = root();
    let mut files = vec![root.join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    files.extend(pages);
    files
        .iter()
        .flat_map(|file| {
            let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
            let name = file.strip_prefix(&root).unwrap_or(file).display().to_string();
            commands_in(&text, &name)
        })
        .collect()
}

/// Runs `dbsweep args` in `dir` with `env`, at most five minutes (a guard against a command
/// that waits for something, not a timing check): its exit status, stdout and stderr.
fn run_dbsweep(args: &[String], env: &[(String, String)], dir: &Path) -> (Option<i32>, String, String) {
    // Output goes to files, not pipes: a long page cannot block the command while the
    // test waits for it.
    let output = tempfile::tempdir().expect("a directory for the output");
    let (stdout, stderr) = (output.path().join("stdout"), output.path().join("stderr"));
    let mut child = support::command()
        .args(args)
        .envs(env.iter().cloned())
        .env("DBSWEEP_CACHE", dir.join("cache"))
        .env("DBSWEEP_NO_PROGRESS", "1")
        .env("COLUMNS", "100")
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout).expect("stdout file"))
        .stderr(std::fs::File::create(&stderr).expect("stderr file"))
        .spawn()
        .expect("dbsweep starts");
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().expect("wait for dbsweep").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().expect("dbsweep's exit status");
    let read = |path: &Path| String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    (status.code(), read(&stdout), read(&stderr))
}

/// What the test runs for a documented command: `run` with `--dry-run`, a command marked
/// not run with `--help`, anything else as written.
fn as_tested(command: &DocCommand) -> Vec<String> {
    let mut args = command.args.clone();
    if command.not_run {
        args.push("--help".into());
    } else if args.first().map(String::as_str) == Some("run") && !args.iter().any(|a| ["--help", "-h", "--dry-run"].contains(&a.as_str())) {
        args.push("--dry-run".into());
    }
    args
}

#[test]
fn every_documented_command_runs_as_written() {
    let root = root();
    let commands = documented_commands();
    assert!(commands.len() >= 20, "too few commands found: {commands:#?}");
    assert!(commands.iter().any(|c| c.origin.starts_with("README.md") && c.args.starts_with(&["run".to_string()])));
    // The commands run in a directory of their own (files they write, such as `gen keys
    // --out keys.csv`, land there), where the repository's top-level entries are links.
    let dir = tempfile::tempdir().expect("a temporary directory");
    for entry in std::fs::read_dir(&root).expect("the repository").filter_map(|e| e.ok()) {
        let name = entry.file_name();
        if name != "target" {
            std::os::unix::fs::symlink(entry.path(), dir.path().join(&name)).expect("a link to the repository");
        }
    }
    let mut failures = Vec::new();
    for command in &commands {
        let missing = missing_repository_paths(&command.args, &root);
        if !missing.is_empty() {
            failures.push(format!("{}: dbsweep {}: names missing paths {missing:?}", command.origin, command.args.join(" ")));
            continue;
        }
        let args = as_tested(command);
        let (code, _, errors) = run_dbsweep(&args, &command.env, dir.path());
        if code != Some(0) {
            let last = errors.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
            failures.push(format!("{}: dbsweep {} exited {code:?}: {last}", command.origin, args.join(" ")));
        }
    }
    let not_run = commands.iter().filter(|c| c.not_run).count();
    assert!(not_run * 4 <= commands.len(), "{not_run} of {} commands are marked not run: keep such exceptions few", commands.len());
    assert!(failures.is_empty(), "documented commands that do not work as written:\n{}", failures.join("\n"));
}

#[test]
fn a_readme_command_naming_a_missing_path_fails() {
    let readme = "Run it:\n\n```sh\ndbsweep run ycsb -P workloads/workloadz -p recordcount=5000 --spawn redis   # comment\n```\n";
    let commands = commands_in(readme, "README.md");
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert_eq!(missing_repository_paths(&commands[0].args, &root()), vec!["workloads/workloadz"]);
    // A whole directory that is missing counts too, and so does a path in a flag's value.
    let gone = shell_words("dbsweep run examples/x.toml --data-root disk=src/nowhere -t pg=postgres://u@h:1/db --shard 0/3");
    assert_eq!(missing_repository_paths(&gone, &root()), vec!["src/nowhere"]);
    // The shipped workload and a study file exist.
    let present = shell_words("dbsweep run ycsb -P workloads/workloada src/plan/studies/embedded.toml");
    assert_eq!(missing_repository_paths(&present, &root()), Vec::<String>::new());
}

#[test]
fn shell_lines_are_split_as_a_shell_would() {
    assert_eq!(shell_words(r#"dbsweep run --shard "$I/3" -o s0   # one third"#), ["dbsweep", "run", "--shard", "$I/3", "-o", "s0"]);
    assert_eq!(shell_words("dbsweep man | man -l -"), ["dbsweep", "man"]);
    assert_eq!(shell_words("dbsweep completions bash > ~/x"), ["dbsweep", "completions", "bash"]);
    let block = "<!-- docs-test: not run (needs a run directory) -->\n```sh\nDBSWEEP_CLIENTS=1,8 dbsweep report DIR\n```\n```text\ndbsweep run\n```\n";
    let commands = commands_in(block, "x.md");
    assert_eq!(commands.len(), 1, "text blocks are output, not commands: {commands:?}");
    assert!(commands[0].not_run);
    assert_eq!(commands[0].env, [("DBSWEEP_CLIENTS".to_string(), "1,8".to_string())]);
    assert_eq!(as_tested(&commands[0]), ["report", "DIR", "--help"]);
}

#[test]
fn the_cli_reference_is_generated_from_the_code() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (code, generated, errors) = run_dbsweep(&["man".into(), "--markdown".into()], &[], dir.path());
    assert_eq!(code, Some(0), "{errors}");
    let committed = std::fs::read_to_string(root().join("docs/cli.md")).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/cli.md differs from what the code generates; regenerate it with\n  cargo run -- man --markdown > docs/cli.md\nand commit it"
    );
}

/// The relative link targets of `text`'s Markdown links (`[a](docs/x.md#part)` ->
/// `docs/x.md`), without web addresses and in-page anchors.
fn relative_links(text: &str) -> Vec<String> {
    text.match_indices("](")
        .filter_map(|(at, _)| {
            let rest = &text[at + 2..];
            let target = &rest[..rest.find(')')?];
            let path = target.split('#').next().unwrap_or_default();
            (!path.is_empty() && !path.contains("://") && !path.starts_with("mailto:")).then(|| path.to_string())
        })
        .collect()
}

#[test]
fn every_relative_link_in_the_docs_resolves() {
    let root = root();
    let mut files = vec![root.join("README.md"), root.join("bench/README.md")];
    for dir in ["docs", "bench/results"] {
        files.extend(std::fs::read_dir(root.join(dir)).expect("the directory").filter_map(|e| e.ok().map(|e| e.path())));
    }
    let mut broken = Vec::new();
    for file in files.iter().filter(|f| f.extension().is_some_and(|x| x == "md")) {
        let text = std::fs::read_to_string(file).expect("a Markdown file");
        for link in relative_links(&text) {
            if !file.parent().expect("a directory").join(&link).exists() {
                broken.push(format!("{}: {link}", file.strip_prefix(&root).unwrap_or(file).display()));
            }
        }
    }
    assert!(broken.is_empty(), "links to files that do not exist:\n{}", broken.join("\n"));
    assert_eq!(relative_links("see [a](docs/a.md#x), [b](https://x.org) and [c](#here)"), ["docs/a.md"]);
}
