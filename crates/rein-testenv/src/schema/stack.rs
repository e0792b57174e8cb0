//! A large stack for the CEL parser and interpreter: cel-rust recurses deeply (a few dozen
//! nested parentheses overflow a 2 MiB stack in a debug build), and a stack overflow aborts
//! the whole process, so rules are compiled and evaluated on a scoped thread with room.

/// The stack of the CEL thread: reserved, not committed, so only what is used costs memory.
const CEL_STACK_BYTES: usize = 64 * 1024 * 1024;

/// Runs `f` on a thread with a large stack; `None` when the thread cannot be started or `f`
/// panics (the caller answers a typed error).
pub(crate) fn with_large_stack<R: Send>(f: impl FnOnce() -> R + Send) -> Option<R> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("rein-testenv-cel".to_string())
            .stack_size(CEL_STACK_BYTES)
            .spawn_scoped(scope, f)
            .ok()?
            .join()
            .ok()
    })
}
