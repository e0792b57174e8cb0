//! `soak`: the chaos soak of a manager with several controllers (what `cargo xtask soak` runs).

use std::alloc::System;
use std::process::ExitCode;
use std::time::Duration;

use cap::Cap;
use clap::Parser;
use rein_tests::sharded::{self, soak::ShardedSoakConfig};
use rein_tests::soak::{self, Length, Placement, SoakConfig};

/// glibc's malloc, counting the bytes allocated and not yet freed: the live heap, which the
/// soak's memory check judges beside the resident set (which also counts pages the allocator
/// keeps after they were freed).
#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

fn live_heap_bytes() -> usize {
    ALLOCATOR.allocated()
}

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
    /// Stop and report once nothing (no write, round or check) finished for this many seconds
    /// (default 90).
    #[arg(long, value_name = "SECONDS")]
    stall_timeout: Option<u64>,
    /// Run the short configuration of the test suite (thirty rounds, about a thousand objects).
    #[arg(long)]
    short: bool,
    /// Run the API server in this process rather than in a child process (its memory then
    /// counts as the soak's).
    #[arg(long)]
    in_process_server: bool,
    /// Run the sharded soak instead: replicas of a sharded manager killed, stopped and
    /// replaced, and the API server held, while a writer churns ConfigMaps.
    #[arg(long)]
    sharded: bool,
    /// Be the API server's child process (the soak starts itself this way).
    #[arg(long, hide = true)]
    serve: bool,
}

fn main() -> anyhow::Result<ExitCode> {
    let args = Args::parse();
    if args.serve {
        soak::serve_child()?;
        return Ok(ExitCode::SUCCESS);
    }
    let duration = Duration::from_secs_f64((args.minutes * 60.0).max(1.0));
    if args.sharded {
        return sharded(&args, duration);
    }
    let mut config = if args.short {
        SoakConfig::short(args.seed)
    } else {
        SoakConfig::long(args.seed, duration)
    };
    if let Some(rounds) = args.rounds {
        config.length = Length::Rounds(rounds.max(1));
    }
    if let Some(secs) = args.stall_timeout {
        config.stall_timeout = Duration::from_secs(secs.max(1));
    }
    if !args.in_process_server {
        config.server = Placement::Child(std::env::current_exe()?);
    }
    config.progress = true;
    config.heap_bytes = Some(live_heap_bytes);
    println!(
        "soak: seed {}, {:?}, churn {} per round, population {}, API server {}, \
         MALLOC_ARENA_MAX={}",
        config.seed,
        config.length,
        config.churn,
        config.population,
        match config.server {
            Placement::InProcess => "in process",
            Placement::Child(_) => "in a child process",
        },
        std::env::var("MALLOC_ARENA_MAX").unwrap_or_else(|_| "unset".into())
    );
    let outcome = match soak::run(&config) {
        Ok(outcome) => outcome,
        Err(err) => {
            println!("SOAK|seed={}|error={}", config.seed, first_line(&err));
            return Err(err.into());
        }
    };
    println!("{outcome}");
    println!("SOAK|{}", outcome.summary());
    Ok(if outcome.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The sharded soak (`--sharded`).
fn sharded(args: &Args, duration: Duration) -> anyhow::Result<ExitCode> {
    let mut config = if args.short {
        ShardedSoakConfig::short(args.seed)
    } else {
        ShardedSoakConfig::long(args.seed, duration)
    };
    if let Some(rounds) = args.rounds {
        config.rounds = rounds.max(1);
    }
    println!(
        "soak: sharded, seed {}, {} rounds, {} replicas, churn {} per round",
        config.seed, config.rounds, config.replicas, config.churn
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(sharded::soak::run(&config)) {
        Ok(report) => {
            println!("SOAK|{report}");
            Ok(ExitCode::SUCCESS)
        }
        Err(problem) => {
            println!("{problem}");
            println!(
                "SOAK|seed={}|sharded|error={}",
                config.seed,
                first_line(&problem)
            );
            Ok(ExitCode::FAILURE)
        }
    }
}

fn first_line(err: &dyn std::fmt::Display) -> String {
    err.to_string()
        .lines()
        .next()
        .unwrap_or_default()
        .to_string()
}
