//! `run`'s options as the user gives them (the study, flags and their `DBSWEEP_*`
//! variables), before validation: clap parses the command line straight into `RunOptions`
//! (`cli::Command::Run`), `resolve` turns them into a `Plan`, and `app` reads the few
//! that say how this process runs it (`--workers`, `--dry-run`, `--no-progress`, ...).
//! The doc comment of each field is its `--help` text, in `--help`'s order. Also the value
//! parsers of numbers, whose messages say what is expected. Must not check one option
//! against another: `resolve` does.

use clap::Args;
use clap::builder::BoolishValueParser;
use std::path::PathBuf;

// Every option of `dbsweep run`, before validation; `Default` is a run with no flag given.
// (Not a `///` comment: clap shows an `Args` struct's doc comment as its command's
// description.)
#[derive(Debug, Clone, Default, Args)]
pub struct RunOptions {
    /// Built-in study name, path to a study TOML file, or a YCSB workload file (runs the
    /// ycsb study with it, as -P FILE).
    #[arg(env = "DBSWEEP_STUDY")]
    pub study: Option<String>,
    /// A YCSB workload file (repeatable; later files override earlier ones), as YCSB's -P:
    /// the ycsb study runs this one workload.
    #[arg(short = 'P', value_name = "FILE")]
    pub ycsb_files: Vec<PathBuf>,
    /// A YCSB property (repeatable; overrides the files), as YCSB's -p, e.g. -p
    /// recordcount=5000. Properties dbsweep does not honour are listed as warnings.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub ycsb_properties: Vec<String>,
    /// Your own SQL script, in pgbench's script language (`\set name random(lo, hi)`,
    /// `:name`, statements ending in ';'), run as the measured op on every SQL target: on
    /// pgbench's tables (the pgbench study) unless the study names other data. One op is
    /// one pass of the script; answers of read-only scripts are compared across systems.
    #[arg(long = "sql-file", value_name = "FILE", env = "DBSWEEP_SQL_FILE", conflicts_with = "builtin")]
    pub sql_file: Option<PathBuf>,
    /// One of pgbench's built-in scripts instead of --sql-file, as pgbench -b:
    /// tpcb-like, simple-update or select-only.
    #[arg(long, value_name = "NAME", env = "DBSWEEP_BUILTIN")]
    pub builtin: Option<String>,
    /// A target as NAME=URL (repeatable), e.g. pg=postgres://user@127.0.0.1:5432/db. With
    /// --target or --spawn the run measures exactly the systems named, beside the NO-DB
    /// ceiling (nodb), on the study's experiments; the study's own targets run only with
    /// --with-study-targets. Without either flag the study's targets run.
    // A URL may hold a password: the variable's value is never shown in help.
    #[arg(short = 't', long = "target", value_name = "NAME=URL", env = "DBSWEEP_TARGET", hide_env_values = true)]
    pub targets: Vec<String>,
    /// Only these experiments (comma-separated names).
    #[arg(short = 'e', long, value_delimiter = ',', value_name = "NAMES", env = "DBSWEEP_EXPERIMENTS")]
    pub experiments: Option<Vec<String>>,
    /// Client counts for the clients sweep, e.g. 1,2,4,8.
    #[arg(short = 'c', long, value_delimiter = ',', value_name = "LIST", value_parser = count::<usize>, env = "DBSWEEP_CLIENTS", allow_hyphen_values = true)]
    pub clients: Option<Vec<usize>>,
    /// Batch sizes for the batch sweep, e.g. 1,10,100,1000.
    #[arg(short = 'b', long, value_delimiter = ',', value_name = "LIST", value_parser = count::<usize>, env = "DBSWEEP_BATCH", allow_hyphen_values = true)]
    pub batch: Option<Vec<usize>>,
    /// Range widths for range experiments, e.g. 1,10,100,1000.
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_parser = count::<u64>, env = "DBSWEEP_WIDTHS", allow_hyphen_values = true)]
    pub widths: Option<Vec<u64>>,
    /// Data sizes for the insert-find sweeps: a list and/or start:end:step ranges, e.g.
    /// 100,1000 or 100:100000:100 (the study's full sweep).
    #[arg(long, value_name = "SIZES", env = "DBSWEEP_SIZES", allow_hyphen_values = true)]
    pub sizes: Option<String>,
    /// Clients in the batch sweep.
    #[arg(long, value_name = "N", value_parser = count::<usize>, env = "DBSWEEP_BATCH_CLIENTS")]
    pub batch_clients: Option<usize>,
    /// Clients in range-width sweeps.
    #[arg(long, value_name = "N", value_parser = count::<usize>, env = "DBSWEEP_RANGE_CLIENTS")]
    pub range_clients: Option<usize>,
    /// Measured runs per point.
    #[arg(short = 'r', long, value_name = "N", value_parser = count::<u32>, env = "DBSWEEP_RUNS")]
    pub runs: Option<u32>,
    /// Warm-up runs per point (not measured).
    #[arg(short = 'w', long, value_name = "N", value_parser = whole::<u32>, env = "DBSWEEP_WARMUP")]
    pub warmup: Option<u32>,
    /// Ops per run (warm-up or measured).
    #[arg(short = 'n', long, value_name = "N", value_parser = count::<u64>, env = "DBSWEEP_OPS")]
    pub ops: Option<u64>,
    /// Time-based runs: every warm-up and measured run lasts this long (each client sends
    /// until then; requests in flight finish and count), e.g. 30s, 2m or 500ms, instead of
    /// a fixed number of ops (as pgbench -T, memtier --test-time).
    #[arg(short = 'T', long, value_name = "DURATION", env = "DBSWEEP_DURATION", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Rows preloaded into the data set; for YCSB data the record count, or a list that
    /// sweeps record counts (each loaded on its own), e.g. 1000,5000,10000.
    #[arg(long, value_delimiter = ',', value_name = "N[,N...]", value_parser = count::<u64>, env = "DBSWEEP_ROWS", allow_hyphen_values = true)]
    pub rows: Option<Vec<u64>>,
    /// Scale factor of TPC-H data, e.g. 0.01 or 1, or of pgbench data (100,000 accounts
    /// per unit, as pgbench -s; below 1 allowed).
    #[arg(short = 's', long, value_name = "SF", value_parser = scale_factor, env = "DBSWEEP_SCALE", allow_hyphen_values = true)]
    pub scale: Option<f64>,
    /// Seed for data and operations.
    #[arg(long, value_name = "N", value_parser = whole::<u64>, env = "DBSWEEP_SEED")]
    pub seed: Option<u64>,
    /// Output directory (must be new or empty); default dbsweep-runs/STUDY-TIMESTAMP.
    #[arg(short = 'o', long, value_name = "DIR", env = "DBSWEEP_OUT")]
    pub out: Option<PathBuf>,
    /// A quick smoke run: fewer ops, rows and points (the study's [quick] values); runs that
    /// can run by time last at least 30 ms (unless --ops gives their length).
    #[arg(short = 'q', long, env = "DBSWEEP_QUICK", value_parser = BoolishValueParser::new())]
    pub quick: bool,
    /// A paper study at the paper's own sizes and repeats (the study's [paper] values;
    /// insert-find: N = 100..100,000 in steps of 100). Refused when estimated over 8 h
    /// here, unless --budget caps it.
    #[arg(long, env = "DBSWEEP_PAPER", value_parser = BoolishValueParser::new(), conflicts_with = "quick")]
    pub paper: bool,
    /// Start throwaway local servers and benchmark them (comma-separated), or all (the
    /// servers of the study's paper, else every one but the clusters); they are stopped and
    /// removed afterwards. Like --target, this names what the run measures beside the
    /// NO-DB ceiling: the study's own targets run only with --with-study-targets.
    #[arg(short = 'S', long, value_delimiter = ',', value_name = "SERVERS", env = "DBSWEEP_SPAWN")]
    pub spawn: Vec<String>,
    /// With --target or --spawn: also run the study's own targets (the embedded study's
    /// SQLite, DuckDB, MonetDB and redb, ...) beside the systems named.
    #[arg(long, env = "DBSWEEP_WITH_STUDY_TARGETS", value_parser = BoolishValueParser::new())]
    pub with_study_targets: bool,
    /// Directory for spawned servers' data (e.g. a tmpfs versus a disk). Several
    /// (comma-separated, each DIR or LABEL=DIR) make storage a sweep axis: every spawned
    /// server runs once per directory, as a target named SERVER-LABEL.
    #[arg(long = "data-root", value_delimiter = ',', value_name = "DIRS", env = "DBSWEEP_DATA_ROOT")]
    pub data_roots: Vec<String>,
    /// Fixed-rate (open-loop) runs at this many ops/s in total; latency is also measured
    /// from each op's intended start. Several (comma-separated) make the rate a sweep axis:
    /// every point runs at each rate, and the report draws latency against throughput.
    /// Default: closed loop at maximum throughput.
    #[arg(short = 'R', long, value_delimiter = ',', value_name = "OPS_PER_SEC", value_parser = rate, env = "DBSWEEP_RATE", allow_hyphen_values = true)]
    pub rate: Option<Vec<f64>>,
    /// Durability of every target that has a setting for it: none (nothing forced to
    /// disk), periodic (flushed about every second), commit (fsync at every commit).
    /// Spawned servers and embedded engines are configured; a server dbsweep did not
    /// start is never changed (a warning says when it differs). Default: the study's, else
    /// each system's own.
    #[arg(long, value_name = "LEVEL", env = "DBSWEEP_DURABILITY")]
    pub durability: Option<String>,
    /// Per-op timeout in seconds for network targets [default: 60].
    #[arg(long, value_name = "SECONDS", value_parser = seconds, env = "DBSWEEP_TIMEOUT", allow_hyphen_values = true)]
    pub timeout: Option<f64>,
    /// Latency over time: the interval of the HdrHistogram interval logs (`.hlog`) written
    /// for every measured run, in seconds; 0 writes none [default: 1].
    #[arg(long, value_name = "SECONDS", value_parser = seconds, env = "DBSWEEP_HLOG_INTERVAL", allow_hyphen_values = true)]
    pub hlog_interval: Option<f64>,
    /// Work in the namespace dbsweep_NAME (schema, database, keyspace, key prefix
    /// `dbsweep_NAME:`) instead of dbsweep, to run side by side with another dbsweep on
    /// the same servers.
    #[arg(long, value_name = "NAME", env = "DBSWEEP_NAMESPACE")]
    pub namespace: Option<String>,
    /// Keep dbsweep's tables and keys after the run instead of removing them.
    #[arg(long, env = "DBSWEEP_KEEP_DATA", value_parser = BoolishValueParser::new())]
    pub keep_data: bool,
    /// Show no progress: no bar, no line per point as it lands, and no plain `progress
    /// ...` line every 30 s (printed instead of the bar without a terminal: CI logs,
    /// nohup); the final tables still print.
    #[arg(long, env = "DBSWEEP_NO_PROGRESS", value_parser = BoolishValueParser::new())]
    pub no_progress: bool,
    /// Run only shard I of N (0 <= I < N) of the study: a deterministic share of its
    /// (target, experiment) work, every unit in exactly one shard; join the shards' run
    /// directories with `dbsweep merge`. E.g. --shard "$SLURM_ARRAY_TASK_ID/3".
    #[arg(long, value_name = "I/N", env = "DBSWEEP_SHARD", allow_hyphen_values = true)]
    pub shard: Option<String>,
    /// Stop each run once its throughput is known to this relative precision at 95 %
    /// confidence (batch means over time windows), e.g. 2% or 0.02; at least 3 measured
    /// runs per point. Default: every run does all of its ops (the papers' fixed-ops mode).
    #[arg(long, value_name = "PRECISION", env = "DBSWEEP_PRECISION", allow_hyphen_values = true)]
    pub precision: Option<String>,
    /// Under --precision: the most ops a run does (default: --ops, or the study's ops).
    #[arg(long, value_name = "N", value_parser = count::<u64>, env = "DBSWEEP_MAX_OPS")]
    pub max_ops: Option<u64>,
    /// Under --precision: the longest a run lasts, e.g. 90s, 5m [default: 120s].
    #[arg(long, value_name = "DURATION", env = "DBSWEEP_MAX_TIME", allow_hyphen_values = true)]
    pub max_time: Option<String>,
    /// Send every run's ops from N worker processes together, each with its share of the
    /// clients, all starting at the coordinator's word. Worker 0, the coordinator, loads
    /// the data, cleans up and writes the one report (histograms added, throughput over the
    /// union of the workers' windows). Without a worker index (--worker, DBSWEEP_WORKER,
    /// SLURM_PROCID, JOB_COMPLETION_INDEX) this process is worker 0 and starts the other
    /// N-1 (indices 1 to N-1) on this machine as copies of itself with the same
    /// arguments; --workers 1 starts none. At most what the machine holds (8 per core,
    /// 128 MB of available memory each).
    #[arg(short = 'j', long, value_name = "N", value_parser = count::<usize>, env = "DBSWEEP_WORKERS")]
    pub workers: Option<usize>,
    /// This process's worker index (0: the coordinator); default from DBSWEEP_WORKER,
    /// SLURM_PROCID (when SLURM_NTASKS is N) or JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I", value_parser = whole::<usize>)]
    pub worker: Option<usize>,
    /// Where workers meet the coordinator, e.g. node1:7070 or [::1]:7070; worker 0 listens
    /// there only (see --listen); default DBSWEEP_COORDINATOR, or any free loopback port
    /// for local workers. Every worker proves that it holds the run's token
    /// (DBSWEEP_WORKER_TOKEN or DBSWEEP_WORKER_TOKEN_FILE, required unless all workers are
    /// local children of this process, which get a fresh one).
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: Option<String>,
    /// Where worker 0 listens for the workers when not at --coordinator's address, e.g.
    /// 0.0.0.0:7070 or [::]:7070 for every address of the machine.
    #[arg(long, value_name = "HOST:PORT", env = "DBSWEEP_LISTEN")]
    pub listen: Option<String>,
    /// Fit the whole run into this time, e.g. 8h or 90m: caps each run (--max-time) from
    /// the estimate and stops it sooner at the precision (--precision, default 2%).
    #[arg(long, value_name = "DURATION", env = "DBSWEEP_BUDGET", allow_hyphen_values = true)]
    pub budget: Option<String>,
    /// Print what the run would do (experiments, points, runs, ops per target) and exit
    /// without connecting to or starting anything (with --calibrate: after the sample).
    #[arg(long)]
    pub dry_run: bool,
    /// Time a short sample of every target and experiment first (seconds: a few hundred
    /// ops at a few points each, on a small copy of the data it creates and removes again)
    /// and estimate, cap (--budget) and forecast the run from the measured costs. With
    /// --dry-run: start the servers, run only the sample, print the calibrated estimate.
    /// Without this flag it runs when the estimate from typical costs exceeds 10 minutes or
    /// with --budget, except with --dry-run, --quick, --duration, --resume or --workers.
    #[arg(long)]
    pub calibrate: bool,
    /// Continue the interrupted or failed run in DIR: the same plan (its saved command
    /// when nothing else is given), completed points kept as saved, servers started and
    /// data loaded again, measuring from the first incomplete point. Not with --out (the
    /// run continues in DIR); DBSWEEP_OUT is ignored.
    #[arg(long, value_name = "DIR")]
    pub resume: Option<PathBuf>,
}

