//! The recipes in `recipes/`: the Slurm shard scripts run as a job array would run them
//! (the variables Slurm sets, then the merge script), the workers' script submitted with
//! `sbatch` to a real one-node Slurm the test starts, and the Kubernetes manifests checked
//! structurally with each shard pod's command line run as `--dry-run` (no Kubernetes
//! cluster runs here).

use crate::support;
use crate::support::root;

use std::path::Path;
use std::process::Command;
use support::{csv_rows, dbsweep, report};

/// Runs a recipe script with bash and `vars` in its environment.
fn script(name: &str, vars: &[(&str, &str)]) -> std::process::Output {
    script_with_args(name, vars, &[])
}

/// Runs a recipe script with bash, `vars` in its environment and `args` after it.
fn script_with_args(name: &str, vars: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("recipes/slurm").join(name)).args(args).env("DBSWEEP", support::BIN);
    for (k, v) in vars {
        cmd.env(k, v);
    }
    cmd.output().expect("run bash")
}

#[test]
fn slurm_array_scripts_run_the_shards_and_merge_them() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().to_str().unwrap();
    let args = "--target m=mock: --experiments get,insert --clients 1,2 --batch 7 --runs 1 --warmup 0 --rows 2000 --ops 300";
    // The same arguments three ways: split from DBSWEEP_ARGS, one per line in
    // DBSWEEP_ARGS_FILE (a comment and a blank line among them), and after the script.
    let file = tmp.path().join("args.txt");
    std::fs::write(&file, format!("# the study's flags\n\n{}\n", args.split(' ').collect::<Vec<_>>().join("\n"))).unwrap();
    for i in 0..3 {
        let index = i.to_string();
        let mut vars = vec![("SLURM_ARRAY_TASK_ID", index.as_str()), ("SLURM_ARRAY_TASK_COUNT", "3"), ("DBSWEEP_RESULTS", results)];
        let words: Vec<&str> = match i {
            0 => {
                vars.push(("DBSWEEP_ARGS", args));
                vec![]
            }
            1 => {
                vars.push(("DBSWEEP_ARGS_FILE", file.to_str().unwrap()));
                vec![]
            }
            _ => args.split(' ').collect(),
        };
        let o = script_with_args("shards.sbatch", &vars, &words);
        assert!(o.status.success(), "shard {i}: {}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(report(&tmp.path().join(format!("shard-{i}")))["shard"]["index"], i);
    }
    let o = script("merge.sbatch", &[("DBSWEEP_SHARDS", "3"), ("DBSWEEP_RESULTS", results)]);
    assert!(o.status.success(), "merge: {}", String::from_utf8_lossy(&o.stderr));
    let merged = tmp.path().join("merged");
    assert_eq!(report(&merged)["complete"], true);
    // Every shard's rows once; nodb and m, get and insert, clients 1 and 2 and batch 7:
    // 12 points of 300 ops.
    let rows = csv_rows(&merged);
    let shard_rows: usize = (0..3).map(|i| csv_rows(&tmp.path().join(format!("shard-{i}"))).len()).sum();
    assert_eq!(rows.len(), shard_rows);
    let points: Vec<_> = rows.iter().filter(|r| r["experiment"] == "get" || r["experiment"] == "insert").collect();
    assert_eq!(points.len(), 12);
    assert!(points.iter().all(|r| r["ops"] == "300"));

    // A shard that never wrote its report: merged without it, marked incomplete, exit 1.
    std::fs::remove_dir_all(tmp.path().join("shard-1")).unwrap();
    std::fs::remove_dir_all(&merged).unwrap();
    let o = script("merge.sbatch", &[("DBSWEEP_SHARDS", "3"), ("DBSWEEP_RESULTS", results)]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("shard 1/3 not merged"), "{stderr}");

    // Outside an array: a one-line reason, nothing run.
    let o = script("shards.sbatch", &[("DBSWEEP_RESULTS", results)]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--array"));
}

fn manifest(name: &str) -> serde_json::Value {
    let path = root().join("recipes/kubernetes").join(name);
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()
}

/// The results volume's claim and mount path of a pod template's first container.
fn results_volume(pod: &serde_json::Value) -> (String, String) {
    let container = &pod["containers"][0];
    let mount = &container["volumeMounts"][0];
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == mount["name"]).expect("mounted volume declared");
    (volume["persistentVolumeClaim"]["claimName"].as_str().unwrap().into(), mount["mountPath"].as_str().unwrap().into())
}

