# Shared helpers for the bench/ scripts (sourced, not run). Owns: finding the dbsweep
# binary, free ports, the temp dir and the exit trap that stops the servers a script
# started, a throwaway PostgreSQL for the scripts that ask for one (start_postgres), and
# the CSV math (medians from dbsweep's results.csv). Must not start anything a script did
# not ask for or touch anything a script did not create.
# shellcheck shell=bash

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$BENCH_DIR/.." && pwd)

# --- cleanup: every script registers what it started; one EXIT trap undoes it ------------
BENCH_TMP=""
CLEANUP_CMDS=()

bench_tmpdir() {
    BENCH_TMP=$(mktemp -d "${TMPDIR:-/tmp}/dbsweep-bench.XXXXXX")
}

# on_exit CMD...: run CMD (a string, evaluated) at exit, last registered first.
on_exit() {
    CLEANUP_CMDS+=("$*")
}

bench_cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    local i
    for ((i = ${#CLEANUP_CMDS[@]} - 1; i >= 0; i--)); do
        eval "${CLEANUP_CMDS[$i]}" >/dev/null 2>&1 || true
    done
    if [[ -n "$BENCH_TMP" && -d "$BENCH_TMP" ]]; then
        if [[ "${KEEP:-0}" == 1 ]]; then
            echo "# KEEP=1: kept $BENCH_TMP (logs, dbsweep results)" >&2
        else
            rm -rf -- "$BENCH_TMP"
        fi
    fi
    exit "$rc"
}
trap bench_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# stop_pid PID: TERM, wait up to 10 s, then KILL. Only for pids this script started.
stop_pid() {
    local pid=$1 i
    kill -TERM "$pid" 2>/dev/null || return 0
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null || true
}

die() {
    echo "error: $*" >&2
    exit 2
}

need() {
    local c
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || die "'$c' not found on PATH (install it, see bench/README.md)"
    done
}

# --- dbsweep --------------------------------------------------------------------------
# DBSWEEP (env) wins; else `cargo build --release` (BUILD=0 skips it) and the binary in
# CARGO_TARGET_DIR or the repo's target/.
find_dbsweep() {
    if [[ -n "${DBSWEEP:-}" ]]; then
        [[ -x "$DBSWEEP" ]] || die "DBSWEEP=$DBSWEEP is not executable"
        return
    fi
    local target_dir=${CARGO_TARGET_DIR:-$REPO_DIR/target}
    DBSWEEP=$target_dir/release/dbsweep
    if [[ "${BUILD:-1}" == 1 ]]; then
        echo "# cargo build --release (a no-op when up to date; BUILD=0 skips it)" >&2
        (cd "$REPO_DIR" && cargo build --release --quiet) || die "cargo build --release failed"
    fi
    [[ -x "$DBSWEEP" ]] || die "no release binary at $DBSWEEP (run cargo build --release, or set DBSWEEP=path)"
}

# --- YCSB (bench/client-overhead, bench/ycsb) -------------------------------------------
YCSB_VERSION=0.17.0
YCSB_CACHE=${YCSB_CACHE:-$HOME/.cache/dbsweep/ycsb}
YCSB_LIB=$YCSB_CACHE/$YCSB_VERSION/lib

# ycsb_fetch: YCSB core and its dependencies from Maven Central into YCSB_LIB, once.
ycsb_fetch() {
    [[ -f "$YCSB_LIB/.complete" ]] && return
    need mvn
    echo "# fetching YCSB $YCSB_VERSION core + dependencies from Maven Central into $YCSB_LIB" >&2
    local pom_dir=$BENCH_TMP/ycsb-pom
    mkdir -p "$pom_dir" "$YCSB_LIB"
    cat >"$pom_dir/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dbsweep.bench</groupId>
  <artifactId>ycsb-fetch</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>site.ycsb</groupId>
      <artifactId>core</artifactId>
      <version>$YCSB_VERSION</version>
    </dependency>
  </dependencies>
</project>
EOF
    (cd "$pom_dir" && mvn -q -B dependency:copy-dependencies -DoutputDirectory="$YCSB_LIB") >&2 ||
        die "mvn could not fetch site.ycsb:core:$YCSB_VERSION (network? ~/.m2 settings?)"
    [[ -f "$YCSB_LIB/core-$YCSB_VERSION.jar" ]] || die "core-$YCSB_VERSION.jar missing after mvn"
    touch "$YCSB_LIB/.complete"
}

# ycsb_warmed WORKLOAD_FILE THREADS OPS WARM_SECS [-p k=v ...]: one YCSB run against its
# no-op BasicDB (a new JVM) with a status line every second; prints "WARMED OVERALL" ops/s.
# WARMED counts only what ran after the first WARM_SECS seconds (the JIT has compiled the
# client loop by then): the ops done from the first status line at or after WARM_SECS to
# the last one, over the time between their timestamps. OVERALL is YCSB's own figure (the
# whole run, JIT warm-up included).
ycsb_warmed() {
    local wf=$1 t=$2 ops=$3 warm=$4 log
    shift 4
    log=$(mktemp "$BENCH_TMP/ycsb.XXXXXX")
    java -cp "$YCSB_LIB/*" site.ycsb.Client -t -db site.ycsb.BasicDB -p basicdb.verbose=false \
        -p basicdb.simulatedelay=0 -P "$wf" -p operationcount="$ops" -threads "$t" \
        -s -p status.interval=1 "$@" >"$log" 2>&1 || { cat "$log" >&2; die "YCSB failed"; }
    python3 - "$log" "$warm" <<'PY' || { tail -5 "$log" >&2; die "too few YCSB status lines after WARM_SECS=$warm s (raise YCSB_OPS) or no [OVERALL] Throughput in its output"; }
import re, sys
from datetime import datetime
path, warm = sys.argv[1], float(sys.argv[2])
status = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d):(\d{3}) (\d+) sec: (\d+) operations;")
points, overall = [], None
for line in open(path, errors="replace"):
    m = status.match(line)
    if m:
        t = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S").timestamp() + int(m[2]) / 1000
        points.append((t, int(m[3]), int(m[4])))
    elif line.startswith("[OVERALL], Throughput(ops/sec), "):
        overall = float(line.split(", ")[2])
after = [p for p in points if p[1] >= warm]
if overall is None or len(after) < 2 or after[-1][0] <= after[0][0]:
    sys.exit(1)
(t0, _, n0), (t1, _, n1) = after[0], after[-1]
print(f"{(n1 - n0) / (t1 - t0):.1f} {overall:.1f}")
PY
}

# load_avg: the 1-minute load average (runnable processes on the box, this script's too).
load_avg() { cut -d' ' -f1 /proc/loadavg; }

# load_summary L1 L2 ...: the range of the load averages taken before the runs, and now.
load_summary() {
    echo "# load average (1 min) before the runs: $(python3 -c 'import sys; v = [float(x) for x in sys.argv[1:]]; print(f"{min(v)} to {max(v)}")' "$@"); at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# --- ports and waiting ------------------------------------------------------------------
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_for SECONDS CMD...: retry CMD every 0.2 s until it succeeds or time runs out.
wait_for() {
    local secs=$1 i
    shift
    for ((i = 0; i < secs * 5; i++)); do
        if "$@" >/dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    return 1
}

# wait_quiet PID: wait until the server process PID and its descendants use at most 10 % of
# a core over 1 s (dbsweep's own rule for the servers it spawns), at most 60 s; prints
# "quiet after X s" or "still busy after 60 s". Run before each tool's turn, so that
# neither measures the server's background work after the other's load or cleanup (InnoDB
# flushing and purging a dropped table, autovacuum).
wait_quiet() {
    python3 - "$1" <<'PY'
import os, sys, time
root = int(sys.argv[1])
hz = os.sysconf("SC_CLK_TCK")
def tree(pid):
    pids = [pid]
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                for child in f.read().split():
                    pids += tree(int(child))
    except OSError:
        pass
    return pids
def ticks():
    total = 0
    for pid in tree(root):
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])  # utime stime cutime cstime
        except OSError:
            pass
    return total
start = time.monotonic()
samples = [(start, ticks())]
while True:
    time.sleep(0.25)
    now = time.monotonic()
    samples.append((now, ticks()))
    old = [s for s in samples if now - s[0] >= 1.0]
    if old:
        t0, c0 = old[-1]
        share = (samples[-1][1] - c0) / hz / (now - t0)
        if share <= 0.10:
            print(f"quiet after {now - start:.1f} s")
            break
    if now - start >= 60:
        print("still busy after 60 s")
        break
PY
}

