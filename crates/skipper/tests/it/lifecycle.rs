//! Process lifecycle: a server an SDK started does not outlive the SDK's process.

use std::time::Duration;

use crate::harness::with_timeout;

/// Whether `pid` is still a live process (a zombie waiting to be reaped counts as gone).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next());
            state != Some("Z") && state != Some("X")
        }
        Err(_) => false,
    }
}

/// The SDK process dies without stopping the TCP server it spawned (a crash, `kill -9`): the
/// server notices its parent is gone and exits instead of lingering as an orphan.
#[tokio::test(flavor = "multi_thread")]
async fn a_tcp_server_exits_when_the_process_that_started_it_dies() {
    with_timeout(60, async {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("server.out");
        // `sh` plays the SDK: it starts the server in the background, reports its pid, waits.
        let script = r#""$0" --headless --port 0 --no-auto-update > "$1" 2>&1 & echo $!; exec sleep 600"#;
        let mut parent = tokio::process::Command::new("sh")
            .args(["-c", script, env!("CARGO_BIN_EXE_skipper"), &out.to_string_lossy()])
            .env("COPILOT_HOME", dir.path().join("home"))
            .env("HOME", dir.path())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdout = parent.stdout.take().unwrap();
        let mut line = Vec::new();
        loop {
            let mut byte = [0u8; 1];
            let n = tokio::io::AsyncReadExt::read(&mut stdout, &mut byte).await.unwrap();
            if n == 0 || byte[0] == b'\n' {
                break;
            }
            line.push(byte[0]);
        }
        let server: u32 = String::from_utf8_lossy(&line).trim().parse().expect("the server's pid");
        for _ in 0..300 {
            if std::fs::read_to_string(&out).unwrap_or_default().contains("listening on port") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(std::fs::read_to_string(&out).unwrap().contains("listening on port"), "the server started");
        assert!(alive(server));

        parent.kill().await.unwrap();
        let _ = parent.wait().await;
        let mut gone = false;
        for _ in 0..200 {
            if !alive(server) {
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        if !gone {
            let _ = std::process::Command::new("kill").args(["-9", &server.to_string()]).status();
        }
        assert!(gone, "the server outlived its parent: {}", std::fs::read_to_string(&out).unwrap_or_default());
    })
    .await;
}