#[test]
fn kubernetes_indexed_job_and_merge_job_agree() {
    let list = manifest("shards-job.json");
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().unwrap();
    let claim = items.iter().find(|i| i["kind"] == "PersistentVolumeClaim").expect("a volume claim");
    assert_eq!(strings(&claim["spec"]["accessModes"]), ["ReadWriteMany"], "pods on several nodes write results");
    let job = items.iter().find(|i| i["kind"] == "Job").expect("the shards job");
    assert_eq!(job["apiVersion"], "batch/v1");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64().unwrap(), n, "every shard at once");
    assert_eq!(spec["backoffLimitPerIndex"], 0, "a retried shard would find its output directory used");
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let container = &pod["containers"][0];
    let env = container["env"].as_array().unwrap();
    let index = env.iter().find(|e| e["name"] == "JOB_COMPLETION_INDEX").expect("the completion index in the environment");
    assert_eq!(index["valueFrom"]["fieldRef"]["fieldPath"], "metadata.annotations['batch.kubernetes.io/job-completion-index']");
    let (claim_name, mount) = results_volume(pod);
    assert_eq!(claim_name, claim["metadata"]["name"].as_str().unwrap());

    let args = strings(&container["args"]);
    let after =
        |flag: &str| args.iter().position(|a| a == flag).map(|i| args[i + 1].clone()).unwrap_or_else(|| panic!("{flag} in {args:?}"));
    assert_eq!(after("--shard"), format!("$(JOB_COMPLETION_INDEX)/{n}"));
    let out = after("--out");
    assert!(out.starts_with(&format!("{mount}/")) && out.contains("$(JOB_COMPLETION_INDEX)"), "{out}");

    // Each pod's command line, as Kubernetes expands it, is a valid plan for its shard.
    let mut targets = Vec::new();
    for i in 0..n {
        let expanded: Vec<String> = args.iter().map(|a| a.replace("$(JOB_COMPLETION_INDEX)", &i.to_string())).collect();
        let mut argv: Vec<&str> = expanded.iter().map(String::as_str).collect();
        argv.push("--dry-run");
        assert_eq!(strings(&container["command"]), ["dbsweep"]);
        let o = dbsweep(&argv);
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(o.status.success(), "pod {i}: {}", String::from_utf8_lossy(&o.stderr));
        assert!(stdout.contains(&format!("shard {i}/{n}:")), "{stdout}");
        let line = stdout.lines().find(|l| l.starts_with("targets")).unwrap();
        targets.extend(line.split(": ").nth(1).unwrap().split(", ").map(str::to_string));
    }
    let whole: Vec<&str> = args.iter().map(String::as_str).take_while(|a| *a != "--shard").chain(["--dry-run"]).collect();
    let o = dbsweep(&whole);
    let stdout = String::from_utf8_lossy(&o.stdout);
    let line = stdout.lines().find(|l| l.starts_with("targets")).unwrap();
    for t in line.split(": ").nth(1).unwrap().split(", ") {
        assert!(targets.iter().any(|s| s == t), "target {t} is in some shard");
    }

    // The merge job reads every shard's directory from the same volume.
    let merge = manifest("merge-job.json");
    assert_eq!((merge["kind"].as_str(), merge["apiVersion"].as_str()), (Some("Job"), Some("batch/v1")));
    let pod = &merge["spec"]["template"]["spec"];
    assert_eq!(results_volume(pod), (claim_name, mount.clone()));
    // It merges the shards that wrote a report, as Slurm's merge script does.
    let container = &pod["containers"][0];
    assert_eq!(strings(&container["command"]), ["sh", "-c"]);
    let merge_script = strings(&container["args"]).remove(0);
    let indices: Vec<String> = (0..n).map(|i| i.to_string()).collect();
    assert!(merge_script.contains(&format!("for i in {};", indices.join(" "))), "every shard index: {merge_script}");
    assert!(merge_script.contains(&out.replace("$(JOB_COMPLETION_INDEX)", "$i")), "the shards' --out: {merge_script}");
    assert!(merge_script.contains(&format!("--out {mount}/merged")), "{merge_script}");
    merge_job_tolerates_a_missing_shard(&merge_script, &mount, n);
}

