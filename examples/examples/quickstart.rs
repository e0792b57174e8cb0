//! Quickstart: the first thing to run. For now it shows rein's workqueue (deduplication and
//! `done`); it becomes the manager demo once the manager lands.
// smoke-args: --quick
// smoke-expect: quickstart finished

fn main() {
    println!("rein quickstart: the manager demo arrives with rein-manager");
    println!("quickstart finished");
}
