//! Apache Cassandra 5.0 as a throwaway single-node server (and, with the node layout
//! `Node`, each node of `cassandra_cluster`'s two-node ring):
//!
//! `java <heap, GC and JDK 17 module flags> -Dcassandra.config=file:///DIR/cassandra.yaml
//! -Dcassandra-foreground=yes -Dcassandra.native_transport_port=PORT
//! -Dcassandra.storage_port=PORT2 -cp 'LIB/*' org.apache.cassandra.service.CassandraDaemon`
//!
//! with the data directory as working directory. The jars (`cassandra-all` 5.0.x and its
//! runtime dependencies from Maven Central) come from `$DBSWEEP_CASSANDRA_LIB`, else
//! `${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/cassandra/lib`, where
//! `scripts/setup-servers` puts them. `init` writes a small `cassandra.yaml` (every
//! directory inside the data directory, loopback addresses, SimpleSnitch, AllowAll
//! authentication, one token) and a `logback.xml` (INFO to stdout, i.e. the server log).
//! The ports are passed per attempt as system properties, so a retry on another port needs
//! no new yaml; the internode (storage) port is a fresh free port on every attempt.
//!
//! Startup is shortened for a single node (no gossip settle wait, no ring delay); JMX is
//! off (no JMX port is opened). Durability stays at Cassandra's defaults (periodic commit
//! log sync every 10 s); the heap is fixed; both are recorded in the settings.
//!
//! Readiness: our own log must say the CQL listener is on our port and startup is
//! complete, then a CQL session reads `release_version` from `system.local`, and the
//! server's `commitlog_directory` (from `system_views.settings`) must be inside our data
//! directory, so a foreign server that holds the port is never mistaken for ours. Must not
//! send anything that changes data.

use super::process::program_version;
use super::{Context, Installed, LOG_FILE, Ready, System};
use crate::base::durability::{Durability, SETTING};
use crate::error::{Error, Result};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio::process::Command;

/// Cassandra's part of the spawn machinery.
pub(super) struct Cassandra;

#[async_trait::async_trait]
impl System for Cassandra {
    fn name(&self) -> &'static str {
        "cassandra"
    }
    /// Where the server's files come from.
    fn package(&self) -> &'static str {
        "cassandra (Maven Central)"
    }
    fn programs(&self) -> &'static [&'static str] {
        &["java"]
    }
    async fn installed(&self, programs: Vec<PathBuf>) -> Result<Installed> {
        installed(programs).await
    }
    async fn init(&self, ctx: Context) -> Result<Context> {
        init(ctx, &Node::single())
    }
    fn command(&self, ctx: &Context, port: u16) -> Command {
        // The internode port must be free too; a clash there is reported like a CQL port
        // clash and the retry picks a new one.
        command(ctx, port, storage_port(ctx, port), &Node::single())
    }
    async fn probe(&self, ctx: &Context, port: u16, _pid: u32) -> io::Result<Ready> {
        probe(ctx, port, &Node::single()).await
    }
    /// A JVM that needs ~10 s alone and much longer on a loaded 2-core machine.
    fn startup_timeout(&self) -> Duration {
        Duration::from_secs(180)
    }
    /// The internode (storage) port's wording.
    fn port_taken_words(&self) -> &'static [&'static str] {
        &["is in use by another process"]
    }
    fn url(&self, port: u16, _data_dir: &Path) -> String {
        format!("cassandra://127.0.0.1:{port}")
    }
}

/// Where one node listens, how it joins its ring, and its fixed JVM heap (-Xms = -Xmx,
/// recorded in the settings).
pub(super) struct Node {
    /// Its listen, broadcast and CQL address.
    pub address: String,
    /// The address of the ring's seed (the first node's).
    pub seed: String,
    /// Its one token.
    pub token: i64,
    /// How many nodes the ring has (1: nothing to wait for at startup).
    pub nodes: usize,
    pub heap: &'static str,
}