/// Runs the merge job's script on this machine (its volume a temp dir, dbsweep on `PATH`)
/// over `n` shards of a small plan: all of them merge completely; without shard 1 the rest
/// merge, marked incomplete, with exit 1 (as `merge.sbatch`).
fn merge_job_tolerates_a_missing_shard(merge_script: &str, mount: &str, n: u64) {
    let tmp = tempfile::tempdir().unwrap();
    let volume = tmp.path().to_str().unwrap();
    for i in 0..n {
        let shard = format!("{i}/{n}");
        let out = tmp.path().join(format!("shard-{i}"));
        let o = dbsweep(&[
            "run",
            "--target",
            "m=mock:",
            "-e",
            "get",
            "--clients",
            "1,2",
            "--runs",
            "1",
            "--warmup",
            "0",
            "--rows",
            "500",
            "--ops",
            "100",
            "--no-progress",
            "--shard",
            &shard,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "shard {shard}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let bin = Path::new(support::BIN).parent().unwrap().display().to_string();
    let path = format!("{bin}:{}", std::env::var("PATH").unwrap_or_default());
    let merge = || Command::new("sh").arg("-c").arg(merge_script.replace(mount, volume)).env("PATH", &path).output().unwrap();
    let o = merge();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(report(&tmp.path().join("merged"))["complete"], true);

    std::fs::remove_dir_all(tmp.path().join("shard-1")).unwrap();
    std::fs::remove_dir_all(tmp.path().join("merged")).unwrap();
    let o = merge();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("shard 1/{n} has no report")) && stderr.contains(&format!("shard 1/{n} not merged")), "{stderr}");
    assert_eq!(report(&tmp.path().join("merged"))["complete"], false);
}

/// The workers' sbatch script under a real one-node Slurm (`sbatch --wait`): its three
/// tasks are workers 0-2 of one run against a Redis every task reaches, and worker 0 writes
/// the one run directory.
#[test]
fn slurm_workers_script_runs_one_study_as_three_workers_under_sbatch() {
    let slurm = support::slurm::Slurm::start();
    let url = support::url(dbsweep::servers::ServerKind::Redis);
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("workers");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    // The script's own resource requests fit this node (however few its CPUs), and the
    // arguments come through `--export` in a file: the comma of `--clients 3,7` survives.
    let args = format!(
        "ycsb\n--target\nredis={url}\n-p\nrecordcount=500\n--experiments\nworkload-c\n--clients\n3,7\n--ops\n600\n--runs\n1\n--warmup\n0\n"
    );
    let args_file = tmp.path().join("args.txt");
    std::fs::write(&args_file, args).unwrap();
    let mut sbatch = slurm.command("sbatch");
    sbatch
        .current_dir(tmp.path())
        .args(["--wait", "--time=5", &format!("--export=ALL,DBSWEEP_ARGS_FILE={}", args_file.display())])
        .env("DBSWEEP", support::BIN)
        .env("DBSWEEP_RESULTS", &results)
        .env("DBSWEEP_COORDINATOR_PORT", port.to_string())
        .arg(root().join("recipes/slurm/workers.sbatch"));
    let o = waited(sbatch, &slurm);
    let log = std::fs::read_to_string(tmp.path().join("dbsweep-workers.log")).unwrap_or_default();
    assert!(o.status.success(), "sbatch: {}\n{log}\n{}", String::from_utf8_lossy(&o.stderr), slurm.logs());
    let r = report(&results);
    assert_eq!(r["complete"], true);
    let workers = r["workers"].as_array().unwrap();
    assert_eq!(workers.iter().map(|w| w["index"].as_u64().unwrap()).collect::<Vec<_>>(), [0, 1, 2], "{log}");
    assert!(workers.iter().all(|w| w["ops"].as_u64().unwrap() > 0), "each task ran one client: {workers:?}");
    let rows = csv_rows(&results);
    let c: Vec<_> = rows.iter().filter(|r| r["experiment"] == "workload-c" && r["target"] == "redis" && r["op"] == "mixed").collect();
    assert!(!c.is_empty() && c.iter().all(|r| r["ops"] == "600" && r["ok_ops"] == "600"), "{c:?}");
    let mut clients: Vec<&str> = c.iter().map(|r| r["clients"].as_str()).collect();
    clients.dedup();
    assert_eq!(clients, ["3", "7"], "both client counts of --clients 3,7");
}

/// The output of `sbatch --wait …`, or a failure naming why the job did not run when it is
/// still waiting after five minutes (a job that asks for more than the node has stays
/// pending, and `sbatch --wait` with it).
fn waited(mut sbatch: Command, slurm: &support::slurm::Slurm) -> std::process::Output {
    use std::process::Stdio;
    let mut child = sbatch.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let queue = slurm.command("squeue").args(["-h", "-o", "%i %T %r"]).output().unwrap();
            let _ = slurm.command("scancel").arg("--user=root").status();
            let _ = child.kill();
            panic!("the job is not done after 5 minutes: {}", String::from_utf8_lossy(&queue.stdout));
        }
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    child.wait_with_output().unwrap()
}

