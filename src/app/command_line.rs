//! The command line as dbsweep parses, shows and records it: clap's command with the
//! default study's values added to `run --help`, and the arguments of a run as recorded in
//! its report (flags taken from `DBSWEEP_*` variables written out). Must not run anything.

use crate::base::durability::Durability;
use crate::cli::Cli;
use crate::error::{Error, Result};
use crate::plan;
use crate::servers::ServerKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory};
use std::ffi::OsString;
use std::path::Path;

/// dbsweep's clap command: `Cli` with, on `run`'s options whose default comes from the
/// study, the value the default study gives them; the servers `--spawn` starts listed
/// from `ServerKind::ALL`; and the built-in studies, servers and durability levels
/// offered to shell completion.
pub fn command() -> clap::Command {
    // The built-in study always loads (a unit test says so); without it help only lacks
    // the values.
    let defaults = plan::defaults(plan::DEFAULT_STUDY).unwrap_or_default();
    let studies: Vec<&'static str> = plan::BUILT_IN.iter().map(|(name, _)| *name).collect();
    let servers: Vec<&'static str> = ServerKind::ALL.iter().map(|k| k.name()).collect();
    let levels: Vec<&'static str> = Durability::ALL.iter().map(|d| d.name()).collect();
    let spawnable = [servers.clone(), vec!["all"]].concat();
    Cli::command().mut_subcommand("run", |run| {
        let run = run
            .mut_arg("study", |arg| {
                with_note(arg, &format!("[default: {}]", plan::DEFAULT_STUDY)).value_parser(Offered(studies)).hide_possible_values(true)
            })
            .mut_arg("spawn", |arg| {
                with_note(arg, &format!("[servers: {}]", servers.join(", "))).value_parser(Offered(spawnable)).hide_possible_values(true)
            })
            .mut_arg("durability", |arg| arg.value_parser(Offered(levels)).hide_possible_values(true));
        defaults.iter().fold(run, |run, (id, value)| {
            run.mut_arg(*id, |arg| with_note(arg, &format!("[default: the study's; {}: {value}]", plan::DEFAULT_STUDY)))
        })
    })
}

/// Parses `args` (the program name first) with `command` into dbsweep's options and clap's
/// matches (the latter tell where each value came from).
pub fn parse(command: &clap::Command, args: &[OsString]) -> Result<(Cli, ArgMatches), clap::Error> {
    let matches = command.clone().try_get_matches_from(args)?;
    Ok((<Cli as clap::FromArgMatches>::from_arg_matches(&matches)?, matches))
}

/// Whether clap's "error" is help or a version the user asked for, printed rather than refused.
pub fn is_display(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand)
}

/// A value parser that takes any text, as a plain string parser does (the plan checks it
/// and says what is wrong: a study may also be a file, a list may hold `all`), and offers
/// these values to shell completion.
#[derive(Clone)]
struct Offered(Vec<&'static str>);

impl clap::builder::TypedValueParser for Offered {
    type Value = String;

    fn parse_ref(&self, command: &clap::Command, arg: Option<&clap::Arg>, value: &std::ffi::OsStr) -> Result<String, clap::Error> {
        clap::builder::StringValueParser::new().parse_ref(command, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(self.0.iter().map(|v| clap::builder::PossibleValue::new(*v))))
    }
}

/// clap's error as one line: a bad value as `--flag: what is wrong`, missing arguments named
/// with what they are, else clap's first line with the possible values and its tip ("a
/// similar argument exists: '--clients'") when it gives them; then the usage when
/// arguments are missing, and the help of the subcommand the user ran (in `args`, the
/// program name first).
pub fn one_line_error(e: &clap::Error, command: &clap::Command, args: &[OsString]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = e.to_string();
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let (subcommand, path) = subcommand_of(command, args);
    let help = format!("see {} --help", path.join(" "));
    let first = lines.first().copied().unwrap_or("bad arguments").trim_start_matches("error: ");
    let source = std::error::Error::source(e).map(ToString::to_string);
    let message = match (e.kind(), e.get(ContextKind::InvalidArg), source) {
        (ErrorKind::ValueValidation, Some(ContextValue::String(arg)), Some(why)) => {
            // "--rate <OPS_PER_SEC>" -> "--rate", "<N>" -> "N"; the parser's message names the value.
            format!("{}: {why}", arg.split_whitespace().next().unwrap_or(arg).trim_start_matches('<').trim_end_matches('>'))
        }
        (ErrorKind::UnknownArgument, Some(ContextValue::String(arg)), _) if is_negative_number(arg) => {
            // clap's hint ("use '-- -2'") would pass it as a positional: name the value instead.
            let given = args.iter().filter_map(|a| a.to_str()).position(|a| a.starts_with(arg.as_str()) && is_negative_number(a));
            let shown = given.and_then(|i| args[i].to_str()).unwrap_or(arg);
            let flag = given.and_then(|i| args.get(i.checked_sub(1)?)?.to_str()).filter(|f| f.starts_with('-'));
            let of = flag.map_or_else(String::new, |f| format!("{f} "));
            return format!("{of}{shown}: a negative number, where dbsweep takes 0 or more; give a positive value ({help})");
        }
        (ErrorKind::MissingRequiredArgument, Some(ContextValue::Strings(missing)), _) => {
            let missing: Vec<String> = missing.iter().map(|a| format!("{a}{}", what_argument_is(subcommand, a))).collect();
            let usage = lines.iter().find_map(|l| l.strip_prefix("Usage: ")).unwrap_or_default();
            return format!("missing {} (usage: {usage}; {help})", missing.join(", "));
        }
        _ => first.to_string(),
    };
    let message = match lines.iter().find(|l| l.starts_with("[possible values: ")) {
        Some(values) => format!("{message} {values}"),
        None => message,
    };
    match lines.iter().find_map(|l| l.strip_prefix("tip: ")) {
        Some(tip) => format!("{message} ({tip}; {help})"),
        None => format!("{message} ({help})"),
    }
}

/// Whether `text` starts as a negative number does (`-2`, `-1,2`, `-.5`, `-2%`).
fn is_negative_number(text: &str) -> bool {
    text.strip_prefix('-').is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit() || c == '.'))
}

