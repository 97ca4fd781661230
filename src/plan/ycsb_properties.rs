//! YCSB's property files and command-line conventions: `-P FILE` (repeatable, later files
//! override earlier ones, as in YCSB) and `-p key=value` (repeatable, overrides the files),
//! and what each CoreWorkload and client property does here.
//!
//! Every property is either applied (the workload's proportions, distributions, field
//! shape), mapped onto a dbsweep setting (`recordcount`, `operationcount`, `threadcount`,
//! `target`, `maxexecutiontime`), accepted with a warning because it changes nothing dbsweep
//! sends or measures (output and measurement settings, names), or refused because ignoring
//! it would change the result. Owns that decision table and the parsing; must not read
//! anything but the files it is given, and must not decide how the plan combines the
//! settings (that is `plan`).

use crate::data::ycsb::{FieldLengths, InsertOrder};
use crate::workload::ycsb::{RequestDistribution, ScanLengthDistribution, Workload};
use std::collections::BTreeMap;
use std::path::Path;

/// One property as given, and where: `workloada line 9` or `-p`.
#[derive(Debug, Clone, PartialEq)]
pub struct Property {
    pub key: String,
    pub value: String,
    pub origin: String,
}

impl Property {
    fn describe(&self) -> String {
        format!("{}: {}={}", self.origin, self.key, self.value)
    }
}

/// Properties in the order given; a later one overrides an earlier one with the same key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Properties(Vec<Property>);

impl Properties {
    /// A Java-properties text as YCSB's workload files use it: `key=value` or `key: value`
    /// lines, `#` and `!` comments. `name` names the file in messages.
    pub fn parse(text: &str, name: &str) -> Result<Properties, String> {
        let mut out = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let origin = format!("{name} line {}", i + 1);
            let Some((key, value)) = line.split_once(['=', ':']) else {
                return Err(format!("{origin}: expected key=value, got '{line}'"));
            };
            out.push(Property { key: key.trim().to_string(), value: value.trim().to_string(), origin });
        }
        Ok(Properties(out))
    }

    /// Reads a workload file (`-P FILE`, or `workload = "FILE"` in a study).
    pub fn read(path: &Path) -> Result<Properties, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read workload file {}: {e}", path.display()))?;
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| path.display().to_string());
        Self::parse(&text, &name)
    }

    /// One `-p key=value`.
    pub fn assignment(text: &str) -> Result<Property, String> {
        match text.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                Ok(Property { key: key.trim().to_string(), value: value.trim().to_string(), origin: "-p".into() })
            }
            _ => Err(format!("-p {text}: expected -p key=value (a YCSB property, e.g. -p recordcount=5000)")),
        }
    }

    pub fn push(&mut self, p: Property) {
        self.0.push(p);
    }

    pub fn extend(&mut self, other: &Properties) {
        self.0.extend(other.0.iter().cloned());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The value that wins for each key (the last one given), in key order.
    fn effective(&self) -> BTreeMap<&str, &Property> {
        self.0.iter().map(|p| (p.key.as_str(), p)).collect()
    }
}

/// True when `text` reads as a YCSB properties file rather than a TOML study: no TOML
/// table headers, and at least one `key=value` line naming a CoreWorkload or client property.
pub fn looks_like_properties(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!')).collect();
    let known = |l: &&str| l.split_once('=').is_some_and(|(k, _)| handling(k.trim()).is_some());
    !lines.iter().any(|l| l.starts_with('[')) && lines.iter().any(known)
}

/// Client (run-level) settings a property set asks for, as YCSB's `Client` reads them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientSettings {
    pub recordcount: Option<(u64, String)>,
    pub operationcount: Option<(u64, String)>,
    pub threadcount: Option<(usize, String)>,
    /// `target`: total ops/s (`None` for 0, unthrottled).
    pub target: Option<(Option<f64>, String)>,
    /// `maxexecutiontime` in seconds.
    pub maxexecutiontime: Option<(f64, String)>,
}

/// Record-shape properties given explicitly: they describe the loaded data, so they must
/// agree across every workload that runs on it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataSettings {
    pub fieldcount: Option<(usize, String)>,
    pub fieldlength: Option<(usize, String)>,
    pub fieldlengthdistribution: Option<(FieldLengths, String)>,
    pub minfieldlength: Option<(usize, String)>,
    pub insertorder: Option<(InsertOrder, String)>,
}

/// The result of reading a property set over a base workload.
#[derive(Debug, Clone)]
pub struct Applied {
    pub workload: Workload,
    pub client: ClientSettings,
    pub data: DataSettings,
    /// One line per property accepted but not honoured, naming where it came from.
    pub warnings: Vec<String>,
}