# --- throwaway PostgreSQL (bench/postgres, bench/tpch-load) -----------------------------
# start_postgres: initdb (trust auth, user postgres) in BENCH_TMP/pg and a postgres on a
# free loopback port, stopped at exit by the pid this script started; exports PGHOST,
# PGPORT, PGUSER, PGDATABASE and sets PORT. initdb and postgres refuse to run as root: then
# they run as the postgres system user on a directory it owns. Needs PG_BIN.
start_postgres() {
    AS_PG=()
    PGD=$BENCH_TMP/pg
    mkdir -p "$PGD"
    if [[ $(id -u) == 0 ]]; then
        id postgres >/dev/null 2>&1 || die "running as root needs the 'postgres' system user (apt-get install postgresql)"
        chmod 0711 "$BENCH_TMP"
        chown postgres: "$PGD"
        AS_PG=(runuser -u postgres --)
    fi
    PORT=$(free_port)
    "${AS_PG[@]}" "$PG_BIN/initdb" -D "$PGD/data" -A trust -U postgres --no-sync -E UTF8 >"$BENCH_TMP/initdb.log" 2>&1 ||
        { cat "$BENCH_TMP/initdb.log" >&2; die "initdb failed"; }
    "${AS_PG[@]}" "$PG_BIN/postgres" -D "$PGD/data" -p "$PORT" -k "$PGD" -c listen_addresses=127.0.0.1 \
        >"$BENCH_TMP/postgres.log" 2>&1 &
    PG_LAUNCHER=$!
    on_exit stop_postgres
    export PGHOST=127.0.0.1 PGPORT=$PORT PGUSER=postgres PGDATABASE=postgres
    wait_for 30 "$PG_BIN/pg_isready" -q ||
        { cat "$BENCH_TMP/postgres.log" >&2; die "postgres did not start on port $PORT"; }
}

