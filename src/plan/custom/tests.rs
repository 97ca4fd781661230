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
    let e = check_families("e", &op, &systems(&[("memcached", None)])).unwrap_err();
    assert!(e.contains("none of this run's systems (memcached) runs custom statements"), "{e}");
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