impl Node {
    /// The single node of `--spawn cassandra`.
    fn single() -> Node {
        Node { address: "127.0.0.1".into(), seed: "127.0.0.1".into(), token: 0, nodes: 1, heap: "2g" }
    }
}
/// The cluster name in the yaml (also stored in the node's system keyspace).
const CLUSTER_NAME: &str = "dbsweep";
const YAML_FILE: &str = "cassandra.yaml";
const LOGBACK_FILE: &str = "logback.xml";
/// The daemon's main class.
const MAIN_CLASS: &str = "org.apache.cassandra.service.CassandraDaemon";

/// GC settings and the module flags of Cassandra 5.0's own `conf/jvm17-server.options`.
const JVM17_OPTIONS: &[&str] = &[
    "-XX:+UseG1GC",
    "-XX:+ParallelRefProcEnabled",
    "-XX:MaxTenuringThreshold=1",
    "-XX:G1HeapRegionSize=16m",
    "-XX:G1RSetUpdatingPauseTimePercent=5",
    "-XX:MaxGCPauseMillis=300",
    "-XX:InitiatingHeapOccupancyPercent=70",
    "-Djdk.attach.allowAttachSelf=true",
    "--add-exports",
    "java.base/jdk.internal.misc=ALL-UNNAMED",
    "--add-exports",
    "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.registry=ALL-UNNAMED",
    "--add-exports",
    "java.rmi/sun.rmi.server=ALL-UNNAMED",
    "--add-exports",
    "java.sql/java.sql=ALL-UNNAMED",
    "--add-exports",
    "java.base/java.lang.ref=ALL-UNNAMED",
    "--add-exports",
    "jdk.unsupported/sun.misc=ALL-UNNAMED",
    "--add-exports",
    "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
    "--add-exports",
    "jdk.attach/sun.tools.attach=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.loader=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.ref=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.reflect=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.math=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.module=ALL-UNNAMED",
    "--add-opens",
    "java.base/jdk.internal.util.jar=ALL-UNNAMED",
    "--add-opens",
    "jdk.management/com.sun.management.internal=ALL-UNNAMED",
    "--add-opens",
    "java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.io=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang.reflect=ALL-UNNAMED",
    "--add-opens",
    "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.lang=ALL-UNNAMED",
    "--add-opens",
    "java.base/java.util=ALL-UNNAMED",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dio.netty.allocator.useCacheForAllThreads=true",
    "-Dio.netty.allocator.maxOrder=11",
];

/// Server settings read back over CQL (`system_views.settings`) into `Ready.settings`.
const RECORDED_SETTINGS: &[&str] = &[
    "commitlog_sync",
    "commitlog_sync_period",
    "concurrent_reads",
    "concurrent_writes",
    "memtable_allocation_type",
    "memtable_heap_space",
    "memtable_offheap_space",
    "key_cache_size",
    "row_cache_size",
    "num_tokens",
];

/// The directory holding `cassandra-all-*.jar` and its dependencies, if installed.
fn lib_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("DBSWEEP_CASSANDRA_LIB") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => {
            let root = match std::env::var_os("DBSWEEP_NATIVE_DIR") {
                Some(dir) if !dir.is_empty() => PathBuf::from(dir),
                _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache/dbsweep/native"),
            };
            root.join("cassandra/lib")
        }
    };
    server_jar(&dir).map(|_| dir)
}

/// The `cassandra-all-VERSION.jar` inside `dir`.
fn server_jar(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .find(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("cassandra-all-") && n.ends_with(".jar")))
}

fn missing_jars() -> Error {
    Error::Missing(
        "Cassandra's jars (cassandra-all-*.jar) not found: install them with scripts/setup-servers (Maven Central, into \
         ${DBSWEEP_NATIVE_DIR:-~/.cache/dbsweep/native}/cassandra/lib), or set DBSWEEP_CASSANDRA_LIB to their directory"
            .into(),
    )
}

