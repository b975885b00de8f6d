#!/usr/bin/env python3
"""Writes the subset of Perfetto's trace protos that `prof trace --format perfetto` uses.

The messages and fields come from the descriptor of Perfetto's own
`protos/perfetto/trace/perfetto_trace.proto`, as the `perfetto` package on PyPI ships it
(`perfetto.protos.perfetto.trace.perfetto_trace_pb2`), so names and numbers are the official
ones; only the fields below are kept, and each `oneof` is written as plain optional fields (the
same bytes on the wire). scripts/perfetto-protos.sh runs this, then prost-build.

    python3 scripts/perfetto_protos.py OUT.proto
"""

import sys

from google.protobuf import descriptor_pb2
from perfetto.protos.perfetto.trace import perfetto_trace_pb2
from importlib.metadata import version as package_version

# message -> fields kept (None: all), nested messages/enums kept by name.
KEEP = {
    "Trace": ["packet"],
    "TracePacket": [
        "timestamp", "timestamp_clock_id", "clock_snapshot", "track_event",
        "track_descriptor", "trusted_packet_sequence_id", "interned_data",
        "sequence_flags", "incremental_state_cleared", "trace_packet_defaults",
        "first_packet_on_sequence",
    ],
    "TracePacketDefaults": ["timestamp_clock_id", "track_event_defaults"],
    "TrackEventDefaults": ["track_uuid"],
    "ClockSnapshot": ["clocks", "primary_trace_clock"],
    "ClockSnapshot.Clock": ["clock_id", "timestamp", "is_incremental", "unit_multiplier_ns"],
    "TrackEvent": [
        "category_iids", "categories", "name_iid", "name", "type", "track_uuid",
        "counter_value", "double_counter_value", "debug_annotations",
    ],
    "TrackDescriptor": [
        "uuid", "parent_uuid", "name", "process", "thread", "counter",
        "child_ordering", "sibling_order_rank",
    ],
    "ProcessDescriptor": ["pid", "process_name", "process_labels"],
    "ThreadDescriptor": ["pid", "tid", "thread_name"],
    "CounterDescriptor": ["unit"],
    "InternedData": [
        "event_categories", "event_names", "debug_annotation_names",
        "debug_annotation_string_values",
    ],
    "EventCategory": ["iid", "name"],
    "EventName": ["iid", "name"],
    "DebugAnnotationName": ["iid", "name"],
    "InternedString": ["iid", "str"],
    "DebugAnnotation": [
        "name_iid", "name", "bool_value", "uint_value", "int_value", "double_value",
        "string_value", "string_value_iid",
    ],
}
ENUMS = {
    "TracePacket.SequenceFlags", "TrackEvent.Type", "CounterDescriptor.Unit",
    "TrackDescriptor.ChildTracksOrdering", "BuiltinClock",
}

T = descriptor_pb2.FieldDescriptorProto
SCALARS = {
    T.TYPE_DOUBLE: "double", T.TYPE_FLOAT: "float", T.TYPE_INT64: "int64",
    T.TYPE_UINT64: "uint64", T.TYPE_INT32: "int32", T.TYPE_FIXED64: "fixed64",
    T.TYPE_FIXED32: "fixed32", T.TYPE_BOOL: "bool", T.TYPE_STRING: "string",
    T.TYPE_BYTES: "bytes", T.TYPE_UINT32: "uint32", T.TYPE_SFIXED32: "sfixed32",
    T.TYPE_SFIXED64: "sfixed64", T.TYPE_SINT32: "sint32", T.TYPE_SINT64: "sint64",
}


def type_name(f):
    if f.type in (T.TYPE_MESSAGE, T.TYPE_ENUM):
        return f.type_name.removeprefix(".perfetto.protos.")
    return SCALARS[f.type]


def enum_text(e, indent):
    pad = "  " * indent
    out = [f"{pad}enum {e.name} {{"]
    out += [f"{pad}  {v.name} = {v.number};" for v in e.value]
    return out + [f"{pad}}}"]


def message_text(m, path, indent):
    pad = "  " * indent
    keep = KEEP[path]
    out = [f"{pad}message {m.name} {{"]
    for e in m.enum_type:
        if f"{path}.{e.name}" in ENUMS:
            out += enum_text(e, indent + 1)
    for n in m.nested_type:
        if f"{path}.{n.name}" in KEEP:
            out += message_text(n, f"{path}.{n.name}", indent + 1)
    fields = {f.name: f for f in m.field}
    for name in keep:
        f = fields[name]
        label = "repeated" if f.label == T.LABEL_REPEATED else "optional"
        out.append(f"{pad}  {label} {type_name(f)} {f.name} = {f.number};")
    return out + [f"{pad}}}"]


def main():
    fdp = descriptor_pb2.FileDescriptorProto()
    perfetto_trace_pb2.DESCRIPTOR.CopyToProto(fdp)
    version = package_version("perfetto")
    lines = [
        "// A subset of Perfetto's protos/perfetto/trace/perfetto_trace.proto: the messages and",
        "// fields `prof trace --format perfetto` writes, with their official names and numbers.",
        "//",
        "// Copyright (C) The Android Open Source Project. Licensed under the Apache License,",
        "// Version 2.0 (http://www.apache.org/licenses/LICENSE-2.0). Made by",
        "// scripts/perfetto_protos.py from the descriptor that the `perfetto` package of PyPI",
        f"// (version {version}) ships; each `oneof` is written as plain optional fields (the same",
        "// bytes on the wire). Do not edit.",
        "",
        'syntax = "proto2";',
        "",
        "package perfetto.protos;",
        "",
    ]
    for e in fdp.enum_type:
        if e.name in ENUMS:
            lines += enum_text(e, 0) + [""]
    for m in fdp.message_type:
        if m.name in KEEP:
            lines += message_text(m, m.name, 0) + [""]
    with open(sys.argv[1], "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")


if __name__ == "__main__":
    main()
