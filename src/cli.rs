//! Command-line syntax (clap). No logic: commands are turned into plan options and
//! dispatched by `lib.rs`.

use clap::{Args, Parser, Subcommand};
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
    #[command(allow_negative_numbers = true)]
    Run(RunArgs),
    /// List the built-in studies.
    Studies,
    /// List the systems dbsweep can benchmark, their capabilities, and which cannot run here.
    Targets,
    /// Generate input data to a file or stdout, for feeding other tools the same data.
    #[command(subcommand)]
    Gen(GenCommand),
    /// Put saved runs side by side: throughput, p50 and p99 ratios to the first run, and
    /// whether each throughput difference is significant (Welch's t interval on the runs).
    Compare {
        /// Two or more run directories written by `dbsweep run`; the first is the baseline.
        #[arg(required = true, num_args = 2..)]
        dirs: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = crate::report::compare::Format::Text)]
        format: crate::report::compare::Format,
        /// Smallest throughput change called a difference, however certain (run-to-run
        /// drift on a busy machine is not a difference between systems), e.g. 5% or 0.05.
        #[arg(long, value_name = "FRACTION", default_value = "5%")]
        min_effect: String,
    },
    /// Join the run directories of one plan's shards (`run --shard I/N`) into one run
    /// directory with one report: histograms and counts as saved, cross-target flags
    /// (NO-DB ceiling, answers) computed again over all targets.
    Merge {
        /// Run directories written by `dbsweep run --shard I/N` with the same plan.
        #[arg(required = true, num_args = 1..)]
        dirs: Vec<PathBuf>,
        /// Output directory (must be new or empty); default dbsweep-runs/STUDY-merged-TIMESTAMP.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Re-render results.csv and the console table from a run directory's report.json.
    Report {
        /// A run directory written by `dbsweep run`.
        dir: PathBuf,
    },
}