/// The server jar's version (`cassandra-all-5.0.6.jar`: Cassandra does not start in
/// seconds) and the version of the `java` that would run it (Cassandra 5.0 needs 11 or 17).
pub(super) async fn installed(mut programs: Vec<PathBuf>) -> Result<Installed> {
    let jar = lib_dir().and_then(|dir| server_jar(&dir)).ok_or_else(missing_jars)?;
    let name = jar.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let release = name.trim_start_matches("cassandra-all-").trim_end_matches(".jar").to_string();
    let java = program_version(&programs[0], &["-version"], java_version).await?;
    programs.push(jar);
    Ok(Installed { version: format!("{release} (Java {java})"), files: programs })
}

/// The quoted version of `java -version`'s first line: `openjdk version "17.0.15" 2025-04-15`.
fn java_version(text: &str) -> Option<String> {
    let line = text.lines().find(|line| line.contains(" version \""))?;
    Some(line.split('"').nth(1)?.to_string())
}

/// Checks the jars are there and writes the yaml and the logging configuration.
pub(super) fn init(ctx: Context, node: &Node) -> Result<Context> {
    if lib_dir().is_none() {
        return Err(missing_jars());
    }
    let write = |name: &str, text: String| {
        let path = ctx.dir.join(name);
        std::fs::write(&path, text).map_err(|e| Error::runtime(format!("cassandra: cannot write {}: {e}", path.display())))
    };
    write(YAML_FILE, yaml(&ctx.dir, node, ctx.durability))?;
    write(LOGBACK_FILE, LOGBACK.to_string())?;
    Ok(ctx)
}

/// The commit log's sync mode for a durability: Cassandra's default (periodic, every
/// 10 s) unless `commit` asks for `batch` (an fsync before each write is acknowledged).
/// Cassandra has no "never" (its keyspaces' `durable_writes = false` is not used).
fn commitlog_sync(durability: Option<Durability>) -> &'static str {
    match durability {
        Some(Durability::Commit) => "commitlog_sync: batch",
        _ => "commitlog_sync: periodic\ncommitlog_sync_period: 10000ms",
    }
}

/// The node's `durability` setting, from the commit log's sync mode read back.
fn durability_of(commitlog_sync: Option<&str>, period: Option<&str>) -> Option<String> {
    match commitlog_sync? {
        "batch" | "group" => Some(Durability::Commit.describe("commit log fsynced before a write is acknowledged (commitlog_sync: batch)")),
        "periodic" => {
            Some(Durability::Periodic.describe(&format!("commit log fsynced every {} (commitlog_sync: periodic)", period.unwrap_or("10s"))))
        }
        _ => None,
    }
}

/// The node's configuration: everything inside `dir`, on its loopback address, a single
/// token, joining without streaming (`auto_bootstrap: false`: every node starts empty).
/// The CQL and storage ports are not here: `command` passes them per attempt.
fn yaml(dir: &Path, node: &Node, durability: Option<Durability>) -> String {
    let commitlog = commitlog_sync(durability);
    let d = dir.display();
    let Node { address, seed, token, .. } = node;
    format!(
        "# Written by dbsweep for a throwaway node; the ports come from\n\
         # -Dcassandra.native_transport_port and -Dcassandra.storage_port on the command line.\n\
         cluster_name: '{CLUSTER_NAME}'\n\
         num_tokens: 1\n\
         initial_token: {token}\n\
         auto_bootstrap: false\n\
         partitioner: org.apache.cassandra.dht.Murmur3Partitioner\n\
         data_file_directories:\n  - {d}/data\n\
         commitlog_directory: {d}/commitlog\n\
         saved_caches_directory: {d}/saved_caches\n\
         hints_directory: {d}/hints\n\
         cdc_raw_directory: {d}/cdc_raw\n\
         auto_snapshot: false\n\
         {commitlog}\n\
         seed_provider:\n  - class_name: org.apache.cassandra.locator.SimpleSeedProvider\n    parameters:\n      - seeds: \"{seed}\"\n\
         listen_address: {address}\n\
         rpc_address: {address}\n\
         start_native_transport: true\n\
         endpoint_snitch: SimpleSnitch\n\
         authenticator: AllowAllAuthenticator\n\
         authorizer: AllowAllAuthorizer\n"
    )
}