# start_mariadb [EXTRA_MARIADBD_ARGS...]: a throwaway MariaDB (mariadb-install-db +
# mariadbd --no-defaults, default settings plus the extra arguments) on a free loopback
# port; root without password. Sets PORT and MD (its directory); stopped on exit.
start_mariadb() {
    MD=$BENCH_TMP/mariadb
    mkdir -p "$MD"
    PORT=$(free_port)
    local user_args=()
    [[ $(id -u) == 0 ]] && user_args=(--user=root)
    mariadb-install-db --no-defaults --datadir="$MD/data" --auth-root-authentication-method=normal \
        "${user_args[@]}" >"$BENCH_TMP/install-db.log" 2>&1 ||
        { cat "$BENCH_TMP/install-db.log" >&2; die "mariadb-install-db failed"; }
    mariadbd --no-defaults --datadir="$MD/data" --socket="$MD/s" --port="$PORT" \
        --bind-address=127.0.0.1 --pid-file="$MD/pid" "${user_args[@]}" "$@" >"$BENCH_TMP/mariadbd.log" 2>&1 &
    MARIADB_PID=$!
    on_exit "stop_pid $MARIADB_PID"
    wait_for 30 mariadb-admin --no-defaults --socket="$MD/s" -uroot ping ||
        { cat "$BENCH_TMP/mariadbd.log" >&2; die "mariadbd did not start on port $PORT"; }
}

# start_redis: a throwaway redis-server (no persistence) on a free loopback port. Sets PORT;
# stopped on exit.
start_redis() {
    PORT=$(free_port)
    mkdir -p "$BENCH_TMP/redis"
    redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no \
        --dir "$BENCH_TMP/redis" --daemonize no >"$BENCH_TMP/redis/server.log" 2>&1 &
    REDIS_PID=$!
    on_exit "stop_pid $REDIS_PID"
    wait_for 10 sh -c "redis-cli -h 127.0.0.1 -p $PORT ping | grep -q PONG" ||
        { cat "$BENCH_TMP/redis/server.log" >&2; die "redis-server did not start on port $PORT"; }
}

stop_postgres() {
    # The postmaster's pid (the launcher may be runuser); SIGINT = fast shutdown.
    local pm
    pm=$(head -1 "$PGD/data/postmaster.pid" 2>/dev/null || true)
    if [[ -n "$pm" ]]; then
        kill -INT "$pm" 2>/dev/null || true
    fi
    stop_pid "$PG_LAUNCHER"
    if [[ -n "$pm" ]] && kill -0 "$pm" 2>/dev/null; then stop_pid "$pm"; fi
}

# --- CSV math ---------------------------------------------------------------------------
# dbsweep_stat COLUMN CSVS TARGET EXPERIMENT CLIENTS BATCHED [BATCH]: the median of COLUMN
# over the measured runs of one point in dbsweep's results.csv (CSVS: one or more files,
# space-separated). COLUMN cpu_ms_per_kop is each run's client CPU per 1,000 ops
# (client_cpu_pct x 10,000 / ops_per_sec). Fails, printing nothing, when the point is
# missing; warns on errors.
dbsweep_stat() {
    python3 - "$@" <<'PY'
import csv, statistics, sys
col, files, target, exp, clients, batched = sys.argv[1], sys.argv[2].split(), *sys.argv[3:7]
batch = sys.argv[7] if len(sys.argv) > 7 else None
vals, errs = [], 0
for f in files:
    with open(f, newline="") as fh:
        for r in csv.DictReader(fh):
            if (r["target"], r["experiment"], r["clients"], r["batched"]) != (target, exp, clients, batched):
                continue
            if batch is not None and r["batch"] != batch:
                continue
            if col == "cpu_ms_per_kop":
                if not r["client_cpu_pct"] or not float(r["ops_per_sec"] or 0) > 0:
                    continue
                value = float(r["client_cpu_pct"]) * 10000 / float(r["ops_per_sec"])
            elif not r[col]:
                continue
            else:
                value = float(r[col])
            errs += int(r["errors"] or 0)
            vals.append(value)
if not vals:
    sys.exit(1)
if errs and col == "ops_per_sec":
    print(f"warning: {errs} errors in {target}/{exp} clients={clients} batched={batched}", file=sys.stderr)
print(f"{statistics.median(vals):.2f}" if col == "cpu_ms_per_kop" else f"{statistics.median(vals):.1f}")
PY
}

