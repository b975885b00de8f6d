//! The column table names real fields: every column's JSON key is a key of the event rows that
//! `prof report --format json` writes (the serialized `EventRow`), so a renamed field shows here.

use profiler_format::Profile;
use profiler_tables::columns::EVENT_COLUMNS;
use profiler_tables::rows::{profile_rows, DeviceMemoryRow};

#[test]
fn every_json_key_of_the_column_table_is_a_field_of_an_event_row() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/summary/memory.json"
    );
    let profile: Profile = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let rows = profile_rows(&profile, 0.25, 0.05).events;
    let mut row = rows
        .iter()
        .find(|e| e.memory.is_some())
        .expect("a row with memory")
        .clone();
    // Device memory figures, as an event timed on a stream of a device that reports them has.
    row.device_memory = Some(DeviceMemoryRow {
        used_bytes: 1e9,
        change_bytes: 0.0,
    });
    let json = serde_json::to_value(&row).unwrap();
    for column in EVENT_COLUMNS {
        if let Some(key) = column.json {
            assert!(
                json.get(key).is_some(),
                "{key} is not a field of an event row: {json}"
            );
        }
    }
}
