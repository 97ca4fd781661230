use super::*;
use crate::base::script::SqlPart;
use crate::data::DataSpec;

fn entry(toml_text: &str) -> ExperimentEntry {
    toml::from_str(&format!("name = \"e\"\nop = \"custom\"\nsweep = [\"clients\"]\n{toml_text}")).unwrap()
}

fn kv() -> Dataset {
    Dataset::new(&DataSpec::Kv { rows: 100, payload_bytes: 10 }, 1)
}

#[test]
fn params_take_slots_after_scale_and_templates_their_pieces() {
    let op = resolve(
        &entry("params.k = { key = \"kv\", distribution = \"zipfian\" }\nparams.a = { pick = [\"x\", 2] }\nredis = [\"HGET\", \"${row:kv}${k}\", \"val\"]\nsql = \"SELECT val FROM kv WHERE k = :k\""),
        &kv(),
    )
    .unwrap();
    assert_eq!(op.variables, ["scale", "a", "k"]);
    assert_eq!(op.params[1], ParamSource::Key { table: 0, distribution: KeyDistribution::Zipfian });
    assert_eq!(op.params[0], ParamSource::Pick(vec![ScriptValue::Text("x".into()), ScriptValue::Int(2)]));
    assert_eq!(op.redis[0].args[1], [Piece::RowPrefix("kv".into()), Piece::Variable(2)]);
    let Command::Sql(s) = &op.sql.as_ref().unwrap().commands[0] else { panic!("a statement") };
    assert_eq!(s.parts[1], SqlPart::Table("kv".into()));
    assert_eq!(s.parts[3], SqlPart::Variable(2));
    assert!(op.reads, "a SELECT and an HGET only read");
    assert_eq!(op.families(), [Family::Sql, Family::Redis]);
}

#[test]
fn reads_follow_the_statements_unless_said() {
    let write = resolve(&entry("params.k = { range = [1, 9] }\nsql = \"UPDATE kv SET val = 0 WHERE k = :k\""), &kv()).unwrap();
    assert!(!write.reads);
    let eval = resolve(&entry("redis = [\"EVAL\", \"return 1\", \"0\"]"), &kv()).unwrap();
    assert!(!eval.reads, "EVAL may write: EVAL_RO or reads = true to compare");
    let said = resolve(&entry("reads = true\nredis = [\"EVAL\", \"return 1\", \"0\"]"), &kv()).unwrap();
    assert!(said.reads);
    let e = resolve(&entry("reads = true\nsql = \"DELETE FROM kv\""), &kv()).unwrap_err();
    assert!(e.contains("reads = true, but its sql statement writes"), "{e}");
}

#[test]
fn overrides_run_on_their_dialects_only() {
    let op = resolve(&entry("sql = \"SELECT 1\"\nsql_dialects.sqlite = \"SELECT 2\""), &kv()).unwrap();
    let runs: Vec<(bool, bool)> = op
        .sql
        .unwrap()
        .commands
        .iter()
        .map(|c| match c {
            Command::Sql(s) => (s.runs_on("sqlite"), s.runs_on("duckdb")),
            Command::Set { .. } => unreachable!(),
        })
        .collect();
    assert_eq!(runs, [(false, true), (true, false)]);
}

#[test]
fn families_without_a_statement_on_any_system_are_refused() {
    let op = resolve(&entry("redis = [\"GET\", \"${prefix}x\"]"), &kv()).unwrap();
    let systems = |list: &[(&str, Option<Family>)]| list.iter().map(|(s, f)| (s.to_string(), *f)).collect::<Vec<_>>();
    assert!(check_families("e", &op, &systems(&[("nodb", None), ("redis", Some(Family::Redis)), ("sqlite", Some(Family::Sql))])).is_ok());
    let e = check_families("e", &op, &systems(&[("nodb", None), ("sqlite", Some(Family::Sql))])).unwrap_err();
    assert_eq!(e, "experiment 'e': no statement for any system of this run (sqlite): add `sql = ...`");
    let e = check_families("e", &op, &systems(&[("redb", None)])).unwrap_err();
    assert!(e.contains("none of this run's systems (redb) runs custom statements"), "{e}");
}

