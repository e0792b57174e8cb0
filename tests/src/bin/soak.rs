//! `soak`: the chaos soak of a manager with several controllers (what `cargo xtask soak` runs).

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use rein_tests::soak::{self, Length, SoakConfig};

#[derive(Parser, Debug)]
#[command(about = "Chaos soak: a rein manager with several controllers against rein-testenv")]
struct Args {
    /// How long the writer and the chaos driver run, in minutes.
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Seeds the writer's and the chaos driver's decisions.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Run exactly this many rounds instead (overrides --minutes).
    #[arg(long)]
    rounds: Option<usize>,
    /// Run the short configuration of the test suite (five rounds, a few hundred objects).
    #[arg(long)]
    short: bool,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    let duration = Duration::from_secs_f64((args.minutes * 60.0).max(1.0));
    let mut config = if args.short {
        SoakConfig::short(args.seed)
    } else {
        SoakConfig::long(args.seed, duration)
    };
    if let Some(rounds) = args.rounds {
        config.length = Length::Rounds(rounds.max(1));
    }
    config.progress = true;
    println!(
        "soak: seed {}, {:?}, churn {} per round, population {}",
        config.seed, config.length, config.churn, config.population
    );
    let outcome = soak::run(&config)?;
    println!("{outcome}");
    Ok(if outcome.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
