//! The CPU samples of a profile (`cpu_samples` in `prof.json`, `PROF_CPU_SAMPLE`): per event
//! its top functions by self samples (`prof report`), folded stacks under each event's frame
//! (`prof flame --cpu`), and the pprof protobuf (`prof pprof`).
//!
//! **Events.** A sample belongs to the innermost annotated event open on its thread when it was
//! taken (the probe, not one occurrence of it), named `layer/phase/name` as in `prof flame`
//! (`-` for a missing layer or phase); samples outside every event belong to `(no event)`.
//!
//! **pprof.** `profile.proto` as `go tool pprof`, speedscope and Pyroscope read it: two sample
//! types (`samples`/`count`, `cpu`/`nanoseconds`: each sample stands for one period of CPU
//! time, `1e9 / hz` ns), one location and one function per function of the samples (a function
//! without a name is named by its address), and string labels `layer`, `phase`, `event` (the
//! probe's id), `thread` and `rank` on every sample taken inside an event (`rank` on all), and
//! `inherited` = `true` on the samples of a thread that opened no event, tagged with the event
//! of the thread that last opened or closed one (a pool's worker doing a layer's work).

use std::collections::HashMap;
use std::io::Write;

use profiler_format::filter::{Filter, Key};
use profiler_format::{CpuSamples, Profile, SampledStack};

/// The frame name of the event a stack was taken in: `layer/phase name`, a method's name with
/// its type (`Embedding::lookup`), as every table shows it.
pub fn event_label(stack: &SampledStack) -> String {
    match (&stack.event, &stack.name) {
        (None, _) => "(no event)".to_owned(),
        (Some(id), name) => format!(
            "{}/{}/{}",
            stack.layer.as_deref().unwrap_or("-"),
            stack.phase.as_deref().unwrap_or("-"),
            name.as_deref()
                .map_or("?".into(), |name| profiler_format::identity::display_name(
                    id, name
                ))
        ),
    }
}

/// A function's name, or its address when no symbol named it.
pub fn function_name(samples: &CpuSamples, index: u32) -> String {
    match samples.functions.get(index as usize) {
        Some(f) => f.name.clone().unwrap_or_else(|| f.addr.clone()),
        None => format!("(function {index})"),
    }
}

/// Whether `filter` (the `PROF_FILTER` language) keeps a stack's event: keys `name`, `id`,
/// `layer` and `phase` are known; a stack outside every event has none of them.
fn keeps(filter: Option<&Filter>, stack: &SampledStack) -> bool {
    filter.is_none_or(|f| {
        f.matches(|key| match key {
            Key::Name => stack.name.as_deref(),
            Key::Id => stack.event.as_deref(),
            Key::Layer => stack.layer.as_deref(),
            Key::Phase => stack.phase.as_deref(),
            _ => None,
        })
    })
}

/// One event's samples and the functions that took them.
#[derive(Clone, Debug, PartialEq)]
pub struct EventFunctions {
    /// The event, as [`event_label`] names it.
    pub event: String,
    /// Samples taken in it.
    pub samples: u64,
    /// Functions by self samples (the sampled function of each stack), most first: (name,
    /// samples).
    pub top: Vec<(String, u64)>,
}