#[test]
fn keys_outside_the_namespace_and_flushes_are_refused() {
    for (text, expected) in [
        ("redis = [\"DEL\", \"dbsweep:kv1\"]", "argument 2 ('dbsweep:kv1') is a key outside dbsweep's namespace"),
        ("redis = [\"EVAL\", \"return 1\", \"1\", \"other\"]", "argument 4 ('other') is a key outside"),
        ("redis = [\"EVAL\", \"return 1\", \"2\", \"${prefix}a\"]", "EVAL says 2 keys"),
        ("redis = [\"flushdb\"]", "FLUSHDB is refused"),
        ("redis = [\"SET\", \"${prefix}owner\", \"x\"]", "owner and lease keys"),
        ("redis = [\"${prefix}\", \"a\"]", "the command name"),
        ("redis = [\"GET\", \"${prefix\"]", "a '${' without its '}'"),
        ("sql = \"TRUNCATE other\"", "refused: TRUNCATE OTHER outside"),
        ("sql = \"DROP SCHEMA dbsweep\"", "refused: DROP SCHEMA"),
        ("sql = \"SELECT 1; SELECT 2\"", "one statement"),
        ("sql = \"BEGIN\"", "no BEGIN/COMMIT"),
        ("sql = \"\\\\set a 1\"", "not meta-commands"),
        ("params.k = { range = [1, 2] }\nparams.scale = { range = [1, 2] }\nsql = \"SELECT 1\"", "may not be called 'scale'"),
        ("params.k = { range = [1, 2], pick = [1] }\nsql = \"SELECT 1\"", "exactly one of"),
        ("params.k = { range = [1, 2], distribution = \"latest\" }\nsql = \"SELECT 1\"", "distribution applies to key and column"),
        ("params.k = { pick = [] }\nsql = \"SELECT 1\"", "pick needs at least one value"),
        ("sql_dialects.sqlite = \"SELECT 1\"", "sql_dialects overrides"),
        ("sql = \"SELECT 1\"\nsql_dialects.sqlite = \"DELETE FROM kv\"", "must read where the statement reads"),
    ] {
        let e = resolve(&entry(text), &kv()).unwrap_err();
        assert!(e.starts_with("experiment 'e': ") && e.contains(expected), "{text}: {e}");
    }
    assert!(resolve(&entry("setup.sql = [\"CREATE INDEX kv_val ON kv (val)\"]\nsql = \"SELECT 1\""), &kv()).is_ok());
}

#[test]
fn memcached_commands_template_their_keys_and_say_whether_they_read() {
    let op = resolve(&entry("params.k = { key = \"kv\" }\nmemcached = [\"GET\", \"${row:kv}${k}\", \"${prefix}x\"]"), &kv()).unwrap();
    assert_eq!(op.memcached[0].args[0], [Piece::Text("get".into())]);
    assert_eq!(op.memcached[0].args[1], [Piece::RowPrefix("kv".into()), Piece::Variable(1)]);
    assert!(op.reads);
    assert_eq!(op.families(), [Family::Memcached]);
    let incr = resolve(&entry("memcached = [\"incr\", \"${prefix}n\", \"1\"]"), &kv()).unwrap();
    assert!(!incr.reads);
    let setup =
        resolve(&entry("memcached = [\"get\", \"${prefix}n\"]\nsetup.memcached = [[\"set\", \"${prefix}n\", \"0\"]]"), &kv()).unwrap();
    assert_eq!(setup.setup.unwrap().memcached.len(), 1);
}

#[test]
fn memcached_commands_outside_the_namespace_or_the_data_commands_are_refused() {
    for (text, expected) in [
        ("memcached = [\"flush_all\"]", "'flush_all' is refused: custom commands are get, gets, set"),
        ("memcached = [\"get\", \"dbsweep:kv1\"]", "argument 2 ('dbsweep:kv1') is a key outside dbsweep's namespace"),
        ("memcached = [\"get\", \"${prefix}a\", \"other\"]", "argument 3 ('other') is a key outside"),
        ("memcached = [\"set\", \"${prefix}owner\", \"x\"]", "owner and lease items"),
        ("memcached = [\"set\", \"${prefix}a\"]", "set takes a key and a value (1 arguments given"),
        ("memcached = [\"incr\", \"${prefix}a\"]", "incr takes a key and an amount"),
        ("memcached = [\"get\"]", "get needs at least one key"),
        ("memcached = [\"get\", \"${pk:kv}\"]", "${pk:TABLE} (Redis' key set) has no meaning in memcached"),
        ("params.k = { key = \"kv\" }\nmemcached = [\"get\", \"${prefix}${id:k}\"]", "${id:...} (MongoDB's _id) has no meaning"),
        ("params.k = { key = \"kv\" }\nredis = [\"GET\", \"${prefix}${id:k}\"]", "${id:...} is a MongoDB document's _id"),
        ("memcached = [\"get\", \"${prefix}${nope}\"]", "unknown placeholder ${nope}"),
    ] {
        let e = resolve(&entry(text), &kv()).unwrap_err();
        assert!(e.starts_with("experiment 'e': ") && e.contains(expected), "{text}: {e}");
    }
}