/// The subcommand `args` name (the deepest, e.g. `gen keys`) and its path from the program
/// name: `(run, ["dbsweep", "run"])`; the program itself when they name none.
fn subcommand_of<'a>(command: &'a clap::Command, args: &[OsString]) -> (&'a clap::Command, Vec<&'a str>) {
    let mut current = command;
    let mut path = vec![command.get_name()];
    for arg in args.iter().skip(1).filter_map(|a| a.to_str()) {
        if let Some(sub) = current.find_subcommand(arg) {
            current = sub;
            path.push(sub.get_name());
        }
    }
    (current, path)
}

/// ": two or more run directories written by `dbsweep run`": the first clause of the help
/// of `command`'s argument shown as `shown` ("<RUN_DIR> <RUN_DIR>..."), or nothing.
fn what_argument_is(command: &clap::Command, shown: &str) -> String {
    let value_name = shown.trim_start_matches(['<', '[', '-']).split(['>', ']', ' ']).next().unwrap_or_default();
    let help = command
        .get_arguments()
        .find(|a| a.get_value_names().is_some_and(|names| names.iter().any(|n| n.as_str() == value_name)) || a.get_id() == value_name)
        .and_then(|a| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default();
    let clause = help.split(['.', ';']).next().unwrap_or_default().trim();
    let mut chars = clause.chars();
    match chars.next() {
        Some(c) => format!(": {}{}", c.to_lowercase(), chars.as_str()),
        None => String::new(),
    }
}

/// `dbsweep completions SHELL`: the shell's completion script on stdout.
pub fn print_completions(shell: clap_complete::Shell) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command(), "dbsweep", &mut script);
    super::say(&String::from_utf8_lossy(&script))
}

/// `dbsweep man`: the man page (roff) on stdout, or every page (dbsweep.1 and one per
/// subcommand, dbsweep-run.1, ...) written into `dir`.
pub fn man_pages(dir: Option<&Path>) -> Result<()> {
    let mut root = command().disable_help_subcommand(true);
    root.build();
    let Some(dir) = dir else {
        return super::say(&man_page(&root, &root)?);
    };
    let cannot = |e: std::io::Error| Error::usage(format!("cannot write the man pages into {}: {e}; give a writable --dir", dir.display()));
    std::fs::create_dir_all(dir).map_err(cannot)?;
    write_man_pages(&root, &root, dir).map_err(|e| match e {
        PageError::Io(e) => cannot(e),
        PageError::Render(e) => e,
    })
}

/// A man page that could not be written: the directory's fault or the renderer's.
enum PageError {
    Io(std::io::Error),
    Render(Error),
}

