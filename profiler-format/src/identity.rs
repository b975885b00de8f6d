//! Which event a row is about. Every row of a report, a comparison, a drift, a scaling or a
//! merge names its event by the same five fields; they live here once, flattened into each row
//! (`#[serde(flatten)]`), so that JSON keeps them as top-level keys of the row.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::Event;

/// An event's identity as the rows show it: the probe (`id`, `name`, `layer`, `phase`) and the
/// run of it within an iteration (`occurrence`). Rows that stand for the whole iteration use
/// `id` and `name` `"iteration"`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Identity {
    /// The probe's unique id.
    pub id: String,
    /// The probe's name.
    pub name: String,
    /// The `layer` key, or `null`.
    pub layer: Option<String>,
    /// The `phase` key, or `null`.
    pub phase: Option<String>,
    /// Which run of the probe within an iteration (0 first; for a merged event, the first run
    /// it holds).
    pub occurrence: u32,
}

impl Identity {
    /// The identity of `event`.
    pub fn of(event: &Event) -> Identity {
        Identity {
            id: event.id.clone(),
            name: event.name.clone(),
            layer: event.layer.clone(),
            phase: event.phase.clone(),
            occurrence: event.occurrence,
        }
    }

    /// An identity with the same `id` and `name`, no layer or phase, occurrence 0: what rows
    /// that are not a probe's (the whole iteration, an event known only by its order) show.
    pub fn named(name: &str) -> Identity {
        Identity {
            id: name.to_owned(),
            name: name.to_owned(),
            layer: None,
            phase: None,
            occurrence: 0,
        }
    }

    /// The name as people read it: the probe's `name`, but for a method whose name is its
    /// function's, `Type::method` (`ConvBlock::forward`), so that the `forward` of five module
    /// types are five names. The type is read from `id`, the function's path: the segment
    /// before the name when it starts with an uppercase letter (a type, by Rust's naming
    /// convention; a module's starts with a lowercase one). `name` itself (prof.json's, the
    /// JSON rows', `PROF_FILTER`'s) stays the function's name.
    pub fn display_name(&self) -> Cow<'_, str> {
        display_name(&self.id, &self.name)
    }

    /// The label for people: `layer/phase name#occurrence` (the occurrence only when above 0,
    /// the group only when the event has a layer or a phase; the name as
    /// [`display_name`](Self::display_name) gives it).
    pub fn label(&self) -> String {
        let group: Vec<&str> = [self.layer.as_deref(), self.phase.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let name = if self.occurrence > 0 {
            format!("{}#{}", self.display_name(), self.occurrence)
        } else {
            self.display_name().into_owned()
        };
        if group.is_empty() {
            name
        } else {
            format!("{} {name}", group.join("/"))
        }
    }
}

/// [`Identity::display_name`] for an event known by its `id` and `name`: `Type::name` when
/// `id` is `…::Type::name` (or `…::Type::name.2`, a repeated id's suffix) and `Type` starts
/// with an uppercase ASCII letter; else `name`.
pub fn display_name<'a>(id: &str, name: &'a str) -> Cow<'a, str> {
    // A repeated id's `.2`, `.3`, ... suffix.
    let id = match id.rsplit_once('.') {
        Some((head, tail)) if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) => head,
        _ => id,
    };
    let Some(path) = id.strip_suffix(name).and_then(|p| p.strip_suffix("::")) else {
        return Cow::Borrowed(name);
    };
    let owner = path.rsplit("::").next().unwrap_or(path);
    if owner.starts_with(|c: char| c.is_ascii_uppercase()) {
        Cow::Owned(format!("{owner}::{name}"))
    } else {
        Cow::Borrowed(name)
    }
}

impl Event {
    /// This event's [`Identity`].
    pub fn identity(&self) -> Identity {
        Identity::of(self)
    }

    /// The name as people read it ([`Identity::display_name`]): `Type::method` for a method.
    pub fn display_name(&self) -> Cow<'_, str> {
        display_name(&self.id, &self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn identity(layer: Option<&str>, phase: Option<&str>, occurrence: u32) -> Identity {
        Identity {
            id: "m::f".to_owned(),
            name: "f".to_owned(),
            layer: layer.map(str::to_owned),
            phase: phase.map(str::to_owned),
            occurrence,
        }
    }

    #[test]
    fn labels() {
        assert_eq!(identity(None, None, 0).label(), "f");
        assert_eq!(identity(None, None, 2).label(), "f#2");
        assert_eq!(identity(Some("mlp"), None, 0).label(), "mlp f");
        assert_eq!(identity(None, Some("bwd"), 1).label(), "bwd f#1");
        assert_eq!(identity(Some("mlp"), Some("bwd"), 0).label(), "mlp/bwd f");
        assert_eq!(Identity::named("iteration").label(), "iteration");
    }

    #[test]
    fn methods_are_named_with_their_type() {
        let named = |id: &str, name: &str| display_name(id, name).into_owned();
        // A method: its type before it.
        assert_eq!(
            named("cnn::model::ConvBlock::forward", "forward"),
            "ConvBlock::forward"
        );
        assert_eq!(
            named("cnn::model::ConvBlock::forward.2", "forward"),
            "ConvBlock::forward"
        );
        // A free function, a module's: the name alone.
        assert_eq!(named("dlrm::mlp::forward", "forward"), "forward");
        assert_eq!(named("forward", "forward"), "forward");
        // A name given with `name = ...` (not the function's), a probe inside a method, a
        // runtime probe: the name as given.
        assert_eq!(named("cnn::ConvBlock::forward", "conv"), "conv");
        assert_eq!(named("cnn::ConvBlock::forward::im2col", "im2col"), "im2col");
        assert_eq!(named("Head", "Head"), "Head");
        // Only a whole segment counts.
        assert_eq!(named("cnn::ConvBlock::preforward", "forward"), "forward");
        let method = Identity {
            id: "cnn::ConvBlock::forward".to_owned(),
            name: "forward".to_owned(),
            layer: Some("conv".to_owned()),
            phase: Some("fwd".to_owned()),
            occurrence: 2,
        };
        assert_eq!(method.label(), "conv/fwd ConvBlock::forward#2");
    }

    #[test]
    fn flattened_keys_are_the_rows_own() {
        #[derive(Serialize, Deserialize)]
        struct Row {
            order: u32,
            #[serde(flatten)]
            identity: Identity,
            ratio: f64,
        }
        let row = Row {
            order: 3,
            identity: identity(Some("mlp"), None, 1),
            ratio: 1.5,
        };
        let json = serde_json::to_string(&row).unwrap();
        assert_eq!(
            json,
            r#"{"order":3,"id":"m::f","name":"f","layer":"mlp","phase":null,"occurrence":1,"ratio":1.5}"#
        );
        let back: Row = serde_json::from_str(&json).unwrap();
        assert_eq!(back.identity, row.identity);
    }
}