#[test]
fn mongodb_documents_put_the_command_first_and_bind_placeholders() {
    use crate::base::custom::DocumentTemplate as D;
    let op = resolve(
        &entry("params.k = { key = \"kv\" }\nmongodb = { filter = { _id = \"${id:k}\", grp = \"${k}\" }, find = \"kv\", limit = 1 }"),
        &kv(),
    )
    .unwrap();
    let D::Table(entries) = &op.mongodb[0] else { panic!("a document") };
    let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["find", "filter", "limit"]);
    assert_eq!(entries[0].1, D::Text(vec![Piece::Text("kv".into())]));
    assert_eq!(
        entries[1].1,
        D::Table(vec![("_id".into(), D::Text(vec![Piece::DocumentId(1)])), ("grp".into(), D::Text(vec![Piece::Variable(1)]))])
    );
    assert!(op.reads);
    let update = "mongodb = { update = \"kv\", updates = [{ q = { grp = 1 }, u = { \"$set\" = { val = 0.5 } } }] }";
    assert!(!resolve(&entry(update), &kv()).unwrap().reads);
    let modify = "mongodb = { findAndModify = \"kv\", query = { grp = 1 }, update = { \"$set\" = { val = 0.5 } } }";
    let D::Table(entries) = &resolve(&entry(modify), &kv()).unwrap().mongodb[0] else { panic!("a document") };
    assert_eq!(entries[0].0, "findAndModify", "findAndModify's update is a field, not the command");
}

#[test]
fn mongodb_documents_outside_dbsweeps_collections_are_refused() {
    for (text, expected) in [
        ("mongodb = { dropDatabase = 1 }", "no command in { dropDatabase }: custom documents run findAndModify, find"),
        ("mongodb = { find = \"users\" }", "find = \"users\": name a table of this data (kv)"),
        ("mongodb = { find = \"kv\", \"$db\" = \"admin\" }", "$db is refused"),
        ("mongodb = { aggregate = \"kv\", pipeline = [{ \"$out\" = \"copy\" }] }", "$out is refused"),
        ("mongodb = { aggregate = \"kv\", pipeline = [{ \"$lookup\" = { from = \"users\" } }] }", "$lookup is refused"),
        ("mongodb = { find = \"kv\", filter = { _id = \"${row:kv}1\" } }", "keys of Redis and Memcached"),
        ("mongodb = { find = \"kv\", filter = { _id = \"${nope}\" } }", "unknown placeholder ${nope}"),
    ] {
        let e = resolve(&entry(text), &kv()).unwrap_err();
        assert!(e.starts_with("experiment 'e': mongodb: ") && e.contains(expected), "{text}: {e}");
    }
}

#[test]
fn cql_binds_placeholders_as_markers_and_stays_in_its_keyspace() {
    let op = resolve(&entry("params.k = { key = \"kv\" }\ncql = \"SELECT k, val FROM kv WHERE k = ${k} AND payload = 'a''${'\""), &kv());
    let e = op.unwrap_err();
    assert!(e.contains("a placeholder inside a quoted string"), "{e}");
    let op = resolve(
        &entry("params.k = { key = \"kv\" }\ncql = \"SELECT k, val FROM kv WHERE k = ${k} AND val > 1.5 AND payload = 'a''b.c';\""),
        &kv(),
    )
    .unwrap();
    assert_eq!(op.cql[0].text, "SELECT k, val FROM kv WHERE k = ? AND val > 1.5 AND payload = 'a''b.c'");
    assert_eq!(op.cql[0].markers, [1]);
    assert!(op.reads);
    assert_eq!(op.families(), [Family::Cql]);
    let write = resolve(&entry("params.k = { key = \"kv\" }\ncql = \"UPDATE kv SET val = 0 WHERE k = ${k}\""), &kv()).unwrap();
    assert!(!write.reads);
    for (text, expected) in [
        ("cql = \"SELECT * FROM system.local\"", "'system.local' names another keyspace"),
        ("cql = 'SELECT * FROM other . \"t\"'", "'other.\"t\"' names another keyspace"),
        ("cql = \"DROP TABLE kv\"", "'DROP' is refused: custom CQL is one SELECT, INSERT, UPDATE or DELETE"),
        ("cql = \"USE other\"", "'USE' is refused"),
        ("cql = \"SELECT * FROM dbsweep_lease\"", "dbsweep_lease: dbsweep's own owner and lease tables"),
        ("cql = \"SELECT 1 FROM kv; SELECT 2 FROM kv\"", "one statement"),
        ("cql = \"SELECT * FROM kv WHERE k = ${nope}\"", "unknown placeholder ${nope}"),
    ] {
        let e = resolve(&entry(text), &kv()).unwrap_err();
        assert!(e.starts_with("experiment 'e': cql: ") && e.contains(expected), "{text}: {e}");
    }
}