/// A count of at least 1 (clients, batch sizes), with a message that says so for `-1`,
/// `0` or `two`. Value parsers' messages name the value; `app` puts the flag before them.
pub fn count<T: std::str::FromStr + PartialOrd + From<u8>>(text: &str) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        _ => Err(format!("'{text}' is not a whole number of at least 1; use e.g. 4")),
    }
}

/// A whole number that may be 0 (warm-up runs, a seed, a worker index).
pub fn whole<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim().parse::<T>().map_err(|_| format!("'{text}' is not a whole number (0 or more); use e.g. 3"))
}

/// A number (its syntax; the plan checks its range): `what` it is not, and `example`.
fn number(text: &str, what: &str, example: &str) -> Result<f64, String> {
    text.trim().parse::<f64>().map_err(|_| format!("'{text}' is not {what}; use {example}"))
}

/// `--rate`: ops per second (one of a comma-separated list).
fn rate(text: &str) -> Result<f64, String> {
    number(text, "a rate", "ops per second, e.g. --rate 1000 or --rate 1000,4000")
}

/// `--timeout`, `--hlog-interval`: seconds.
fn seconds(text: &str) -> Result<f64, String> {
    number(text, "a number of seconds", "e.g. 60 or 0.5")
}

/// `--scale`, `gen tpch --scale`: a scale factor.
pub fn scale_factor(text: &str) -> Result<f64, String> {
    number(text, "a scale factor", "e.g. 0.01 or 1")
}
