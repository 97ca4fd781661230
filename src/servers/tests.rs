//! The spawn machinery's unit tests: names, port conflicts, limits, failures cleaned up.

use super::spawn::{spawn_all_inner, spawn_inner};
use super::system::{port_in_use, raised_connection_limit};
use super::*;

#[test]
fn a_limit_is_raised_only_above_the_default() {
    assert_eq!(raised_connection_limit(None, 100), None, "no plan: the default");
    assert_eq!(raised_connection_limit(Some(90), 100), None, "90 clients and 10 spare fit in 100");
    assert_eq!(raised_connection_limit(Some(91), 100), Some(101));
    assert_eq!(raised_connection_limit(Some(500), 151), Some(510));
}

#[test]
fn kinds_parse_from_their_names_and_aliases() {
    for (text, kind) in [
        ("postgres", ServerKind::Postgres),
        ("pg", ServerKind::Postgres),
        ("PostgreSQL", ServerKind::Postgres),
        ("mariadb", ServerKind::Mariadb),
        ("mysql", ServerKind::Mariadb),
        ("redis", ServerKind::Redis),
        (" memcached ", ServerKind::Memcached),
        ("hyper", ServerKind::Hyper),
    ] {
        assert_eq!(text.parse::<ServerKind>().unwrap(), kind, "{text}");
    }
    for kind in ServerKind::ALL {
        assert_eq!(kind.to_string().parse::<ServerKind>().unwrap(), kind);
    }
    let err = "mongodb".parse::<ServerKind>().unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(err.to_string().contains("postgres, mariadb, redis, memcached"), "{err}");
}

#[test]
fn missing_program_names_the_package_and_the_script() {
    let err = ServerKind::Mariadb.system().missing("mariadbd");
    assert_eq!(err.exit_code(), 2);
    assert_eq!(err.to_string(), "mariadbd not found: install it with scripts/setup-servers (apt-get install mariadb-server)");
}

#[test]
fn port_conflicts_are_recognised_in_each_systems_log() {
    let taken = |kind: ServerKind, log: &str| port_in_use(kind.system(), log);
    assert!(taken(ServerKind::Postgres, "LOG:  could not bind IPv4 address \"127.0.0.1\": Address already in use"));
    assert!(taken(ServerKind::Mariadb, "[ERROR] Can't start server: Bind on TCP/IP port. Got error: 98: Address already in use"));
    assert!(taken(ServerKind::Memcached, "failed to listen on TCP port 11211: Address already in use"));
    assert!(taken(ServerKind::Hyper, "unable to listen to any of the given host name and port combinations for TCP"));
    assert!(taken(
        ServerKind::H2,
        "org.h2.jdbc.JdbcSQLNonTransientConnectionException: Exception opening port \"46167\" (port may be in use)"
    ));
    // Cassandra: the CQL port (netty) and the storage port.
    assert!(taken(ServerKind::Cassandra, "io.netty.channel.unix.Errors$NativeIoException: bind(..) failed: Address already in use"));
    assert!(taken(
        ServerKind::Cassandra,
        "ConfigurationException: /127.0.0.1:17000 is in use by another process.  Change listen_address:storage_port in cassandra.yaml"
    ));
    assert!(!taken(ServerKind::Postgres, "FATAL: data directory has wrong ownership"));
    // One system's wording is not another's.
    assert!(!taken(ServerKind::Redis, "(port may be in use)"));
}

#[test]
fn each_kind_names_its_targets() {
    assert_eq!(ServerKind::Postgres.target_names(), ["pg-row", "pg-hstore", "pg-jsonb"]);
    assert_eq!(ServerKind::Redis.target_names(), ["redis"]);
    assert_eq!(ServerKind::Hyper.target_names(), ["hyper"]);
}