/// Per event (most samples first), its `n` top functions by self samples.
pub fn top_functions(samples: &CpuSamples, n: usize) -> Vec<EventFunctions> {
    let mut events: HashMap<String, (u64, HashMap<String, u64>)> = HashMap::new();
    for stack in &samples.stacks {
        let entry = events.entry(event_label(stack)).or_default();
        entry.0 += stack.count;
        let leaf = stack
            .frames
            .first()
            .map_or_else(|| "(no frame)".to_owned(), |&f| function_name(samples, f));
        *entry.1.entry(leaf).or_insert(0) += stack.count;
    }
    let mut out: Vec<EventFunctions> = events
        .into_iter()
        .map(|(event, (total, functions))| {
            let mut top: Vec<(String, u64)> = functions.into_iter().collect();
            top.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            top.truncate(n);
            EventFunctions {
                event,
                samples: total,
                top,
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.samples
            .cmp(&a.samples)
            .then_with(|| a.event.cmp(&b.event))
    });
    out
}

/// The table `prof report` prints after its rows: per event, its top functions by self
/// samples with their share of the event's samples.
pub fn report_text(samples: &CpuSamples, n: usize) -> String {
    let mut out = format!(
        "CPU samples: {} at {} Hz on {} threads{}{}; top functions by self samples per event\n",
        samples.taken,
        samples.hz,
        samples.threads.len(),
        match samples.clock.as_deref() {
            Some("perf_task_clock") => ", by perf task-clock events".to_owned(),
            Some("posix_timer") => ", by POSIX CPU-time timers".to_owned(),
            Some(other) => format!(", by {}", crate::printable(other)),
            None => String::new(),
        },
        if samples.dropped > 0 {
            format!(" ({} dropped)", samples.dropped)
        } else {
            String::new()
        }
    );
    for event in top_functions(samples, n) {
        out.push_str(&format!(
            "  {}  {} samples\n",
            crate::printable(&event.event),
            event.samples
        ));
        for (name, count) in event.top {
            out.push_str(&format!(
                "    {:>5.1}%  {}\n",
                100.0 * count as f64 / event.samples.max(1) as f64,
                crate::printable(&name)
            ));
        }
    }
    out
}

/// A frame name the folded format can hold, as the events' flame graph makes them.
fn frame(name: &str) -> String {
    crate::flame::stacks::clean(name)
}

/// The folded stacks of the samples: `event;outermost;...;sampled count` per line, the event
/// as [`event_label`] names it; with `filter`, only the events it keeps. `None` when the
/// profile has no samples.
pub fn folded(profile: &Profile, filter: Option<&Filter>) -> Option<String> {
    let samples = profile.cpu_samples.as_ref()?;
    let mut lines: HashMap<String, u64> = HashMap::new();
    for stack in samples.stacks.iter().filter(|s| keeps(filter, s)) {
        let mut line = frame(&event_label(stack));
        for &f in stack.frames.iter().rev() {
            line.push(';');
            line.push_str(&frame(&function_name(samples, f)));
        }
        *lines.entry(line).or_insert(0) += stack.count;
    }
    let mut lines: Vec<(String, u64)> = lines.into_iter().collect();
    lines.sort();
    Some(
        lines
            .into_iter()
            .map(|(line, count)| format!("{line} {count}\n"))
            .collect(),
    )
}

/// The SVG flame graph of [`folded`] stacks (inferno's), widths in samples.
pub fn svg(folded: &str, title: &str) -> std::io::Result<String> {
    use inferno::flamegraph::{self, Options};
    let mut options = Options::default();
    // Made printable (and valid XML); inferno escapes the markup itself (escaping it here
    // too showed `R&amp;D`).
    options.title = crate::flame::svg::xml_text(title);
    options.count_name = "samples".to_owned();
    options.hash = true;
    let mut out = Vec::new();
    flamegraph::from_lines(&mut options, folded.lines(), &mut out)?;
    String::from_utf8(out).map_err(std::io::Error::other)
}

/// The messages of pprof's `profile.proto` that `prof pprof` writes (field numbers as there).
pub mod proto {
    /// `perftools.profiles.Profile`.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct PprofProfile {
        /// What each value of a sample is.
        #[prost(message, repeated, tag = "1")]
        pub sample_type: Vec<ValueType>,
        /// The samples.
        #[prost(message, repeated, tag = "2")]
        pub sample: Vec<Sample>,
        /// The code locations the samples name.
        #[prost(message, repeated, tag = "4")]
        pub location: Vec<Location>,
        /// The functions the locations are in.
        #[prost(message, repeated, tag = "5")]
        pub function: Vec<Function>,
        /// Every string, `""` first; the other messages hold indices into it.
        #[prost(string, repeated, tag = "6")]
        pub string_table: Vec<String>,
        /// What one period is.
        #[prost(message, optional, tag = "11")]
        pub period_type: Option<ValueType>,
        /// Nanoseconds of CPU time between samples.
        #[prost(int64, tag = "12")]
        pub period: i64,
    }

    /// `ValueType`: a type and a unit, as string indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueType {
        /// The type (`samples`, `cpu`).
        #[prost(int64, tag = "1")]
        pub r#type: i64,
        /// The unit (`count`, `nanoseconds`).
        #[prost(int64, tag = "2")]
        pub unit: i64,
    }

    /// `Sample`: a stack, its values and labels.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Sample {
        /// Location ids, the sampled one first.
        #[prost(uint64, repeated, tag = "1")]
        pub location_id: Vec<u64>,
        /// One value per sample type.
        #[prost(int64, repeated, tag = "2")]
        pub value: Vec<i64>,
        /// Its labels.
        #[prost(message, repeated, tag = "3")]
        pub label: Vec<Label>,
    }

    /// `Label`: a key and a string value, as string indices.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Label {
        /// The key.
        #[prost(int64, tag = "1")]
        pub key: i64,
        /// The value.
        #[prost(int64, tag = "2")]
        pub str: i64,
    }

    /// `Location`: an address and the function it is in.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Location {
        /// Its id (from 1).
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// The address, as the program ran.
        #[prost(uint64, tag = "3")]
        pub address: u64,
        /// The function (one line per location here).
        #[prost(message, repeated, tag = "4")]
        pub line: Vec<Line>,
    }

    /// `Line`: a function of a location.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Line {
        /// The function's id.
        #[prost(uint64, tag = "1")]
        pub function_id: u64,
    }

    /// `Function`: a name.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Function {
        /// Its id (from 1).
        #[prost(uint64, tag = "1")]
        pub id: u64,
        /// Its name.
        #[prost(int64, tag = "2")]
        pub name: i64,
        /// Its name as the system knows it (the same here).
        #[prost(int64, tag = "3")]
        pub system_name: i64,
    }
}

