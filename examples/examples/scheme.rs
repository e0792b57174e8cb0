//! A Scheme is two maps, GVK → type and type → GVK; register one group or every built-in group and list the known types (Go original: runtime.NewScheme + clientgoscheme.AddToScheme + scheme.AllKnownTypes).
// smoke-args: --quick
// smoke-expect: core/v1 only: Pod is v1, Kind=Pod
// smoke-expect: unknown kind example.com/v1, Kind=Gadget -> DynamicObject
// smoke-expect: scheme finished

use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;
use rein::scheme::builtins;
use rein::scheme::{GroupVersionKind, Scheme};

fn main() -> anyhow::Result<()> {
    // An empty scheme knows nothing: asking for a kind is a typed error, not a panic.
    let empty = Scheme::new();
    if let Err(e) = empty.gvk_for::<Pod>() {
        println!("empty scheme: {e}");
    }

    // One group: core/v1.
    let mut core = Scheme::new();
    builtins::core_v1::add_to_scheme(&mut core);
    println!("core/v1 only: Pod is {}", core.gvk_for::<Pod>()?);
    println!(
        "core/v1 only: {} kinds, Deployment registered: {}",
        core.all_known_types().len(),
        core.is_registered::<Deployment>()
    );

    // Every built-in group: what a manager uses when it is given no scheme.
    let scheme = Scheme::with_builtins();
    let all = scheme.all_known_types();
    println!("all built-in groups: {} kinds", all.len());
    let shown = if rein_examples::quick_mode() {
        8
    } else {
        all.len()
    };
    for info in all.iter().take(shown) {
        println!(
            "  {:<60} {:<30} {:?} -> {}",
            info.gvk().to_string(),
            info.plural(),
            info.scope(),
            info.type_name()
        );
    }
    if shown < all.len() {
        println!(
            "  … and {} more (run without --quick to see all)",
            all.len() - shown
        );
    }

    // GVK → REST mapping, statically for known kinds.
    let mapping = scheme.rest_mapping(&GroupVersionKind::of::<Deployment>())?;
    println!(
        "{} is served at {} ({:?})",
        mapping.gvk, mapping.gvr, mapping.scope
    );

    // A new object for a GVK: typed when known, dynamic otherwise.
    let pod = scheme.new_object(&GroupVersionKind::new("", "v1", "Pod"))?;
    println!(
        "new object for v1, Kind=Pod is a Pod: {}",
        pod.as_any().is::<Pod>()
    );
    let gadget = GroupVersionKind::new("example.com", "v1", "Gadget");
    let obj = scheme.new_object(&gadget)?;
    let kind = if obj.as_any().is::<kube_client::core::DynamicObject>() {
        "DynamicObject"
    } else {
        "typed"
    };
    println!("unknown kind {gadget} -> {kind}");
    println!("scheme finished");
    Ok(())
}