/// The pages of `command` and, before it, of each of its subcommands, into `dir`.
fn write_man_pages(root: &clap::Command, command: &clap::Command, dir: &Path) -> Result<(), PageError> {
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_man_pages(root, sub, dir)?;
    }
    let name = command.get_display_name().unwrap_or(command.get_name());
    let page = man_page(root, command).map_err(PageError::Render)?;
    std::fs::write(dir.join(format!("{name}.1")), page).map_err(PageError::Io)
}

/// One man page: clap_mangen's sections (name, synopsis, description, options,
/// subcommands, version) without its EXTRA section, then EXAMPLES (`run --help`'s
/// examples, on `run`'s page and the main one), EXIT STATUS (`error::EXIT_CODES`) and
/// ENVIRONMENT (the variables of the page's options; on the main page, every command's).
fn man_page(root: &clap::Command, command: &clap::Command) -> Result<String> {
    let is_root = std::ptr::eq(root, command);
    let mut page = Vec::new();
    let without_extra = command.clone().after_help(None::<&str>).after_long_help(None::<&str>);
    clap_mangen::Man::new(without_extra).render(&mut page).map_err(|e| Error::runtime(format!("cannot render the man page: {e}")))?;
    let mut page = String::from_utf8_lossy(&page).into_owned();
    let run = root.find_subcommand("run");
    if is_root || command.get_name() == "run" {
        let examples = run.and_then(|r| r.get_after_help()).map(|h| h.to_string()).unwrap_or_default();
        page.push_str(".SH EXAMPLES\n.nf\n");
        for line in examples.lines().filter(|l| !l.trim().is_empty() && !l.ends_with("Examples:")) {
            page.push_str(&roff_line(line.trim_start()));
        }
        page.push_str(".fi\n");
    }
    page.push_str(".SH \"EXIT STATUS\"\n");
    for (code, meaning) in crate::error::EXIT_CODES {
        page.push_str(&format!(".TP\n.B {code}\n{}", roff_line(meaning)));
    }
    let mut variables: Vec<(String, String)> = Vec::new();
    let mut commands = vec![command];
    while let Some(c) = commands.pop() {
        for arg in c.get_arguments() {
            let Some(var) = arg.get_env().map(|v| v.to_string_lossy().into_owned()) else { continue };
            if variables.iter().any(|(v, _)| *v == var) {
                continue;
            }
            let given_as = match arg.get_long() {
                Some(long) => format!("--{long}"),
                None => format!("the {} argument", arg.get_id().as_str().to_uppercase()),
            };
            let of = match is_root {
                true => format!(" of {}(1)", c.get_display_name().unwrap_or(c.get_name())),
                false => " (see OPTIONS)".to_string(),
            };
            variables.push((var, format!("Sets {given_as}{of}; given on the command line, the argument wins.")));
        }
        if is_root {
            commands.extend(c.get_subcommands());
        }
    }
    if !variables.is_empty() {
        variables.sort();
        page.push_str(".SH ENVIRONMENT\n");
        for (var, meaning) in variables {
            page.push_str(&format!(".TP\n.B {var}\n{}", roff_line(&meaning)));
        }
    }
    Ok(page)
}

/// `dbsweep man --markdown`: every command and flag as one Markdown page (docs/cli.md),
/// walked from the same clap command as `--help` and the man pages, so the reference
/// cannot drift from them: per command its description, usage and arguments with their
/// help, value names, defaults, environment variables and possible values; `run`'s
/// examples; the exit codes.
pub fn markdown_reference() -> String {
    let mut root = command().disable_help_subcommand(true);
    root.build();
    let mut page = String::from(
        "# Command-line reference\n\n\
         Generated from dbsweep's command definition by `dbsweep man --markdown`; do not edit by\n\
         hand (`tests/e2e/docs.rs` fails when it differs from the code). Regenerate with\n\
         `cargo run -- man --markdown > docs/cli.md`.\n",
    );
    markdown_command(&root, &[], &mut page);
    page.push_str("\n## Exit status\n\n");
    for (code, meaning) in crate::error::EXIT_CODES {
        page.push_str(&format!("- `{code}`: {meaning}\n"));
    }
    page
}

