//! A token-bucket limiter like rate.NewLimiter(1, 3): wait() lets events 0, 1 and 2 through at once, then one per second, and reserve().delay() gives the same schedule (Go original: golang.org/x/time/rate Limiter.Wait and Reserve).
// smoke-args: --quick
// smoke-expect: wait: events 0, 1, 2 at once, then none early
// smoke-expect: reserve: event 5 delay 3 periods
// smoke-expect: token_bucket finished

use std::time::Instant;

use rein::workqueue::Limiter;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Quick mode runs the same schedule five times faster.
    let rate = if rein_examples::quick_mode() {
        5.0
    } else {
        1.0
    };

    let limiter = Limiter::new(rate, 3);
    let start = Instant::now();
    let mut on_time = true;
    for (event, minimum) in [0.0, 0.0, 0.0, 1.0, 2.0, 3.0].into_iter().enumerate() {
        limiter.wait().await;
        let elapsed = start.elapsed().as_secs_f64() * rate;
        // The first three pass at once; later ones never before their period.
        on_time &= if minimum == 0.0 {
            elapsed < 0.5
        } else {
            elapsed + 1e-3 >= minimum
        };
        println!(
            "wait: event {event} at {} periods",
            (elapsed + 0.05).floor()
        );
    }
    if on_time {
        println!("wait: events 0, 1, 2 at once, then none early");
    }

    let limiter = Limiter::new(rate, 3);
    for event in 0..6 {
        let reservation = limiter.reserve();
        let periods = (reservation.delay().as_secs_f64() * rate + 0.05).floor();
        println!("reserve: event {event} delay {periods} periods");
    }
    println!("allow now? {}", limiter.allow());
    println!("token_bucket finished");
    Ok(())
}
