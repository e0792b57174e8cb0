//! The typed side of conversion: the `Hub` and `Convertible` traits and the `Conversion`
//! that registers one kind's hub and spokes.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::typed::WebhookObject;

/// The version every other version of a kind converts through (controller-runtime's
/// `conversion.Hub`): usually the storage version. Implement it on one `#[derive(CustomResource)]`
/// type per kind: `impl Hub for v2::Widget {}`.
pub trait Hub: WebhookObject {}

/// A spoke version of the kind whose hub is `H` (controller-runtime's
/// `conversion.Convertible`): it converts itself to the hub and builds itself from it.
/// Copy `metadata` across unchanged: the API server refuses a conversion that changes
/// anything in it but labels and annotations.
pub trait Convertible<H: Hub>: WebhookObject {
    /// This object in the hub version (`ConvertTo`).
    fn convert_to(&self) -> Result<H, ConversionError>;
    /// The object `hub` in this version (`ConvertFrom`).
    fn convert_from(hub: &H) -> Result<Self, ConversionError>
    where
        Self: Sized;
}

/// Why an object cannot be converted; its message is answered to the API server in a failed
/// ConversionReview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError {
    message: String,
}

impl ConversionError {
    /// A conversion failure with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message answered to the API server.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ConversionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConversionError {}

type ToHub<H> = Box<dyn Fn(&Value) -> Result<H, String> + Send + Sync>;
type FromHub<H> = Box<dyn Fn(&H) -> Result<Value, String> + Send + Sync>;

/// One spoke: its kind (to check against the hub's) and its two directions.
struct Spoke<H> {
    group_kind: (String, String),
    to_hub: ToHub<H>,
    from_hub: FromHub<H>,
}

/// The conversions of one kind: its hub `H` and the spokes registered with
/// [`spoke`](Self::spoke) (controller-runtime's hub-and-spoke converter). Register it with
/// [`WebhookServer::register_conversion`](crate::WebhookServer::register_conversion).
pub struct Conversion<H: Hub> {
    spokes: BTreeMap<String, Spoke<H>>,
    duplicates: Vec<String>,
}

impl<H: Hub> fmt::Debug for Conversion<H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Conversion")
            .field("hub", &H::api_version(&()))
            .field("spokes", &self.spokes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl<H: Hub> Conversion<H> {
    /// The conversions of `H`'s kind with `H` as the hub and no spokes yet.
    pub fn hub() -> Self {
        Self {
            spokes: BTreeMap::new(),
            duplicates: Vec::new(),
        }
    }

    /// Adds the spoke version `S`.
    pub fn spoke<S: Convertible<H>>(mut self) -> Self {
        let api_version = S::api_version(&()).into_owned();
        let spoke = Spoke {
            group_kind: (S::group(&()).into_owned(), S::kind(&()).into_owned()),
            to_hub: Box::new(|raw: &Value| decode::<S>(raw)?.convert_to().map_err(message)),
            from_hub: Box::new(|hub: &H| encode(&S::convert_from(hub).map_err(message)?)),
        };
        if self.spokes.insert(api_version.clone(), spoke).is_some() {
            self.duplicates.push(api_version);
        }
        self
    }

    /// The versions this conversion knows: the hub's and each spoke's, sorted.
    pub fn versions(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .spokes
            .keys()
            .map(|v| v.rsplit('/').next().unwrap_or(v).to_owned())
            .collect();
        out.push(H::version(&()).into_owned());
        out.sort();
        out
    }

    /// Checks the spokes (controller-runtime's `NewHubSpokeConverter` checks) and makes the
    /// kind's converter.
    pub(crate) fn build(self) -> Result<Arc<dyn KindConverter>, Error> {
        let kind = H::kind(&()).into_owned();
        let hub_gk = (H::group(&()).into_owned(), kind.clone());
        let failed = |why: String| Error::Conversion {
            kind: kind.clone(),
            why,
        };
        if let Some(version) = self.duplicates.first() {
            return Err(failed(format!(
                "duplicate spoke converter for version {version}"
            )));
        }
        for (version, spoke) in &self.spokes {
            if spoke.group_kind != hub_gk {
                return Err(failed(format!(
                    "spoke converter GroupKind {}.{} ({version}) does not match hub GroupKind {}.{}",
                    spoke.group_kind.1, spoke.group_kind.0, hub_gk.1, hub_gk.0
                )));
            }
            if *version == H::api_version(&()) {
                return Err(failed(format!(
                    "the hub version {version} is registered as a spoke too"
                )));
            }
        }
        Ok(Arc::new(self))
    }
}

/// One kind's conversions, untyped: what the ConversionReview handler calls.
pub(crate) trait KindConverter: Send + Sync + 'static {
    /// The kind's `(group, kind)`.
    fn group_kind(&self) -> (String, String);
    /// `object` (of this kind) in `desired` (an apiVersion), or why not.
    fn convert(&self, object: &Value, desired: &str) -> Result<Value, String>;
}

impl<H: Hub> KindConverter for Conversion<H> {
    fn group_kind(&self) -> (String, String) {
        (H::group(&()).into_owned(), H::kind(&()).into_owned())
    }

    fn convert(&self, object: &Value, desired: &str) -> Result<Value, String> {
        let source = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = H::kind(&());
        if source == desired {
            return Err(format!(
                "conversion is not allowed between same type {kind} {source}"
            ));
        }
        let hub_version = H::api_version(&());
        let not_convertible =
            || format!("failed to convert {kind} {source} to {desired}: not convertible");
        let hub: H = if source == hub_version {
            decode::<H>(object)?
        } else {
            let spoke = self.spokes.get(source).ok_or_else(not_convertible)?;
            (spoke.to_hub)(object).map_err(|e| {
                format!("{kind} {source} failed to convert to hub version {hub_version}: {e}")
            })?
        };
        if desired == hub_version {
            return encode(&hub);
        }
        let spoke = self.spokes.get(desired).ok_or_else(not_convertible)?;
        (spoke.from_hub)(&hub).map_err(|e| {
            format!("{kind} {desired} failed to convert from hub version {hub_version}: {e}")
        })
    }
}

fn message(err: ConversionError) -> String {
    err.message
}

fn decode<K: WebhookObject>(raw: &Value) -> Result<K, String> {
    serde_json::from_value(raw.clone()).map_err(|err| {
        format!(
            "decoding the object as {} {} failed: {err}",
            K::kind(&()),
            K::api_version(&())
        )
    })
}

fn encode<K: WebhookObject>(obj: &K) -> Result<Value, String> {
    let mut value = serde_json::to_value(obj)
        .map_err(|err| format!("encoding the {} failed: {err}", K::kind(&())))?;
    // Typed objects built by hand may lack their type fields; the API server needs them.
    if let Some(map) = value.as_object_mut() {
        map.insert(
            "apiVersion".into(),
            Value::String(K::api_version(&()).into_owned()),
        );
        map.insert("kind".into(), Value::String(K::kind(&()).into_owned()));
    }
    Ok(value)
}
