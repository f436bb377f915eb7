//! A throwaway PostgreSQL cluster on loopback for tests: `initdb` in a fresh temporary
//! directory, `pg_ctl start` on a free port, stopped and removed on drop. initdb refuses to run
//! as root, so as root the cluster belongs to `nobody` (run through `runuser`).
//!
//! Without PostgreSQL installed, [`PgCluster::start`] returns `None` and the caller skips —
//! unless `SKIPPER_REQUIRE_POSTGRES=1` (set by `.ci/run`, which installs it), when it panics.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

pub struct PgCluster {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
    running: bool,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// The directory holding `initdb` and `pg_ctl`: PATH first, then Debian's versioned directories.
fn find_bin() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file());
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|b| b.join("initdb").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free loopback port")
}

impl PgCluster {
    pub fn start() -> Option<Self> {
        let required = std::env::var("SKIPPER_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
        let Some(bin) = find_bin() else {
            assert!(!required, "SKIPPER_REQUIRE_POSTGRES=1 but initdb was not found");
            eprintln!("PostgreSQL not installed: skipping (set SKIPPER_REQUIRE_POSTGRES=1 to fail instead)");
            return None;
        };
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("skipper-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("cluster directory");
        if is_root() {
            let chowned = Command::new("chown").arg("nobody").arg(&dir).status().expect("chown");
            assert!(chowned.success(), "chown nobody {}", dir.display());
        }
        let mut cluster = Self { dir, bin, port: 0, running: false };
        let data = cluster.data();
        let init = cluster
            .command("initdb")
            .args(["-A", "trust", "-U", "postgres", "-N", "-E", "UTF8", "-D"])
            .arg(&data)
            .stdout(Stdio::null())
            .status()
            .expect("running initdb");
        assert!(init.success(), "initdb failed");
        cluster.start_again();
        Some(cluster)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn command(&self, tool: &str) -> Command {
        let program = self.bin.join(tool);
        if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(program);
            c
        } else {
            Command::new(program)
        }
    }

    /// Starts (again) on a fresh free port when never started, else on the same one.
    pub fn start_again(&mut self) {
        for _ in 0..5 {
            if self.port == 0 {
                self.port = free_port();
            }
            let options =
                format!("-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off", self.port, self.dir.display());
            let log = self.dir.join("server.log");
            let started = self
                .command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-o", &options, "-w", "-t", "30", "-l"])
                .arg(&log)
                .arg("start")
                .stdout(Stdio::null())
                .status()
                .expect("running pg_ctl");
            if started.success() {
                self.running = true;
                return;
            }
            // The port was taken between choosing and binding: try another.
            self.port = 0;
        }
        panic!("PostgreSQL did not start; see {}", self.dir.join("server.log").display());
    }

    /// Stops the server at once (as a crash would), keeping its data.
    pub fn stop(&mut self) {
        if self.running {
            let _ = self
                .command("pg_ctl")
                .arg("-D")
                .arg(self.data())
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .status();
            self.running = false;
        }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// A URL for database `postgres` as the superuser (trust authentication on loopback).
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs SQL with `psql` as the superuser (a test writing rows behind the nodes' backs).
    pub fn psql(&self, sql: &str) {
        // `psql` sits beside the real `initdb` (PATH may hold links to the server tools only).
        let real_bin = self.bin.join("initdb").canonicalize().ok().and_then(|p| p.parent().map(Path::to_path_buf));
        let psql = real_bin.unwrap_or_else(|| self.bin.clone()).join("psql");
        let out = self
            .command(&psql.to_string_lossy())
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-v", "ON_ERROR_STOP=1", "-p"])
            .arg(self.port.to_string())
            .args(["-c", sql])
            .output()
            .expect("running psql");
        assert!(out.status.success(), "psql failed: {}", String::from_utf8_lossy(&out.stderr));
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
