//! Every way PostgreSQL, MariaDB and Redis accept a password, end to end (issue 17): each
//! test spawns its own server, gives it a user whose password is a canary and whose login
//! the server checks, then runs `dbsweep run` once per channel — URL userinfo, password
//! query parameters, the system's environment variable, its password file — with debug
//! logging on. Each run must log in (the rows load, so the password was honoured) and the
//! canary must appear in no output file, nor on stdout or stderr. A wrong password is
//! refused with a one-line error that does not show it either.

use crate::support;
use crate::support::spawn;
use crate::support::text;

use dbsweep::servers::ServerKind;
use mysql_async::prelude::Queryable;
use std::process::{Output, Stdio};

const CANARY: &str = "Canary-Pw-9173x";
const WRONG: &str = "Wrong-Canary-5521y";
const USER: &str = "canary_user";
const ROWS: u64 = 300;

/// How the password reaches dbsweep in one run.
struct Channel {
    name: &'static str,
    /// The target URL (the password may be in it).
    url: String,
    /// Environment variables set for the run.
    env: Vec<(&'static str, String)>,
    /// A file written into the run's `HOME` (name, contents), e.g. `.pgpass`.
    home_file: Option<(&'static str, String)>,
}

impl Channel {
    fn url(name: &'static str, url: String) -> Channel {
        Channel { name, url, env: vec![], home_file: None }
    }
}

/// Runs a small get experiment on target `system` through `channel`; returns the output
/// and every output file's text.
fn run(system: &str, channel: &Channel) -> (Output, Vec<(String, String)>) {
    let home = tempfile::tempdir().unwrap();
    if let Some((name, text)) = &channel.home_file {
        let path = home.path().join(name);
        std::fs::write(&path, text).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let out = home.path().join("out");
    let mut command = support::command();
    command
        .args(["run", "--target", &format!("{system}={}", channel.url), "--experiments", "get", "--clients", "1", "--batch", "1"])
        .args(["--runs", "1", "--warmup", "0", "--rows", &ROWS.to_string(), "--ops", "200", "--no-progress"])
        .args(["--out", out.to_str().unwrap()])
        .env("HOME", home.path())
        .env("DBSWEEP_LOG", "debug")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .env_remove("MYSQL_PWD")
        .env_remove("REDISCLI_AUTH")
        .envs(channel.env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let output = command.output().unwrap();
    let files = if out.exists() { support::files_under(&out) } else { Vec::new() };
    (output, files.into_iter().map(|(path, bytes)| (path.display().to_string(), String::from_utf8_lossy(&bytes).into_owned())).collect())
}

/// Each channel logs in and loads its rows; no output shows the canary.
fn check_channels(system: &str, channels: &[Channel]) {
    for channel in channels {
        let (output, files) = run(system, channel);
        let shown = text(&output);
        assert_eq!(output.status.code(), Some(0), "{system} via {}: the run failed:\n{shown}", channel.name);
        assert!(!shown.contains(CANARY), "{system} via {}: the password shows on stdout/stderr:\n{shown}", channel.name);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        for wanted in ["report.json", "results.csv", "report.html"] {
            assert!(names.iter().any(|n| n.ends_with(wanted)), "{system} via {}: no {wanted} in {names:?}", channel.name);
        }
        for (name, body) in &files {
            assert!(!body.contains(CANARY), "{system} via {}: the password is in {name}", channel.name);
        }
        let report = &files.iter().find(|(n, _)| n.ends_with("report.json")).unwrap().1;
        let report: serde_json::Value = serde_json::from_str(report).unwrap();
        assert_eq!(report["complete"], true, "{system} via {}", channel.name);
        let points: Vec<&serde_json::Value> =
            report["points"].as_array().unwrap().iter().filter(|p| p["target"] == system && p["experiment"] == "get").collect();
        assert!(!points.is_empty(), "{system} via {}: no get point", channel.name);
        for point in points {
            let summary = &point["summary"];
            assert_eq!(summary["errors"], 0, "{system} via {}: {summary}", channel.name);
            assert_eq!(summary["missing_rows"], 0, "{system} via {}: {summary}", channel.name);
            for run in point["runs"].as_array().unwrap() {
                assert!(run["rows"].as_u64().unwrap() > 0, "{system} via {}: a run found no rows: {run}", channel.name);
            }
        }
    }
}

/// A wrong password is refused at once (exit 2), and its error shows neither password.
fn check_refused(system: &str, url: String) {
    let (output, files) = run(system, &Channel::url("wrong password", url));
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(2), "{system}: a wrong password must be refused:\n{shown}");
    assert!(!shown.contains(WRONG) && !shown.contains(CANARY), "{system}: the password shows:\n{shown}");
    assert!(files.iter().all(|(_, body)| !body.contains(WRONG)), "{system}: the wrong password was written");
}

fn with_userinfo(base: &str, scheme: &str, password: Option<&str>, path: &str, query: &str) -> String {
    let mut url = url::Url::parse(base).unwrap();
    url.set_username(USER).unwrap();
    url.set_password(password).unwrap();
    url.set_path(path);
    let text = url.to_string().replacen(&format!("{}:", url.scheme()), &format!("{scheme}:"), 1);
    if query.is_empty() { text } else { format!("{text}?{query}") }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_every_password_channel_logs_in_and_never_shows() {
    let server = spawn(ServerKind::Postgres).await;
    let (admin, connection) = server.url().parse::<tokio_postgres::Config>().unwrap().connect(tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    admin.batch_execute(&format!("CREATE ROLE {USER} LOGIN PASSWORD '{CANARY}'")).await.unwrap();
    admin.batch_execute(&format!("CREATE DATABASE canary_db OWNER {USER}")).await.unwrap();
    // The spawned server trusts local logins; make it check this user's password.
    let hba_file: String = admin.query_one("SHOW hba_file", &[]).await.unwrap().get(0);
    let hba = std::fs::read_to_string(&hba_file).unwrap();
    let checked = format!("host all {USER} 127.0.0.1/32 scram-sha-256\nhost all {USER} ::1/128 scram-sha-256\n");
    std::fs::write(&hba_file, format!("{checked}{hba}")).unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").await.unwrap();
    let port = server.port();
    let wrong = format!("postgres://{USER}:{WRONG}@127.0.0.1:{port}/canary_db");
    let refused = wrong.parse::<tokio_postgres::Config>().unwrap().connect(tokio_postgres::NoTls).await;
    assert!(refused.is_err(), "the server must check {USER}'s password");

    let url = |password: Option<&str>, query: &str| with_userinfo(&server.url(), "postgres", password, "/canary_db", query);
    let bare = url(None, "layout=row");
    check_channels(
        "pg",
        &[
            Channel::url("URL userinfo", url(Some(CANARY), "layout=row")),
            Channel::url("?password=", url(None, &format!("layout=row&password={CANARY}"))),
            Channel { env: vec![("PGPASSWORD", CANARY.into())], ..Channel::url("PGPASSWORD", bare.clone()) },
            Channel {
                home_file: Some((".pgpass", format!("127.0.0.1:{port}:canary_db:{USER}:{CANARY}\n"))),
                ..Channel::url("~/.pgpass", bare.clone())
            },
        ],
    );
    check_refused("pg", url(None, &format!("layout=row&password={WRONG}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mariadb_every_password_channel_logs_in_and_never_shows() {
    let server = spawn(ServerKind::Mariadb).await;
    let mut admin = mysql_async::Conn::from_url(server.url()).await.unwrap();
    for host in ["%", "localhost", "127.0.0.1"] {
        admin.query_drop(format!("CREATE USER '{USER}'@'{host}' IDENTIFIED BY '{CANARY}'")).await.unwrap();
        admin.query_drop(format!("GRANT ALL ON *.* TO '{USER}'@'{host}'")).await.unwrap();
    }
    let port = server.port();
    let refused = mysql_async::Conn::from_url(format!("mysql://{USER}:{WRONG}@127.0.0.1:{port}/")).await;
    assert!(refused.is_err(), "the server must check {USER}'s password");

    let url = |password: Option<&str>, query: &str| with_userinfo(&server.url(), "mariadb", password, "/", query);
    let bare = url(None, "");
    check_channels(
        "mariadb",
        &[
            Channel::url("URL userinfo", url(Some(CANARY), "")),
            Channel::url("?password=", url(None, &format!("password={CANARY}"))),
            Channel::url("?pass=", url(None, &format!("pass={CANARY}"))),
            Channel { env: vec![("MYSQL_PWD", CANARY.into())], ..Channel::url("MYSQL_PWD", bare.clone()) },
            Channel {
                home_file: Some((".my.cnf", format!("[client]\npassword=\"{CANARY}\"\n"))),
                ..Channel::url("~/.my.cnf", bare.clone())
            },
        ],
    );
    check_refused("mariadb", url(None, &format!("password={WRONG}")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_every_password_channel_logs_in_and_never_shows() {
    let server = spawn(ServerKind::Redis).await;
    let mut admin = redis::Client::open(server.url()).unwrap().get_multiplexed_async_connection().await.unwrap();
    redis::cmd("ACL")
        .arg(&["SETUSER", USER, "on", &format!(">{CANARY}"), "~*", "&*", "+@all"][..])
        .query_async::<()>(&mut admin)
        .await
        .unwrap();
    let port = server.port();
    let refused =
        redis::Client::open(format!("redis://{USER}:{WRONG}@127.0.0.1:{port}/0")).unwrap().get_multiplexed_async_connection().await;
    assert!(refused.is_err(), "the server must check {USER}'s password");

    let url = |password: Option<&str>, query: &str| with_userinfo(&server.url(), "redis", password, "/0", query);
    let bare = url(None, "");
    check_channels(
        "redis",
        &[
            Channel::url("URL userinfo", url(Some(CANARY), "")),
            Channel::url("?password=", url(None, &format!("password={CANARY}"))),
            Channel::url("?auth=", url(None, &format!("batch=pipeline&auth={CANARY}"))),
            Channel { env: vec![("REDISCLI_AUTH", CANARY.into())], ..Channel::url("REDISCLI_AUTH", bare.clone()) },
        ],
    );
    check_refused("redis", url(None, &format!("password={WRONG}")));
}
