//! The NVTX ranges checked end to end without a GPU: a small NVTX tool, compiled from C against
//! the packages' headers, is injected (`NVTX_INJECTION64_PATH`, as Nsight does) into a child
//! process that opens the packages' NVTX library with the code's loader and pushes the ranges the
//! way a profiled program does; the tool writes down every call it receives, and the parent
//! compares that with what the ranges should be: the domain, the categories (one per layer),
//! the registered messages, the colours by phase, the attribute structure's version and size,
//! and the pushes and pops, paired.
//!
//! Like the header test, it runs for each directory of `PROF_NVIDIA_PACKAGES` and is required
//! with `PROF_REQUIRE_NVIDIA_HEADERS=1`.

use std::path::Path;
use std::process::Command;

use super::headers::{first, one, package_roots};
use super::nvtx::{self, Nvtx};
use crate::instrument::device::RangeInfo;

/// The tool: it takes over the domain functions and writes one line per call.
const TOOL: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <nvtx3/nvToolsExt.h>

static FILE *out;
#define DOMAIN ((nvtxDomainHandle_t)0x1000)

static nvtxDomainHandle_t create(const char *name) {
    fprintf(out, "domain %s\n", name);
    return DOMAIN;
}
static void category(nvtxDomainHandle_t d, uint32_t id, const char *name) {
    fprintf(out, "category %d %u %s\n", d == DOMAIN, id, name);
}
static nvtxStringHandle_t reg(nvtxDomainHandle_t d, const char *text) {
    fprintf(out, "register %d %s\n", d == DOMAIN, text);
    return (nvtxStringHandle_t)strdup(text);
}
static int push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
    const char *m = a->messageType == NVTX_MESSAGE_TYPE_ASCII ? a->message.ascii
        : a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? (const char *)a->message.registered
        : "?";
    fprintf(out, "push %d version=%u size=%u category=%u colorType=%d color=%08x "
        "payloadType=%d messageType=%d message=%s\n", d == DOMAIN, a->version, a->size,
        a->category, a->colorType, a->color, a->payloadType, a->messageType, m);
    return 0;
}
static int pop(nvtxDomainHandle_t d) {
    fprintf(out, "pop %d\n", d == DOMAIN);
    return 0;
}

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
    const NvtxExportTableCallbacks *callbacks =
        (const NvtxExportTableCallbacks *)get(NVTX_ETID_CALLBACKS);
    NvtxFunctionTable table = 0;
    unsigned int size = 0;
    out = fopen(getenv("PROF_NVTX_TOOL_OUT"), "w");
    if (!out || !callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size))
        return 0;
    setvbuf(out, NULL, _IONBF, 0);
    *table[NVTX_CBID_CORE2_DomainCreateA] = (NvtxFunctionPointer)create;
    *table[NVTX_CBID_CORE2_DomainNameCategoryA] = (NvtxFunctionPointer)category;
    *table[NVTX_CBID_CORE2_DomainRegisterStringA] = (NvtxFunctionPointer)reg;
    *table[NVTX_CBID_CORE2_DomainRangePushEx] = (NvtxFunctionPointer)push;
    *table[NVTX_CBID_CORE2_DomainRangePop] = (NvtxFunctionPointer)pop;
    return 1;
}
"#;

/// The ranges the child registers: two layers, three phases, one range without either.
fn ranges() -> Vec<RangeInfo> {
    let range = |name: &str, layer: Option<&str>, phase: Option<&str>| RangeInfo {
        name: name.to_owned(),
        layer: layer.map(str::to_owned),
        phase: phase.map(str::to_owned),
    };
    vec![
        range("emb_fwd", Some("emb"), Some("fwd")),
        range("mlp_bwd", Some("mlp"), Some("bwd")),
        range("sgd", Some("emb"), Some("update")),
        range("loose", None, None),
    ]
}