/// INFO and above to stdout (the server log); logback's default would be DEBUG.
const LOGBACK: &str = r#"<configuration>
  <appender name="STDOUT" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%-5level [%thread] %date{ISO8601} %F:%L - %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="STDOUT"/></root>
</configuration>
"#;

/// The JVM's arguments, without the program.
fn jvm_args(dir: &Path, lib: &Path, port: u16, storage_port: u16, node: &Node) -> Vec<String> {
    let heap = node.heap;
    let mut args = vec![format!("-Xms{heap}"), format!("-Xmx{heap}"), "-XX:+ExitOnOutOfMemoryError".into()];
    args.extend(JVM17_OPTIONS.iter().map(|s| s.to_string()));
    args.extend([
        format!("-Dcassandra.config=file://{}", dir.join(YAML_FILE).display()),
        "-Dcassandra-foreground=yes".into(),
        format!("-Dcassandra.storagedir={}", dir.display()),
        format!("-Dlogback.configurationFile=file://{}", dir.join(LOGBACK_FILE).display()),
        format!("-Dcassandra.native_transport_port={port}"),
        format!("-Dcassandra.storage_port={storage_port}"),
        // Nothing to wait for: a single node, or a node that joins with its token and no
        // data (`form` waits until the nodes see each other). The ring delay also bounds
        // how long a joining node waits for the seed's first gossip reply.
        "-Dcassandra.skip_wait_for_gossip_to_settle=0".into(),
        format!("-Dcassandra.ring_delay_ms={}", if node.nodes == 1 { 0 } else { 30_000 }),
        "-cp".into(),
        format!("{}/*", lib.display()),
        MAIN_CLASS.into(),
    ]);
    args
}

/// Tests: a storage port to hand to the next start under the given data root.
#[cfg(test)]
static TAKEN_STORAGE_PORT: std::sync::Mutex<Option<(PathBuf, u16)>> = std::sync::Mutex::new(None);

/// The internode (storage) port of one start: a port that was free a moment ago.
fn storage_port(ctx: &Context, port: u16) -> u16 {
    #[cfg(test)]
    {
        let mut taken = TAKEN_STORAGE_PORT.lock().unwrap();
        if taken.as_ref().is_some_and(|(root, _)| ctx.dir.starts_with(root)) {
            return taken.take().expect("checked").1;
        }
    }
    let _ = ctx;
    super::process::free_port().unwrap_or_else(|_| port.wrapping_add(1))
}

pub(super) fn command(ctx: &Context, port: u16, storage_port: u16, node: &Node) -> Command {
    let lib = lib_dir().unwrap_or_default();
    let mut command = Command::new(ctx.program(0));
    command.args(jvm_args(&ctx.dir, &lib, port, storage_port, node));
    command
}