# dbsweep_cpu_per_kop CSVS TARGET EXPERIMENT CLIENTS BATCHED [BATCH]: the median over runs of
# each run's client CPU per 1,000 ops (a run's own CPU over its own ops, so runs of
# different speeds do not mix).
dbsweep_cpu_per_kop() { dbsweep_stat cpu_ms_per_kop "$@"; }

# dbsweep_median CSVS TARGET EXPERIMENT CLIENTS BATCHED [BATCH]: median ops_per_sec.
dbsweep_median() { dbsweep_stat ops_per_sec "$@"; }

# dbsweep_cpu CSVS TARGET EXPERIMENT CLIENTS BATCHED [BATCH]: median client CPU, percent of
# one core (dbsweep's own process: user + system time over wall time).
dbsweep_cpu() { dbsweep_stat client_cpu_pct "$@"; }

# median V1 V2 ...
median() {
    python3 -c 'import statistics,sys; print(f"{statistics.median(float(v) for v in sys.argv[1:]):.1f}")' "$@"
}

# median_2 V1 V2 ...: the median with two decimals (CPU milliseconds per 1,000 ops).
median_2() {
    python3 -c 'import statistics,sys; print(f"{statistics.median(float(v) for v in sys.argv[1:]):.2f}")' "$@"
}

# quotient SCALE FORMAT A B: SCALE * A / B in Python's FORMAT (e.g. "{:.2f}x"), or "n/a"
# when A or B is not a number or B is not positive.
quotient() {
    python3 -c '
import sys
try:
    scale, fmt, a, b = float(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    print(fmt.format(scale * a / b) if b > 0 else "n/a")
except ValueError:
    print("n/a")' "$@"
}

# paired_ratio R1 R2 ...: the median of per-round ratios as "1.23x", then each round's
# (rounds whose ratio is "n/a" left out). With the tools alternating, a round's ratio
# compares the two tools in the same few minutes, so a box that drifts between rounds moves
# both sides of it; medians pooled over all rounds do not have that property.
paired_ratio() {
    python3 -c '
import statistics, sys
v = [float(x) for x in sys.argv[1:] if x != "n/a"]
head = f"{statistics.median(v):.2f}x" if v else "n/a"
print(head + " (rounds: " + " ".join(f"{x:.2f}x" for x in v) + ")")' "$@"
}

# ratio A B: A/B as "1.23x", or "n/a".
ratio() { quotient 1 "{:.2f}x" "$1" "$2"; }

# cpu_per_kop CPU_PCT OPS_PER_SEC: CPU milliseconds per 1,000 ops of a client that used
# CPU_PCT percent of one core at OPS_PER_SEC, or "n/a".
cpu_per_kop() { quotient 10000 "{:.2f}" "$1" "$2"; }

machine_line() {
    local cpu
    cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')
    echo "# machine: $(uname -sr), ${cpu:-unknown cpu}, $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo)"
    echo "# load average now: $(cut -d' ' -f1-3 /proc/loadavg) (other processes on this box add noise)"
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
}

# write_get_study FILE: a one-experiment study (primary-key get, clients sweep only, so no
# batch points run), same kv data as the embedded study. Targets, clients, rows, ops and
# runs come from the command line.
write_get_study() {
    cat >"$1" <<'TOML'
name = "bench-get"
description = "bench/: primary-key get on the kv table, clients sweep only"
seed = 42

[data]
kind = "kv"
rows = 100000
payload_bytes = 100

[[experiments]]
name = "get"
op = "get"
sweep = ["clients"]
TOML
}

# cpu_of LOG CMD...: run CMD (stdout and stderr to LOG) and print its CPU use in percent
# of one core: 100 * (user + system) / wall time, of CMD and its children. Fails when CMD
# fails.
cpu_of() {
    local log=$1 t
    shift
    local TIMEFORMAT='%U %S %R'
    t=$( { time "$@" >"$log" 2>&1; } 2>&1) || return 1
    python3 -c 'import sys; u, s, r = map(float, sys.argv[1:4]); print(f"{100 * (u + s) / r:.0f}" if r > 0 else "n/a")' $t
}
