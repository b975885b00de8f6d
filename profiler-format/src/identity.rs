//! Which event a row is about. Every row of a report, a comparison, a drift, a scaling or a
//! merge names its event by the same five fields; they live here once, flattened into each row
//! (`#[serde(flatten)]`), so that JSON keeps them as top-level keys of the row.

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

    /// The label for people: `layer/phase name#occurrence` (the occurrence only when above 0,
    /// the group only when the event has a layer or a phase).
    pub fn label(&self) -> String {
        let group: Vec<&str> = [self.layer.as_deref(), self.phase.as_deref()]
            .into_iter()
            .flatten()
            .collect();
        let name = if self.occurrence > 0 {
            format!("{}#{}", self.name, self.occurrence)
        } else {
            self.name.clone()
        };
        if group.is_empty() {
            name
        } else {
            format!("{} {name}", group.join("/"))
        }
    }
}

impl Event {
    /// This event's [`Identity`].
    pub fn identity(&self) -> Identity {
        Identity::of(self)
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
