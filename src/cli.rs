//! Command-line syntax (clap). No logic: `run` parses straight into the planner's own
//! options (`plan::RunOptions`, in `src/plan/options.rs`), and `app` dispatches commands.

use crate::plan::RunOptions;
use crate::plan::options::{count, scale_factor, whole};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(name = "dbsweep", version, about = "Benchmark key-value stores and relational databases side by side", long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a study (built-in name or a .toml file); default: the embedded study.
    // Negative numbers reach the value parsers, which say what is expected, instead of
    // being taken for unknown flags.
    #[command(allow_negative_numbers = true, after_help = RUN_EXAMPLES)]
    Run(Box<RunOptions>),
    /// List the built-in studies and what each measures (as JSON also its paper, its own
    /// targets, the servers `--spawn all` starts for it and its experiments).
    Studies {
        /// Output format (json: the same facts for scripts).
        #[arg(short = 'f', long, value_enum, default_value_t = StudiesFormat::Text)]
        format: StudiesFormat,
    },
    /// List the systems dbsweep can benchmark: whether each is ready here (its server,
    /// client or library found, with its version) or what to install, and its capabilities.
    Targets {
        /// Output format (json: the same facts for scripts).
        #[arg(short = 'f', long, value_enum, default_value_t = crate::adapter::probe::Format::Text)]
        format: crate::adapter::probe::Format,
    },
    /// Generate input data to a file or stdout, for feeding other tools the same data.
    #[command(subcommand)]
    Gen(GenCommand),
    /// Put saved runs side by side: throughput, p50 and p99 ratios to the first run, and
    /// whether each throughput difference is significant (Welch's t interval on the runs).
    Compare {
        /// Two or more run directories written by `dbsweep run`; the first is the baseline.
        #[arg(required = true, num_args = 2.., value_name = "RUN_DIR")]
        dirs: Vec<PathBuf>,
        /// Output format.
        #[arg(short = 'f', long, value_enum, default_value_t = crate::report::compare::Format::Text)]
        format: crate::report::compare::Format,
        /// Smallest throughput change called a difference, however certain (run-to-run
        /// drift on a busy machine is not a difference between systems), e.g. 5% or 0.05.
        #[arg(long, value_name = "FRACTION", default_value = "5%", allow_hyphen_values = true)]
        min_effect: String,
    },
    /// Join the run directories of one plan's shards (`run --shard I/N`) into one run
    /// directory with one report: histograms and counts as saved, cross-target flags
    /// (NO-DB ceiling, answers) computed again over all targets. A shard whose report.json
    /// does not match its seal, its plan hash or its plan is refused (exit 2); with
    /// DBSWEEP_WORKER_TOKEN (or DBSWEEP_WORKER_TOKEN_FILE) set, only shards signed with
    /// that token are merged.
    Merge {
        /// Run directories written by `dbsweep run --shard I/N` with the same plan.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Output directory (must be new or empty); default dbsweep-runs/STUDY-merged-TIMESTAMP.
        #[arg(short = 'o', long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print a completion script for SHELL, e.g. `dbsweep completions bash >
    /// ~/.local/share/bash-completion/completions/dbsweep`.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print dbsweep's man page (roff), or with --dir write it and one page per subcommand
    /// (dbsweep-run.1, ...) there, e.g. `dbsweep man --dir ~/.local/share/man/man1`; with
    /// --markdown print the CLI reference as Markdown (docs/cli.md).
    Man {
        /// Write dbsweep.1 and dbsweep-SUBCOMMAND.1 into this directory (created if missing).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print every command and flag as one Markdown page instead (docs/cli.md is this
        /// output).
        #[arg(long, conflicts_with = "dir")]
        markdown: bool,
    },
    /// Re-render results.csv, results_ops.csv, report.html and the console tables from a run
    /// directory's report.json.
    Report {
        /// A run directory written by `dbsweep run`.
        dir: PathBuf,
    },
}

/// How `dbsweep studies` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StudiesFormat {
    /// A line per study: its name and description.
    Text,
    /// `{"studies": [...]}`: name, description, paper, targets and servers, for scripts.
    Json,
}

/// Shown at the end of `run --help`, and as EXAMPLES in the man pages.
pub const RUN_EXAMPLES: &str = "\
Examples:
  dbsweep run                                  the embedded study: in-process engines, no server
  dbsweep run -q                               a smoke run in seconds
  dbsweep run -S postgres,redis -q             the study on throwaway PostgreSQL, Redis
  dbsweep run -S redis --with-study-targets    Redis beside the study's own in-process engines
  dbsweep run kv-vs-relational -S all -q       the paper's systems as throwaway servers
  dbsweep run -t pg=postgres://bench@127.0.0.1:5432/bench -t sqlite -c 1,4,16 -n 50000
  dbsweep run ycsb -S redis -R 2000            YCSB A-F, open loop at 2,000 ops/s
  dbsweep run -e get,insert -r 5 -w 1 -o out   two experiments, 5 measured runs, into ./out
  dbsweep run --precision 2% --budget 30m      stop each run at +-2 %, the whole run within 30 min
  DBSWEEP_CLIENTS=1,8 dbsweep run              any flag as DBSWEEP_<FLAG> (see [env: ...] above)";

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// Keys 1..=N shuffled by Fisher-Yates from a seed, with their values, as CSV
    /// `key,value`: the rows the insert-find study stores (integer values).
    // Negative numbers reach the value parsers, which say what is expected.
    #[command(allow_negative_numbers = true)]
    Keys {
        /// How many keys.
        #[arg(value_parser = count::<u64>)]
        n: u64,
        #[arg(long, default_value_t = 0, value_parser = whole::<u64>, allow_hyphen_values = true)]
        seed: u64,
        /// Text values of this many bytes instead of integers (the in-memory study's kind).
        #[arg(long, value_name = "BYTES", value_parser = whole::<usize>, allow_hyphen_values = true)]
        value_bytes: Option<usize>,
        /// Write to this file (atomically) instead of stdout.
        #[arg(short = 'o', long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// TPC-H's eight tables at a scale factor as dbgen's .tbl files (`|`-separated), into
    /// dbsweep's data cache ($DBSWEEP_CACHE, else ~/.cache/dbsweep), where runs read them;
    /// a run generates them itself when they are missing. Prints the directory.
    // A negative scale reaches the check, which says what is expected.
    #[command(allow_negative_numbers = true)]
    Tpch {
        /// Scale factor (1 = about 1.1 GB of files).
        #[arg(short = 's', long, value_name = "SF", default_value_t = 1.0, value_parser = scale_factor, allow_hyphen_values = true)]
        scale: f64,
    },
}
