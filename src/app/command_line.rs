//! The command line as dbsweep parses, shows and records it: clap's command with the
//! default study's values added to `run --help`, and the arguments of a run as recorded in
//! its report (flags taken from `DBSWEEP_*` variables written out). Must not run anything.

use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::plan;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use std::ffi::OsString;

/// dbsweep's clap command: `Cli` with, on `run`'s options whose default comes from the
/// study, the value the default study gives them.
pub fn command() -> clap::Command {
    // The built-in study always loads (a unit test says so); without it help only lacks
    // the values.
    let defaults = plan::defaults(plan::DEFAULT_STUDY).unwrap_or_default();
    Cli::command().mut_subcommand("run", |run| {
        let run = run.mut_arg("study", |arg| with_note(arg, &format!("[default: {}]", plan::DEFAULT_STUDY)));
        defaults.iter().fold(run, |run, (id, value)| {
            run.mut_arg(*id, |arg| with_note(arg, &format!("[default: the study's; {}: {value}]", plan::DEFAULT_STUDY)))
        })
    })
}

/// `dbsweep completions SHELL`: the shell's completion script on stdout.
pub fn print_completions(shell: clap_complete::Shell) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "dbsweep", &mut script);
    write_stdout(&script)
}

/// `dbsweep man`: the man page (roff) on stdout, or every page (dbsweep.1 and one per
/// subcommand) written into `dir`.
pub fn man_pages(dir: Option<&std::path::Path>) -> Result<()> {
    let Some(dir) = dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(command()).render(&mut page).map_err(|e| Error::runtime(format!("cannot render the man page: {e}")))?;
        return write_stdout(&page);
    };
    std::fs::create_dir_all(dir)
        .and_then(|()| clap_mangen::generate_to(command(), dir))
        .map_err(|e| Error::usage(format!("cannot write the man pages into {}: {e}; give a writable --dir", dir.display())))
}

fn write_stdout(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    std::io::stdout().write_all(bytes).map_err(|e| Error::runtime(format!("cannot write to stdout: {e}")))
}

/// `arg` with `note` after its help (and its long help, when it has one).
fn with_note(arg: clap::Arg, note: &str) -> clap::Arg {
    let help = arg.get_help().map_or_else(|| note.to_string(), |h| format!("{h} {note}"));
    let arg = match arg.get_long_help() {
        Some(long) => {
            let long = format!("{long} {note}");
            arg.long_help(long)
        }
        None => arg,
    };
    arg.help(help)
}

/// The arguments as given, followed by the `run` flags that came from `DBSWEEP_*`
/// variables, written as flags: the recorded command reproduces the run (and `--resume`
/// reads it) without the environment it ran in.
pub fn with_env_flags(args: &[OsString], matches: &ArgMatches) -> Vec<OsString> {
    let mut line = args.to_vec();
    let Some(("run", run)) = matches.subcommand() else { return line };
    let command = command();
    let Some(definition) = command.find_subcommand("run") else { return line };
    for arg in definition.get_arguments() {
        let id = arg.get_id().as_str();
        if run.value_source(id) != Some(ValueSource::EnvVariable) || overridden_by_resume(run, id) {
            continue;
        }
        let values: Vec<OsString> = run.get_raw(id).map(|v| v.map(OsString::from).collect()).unwrap_or_default();
        let Some(long) = arg.get_long() else {
            line.extend(values); // the positional study
            continue;
        };
        if arg.get_action().takes_values() {
            let mut joined = OsString::new();
            for (i, v) in values.iter().enumerate() {
                if i > 0 {
                    joined.push(",");
                }
                joined.push(v);
            }
            line.push(format!("--{long}").into());
            line.push(joined);
        } else if run.get_flag(id) {
            line.push(format!("--{long}").into());
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_help_shows_the_default_studys_values() {
        let mut command = command();
        let help = command.find_subcommand_mut("run").unwrap().render_help().to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" "); // unwrapped
        let study = plan::load_study(plan::DEFAULT_STUDY).unwrap();
        let clients: Vec<String> = study.clients.unwrap().iter().map(usize::to_string).collect();
        assert!(help.contains(&format!("[default: the study's; embedded: {}]", clients.join(","))), "{help}");
        assert!(help.contains(&format!("embedded: {};", study.ops.unwrap())), "ops with the experiments' own: {help}");
        assert!(help.contains("[default: embedded]"), "{help}");
        assert!(help.contains("[env: DBSWEEP_CLIENTS"), "{help}");
        assert!(help.contains("-c, --clients"), "{help}");
    }
}

/// A run continues in its `--resume` directory: `DBSWEEP_OUT` does not apply to it.
pub fn overridden_by_resume(run: &ArgMatches, id: &str) -> bool {
    id == "out" && run.contains_id("resume")
}

/// `--resume DIR` continues in DIR: an `--out` given with it names a second directory.
pub fn check_resume_without_out(matches: &ArgMatches) -> Result<(), String> {
    let Some(("run", run)) = matches.subcommand() else { return Ok(()) };
    if run.contains_id("resume") && run.value_source("out") == Some(ValueSource::CommandLine) {
        return Err("--resume DIR continues the run in DIR: drop --out".into());
    }
    Ok(())
}
