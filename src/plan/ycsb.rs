//! YCSB in a plan: the command line YCSB users type (`-P FILE`, `-p key=value`, and
//! `dbsweep run WORKLOAD_FILE`), each ycsb experiment's resolved workload, and the record
//! counts the experiments run at.
//!
//! Owns the precedence, highest first: dbsweep's own flags (`--rows`, `--ops`, `--clients`,
//! `--rate`; a flag and a `-p` for the same setting must agree), `-p`, `-P` files (later
//! files override earlier ones), the study's workload file, the study. Must not read
//! anything but workload files (what each property means is `ycsb_properties`).

use super::ycsb_properties::{self as props, Applied, Properties};
use super::{ExperimentEntry, StudyFile, Sweep};
use crate::data::DataSpec;
use crate::error::{Error, Result};
use crate::workload::experiment::ExperimentOp;
use crate::workload::ycsb::Workload;
use std::path::{Path, PathBuf};

/// The YCSB properties given on the command line.
#[derive(Debug, Clone)]
pub struct CommandLine {
    /// `-P` files in order, then the `-p` properties.
    pub props: Properties,
    /// The first `-P` file: a `-P` run has one workload, named after it.
    pub first_file: Option<PathBuf>,
    /// What they ask for, read over CoreWorkload's defaults.
    pub applied: Applied,
}

impl CommandLine {
    /// Reads `-P` files and `-p` assignments; `None` when there are none.
    pub fn read(files: &[PathBuf], assignments: &[String]) -> Result<Option<CommandLine>> {
        if files.is_empty() && assignments.is_empty() {
            return Ok(None);
        }
        let mut all = Properties::default();
        for f in files {
            all.extend(&Properties::read(f).map_err(Error::usage)?);
        }
        for a in assignments {
            all.push(Properties::assignment(a).map_err(Error::usage)?);
        }
        let applied = props::apply(Workload::default(), &all).map_err(Error::usage)?;
        Ok(Some(CommandLine { props: all, first_file: files.first().cloned(), applied }))
    }

    /// A setting given with `-p` (not from a `-P` file).
    fn from_p(origin: &str) -> bool {
        origin.starts_with("-p")
    }
}

/// `dbsweep run FILE` with FILE a YCSB workload file (not a TOML study) is the ycsb study
/// with `-P FILE`; `-P`/`-p` without a study name mean the ycsb study too. Returns the study
/// to load and the `-P` files.
pub fn study_and_files(study: Option<&str>, files: &[PathBuf], any_p: bool) -> (Option<String>, Vec<PathBuf>) {
    if let Some(path) = study
        && !path.ends_with(".toml")
        && std::fs::read_to_string(path).is_ok_and(|text| props::looks_like_properties(&text))
    {
        let mut all = vec![PathBuf::from(path)];
        all.extend(files.iter().cloned());
        return (Some("ycsb".into()), all);
    }
    match study {
        None if !files.is_empty() || any_p => (Some("ycsb".into()), files.to_vec()),
        other => (other.map(str::to_string), files.to_vec()),
    }
}

/// Adapts the study to the command line: record-shape properties set the data; with `-P`
/// the study's experiments become the one workload the files describe.
pub fn adapt_study(study: &mut StudyFile, cli: &CommandLine) -> Result<()> {
    let DataSpec::Ycsb { fieldcount, fieldlength, fieldlengthdistribution, minfieldlength, insertorder, .. } = &mut study.data else {
        return Err(Error::usage(format!(
            "-P and -p are YCSB properties, and study '{}' has no YCSB data; use them with the ycsb study (dbsweep run ycsb -P FILE)",
            study.name
        )));
    };
    let d = &cli.applied.data;
    if let Some((v, _)) = &d.fieldcount {
        *fieldcount = *v;
    }
    if let Some((v, _)) = &d.fieldlength {
        *fieldlength = *v;
    }
    if let Some((v, _)) = &d.fieldlengthdistribution {
        *fieldlengthdistribution = *v;
    }
    if let Some((v, _)) = &d.minfieldlength {
        *minfieldlength = *v;
    }
    if let Some((v, _)) = &d.insertorder {
        *insertorder = format!("{v:?}").to_ascii_lowercase();
    }
    if let Some(first) = &cli.first_file {
        let name = first.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "workload".into());
        study.experiments = vec![ExperimentEntry {
            name,
            op: ExperimentOp::Ycsb,
            sweep: vec![Sweep::Clients],
            ops: None,
            table: None,
            column: None,
            max_column: None,
            workload: Some(first.display().to_string()),
            runs: None,
            warmup: None,
            params: Default::default(),
            sql: None,
            sql_dialects: Default::default(),
            redis: None,
            memcached: None,
            mongodb: None,
            cql: None,
            reads: None,
            setup: None,
        }];
    }
    Ok(())
}