/// The version `dbsweep targets` reads from the installed programs is the one the
/// started server reports; with nothing in the search path, the program is named with
/// what to install.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn installed_versions_are_what_the_started_servers_report() {
    let empty = tempfile::tempdir().unwrap();
    let nowhere = [empty.path().to_path_buf()];
    for (kind, program, package) in [
        (ServerKind::Redis, "redis-server", "redis-server"),
        (ServerKind::Memcached, "memcached", "memcached"),
        (ServerKind::Postgres, "initdb", "postgresql"),
        (ServerKind::Mariadb, "mariadb-install-db", "mariadb-server"),
    ] {
        let err = installed_in(kind, Some(&nowhere)).await.unwrap_err();
        assert_eq!(err.exit_code(), 2, "{kind}");
        assert_eq!(err.to_string(), format!("{program} not found: install it with scripts/setup-servers (apt-get install {package})"));
    }
    let kinds = [ServerKind::Redis, ServerKind::Memcached, ServerKind::Postgres];
    let servers = spawn_all(&kinds, &SpawnOptions::default()).await.unwrap();
    for server in servers {
        let found = installed(server.kind()).await.unwrap();
        assert_eq!(found.version, server.version(), "{}", server.kind());
        assert!(found.files.iter().all(|f| process::is_executable(f)), "{found:?}");
        server.stop().await.unwrap();
    }
}

#[test]
fn missing_hyperd_names_the_setup_script() {
    let err = ServerKind::Hyper.system().missing("hyperd");
    assert_eq!(err.exit_code(), 2);
    let text = err.to_string();
    assert!(text.starts_with("hyperd not found: install it with scripts/setup-servers"), "{text}");
    assert!(text.contains("DBSWEEP_HYPERD"), "{text}");
}

/// Every system, started on a port someone else holds, fails to bind, is recognised as
/// a port conflict from its real log text, and is restarted on the next port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_taken_port_is_retried_on_another_for_every_kind() {
    // The Cassandra ring's first node starts like Cassandra; two more JVMs of 0.75 GB
    // are tests/e2e/cassandra_cluster.rs's (opt-in).
    let kinds = ServerKind::ALL.into_iter().filter(|k| *k != ServerKind::CassandraCluster);
    let starts = kinds.map(|kind| async move {
        let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken = holder.local_addr().unwrap().port();
        let mut ports = vec![taken];
        let mut next_port = || {
            let port = if ports.len() == 1 { taken } else { process::free_port()? };
            ports.push(port);
            Ok(port)
        };
        let server = spawn_inner(kind, &SpawnOptions::default(), None, &mut next_port).await;
        let server = server.unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_ne!(server.port(), taken, "{kind}");
        assert_eq!(ports.len(), 3, "{kind}: exactly one retry");
        drop(holder);
        server.stop().await.unwrap();
    });
    futures_util::future::join_all(starts).await;
}

/// A setup program that fails: its own output is quoted in the error, and the
/// servers `spawn_all` had already started are killed and their directories removed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_quotes_the_log_and_spawn_all_leaves_nothing_behind() {
    use std::os::unix::fs::PermissionsExt;
    let fake = tempfile::tempdir().unwrap();
    std::fs::set_permissions(fake.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    // Fails after the real Redis is up, so spawn_all must clean that one up.
    let script = "#!/bin/sh\nsleep 1.5\necho 'initdb: simulated disk full' >&2\nexit 1\n";
    for name in ["initdb", "postgres"] {
        let path = fake.path().join(name);
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let root = tempfile::tempdir().unwrap();
    std::fs::set_permissions(root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let opts = SpawnOptions { data_root: Some(root.path().to_path_buf()), ..SpawnOptions::default() };
    let mut search = vec![fake.path().to_path_buf()];
    search.extend(process::default_search_path(ServerKind::Redis.system()));
    let err = spawn_all_inner(&[ServerKind::Redis, ServerKind::Postgres], &opts, Some(search), std::future::pending()).await.unwrap_err();
    assert_eq!(err.exit_code(), 1);
    let message = err.to_string();
    assert!(message.contains("initdb.log") && message.contains("initdb: simulated disk full"), "{message}");
    assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 0, "directories left under the data root");
}