/// What the tool must have seen: `Nvtx::open`, `set_ranges`, then ranges 0 to 3 pushed and
/// popped in turn, and one push of an index never registered (the fallback range).
fn expected() -> String {
    let push = |category: u32, colour: u32, kind: i32, message: &str| {
        format!(
            "push 1 version=3 size={} category={category} colorType=1 color={colour:08x} \
             payloadType=0 messageType={kind} message={message}\npop 1\n",
            std::mem::size_of::<nvtx::nvtxEventAttributes_t>()
        )
    };
    let registered = nvtx::NVTX_MESSAGE_TYPE_REGISTERED;
    [
        "domain profiler-core\ncategory 1 1 emb\ncategory 1 2 mlp\n".to_owned(),
        "register 1 emb_fwd\nregister 1 mlp_bwd\nregister 1 sgd\nregister 1 loose\n".to_owned(),
        push(1, nvtx::FWD, registered, "emb_fwd"),
        push(2, nvtx::BWD, registered, "mlp_bwd"),
        push(1, nvtx::UPDATE, registered, "sgd"),
        push(0, nvtx::NO_PHASE, registered, "loose"),
        push(
            0,
            nvtx::NO_PHASE,
            nvtx::NVTX_MESSAGE_TYPE_ASCII,
            "profiler-core",
        ),
    ]
    .concat()
}

/// In the child process only (the parent sets `PROF_NVTX_TOOL_OUT`): the ranges, as the device
/// opens, registers, pushes and pops them.
#[test]
fn nvtx_child_pushes_the_ranges() {
    if std::env::var_os("PROF_NVTX_TOOL_OUT").is_none() {
        return;
    }
    let nvtx = Nvtx::open().expect("the NVTX library loads from LD_LIBRARY_PATH");
    nvtx.set_ranges(&ranges());
    for index in [0, 1, 2, 3, 99] {
        nvtx.push(index);
        nvtx.pop();
    }
}

/// Compiles the tool against one package directory and runs the child with it injected.
fn run_with_tool(root: &Path, work: &Path) -> Result<String, String> {
    let nvtx_h = one(root, "nvtx3/nvToolsExt.h");
    let include = nvtx_h
        .parent()
        .and_then(Path::parent)
        .expect("nvtx3/ has a parent");
    let named = |p: &Path| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| nvtx::LIBRARY_NAMES.contains(&n))
    };
    let lib = first(root, "NVTX library", &named);
    let source = work.join("tool.c");
    let tool = work.join("libtool.so");
    std::fs::write(&source, TOOL).map_err(|e| e.to_string())?;
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let built = Command::new(&cc)
        .args(["-shared", "-fPIC", "-o"])
        .arg(&tool)
        .arg("-I")
        .arg(include)
        .arg(&source)
        .output()
        .map_err(|e| format!("cannot run {cc}: {e}"))?;
    if !built.status.success() {
        return Err(String::from_utf8_lossy(&built.stderr).into_owned());
    }
    let seen = work.join("seen.txt");
    // The child test's path, from this module's (so that it follows the module if it moves).
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let child = Command::new(std::env::current_exe().expect("the test binary"))
        .args([
            "--exact",
            &format!("{module}::nvtx_child_pushes_the_ranges"),
        ])
        .env("LD_LIBRARY_PATH", lib.parent().expect("a parent"))
        .env("NVTX_INJECTION64_PATH", &tool)
        .env("PROF_NVTX_TOOL_OUT", &seen)
        .output()
        .map_err(|e| e.to_string())?;
    if !child.status.success() {
        return Err(format!(
            "the child failed:\n{}",
            String::from_utf8_lossy(&child.stdout)
        ));
    }
    std::fs::read_to_string(&seen).map_err(|e| format!("the tool wrote nothing: {e}"))
}

#[test]
fn nvtx_ranges_reach_an_injected_tool() {
    let Some(roots) = package_roots("nvtx_ranges_reach_an_injected_tool") else {
        return;
    };
    for (i, root) in roots.iter().enumerate() {
        let work = std::env::temp_dir().join(format!("prof-nvtx-{}-{i}", std::process::id()));
        std::fs::create_dir_all(&work).expect("a temporary directory");
        let seen = run_with_tool(root, &work);
        let _ = std::fs::remove_dir_all(&work);
        let seen = seen.unwrap_or_else(|e| panic!("{}: {e}", root.display()));
        assert_eq!(
            seen,
            expected(),
            "{}: what the NVTX tool saw",
            root.display()
        );
    }
}