/// What dbsweep does with a property.
enum Handling {
    /// Sets a workload, data or client setting.
    Applied,
    /// Accepted; changes nothing dbsweep sends or measures. The reason is the warning.
    NoEffect(&'static str),
    /// Accepted only with these values (YCSB's defaults); any other would change the result
    /// and is refused with the reason.
    OnlyDefault(&'static [&'static str], &'static str),
}

const MEASUREMENT: &str = "dbsweep records every operation's service time in HDR histograms per operation type and writes its own report (report.json, results.csv, report.html)";

fn handling(key: &str) -> Option<Handling> {
    use Handling::*;
    Some(match key {
        "recordcount"
        | "operationcount"
        | "threadcount"
        | "target"
        | "maxexecutiontime"
        | "workload"
        | "readproportion"
        | "updateproportion"
        | "insertproportion"
        | "scanproportion"
        | "readmodifywriteproportion"
        | "requestdistribution"
        | "minscanlength"
        | "maxscanlength"
        | "scanlengthdistribution"
        | "fieldcount"
        | "fieldlength"
        | "minfieldlength"
        | "fieldlengthdistribution"
        | "insertorder"
        | "hotspotdatafraction"
        | "hotspotopnfraction"
        | "exponential.percentile"
        | "exponential.frac" => Applied,
        "readallfields" => OnlyDefault(&["true"], "reads of one field are not supported: dbsweep reads whole records"),
        "writeallfields" => {
            OnlyDefault(&["false"], "updates of every field are not supported: dbsweep's updates write one field, as YCSB's default")
        }
        "dataintegrity" => OnlyDefault(
            &["false"],
            "dbsweep does not verify the bytes it reads (its values are deterministic per seed, key and field, but not YCSB's)",
        ),
        "insertstart" => OnlyDefault(&["0"], "insertstart splits a load over several YCSB clients; dbsweep loads every record itself"),
        "insertcount" => OnlyDefault(&[], "insertcount splits a load over several YCSB clients; dbsweep loads every record itself"),
        "dotransactions" => OnlyDefault(
            &["true"],
            "a load-only run is not supported: dbsweep loads the records itself and the ycsb study's `load` experiment measures inserts",
        ),
        "core_workload_insertion_retry_limit" => {
            OnlyDefault(&["0"], "dbsweep does not retry failed inserts; it counts them as errors and voids the timing")
        }
        "core_workload_insertion_retry_interval" => NoEffect("dbsweep does not retry failed inserts"),
        "table" => NoEffect("dbsweep keeps YCSB's table `usertable` in its own namespace (dbsweep_ tables, dbsweep: keys)"),
        "fieldnameprefix" => NoEffect("fields are named field0, field1, ... (YCSB's default prefix)"),
        "zeropadding" => NoEffect("keys are integers (YCSB's record numbers, hashed or ordered), not padded strings"),
        "readallfieldsbyname" => NoEffect("reads fetch whole records the way each system does it best"),
        "fieldlengthhistogram" => NoEffect("fieldlengthdistribution=histogram is not supported"),
        "db" => NoEffect("the systems under test are chosen with --target URL or --spawn"),
        "measurementtype"
        | "measurement.interval"
        | "measurement.trackjvm"
        | "hdrhistogram.percentiles"
        | "hdrhistogram.fileoutput"
        | "hdrhistogram.output.path"
        | "histogram.buckets"
        | "timeseries.granularity"
        | "measurement.raw.output_file"
        | "measurement.raw.no_summary"
        | "status.interval"
        | "exporter"
        | "exportfile" => NoEffect(MEASUREMENT),
        _ => return None,
    })
}

/// Reads `props` over `base`: every property applied, mapped, warned about or refused.
/// The error is one line naming the property, where it came from, and what to do.
pub fn apply(base: Workload, props: &Properties) -> Result<Applied, String> {
    let mut out = Applied { workload: base, client: ClientSettings::default(), data: DataSettings::default(), warnings: Vec::new() };
    let effective = props.effective();
    for p in effective.values() {
        match handling(&p.key) {
            Some(Handling::Applied) => apply_one(&mut out, p)?,
            Some(Handling::NoEffect(why)) => out.warnings.push(format!("{}: ignored ({why})", p.describe())),
            Some(Handling::OnlyDefault(allowed, why)) => {
                let recordcount = effective.get("recordcount").map(|r| r.value.as_str());
                let same_as_recordcount = p.key == "insertcount" && recordcount == Some(p.value.as_str());
                if !allowed.contains(&p.value.to_ascii_lowercase().as_str()) && !same_as_recordcount {
                    return Err(format!("{}: {why}; remove it", p.describe()));
                }
            }
            None if p.key.contains('.') => out.warnings.push(format!(
                "{}: ignored (not a CoreWorkload or client property; a YCSB binding's setting? dbsweep connects with --target URL or --spawn)",
                p.describe()
            )),
            None => out.warnings.push(format!("{}: ignored (not a YCSB CoreWorkload or client property dbsweep knows)", p.describe())),
        }
    }
    Ok(out)
}

fn apply_one(out: &mut Applied, p: &Property) -> Result<(), String> {
    let (key, value) = (p.key.as_str(), p.value.as_str());
    let bad = |what: &str| format!("{}: {what}", p.describe());
    let uint = || value.parse::<u64>().map_err(|_| bad("expected a non-negative integer"));
    let positive = || match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(bad("expected a positive integer")),
    };
    let prop = || match value.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(bad("expected a non-negative number")),
    };
    let fraction = || match value.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(bad("expected a number between 0 and 1")),
    };
    let origin = p.describe();
    let w = &mut out.workload;
    match key {
        "workload" if !matches!(value, "site.ycsb.workloads.CoreWorkload" | "com.yahoo.ycsb.workloads.CoreWorkload") => {
            return Err(bad("only YCSB's CoreWorkload is supported"));
        }
        "workload" => {}
        "recordcount" => out.client.recordcount = Some((positive()?, origin)),
        "operationcount" => out.client.operationcount = Some((positive()?, origin)),
        "threadcount" => out.client.threadcount = Some((positive()? as usize, origin)),
        "target" => out.client.target = Some((Some(prop()?).filter(|t| *t > 0.0), origin)),
        "maxexecutiontime" => out.client.maxexecutiontime = Some((positive()? as f64, origin)),
        "readproportion" => w.readproportion = prop()?,
        "updateproportion" => w.updateproportion = prop()?,
        "insertproportion" => w.insertproportion = prop()?,
        "scanproportion" => w.scanproportion = prop()?,
        "readmodifywriteproportion" => w.readmodifywriteproportion = prop()?,
        "requestdistribution" => {
            w.requestdistribution = match value {
                "uniform" => RequestDistribution::Uniform,
                "zipfian" => RequestDistribution::Zipfian,
                "latest" => RequestDistribution::Latest,
                "hotspot" => RequestDistribution::Hotspot,
                "exponential" => RequestDistribution::Exponential,
                "sequential" => RequestDistribution::Sequential,
                _ => return Err(bad("expected uniform, zipfian, latest, hotspot, exponential or sequential")),
            }
        }
        "minscanlength" => w.minscanlength = uint()?,
        "maxscanlength" => w.maxscanlength = uint()?,
        "scanlengthdistribution" => {
            w.scanlengthdistribution = match value {
                "uniform" => ScanLengthDistribution::Uniform,
                "zipfian" => ScanLengthDistribution::Zipfian,
                _ => return Err(bad("expected uniform or zipfian")),
            }
        }
        "fieldcount" => {
            w.fieldcount = positive()? as usize;
            out.data.fieldcount = Some((w.fieldcount, origin));
        }
        "fieldlength" => {
            w.fieldlength = positive()? as usize;
            out.data.fieldlength = Some((w.fieldlength, origin));
        }
        "minfieldlength" => {
            w.minfieldlength = positive()? as usize;
            out.data.minfieldlength = Some((w.minfieldlength, origin));
        }
        "fieldlengthdistribution" => {
            let lengths = FieldLengths::parse(value)
                .ok_or_else(|| bad("expected constant, uniform or zipfian (histogram files are not supported)"))?;
            w.fieldlengthdistribution = lengths;
            out.data.fieldlengthdistribution = Some((lengths, origin));
        }
        "insertorder" => {
            w.insertorder = InsertOrder::parse(value).ok_or_else(|| bad("expected hashed or ordered"))?;
            out.data.insertorder = Some((w.insertorder, origin));
        }
        "hotspotdatafraction" => w.hotspotdatafraction = fraction()?,
        "hotspotopnfraction" => w.hotspotopnfraction = fraction()?,
        "exponential.percentile" => match value.parse::<f64>() {
            Ok(v) if v > 0.0 && v < 100.0 => w.exponential_percentile = v,
            _ => return Err(bad("expected a number between 0 and 100 (exclusive)")),
        },
        "exponential.frac" => match value.parse::<f64>() {
            Ok(v) if v > 0.0 && v.is_finite() => w.exponential_frac = v,
            _ => return Err(bad("expected a positive number")),
        },
        other => unreachable!("{other} is listed as applied"),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// YCSB's `workloads/workloada`, as shipped.
    pub const WORKLOADA: &str = include_str!("../../tests/fixtures/ycsb/workloada");

    fn read(text: &str) -> Result<Applied, String> {
        apply(Workload::default(), &Properties::parse(text, "w").unwrap())
    }

    #[test]
    fn the_shipped_workload_a_is_core_a_with_its_counts() {
        let a = read(WORKLOADA).unwrap();
        assert_eq!(a.workload, Workload::core('a').unwrap());
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.client.recordcount.as_ref().map(|r| r.0), Some(1000));
        assert_eq!(a.client.operationcount.as_ref().map(|r| r.0), Some(1000));
        assert_eq!(a.client.recordcount.unwrap().1, "w line 9: recordcount=1000");
        assert!(looks_like_properties(WORKLOADA));
        assert!(!looks_like_properties("name = \"x\"\n[data]\nkind = \"ycsb\"\nrecordcount = 5\n"));
        assert!(!looks_like_properties("just some text\n"));
    }

    #[test]
    fn later_properties_override_earlier_ones_and_p_overrides_files() {
        let mut props = Properties::parse(WORKLOADA, "workloada").unwrap();
        props.extend(&Properties::parse("readproportion=0.9\nupdateproportion=0.1\n", "extra").unwrap());
        props.push(Properties::assignment("recordcount=5000").unwrap());
        props.push(Properties::assignment(" threadcount = 8 ").unwrap());
        props.push(Properties::assignment("target=0").unwrap());
        let a = apply(Workload::default(), &props).unwrap();
        assert_eq!((a.workload.readproportion, a.workload.updateproportion), (0.9, 0.1));
        assert_eq!(a.client.recordcount, Some((5000, "-p: recordcount=5000".into())));
        assert_eq!(a.client.threadcount.map(|t| t.0), Some(8));
        assert_eq!(a.client.target.map(|t| t.0), Some(None), "target=0 is unthrottled");
        assert!(Properties::assignment("recordcount").unwrap_err().contains("-p key=value"));
        assert!(Properties::assignment("=5").is_err());
    }

    #[test]
    fn the_cheap_properties_are_implemented() {
        let a = read(
            "fieldlengthdistribution=uniform\nminfieldlength=10\nfieldlength=50\nrequestdistribution=sequential\n\
             insertorder=ordered\nfieldcount=4\nmaxexecutiontime=30\ntarget=2000\ninsertstart=0\ninsertcount=1000\nrecordcount=1000\n",
        )
        .unwrap();
        assert!(a.warnings.is_empty(), "{:?}", a.warnings);
        assert_eq!(a.workload.fieldlengthdistribution, FieldLengths::Uniform);
        assert_eq!((a.workload.minfieldlength, a.workload.fieldlength, a.workload.fieldcount), (10, 50, 4));
        assert_eq!(a.workload.requestdistribution, RequestDistribution::Sequential);
        assert_eq!(a.data.insertorder.map(|o| o.0), Some(InsertOrder::Ordered));
        assert_eq!(a.data.fieldcount.map(|f| f.0), Some(4));
        assert_eq!(a.client.maxexecutiontime.map(|m| m.0), Some(30.0));
        assert_eq!(a.client.target.map(|t| t.0), Some(Some(2000.0)));
    }

    #[test]
    fn properties_that_change_nothing_here_are_warnings_naming_their_origin() {
        let a = read("measurementtype=timeseries\ntable=t\nredis.host=10.0.0.1\nsomethingelse=1\nzeropadding=8\n").unwrap();
        assert_eq!(a.warnings.len(), 5, "{:?}", a.warnings);
        assert!(a.warnings.iter().any(|w| w.starts_with("w line 1: measurementtype=timeseries: ignored (dbsweep records")));
        assert!(a.warnings.iter().any(|w| w.contains("redis.host") && w.contains("--target")));
        assert!(a.warnings.iter().any(|w| w.contains("somethingelse")));
    }

    #[test]
    fn properties_that_would_change_the_result_are_refused_in_one_line() {
        for (text, needle) in [
            ("readallfields=false", "whole records"),
            ("writeallfields=true", "write one field"),
            ("dataintegrity=true", "verify"),
            ("insertstart=500", "insertstart"),
            ("insertcount=10\nrecordcount=1000", "insertcount"),
            ("dotransactions=false", "load-only"),
            ("core_workload_insertion_retry_limit=3", "retry"),
            ("fieldlengthdistribution=histogram", "histogram"),
            ("workload=site.ycsb.workloads.TimeSeriesWorkload", "CoreWorkload"),
            ("requestdistribution=pareto", "sequential"),
            ("readproportion=abc", "readproportion=abc"),
            ("recordcount=-5", "recordcount"),
            ("recordcount=0", "positive"),
        ] {
            let e = read(text).unwrap_err();
            assert!(e.contains(needle) && e.starts_with("w line") && !e.contains('\n'), "{text}: {e}");
        }
        assert!(Properties::parse("just words", "f").unwrap_err().contains("f line 1"));
    }
}
