//! `fake-model` binary for SDK conformance tests in other languages.
//!
//! Prints exactly one line, `FAKE_MODEL_URL=http://127.0.0.1:PORT`, to stdout once listening
//! (test harnesses parse it); all logging goes to stderr. Runs until killed or `POST /stop`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::Parser;
use fake_model::FakeModel;

#[derive(Parser, Debug)]
#[command(name = "fake-model", about = "Fake Copilot API / OpenAI-compatible model server")]
struct Args {
    /// Port to listen on (127.0.0.1); 0 picks a free port.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Snapshot YAML to replay.
    #[arg(long, requires = "workdir")]
    snapshot: Option<PathBuf>,
    /// The test's working directory (normalised to `${workdir}`).
    #[arg(long)]
    workdir: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let args = Args::parse();

    let fake = FakeModel::start_on(args.port).await?;
    match (&args.snapshot, &args.workdir) {
        (Some(snapshot), Some(workdir)) => fake.load_snapshot(snapshot, workdir)?,
        (None, Some(workdir)) => fake.set_workdir(workdir),
        _ => {}
    }

    let mut out = std::io::stdout().lock();
    writeln!(out, "FAKE_MODEL_URL={}", fake.url())?;
    out.flush()?;
    drop(out);

    tokio::select! {
        _ = fake.stopped() => tracing::info!("stop requested"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted"),
    }
    Ok(())
}