/// One ycsb experiment's workload and the settings its workload file asks for.
#[derive(Debug, Clone)]
pub struct ResolvedWorkload {
    pub workload: Workload,
    /// The workload file's `recordcount`.
    pub records: Option<u64>,
    /// The workload file's `operationcount`.
    pub ops: Option<u64>,
    /// `maxexecutiontime` (command line or workload file), seconds per run.
    pub time_limit_secs: Option<f64>,
    pub warnings: Vec<String>,
}

/// Resolves `spec` (a core letter or a workload file) with the command line's properties
/// on top, over the plan's data (the data's record shape is the workload's).
pub fn resolve_workload(experiment: &str, spec: &str, cli: Option<&CommandLine>, data: &DataSpec) -> Result<ResolvedWorkload> {
    let fail = |m: String| Error::usage(format!("experiment '{experiment}': {m}"));
    let mut letters = spec.chars();
    let (base, file_props) = match (letters.next(), letters.next()) {
        (Some(c), None) => (Workload::core(c).map_err(fail)?, Properties::default()),
        // A `-P` run's own file is already part of the command line's properties.
        _ if cli.and_then(|c| c.first_file.as_deref()) == Some(Path::new(spec)) => (Workload::default(), Properties::default()),
        _ => (Workload::default(), Properties::read(Path::new(spec)).map_err(fail)?),
    };
    let file = props::apply(base, &file_props).map_err(fail)?;
    let mut workload = match cli {
        Some(c) => props::apply(file.workload.clone(), &c.props).map_err(fail)?.workload,
        None => file.workload.clone(),
    };
    check_data_agrees(&file, data).map_err(fail)?;
    if let DataSpec::Ycsb { fieldcount, fieldlength, fieldlengthdistribution, minfieldlength, insertorder, recordcount } = data {
        workload.fieldcount = *fieldcount;
        workload.fieldlength = *fieldlength;
        workload.fieldlengthdistribution = *fieldlengthdistribution;
        workload.minfieldlength = *minfieldlength;
        workload.insertorder = crate::data::ycsb::InsertOrder::parse(insertorder).unwrap_or_default();
        workload.recordcount = recordcount.first();
    }
    workload.validate().map_err(fail)?;
    let mut warnings = file.warnings.clone();
    for (what, origin) in
        [("threadcount", file.client.threadcount.as_ref().map(|t| &t.1)), ("target", file.client.target.as_ref().map(|t| &t.1))]
    {
        if let Some(origin) = origin {
            warnings.push(format!(
                "{origin}: ignored in a study's workload file (the study's clients sweep and --rate apply; give {what} with -p on the command line)"
            ));
        }
    }
    let time_limit_secs =
        cli.and_then(|c| c.applied.client.maxexecutiontime.as_ref()).or(file.client.maxexecutiontime.as_ref()).map(|t| t.0);
    Ok(ResolvedWorkload {
        workload,
        records: file.client.recordcount.map(|r| r.0),
        ops: file.client.operationcount.map(|o| o.0),
        time_limit_secs,
        warnings,
    })
}

/// A study's workload file must describe the records the study loads.
fn check_data_agrees(file: &Applied, data: &DataSpec) -> std::result::Result<(), String> {
    let DataSpec::Ycsb { fieldcount, fieldlength, fieldlengthdistribution, minfieldlength, insertorder, .. } = data else {
        return Err("a ycsb experiment needs YCSB data ([data] kind = \"ycsb\")".into());
    };
    let d = &file.data;
    let mismatch = |origin: &str, key: &str, have: String| {
        Err(format!(
            "{origin} differs from the study's data ({key} = {have}); every workload of a run reads the same records: set it in [data] or with -p {key}=..."
        ))
    };
    if let Some((v, o)) = &d.fieldcount
        && v != fieldcount
    {
        return mismatch(o, "fieldcount", fieldcount.to_string());
    }
    if let Some((v, o)) = &d.fieldlength
        && v != fieldlength
    {
        return mismatch(o, "fieldlength", fieldlength.to_string());
    }
    if let Some((v, o)) = &d.fieldlengthdistribution
        && v != fieldlengthdistribution
    {
        return mismatch(o, "fieldlengthdistribution", format!("{fieldlengthdistribution:?}").to_ascii_lowercase());
    }
    if let Some((v, o)) = &d.minfieldlength
        && v != minfieldlength
        && *fieldlengthdistribution != crate::data::ycsb::FieldLengths::Constant
    {
        return mismatch(o, "minfieldlength", minfieldlength.to_string());
    }
    if let Some((v, o)) = &d.insertorder
        && Some(*v) != crate::data::ycsb::InsertOrder::parse(insertorder)
    {
        return mismatch(o, "insertorder", insertorder.clone());
    }
    Ok(())
}