#[derive(Debug, Subcommand)]
pub enum GenCommand {
    /// Keys 1..=N shuffled by Fisher-Yates from a seed, with their values, as CSV
    /// `key,value`: the rows the insert-find study stores (integer values).
    Keys {
        n: u64,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Text values of this many bytes instead of integers (the in-memory study's kind).
        #[arg(long, value_name = "BYTES")]
        value_bytes: Option<usize>,
        /// Write to this file (atomically) instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// Built-in study name, path to a study TOML file, or a YCSB workload file (runs the
    /// ycsb study with it, as -P FILE).
    pub study: Option<String>,
    /// A YCSB workload file (repeatable; later files override earlier ones), as YCSB's -P:
    /// the ycsb study runs this one workload.
    #[arg(short = 'P', value_name = "FILE")]
    pub ycsb_files: Vec<PathBuf>,
    /// A YCSB property (repeatable; overrides the files), as YCSB's -p, e.g. -p
    /// recordcount=5000. Properties dbsweep does not honour are listed as warnings.
    #[arg(short = 'p', value_name = "KEY=VALUE")]
    pub ycsb_properties: Vec<String>,
    /// A target as NAME=URL (repeatable), e.g. pg=postgres://user@127.0.0.1:5432/db; replaces the study's targets.
    #[arg(long = "target", value_name = "NAME=URL")]
    pub targets: Vec<String>,
    /// Only these experiments (comma-separated names).
    #[arg(long, value_delimiter = ',', value_name = "NAMES")]
    pub experiments: Option<Vec<String>>,
    /// Client counts for the clients sweep, e.g. 1,2,4,8.
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_parser = count::<usize>)]
    pub clients: Option<Vec<usize>>,
    /// Batch sizes for the batch sweep, e.g. 1,10,100,1000.
    #[arg(long, value_delimiter = ',', value_name = "LIST", value_parser = count::<usize>)]
    pub batch: Option<Vec<usize>>,
    /// Range widths for range experiments, e.g. 1,10,100,1000.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    pub widths: Option<Vec<u64>>,
    /// Data sizes for the insert-find sweeps: a list and/or start:end:step ranges, e.g.
    /// 100,1000 or 100:100000:100 (the study's full sweep).
    #[arg(long, value_name = "SIZES")]
    pub sizes: Option<String>,
    /// Clients in the batch sweep (default 1, as in the studies).
    #[arg(long, value_name = "N", value_parser = count::<usize>)]
    pub batch_clients: Option<usize>,
    /// Clients in range-width sweeps (default 8, as in the kv-vs-relational study).
    #[arg(long, value_name = "N", value_parser = count::<usize>)]
    pub range_clients: Option<usize>,
    /// Measured runs per point.
    #[arg(long, value_parser = count::<u32>)]
    pub runs: Option<u32>,
    /// Warm-up runs per point (not measured).
    #[arg(long, value_parser = whole::<u32>)]
    pub warmup: Option<u32>,
    /// Ops per run.
    #[arg(long, value_parser = count::<u64>)]
    pub ops: Option<u64>,
    /// Rows preloaded into the data set; for YCSB data the record count, or a list that
    /// sweeps record counts (each loaded on its own), e.g. 1000,5000,10000.
    #[arg(long, value_delimiter = ',', value_name = "N[,N...]", value_parser = count::<u64>)]
    pub rows: Option<Vec<u64>>,
    /// TPC-H scale factor (studies with TPC-H data), e.g. 0.01 or 1.
    #[arg(long)]
    pub scale: Option<f64>,
    /// Seed for data and operations.
    #[arg(long, value_parser = whole::<u64>)]
    pub seed: Option<u64>,
    /// Output directory (must be new or empty); default dbsweep-runs/STUDY-TIMESTAMP.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// A quick smoke run: fewer ops, rows and points.
    #[arg(long)]
    pub quick: bool,
    /// Start throwaway local servers and benchmark them too: postgres, mariadb, redis,
    /// memcached, hyper, h2, cassandra, or all (comma-separated). They are stopped and removed afterwards.
    #[arg(long, value_delimiter = ',', value_name = "SERVERS")]
    pub spawn: Vec<String>,
    /// Directory for spawned servers' data (e.g. a tmpfs versus a disk). Several
    /// (comma-separated, each DIR or LABEL=DIR) make storage a sweep axis: every spawned
    /// server runs once per directory, as a target named SERVER-LABEL.
    #[arg(long = "data-root", value_delimiter = ',', value_name = "DIRS")]
    pub data_roots: Vec<String>,
    /// Fixed-rate (open-loop) runs at this many ops/s in total; latency is also measured
    /// from each op's intended start. Default: closed loop at maximum throughput.
    #[arg(long, value_name = "OPS_PER_SEC")]
    pub rate: Option<f64>,
    /// Per-op timeout in seconds for network targets.
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,
    /// Work in the namespace dbsweep_NAME (schema, database, keyspace, key prefix
    /// `dbsweep_NAME:`) instead of dbsweep, to run side by side with another dbsweep on
    /// the same servers.
    #[arg(long, value_name = "NAME")]
    pub namespace: Option<String>,
    /// Keep dbsweep's tables and keys after the run instead of removing them.
    #[arg(long)]
    pub keep_data: bool,
    /// Do not show the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// Run only shard I of N (0 <= I < N) of the study: a deterministic share of its
    /// (target, experiment) work, every unit in exactly one shard; join the shards' run
    /// directories with `dbsweep merge`. E.g. --shard "$SLURM_ARRAY_TASK_ID/3".
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Stop each run once its throughput is known to this relative precision at 95 %
    /// confidence (batch means over time windows), e.g. 2% or 0.02; at least 3 measured
    /// runs per point. Default: every run does all of its ops (the papers' fixed-ops mode).
    #[arg(long, value_name = "PRECISION")]
    pub precision: Option<String>,
    /// Under --precision: the most ops a run does (default: --ops, or the study's ops).
    #[arg(long, value_name = "N", value_parser = count::<u64>)]
    pub max_ops: Option<u64>,
    /// Under --precision: the longest a run lasts, e.g. 90s, 5m (default 120s).
    #[arg(long, value_name = "DURATION")]
    pub max_time: Option<String>,
    /// Send every run's ops from N worker processes together (0 <= index < N): each
    /// connects its share of the clients, all start at the coordinator's word (worker 0,
    /// which loads the data, cleans up and writes the one report: histograms added,
    /// throughput over the union of the workers' windows). Without a worker index this
    /// process is worker 0 and starts workers 1..N on this machine.
    #[arg(long, value_name = "N", value_parser = count::<usize>)]
    pub workers: Option<usize>,
    /// This process's worker index (0: the coordinator); default from DBSWEEP_WORKER,
    /// SLURM_PROCID (when SLURM_NTASKS is N) or JOB_COMPLETION_INDEX.
    #[arg(long, value_name = "I", value_parser = whole::<usize>)]
    pub worker: Option<usize>,
    /// Where workers meet the coordinator (worker 0 listens on this port on every
    /// address); default DBSWEEP_COORDINATOR, or any free loopback port for local workers.
    #[arg(long, value_name = "HOST:PORT")]
    pub coordinator: Option<String>,
    /// Fit the whole run into this time, e.g. 8h or 90m: caps each run (--max-time) from
    /// the estimate and stops it sooner at the precision (--precision, default 2%).
    #[arg(long, value_name = "DURATION")]
    pub budget: Option<String>,
    /// Print what the run would do (experiments, points, runs, ops per target) and exit
    /// without connecting to or starting anything.
    #[arg(long)]
    pub dry_run: bool,
    /// Continue the interrupted or failed run in DIR: the same plan (its saved command
    /// when nothing else is given), completed points kept as saved, servers started and
    /// data loaded again, measuring from the first incomplete point.
    #[arg(long, value_name = "DIR", conflicts_with = "out")]
    pub resume: Option<PathBuf>,
}

/// A count of at least 1 (clients, batch sizes), with a message that says so for `-1`,
/// `0` or `two`.
fn count<T: std::str::FromStr + PartialOrd + From<u8>>(text: &str) -> Result<T, String> {
    match text.trim().parse::<T>() {
        Ok(n) if n >= T::from(1) => Ok(n),
        _ => Err("expected a whole number of at least 1, e.g. 4".into()),
    }
}

/// A whole number that may be 0 (warm-up runs, a seed, a worker index).
fn whole<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.trim().parse::<T>().map_err(|_| "expected a whole number (0 or more), e.g. 3".into())
}
