//! A throwaway one-node Slurm cluster for the workers' tests: Debian's slurm-wlm daemons
//! (slurmctld and slurmd, in the foreground as children of the test) with a config, state
//! and logs of their own in a temp dir and free ports, under the machine's munged (started
//! if it is not running). Stopped and removed when dropped. Needs root and
//! scripts/setup-slurm.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Slurm {
    dir: tempfile::TempDir,
    daemons: Vec<Child>,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn found(program: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {program}")).stdout(Stdio::null()).status().is_ok_and(|s| s.success())
}

impl Slurm {
    pub fn start() -> Slurm {
        for program in ["srun", "sinfo", "slurmctld", "slurmd", "munged"] {
            assert!(found(program), "{program} not found: run scripts/setup-slurm (as root) to install Debian's slurm-wlm and munge");
        }
        let munge_up = Command::new("pgrep").args(["-x", "munged"]).stdout(Stdio::null()).status().is_ok_and(|s| s.success());
        if !munge_up {
            let started = Command::new("service").args(["munge", "start"]).stdout(Stdio::null()).status().unwrap();
            assert!(started.success(), "munged did not start");
        }
        // The node as slurmd sees itself (its name and cores).
        let me = Command::new("slurmd").arg("-C").output().unwrap();
        let me = String::from_utf8_lossy(&me.stdout).into_owned();
        let field = |name: &str| {
            me.split_whitespace().find_map(|w| w.strip_prefix(&format!("{name}="))).unwrap_or_else(|| panic!("slurmd -C: {me}")).to_string()
        };
        let (node, cpus) = (field("NodeName"), field("CPUs"));
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        for sub in ["state", "spool"] {
            std::fs::create_dir(dir.path().join(sub)).unwrap();
        }
        let conf = format!(
            "ClusterName=dbsweeptest\nSlurmctldHost={node}\nSlurmUser=root\nSlurmdUser=root\nAuthType=auth/munge\n\
             StateSaveLocation={d}/state\nSlurmdSpoolDir={d}/spool\nSlurmctldPidFile={d}/slurmctld.pid\nSlurmdPidFile={d}/slurmd.pid\n\
             SlurmctldLogFile={d}/slurmctld.log\nSlurmdLogFile={d}/slurmd.log\nSlurmctldPort={}\nSlurmdPort={}\n\
             ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n\
             MpiDefault=none\nReturnToService=2\nNodeName={node} CPUs={cpus} RealMemory=1000 State=UNKNOWN\n\
             PartitionName=test Nodes={node} Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES\n",
            free_port(),
            free_port()
        );
        std::fs::write(dir.path().join("slurm.conf"), conf).unwrap();
        let mut slurm = Slurm { dir, daemons: Vec::new() };
        for daemon in ["slurmctld", "slurmd"] {
            let child = Command::new(daemon)
                .arg("-D")
                .env("SLURM_CONF", slurm.conf())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("{daemon}: {e}"));
            slurm.daemons.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let o = slurm.command("sinfo").args(["-h", "-o", "%t"]).output().unwrap();
            let state = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if state == "idle" {
                return slurm;
            }
            assert!(Instant::now() < deadline, "the Slurm node is not idle after 60 s ({state}): {}", slurm.logs());
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub fn conf(&self) -> PathBuf {
        self.dir.path().join("slurm.conf")
    }

    /// A Slurm command (`srun`, `sinfo`) for this cluster.
    pub fn command(&self, program: &str) -> Command {
        let mut c = Command::new(program);
        c.env("SLURM_CONF", self.conf());
        c
    }

    /// The daemons' logs, for a failed assertion.
    pub fn logs(&self) -> String {
        let read = |name: &str| std::fs::read_to_string(self.dir.path().join(name)).unwrap_or_default();
        let tail = |text: String| text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev().collect::<Vec<_>>().join("\n");
        format!("slurmctld.log:\n{}\nslurmd.log:\n{}", tail(read("slurmctld.log")), tail(read("slurmd.log")))
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        for child in &mut self.daemons {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