/// The string table being built.
#[derive(Default)]
struct Strings {
    table: Vec<String>,
    index: HashMap<String, i64>,
}

impl Strings {
    fn new() -> Strings {
        let mut s = Strings::default();
        s.get("");
        s
    }

    fn get(&mut self, text: &str) -> i64 {
        if let Some(&i) = self.index.get(text) {
            return i;
        }
        let i = self.table.len() as i64;
        self.table.push(text.to_owned());
        self.index.insert(text.to_owned(), i);
        i
    }
}

/// The pprof profile (uncompressed `profile.proto`) of a profile's samples; `filter` keeps the
/// events it matches. `None` when the profile has no samples.
pub fn pprof(profile: &Profile, filter: Option<&Filter>) -> Option<proto::PprofProfile> {
    let samples = profile.cpu_samples.as_ref()?;
    let mut strings = Strings::new();
    let period = 1_000_000_000 / i64::from(samples.hz.max(1));
    let sample_type = vec![
        proto::ValueType {
            r#type: strings.get("samples"),
            unit: strings.get("count"),
        },
        proto::ValueType {
            r#type: strings.get("cpu"),
            unit: strings.get("nanoseconds"),
        },
    ];
    let period_type = Some(proto::ValueType {
        r#type: strings.get("cpu"),
        unit: strings.get("nanoseconds"),
    });
    let function = samples
        .functions
        .iter()
        .enumerate()
        .map(|(i, _)| {
            let name = strings.get(&function_name(samples, i as u32));
            proto::Function {
                id: i as u64 + 1,
                name,
                system_name: name,
            }
        })
        .collect();
    let location = samples
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| proto::Location {
            id: i as u64 + 1,
            address: u64::from_str_radix(f.addr.trim_start_matches("0x"), 16).unwrap_or(0),
            line: vec![proto::Line {
                function_id: i as u64 + 1,
            }],
        })
        .collect();
    let rank = profile.run.rank.to_string();
    let sample = samples
        .stacks
        .iter()
        .filter(|s| keeps(filter, s))
        .map(|stack| {
            let mut label = Vec::new();
            let mut add = |key: &str, value: &str| {
                label.push(proto::Label {
                    key: strings.get(key),
                    str: strings.get(value),
                })
            };
            if let Some(layer) = &stack.layer {
                add("layer", layer);
            }
            if let Some(phase) = &stack.phase {
                add("phase", phase);
            }
            if let Some(event) = &stack.event {
                add("event", event);
            }
            if stack.inherited {
                add("inherited", "true");
            }
            let thread = samples.threads.get(stack.thread as usize);
            if let Some(thread) = thread {
                let name = thread
                    .name
                    .clone()
                    .unwrap_or_else(|| format!("tid {}", thread.tid));
                add("thread", &name);
            }
            add("rank", &rank);
            proto::Sample {
                location_id: stack.frames.iter().map(|&f| u64::from(f) + 1).collect(),
                // Counts are at most 2^53 (checked when read); their time saturates.
                value: vec![
                    stack.count as i64,
                    (stack.count as i64).saturating_mul(period),
                ],
                label,
            }
        })
        .collect();
    Some(proto::PprofProfile {
        sample_type,
        sample,
        location,
        function,
        string_table: strings.table,
        period_type,
        period,
    })
}