/// `command` (reached through `parents`) and then its subcommands, into `page`.
fn markdown_command(command: &clap::Command, parents: &[&str], page: &mut String) {
    let path = [parents, &[command.get_name()]].concat();
    let title = path.join(" ");
    page.push_str(&format!("\n## {title}\n\n"));
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        page.push_str(&format!("{}\n\n", one_paragraph(&about.to_string())));
    }
    let usage = command.clone().bin_name(&title).render_usage().to_string();
    let usage = usage.trim().trim_start_matches("Usage:").trim();
    page.push_str(&format!("```text\n{usage}\n```\n"));
    // In `--help`'s order: positional arguments first, then the options as defined.
    let mut arguments: Vec<&clap::Arg> =
        command.get_arguments().filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version")).collect();
    arguments.sort_by_key(|a| (!a.is_positional(), a.get_display_order()));
    if !arguments.is_empty() {
        page.push('\n');
    }
    for arg in arguments {
        page.push_str(&format!("- {}", markdown_argument_name(arg)));
        if let Some(help) = arg.get_long_help().or(arg.get_help()) {
            page.push_str(&format!(": {}", one_paragraph(&help.to_string())));
        }
        let mut notes = Vec::new();
        let defaults: Vec<String> = arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect();
        if !defaults.is_empty() && !arg.is_hide_default_value_set() && takes_values(arg) {
            notes.push(format!("default: `{}`", defaults.join(",")));
        }
        if !arg.is_hide_possible_values_set() && takes_values(arg) {
            let values: Vec<String> =
                arg.get_possible_values().iter().filter(|v| !v.is_hide_set()).map(|v| format!("`{}`", v.get_name())).collect();
            if !values.is_empty() {
                notes.push(format!("values: {}", values.join(", ")));
            }
        }
        if let Some(var) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
            notes.push(format!("env: `{}`", var.to_string_lossy()));
        }
        if !notes.is_empty() {
            page.push_str(&format!(" ({})", notes.join("; ")));
        }
        page.push('\n');
    }
    if let Some(after) = command.get_after_help() {
        page.push_str(&format!("\n```text\n{}\n```\n", after.to_string().trim_end()));
    }
    // In `--help`'s order (`run` first), not the order of definition.
    let mut subcommands: Vec<&clap::Command> = command.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    subcommands.sort_by_key(|s| s.get_display_order());
    for sub in subcommands {
        markdown_command(sub, &path, page);
    }
}

/// `-c, --clients <LIST>` or `<STUDY>`, in code spans.
fn markdown_argument_name(arg: &clap::Arg) -> String {
    let values: Vec<String> = match arg.get_value_names() {
        _ if !takes_values(arg) => Vec::new(),
        Some(names) => names.iter().map(|n| format!("<{n}>")).collect(),
        None => vec![format!("<{}>", arg.get_id().as_str().to_uppercase())],
    };
    if arg.is_positional() {
        return format!("`{}`", values.join(" "));
    }
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    let names = names.join(", ");
    match values.is_empty() {
        true => format!("`{names}`"),
        false => format!("`{names} {}`", values.join(" ")),
    }
}

/// Whether `arg` is given a value (`--clients 1,2`), not a flag (`--quick`).
fn takes_values(arg: &clap::Arg) -> bool {
    matches!(arg.get_action(), clap::ArgAction::Set | clap::ArgAction::Append)
}

/// Help text as one Markdown paragraph: its lines joined with spaces.
fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` as one roff text line: backslashes and hyphens escaped, a leading control
/// character neutralised.
fn roff_line(text: &str) -> String {
    let escaped = text.replace('\\', "\\e").replace('-', "\\-");
    let guarded = if escaped.starts_with(['.', '\'']) { format!("\\&{escaped}") } else { escaped };
    format!("{guarded}\n")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_markdown_reference_names_every_command_flag_and_variable() {
        let page = markdown_reference();
        for heading in ["## dbsweep run\n", "## dbsweep gen keys\n", "## dbsweep merge\n", "## dbsweep man\n"] {
            assert!(page.contains(heading), "{heading} missing:\n{page}");
        }
        assert!(page.contains("- `-c, --clients <LIST>`: Client counts"), "{page}");
        assert!(page.contains("env: `DBSWEEP_CLIENTS`"), "{page}");
        assert!(page.contains("default: `5%`"), "compare --min-effect's default: {page}");
        assert!(page.contains("- `130`: "), "exit codes: {page}");
        assert!(page.contains("- `-q, --quick`: "), "a flag has no value: {page}");
        let run = &page[page.find("## dbsweep run\n").unwrap()..];
        assert!(run.find("- `<STUDY>`").unwrap() < run.find("- `-P <FILE>`").unwrap(), "--help's order: {run}");
        assert!(!page.contains("`-h, --help`"), "help flags are left out: {page}");
    }

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