pub(super) async fn probe(ctx: &Context, port: u16, node: &Node) -> io::Result<Ready> {
    let log = std::fs::read_to_string(ctx.dir.join(LOG_FILE)).unwrap_or_default();
    let address = &node.address;
    // Cassandra logs the listener before it binds: only "Startup complete" after it means
    // the bind succeeded (a failed bind ends the startup with an exception instead).
    if !log.contains(&format!("Starting listening for CQL clients on /{address}:{port} ")) || !log.contains("Startup complete") {
        return Err(io::Error::other("Cassandra has not finished starting yet"));
    }
    let session = scylla::client::session_builder::SessionBuilder::new()
        .known_node(format!("{address}:{port}"))
        .connection_timeout(Duration::from_secs(2))
        .fetch_schema_metadata(false)
        .fetch_full_schema_metadata(false)
        .build()
        .await
        .map_err(|e| io::Error::other(format!("CQL session: {e}")))?;
    let query = |cql: &'static str| {
        let session = &session;
        async move {
            session
                .query_unpaged(cql, ())
                .await
                .map_err(|e| io::Error::other(format!("{cql}: {e}")))?
                .into_rows_result()
                .map_err(|e| io::Error::other(format!("{cql}: {e}")))
        }
    };
    let local = query("SELECT release_version FROM system.local").await?;
    let (version,): (String,) = local.single_row().map_err(|e| io::Error::other(format!("system.local: {e}")))?;
    let rows = query("SELECT name, value FROM system_views.settings").await?;
    let server: BTreeMap<String, Option<String>> = rows
        .rows::<(String, Option<String>)>()
        .map_err(|e| io::Error::other(format!("system_views.settings: {e}")))?
        .filter_map(|r| r.ok())
        .collect();
    let ours = ctx.dir.join("commitlog").display().to_string();
    if server.get("commitlog_directory").cloned().flatten().as_deref() != Some(ours.as_str()) {
        return Err(io::Error::other(format!("the server on port {port} is not our Cassandra (its commit log is elsewhere)")));
    }
    let mut settings = BTreeMap::new();
    let heap = node.heap;
    let per_node = if node.nodes == 1 { "" } else { " per node" };
    settings.insert("heap".into(), format!("-Xms{heap} -Xmx{heap}{per_node} (G1, Cassandra's jvm17-server.options)"));
    settings.insert("jmx".into(), "off (no JMX port)".into());
    let cluster = match node.nodes {
        1 => "single node".to_string(),
        n => format!("{n} nodes on their own loopback addresses (seed {}), no bootstrap streaming", node.seed),
    };
    settings.insert("cluster".into(), format!("{cluster}, SimpleSnitch, 1 token per node, Murmur3Partitioner"));
    for name in RECORDED_SETTINGS {
        if let Some(value) = server.get(*name) {
            settings.insert((*name).to_string(), value.clone().unwrap_or_else(|| "null (Cassandra's default)".into()));
        }
    }
    let read = |name: &str| server.get(name).cloned().flatten();
    if let Some(durability) = durability_of(read("commitlog_sync").as_deref(), read("commitlog_sync_period").as_deref()) {
        settings.insert(SETTING.into(), durability);
    }
    Ok(Ready { version, settings })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_java_version_is_the_quoted_one() {
        let text = "openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)\n";
        assert_eq!(java_version(text).as_deref(), Some("17.0.15"));
        assert_eq!(java_version("java: command not found"), None);
    }

    #[test]
    fn yaml_keeps_everything_inside_the_data_directory() {
        let text = yaml(Path::new("/tmp/dbsweep-cassandra-x"), &Node::single(), None);
        for line in [
            "cluster_name: 'dbsweep'",
            "num_tokens: 1",
            "partitioner: org.apache.cassandra.dht.Murmur3Partitioner",
            "data_file_directories:\n  - /tmp/dbsweep-cassandra-x/data",
            "commitlog_directory: /tmp/dbsweep-cassandra-x/commitlog",
            "saved_caches_directory: /tmp/dbsweep-cassandra-x/saved_caches",
            "hints_directory: /tmp/dbsweep-cassandra-x/hints",
            "cdc_raw_directory: /tmp/dbsweep-cassandra-x/cdc_raw",
            "- seeds: \"127.0.0.1\"",
            "listen_address: 127.0.0.1",
            "rpc_address: 127.0.0.1",
            "endpoint_snitch: SimpleSnitch",
            "authenticator: AllowAllAuthenticator",
            "commitlog_sync: periodic",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        // Every absolute path in it is inside the data directory.
        for word in text.split_whitespace().filter(|w| w.starts_with('/')) {
            assert!(word.starts_with("/tmp/dbsweep-cassandra-x/"), "{word}");
        }
        // Ports come from the command line only.
        assert!(!text.contains("native_transport_port:") && !text.contains("storage_port:"));
    }

    #[test]
    fn the_command_line_carries_ports_heap_config_and_classpath() {
        let args = jvm_args(Path::new("/d"), Path::new("/lib"), 9100, 9200, &Node::single());
        let has = |a: &str| args.iter().any(|x| x == a);
        assert!(has("-Xms2g") && has("-Xmx2g"));
        assert!(has("-Dcassandra.config=file:///d/cassandra.yaml"));
        assert!(has("-Dcassandra-foreground=yes"));
        assert!(has("-Dcassandra.native_transport_port=9100"));
        assert!(has("-Dcassandra.storage_port=9200"));
        assert!(has("-Dlogback.configurationFile=file:///d/logback.xml"));
        assert!(has("java.base/sun.nio.ch=ALL-UNNAMED"));
        // Each --add-* flag is followed by its value.
        for (i, a) in args.iter().enumerate() {
            if a.starts_with("--add-") {
                assert!(args[i + 1].contains("=ALL-UNNAMED"), "{a} {}", args[i + 1]);
            }
        }
        let n = args.len();
        assert_eq!(&args[n - 3..], ["-cp", "/lib/*", MAIN_CLASS]);
    }

    /// Cassandra started with a storage (internode) port someone else holds fails, is
    /// recognised as a port conflict, and is restarted with new ports.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_taken_storage_port_is_retried_with_new_ports() {
        let root = tempfile::tempdir().unwrap();
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        *TAKEN_STORAGE_PORT.lock().unwrap() = Some((root.path().to_path_buf(), holder.local_addr().unwrap().port()));
        let mut starts = 0;
        let mut next_port = || {
            starts += 1;
            super::super::process::free_port()
        };
        let opts = super::super::SpawnOptions { data_root: Some(root.path().to_path_buf()), ..Default::default() };
        let server = super::super::spawn::spawn_inner(super::super::ServerKind::Cassandra, &opts, None, &mut next_port).await.unwrap();
        assert_eq!(starts, 2, "exactly one retry");
        assert!(TAKEN_STORAGE_PORT.lock().unwrap().is_none(), "the taken port was used");
        assert!(server.version().starts_with("5.0"), "{}", server.version());
        assert!(server.settings()["heap"].starts_with("-Xms2g -Xmx2g"));
        assert_eq!(server.settings()["commitlog_sync"], "periodic");
        drop(holder);
        server.stop().await.unwrap();
    }

    #[test]
    fn the_server_jar_is_found_by_its_name() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(server_jar(dir.path()), None);
        std::fs::write(dir.path().join("guava-32.jar"), "").unwrap();
        assert_eq!(server_jar(dir.path()), None);
        std::fs::write(dir.path().join("cassandra-all-5.0.6.jar"), "").unwrap();
        assert_eq!(server_jar(dir.path()), Some(dir.path().join("cassandra-all-5.0.6.jar")));
    }

    #[test]
    fn commit_durability_syncs_the_commit_log_in_batch_mode() {
        let text = yaml(Path::new("/tmp/dbsweep-cassandra-x"), &Node::single(), Some(Durability::Commit));
        assert!(text.contains("\ncommitlog_sync: batch\n") && !text.contains("commitlog_sync_period"), "{text}");
        assert!(durability_of(Some("batch"), None).unwrap().starts_with("commit: "));
        assert_eq!(
            durability_of(Some("periodic"), Some("10000ms")).unwrap(),
            "periodic: commit log fsynced every 10000ms (commitlog_sync: periodic)"
        );
        assert_eq!(durability_of(None, None), None);
    }
}