/// The command line's run-level settings, checked against dbsweep's own flags: a flag and
/// a `-p` for the same setting must agree; a flag overrides a `-P` file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientOverrides {
    pub records: Option<Vec<u64>>,
    pub ops: Option<u64>,
    pub clients: Option<Vec<usize>>,
    /// `Some(None)`: `target=0`, unthrottled.
    pub rate: Option<Option<f64>>,
}

pub fn client_overrides(
    cli: &CommandLine,
    rows: Option<&Vec<u64>>,
    ops: Option<u64>,
    clients: Option<&Vec<usize>>,
    rates: Option<&[f64]>,
) -> Result<ClientOverrides> {
    let c = &cli.applied.client;
    let conflict = |flag: &str, origin: &str| {
        Err(Error::usage(format!("{origin} and {flag} both set it; give it once (YCSB property or dbsweep flag)")))
    };
    let mut out = ClientOverrides::default();
    match (&c.recordcount, rows) {
        (Some((n, o)), Some(r)) if CommandLine::from_p(o) && r != &vec![*n] => return conflict("--rows", o),
        (Some((n, _)), None) => out.records = Some(vec![*n]),
        _ => {}
    }
    match (&c.operationcount, ops) {
        (Some((n, o)), Some(f)) if CommandLine::from_p(o) && f != *n => return conflict("--ops", o),
        (Some((n, _)), None) => out.ops = Some(*n),
        _ => {}
    }
    match (&c.threadcount, clients) {
        (Some((n, o)), Some(f)) if CommandLine::from_p(o) && f != &vec![*n] => return conflict("--clients", o),
        (Some((n, _)), None) => out.clients = Some(vec![*n]),
        _ => {}
    }
    match (&c.target, rates) {
        (Some((t, o)), Some(f)) if CommandLine::from_p(o) && t.map(|t| vec![t]).unwrap_or_default() != f => return conflict("--rate", o),
        (Some((t, _)), None) => out.rate = Some(*t),
        _ => {}
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{RunOptions, resolve};
    use crate::workload::experiment::{Point, Rate};

    fn with_props(props: &[&str]) -> RunOptions {
        RunOptions { study: Some("ycsb".into()), ycsb_properties: props.iter().map(|p| p.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn the_papers_record_counts_are_a_sweep_of_every_experiment() {
        let plan = resolve(&RunOptions { study: Some("ycsb".into()), ..Default::default() }).unwrap();
        assert_eq!(plan.data.record_counts(), [1000, 5000, 10000]);
        let a = plan.experiments.iter().find(|e| e.name == "workload-a").unwrap();
        let grid: Vec<(usize, Option<u64>)> = a.points.iter().map(|p| (p.clients, p.param)).collect();
        assert_eq!(grid.len(), 12);
        assert_eq!(grid[..5], [(1, Some(1000)), (2, Some(1000)), (4, Some(1000)), (8, Some(1000)), (1, Some(5000))]);
        assert_eq!(a.ycsb.as_ref().unwrap().readproportion, 0.5);
        assert_eq!(a.ops, 1000, "YCSB's operationcount of the paper");
        let floor = &plan.experiments[0];
        assert_eq!(floor.points, [Point { clients: 1, batch: 1, batched: false, param: None, rate: None }], "the echo floor runs once");
        let quick = resolve(&RunOptions { study: Some("ycsb".into()), quick: true, ..Default::default() }).unwrap();
        assert_eq!(quick.data.record_counts(), [1000]);
    }

    #[test]
    fn client_properties_map_onto_dbsweep_settings() {
        let plan = resolve(&with_props(&["threadcount=3", "target=2000", "operationcount=250", "maxexecutiontime=60", "recordcount=700"]))
            .unwrap();
        let a = plan.experiments.iter().find(|e| e.name == "workload-a").unwrap();
        assert_eq!(a.points, [Point { clients: 3, batch: 1, batched: false, param: Some(700), rate: Rate::new(2000.0) }]);
        assert_eq!((plan.rates.as_slice(), a.ops, a.time_limit_secs), (&[Rate::new(2000.0).unwrap()][..], 250, Some(60.0)));
        assert_eq!(plan.data.record_counts(), [700]);
        let plan = resolve(&with_props(&["fieldcount=3", "fieldlength=40", "requestdistribution=uniform"])).unwrap();
        let a = plan.experiments.iter().find(|e| e.name == "workload-a").unwrap().ycsb.clone().unwrap();
        assert_eq!((a.fieldcount, a.fieldlength), (3, 40));
        assert_eq!(a.requestdistribution, crate::workload::ycsb::RequestDistribution::Uniform, "-p overrides the core workload");
        assert!(matches!(plan.data, DataSpec::Ycsb { fieldcount: 3, fieldlength: 40, .. }));
        let err = resolve(&RunOptions { study: Some("embedded".into()), rows: Some(vec![10, 20]), ..Default::default() }).unwrap_err();
        assert!(err.to_string().contains("--rows"), "{err}");
    }

    #[test]
    fn a_study_workload_file_must_describe_the_studys_records() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w");
        std::fs::write(&file, "readproportion=1\nfieldlength=200\nthreadcount=4\n").unwrap();
        let study = dir.path().join("s.toml");
        let toml = |file: &Path| {
            format!(
                "name = \"s\"\n[data]\nkind = \"ycsb\"\nrecordcount = 100\n[[experiments]]\nname = \"w\"\nop = \"ycsb\"\nworkload = \"{}\"\nsweep = [\"clients\"]\n",
                file.display()
            )
        };
        std::fs::write(&study, toml(&file)).unwrap();
        let opts = RunOptions { study: Some(study.display().to_string()), ..Default::default() };
        let err = resolve(&opts).unwrap_err();
        assert!(err.to_string().contains("w line 2: fieldlength=200 differs from the study's data (fieldlength = 100)"), "{err}");
        // Given for the whole run, the file is consistent again; its threadcount is a warning.
        let plan = resolve(&RunOptions { ycsb_properties: vec!["fieldlength=200".into()], ..opts }).unwrap();
        assert!(
            plan.warnings.iter().any(|w| w.starts_with("w line 3: threadcount=4: ignored in a study's workload file")),
            "{:?}",
            plan.warnings
        );
    }

    #[test]
    fn a_workload_file_as_the_study_is_the_ycsb_study_with_p() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("workloada");
        std::fs::write(&file, "recordcount=1000\nreadproportion=0.5\nupdateproportion=0.5\n").unwrap();
        let (study, files) = study_and_files(Some(file.to_str().unwrap()), &[], false);
        assert_eq!(study.as_deref(), Some("ycsb"));
        assert_eq!(files, vec![file.clone()]);
        let (study, files) = study_and_files(None, std::slice::from_ref(&file), false);
        assert_eq!((study.as_deref(), files.len()), (Some("ycsb"), 1));
        assert_eq!(study_and_files(None, &[], true).0.as_deref(), Some("ycsb"));
        assert_eq!(study_and_files(Some("embedded"), &[], false).0.as_deref(), Some("embedded"));
        let toml = dir.path().join("s.toml");
        std::fs::write(&toml, "recordcount=1000\n").unwrap();
        assert_eq!(study_and_files(Some(toml.to_str().unwrap()), &[], false).0.as_deref(), Some(toml.to_str().unwrap()));
    }

    #[test]
    fn flags_and_p_must_agree_and_flags_override_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w");
        std::fs::write(&file, "recordcount=1000\noperationcount=1000\nthreadcount=4\n").unwrap();
        let cli = CommandLine::read(std::slice::from_ref(&file), &["target=500".into()]).unwrap().unwrap();
        let o = client_overrides(&cli, None, None, None, None).unwrap();
        assert_eq!(o, ClientOverrides { records: Some(vec![1000]), ops: Some(1000), clients: Some(vec![4]), rate: Some(Some(500.0)) });
        let flags = client_overrides(&cli, Some(&vec![1000, 5000]), Some(50), Some(&vec![1, 2]), None).unwrap();
        assert_eq!((flags.records, flags.ops, flags.clients), (None, None, None), "flags override -P files");
        let err = client_overrides(&cli, None, None, None, Some(&[900.0])).unwrap_err();
        assert!(err.to_string().contains("-p: target=500") && err.to_string().contains("--rate"), "{err}");
        let cli = CommandLine::read(&[], &["recordcount=5000".into()]).unwrap().unwrap();
        assert!(client_overrides(&cli, Some(&vec![5000]), None, None, None).is_ok());
        assert_eq!(client_overrides(&cli, Some(&vec![1000]), None, None, None).unwrap_err().exit_code(), 2);
        assert!(CommandLine::read(&[], &[]).unwrap().is_none());
        assert_eq!(CommandLine::read(&[], &["nokey".into()]).unwrap_err().exit_code(), 2);
        assert_eq!(CommandLine::read(&[dir.path().join("missing")], &[]).unwrap_err().exit_code(), 2);
    }
}