/// [`pprof`] encoded and gzipped, as `go tool pprof` reads it.
pub fn pprof_gz(profile: &proto::PprofProfile) -> Vec<u8> {
    use prost::Message;
    let raw = profile.encode_to_vec();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    // Writing into a Vec cannot fail.
    gz.write_all(&raw).expect("in memory");
    gz.finish().expect("in memory")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A method's samples are labelled with its type, as every table labels the event
    /// (`Embedding::lookup`); before, the CPU views said `lookup`.
    #[test]
    fn a_methods_samples_carry_its_type() {
        let stack = SampledStack {
            event: Some("dlrm::Embedding::lookup".to_owned()),
            name: Some("lookup".to_owned()),
            layer: Some("embedding".to_owned()),
            phase: Some("fwd".to_owned()),
            ..Default::default()
        };
        assert_eq!(event_label(&stack), "embedding/fwd/Embedding::lookup");
        let function = SampledStack {
            event: Some("dlrm::sgd".to_owned()),
            name: Some("sgd".to_owned()),
            ..stack.clone()
        };
        assert_eq!(event_label(&function), "embedding/fwd/sgd");
    }

    /// The CPU graph's title is escaped once (it showed `R&amp;D`) and made printable (a
    /// U+FFFF in the program's name made the SVG unreadable as XML); a function whose name
    /// ends in a number stays one frame.
    #[test]
    fn the_cpu_graphs_title_and_frames_survive_any_name() {
        let folded = format!(
            "{};{} 5\n",
            frame("(no event)"),
            frame("std::vector<int> 3")
        );
        assert_eq!(folded, "(no event);std::vector<int>\u{a0}3 5\n");
        let svg = svg(&folded, "CPU samples: R&D <v2>\u{ffff}").unwrap();
        assert!(
            svg.contains("CPU samples: R&amp;D &lt;v2&gt;\\u{ffff}"),
            "{svg}"
        );
        assert!(!svg.contains("&amp;amp;") && !svg.contains('\u{ffff}'));
        assert!(
            svg.contains("std::vector&lt;int&gt;\u{a0}3 (5 samples"),
            "{svg}"
        );
    }

    #[test]
    fn the_report_names_the_clock_that_sampled() {
        let mut samples = CpuSamples {
            hz: 1000,
            taken: 7,
            ..CpuSamples::default()
        };
        let head = |s: &CpuSamples| report_text(s, 5).lines().next().unwrap().to_owned();
        assert_eq!(
            head(&samples),
            "CPU samples: 7 at 1000 Hz on 0 threads; top functions by self samples per event"
        );
        samples.clock = Some("perf_task_clock".into());
        assert!(head(&samples).contains("0 threads, by perf task-clock events;"));
        samples.clock = Some("posix_timer".into());
        assert!(head(&samples).contains("0 threads, by POSIX CPU-time timers;"));
    }
}