/// The shards' array and the merge under the real one-node Slurm, as the README submits
/// them, with the study's flags after the script (`--clients 1,3` keeps its comma): three
/// shards, then the merge once they ended, into one complete report.
#[test]
fn slurm_array_and_merge_run_under_sbatch_with_commas_in_the_arguments() {
    let slurm = support::slurm::Slurm::start();
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    let submit = |args: &[&str]| {
        let mut sbatch = slurm.command("sbatch");
        sbatch.current_dir(tmp.path()).args(["--time=5"]).args(args).env("DBSWEEP", support::BIN).env("DBSWEEP_RESULTS", &results);
        let o = waited(sbatch, &slurm);
        assert!(o.status.success(), "sbatch {args:?}: {}\n{}", String::from_utf8_lossy(&o.stderr), slurm.logs());
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    let shards = root().join("recipes/slurm/shards.sbatch");
    let merge = root().join("recipes/slurm/merge.sbatch");
    let jobid = submit(&[
        "--parsable",
        "--array=0-2",
        shards.to_str().unwrap(),
        "--target",
        "m=mock:",
        "-e",
        "get,insert",
        "--clients",
        "1,3",
        "--runs",
        "1",
        "--warmup",
        "0",
        "--rows",
        "500",
        "--ops",
        "120",
    ]);
    submit(&["--wait", &format!("--dependency=afterany:{jobid}"), "--export=ALL,DBSWEEP_SHARDS=3", merge.to_str().unwrap()]);
    let logs: String =
        (0..3).map(|i| std::fs::read_to_string(tmp.path().join(format!("dbsweep-shard-{i}.log"))).unwrap_or_default()).collect();
    let merged = results.join("merged");
    assert_eq!(report(&merged)["complete"], true, "{logs}");
    let rows = csv_rows(&merged);
    let mut clients: Vec<&str> =
        rows.iter().filter(|r| r["experiment"] == "get" && r["target"] == "m").map(|r| r["clients"].as_str()).collect();
    clients.sort();
    clients.dedup();
    assert_eq!(clients, ["1", "3"], "{logs}");
}

#[test]
fn kubernetes_workers_job_meets_at_a_headless_service_on_index_0() {
    let list = manifest("workers-job.json");
    let items = list["items"].as_array().unwrap();
    let service = items.iter().find(|i| i["kind"] == "Service").expect("the coordinator's service");
    let job = items.iter().find(|i| i["kind"] == "Job").expect("the workers job");
    assert_eq!(service["spec"]["clusterIP"], "None", "headless: its name resolves to the coordinator pod itself");
    let selector = &service["spec"]["selector"];
    assert_eq!(selector["job-name"], job["metadata"]["name"]);
    assert_eq!(selector["batch.kubernetes.io/job-completion-index"], "0", "worker 0 coordinates");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"].as_u64().unwrap(), n, "every worker at once: they meet at a barrier");
    let pod = &spec["template"]["spec"];
    let container = &pod["containers"][0];
    let env = container["env"].as_array().unwrap();
    let var = |name: &str| env.iter().find(|e| e["name"] == name).unwrap_or_else(|| panic!("{name} in the environment"));
    assert_eq!(
        var("JOB_COMPLETION_INDEX")["valueFrom"]["fieldRef"]["fieldPath"],
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    );
    let port = service["spec"]["ports"][0]["port"].as_u64().unwrap();
    assert_eq!(var("DBSWEEP_COORDINATOR")["value"], format!("{}:{port}", service["metadata"]["name"].as_str().unwrap()));
    // Workers that start on their own need the run's token, from a Secret (not the
    // manifest), and worker 0 listens on its pod's addresses at the Service's port.
    assert_eq!(var("DBSWEEP_WORKER_TOKEN")["valueFrom"]["secretKeyRef"]["name"], "dbsweep-worker-token");
    assert!(var("DBSWEEP_WORKER_TOKEN").get("value").is_none(), "no token in the manifest");
    assert_eq!(var("DBSWEEP_LISTEN")["value"], format!("0.0.0.0:{port}"));
    assert_eq!(container["ports"][0]["containerPort"].as_u64().unwrap(), port);
    let args = strings(&container["args"]);
    let after =
        |flag: &str| args.iter().position(|a| a == flag).map(|i| args[i + 1].clone()).unwrap_or_else(|| panic!("{flag} in {args:?}"));
    assert_eq!(after("--workers"), n.to_string());
    let (claim_name, mount) = results_volume(pod);
    assert!(after("--out").starts_with(&format!("{mount}/")));
    assert!(items.iter().any(|i| i["kind"] == "PersistentVolumeClaim" && i["metadata"]["name"] == claim_name.as_str()));
    assert!(args.iter().all(|a| a != "--spawn"), "spawned servers listen on the coordinator's loopback only");
}
