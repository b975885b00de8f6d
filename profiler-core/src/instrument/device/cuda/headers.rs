//! The CUDA backend's hand-written FFI checked against NVIDIA's real headers and libraries.
//!
//! For each directory of NVIDIA's PyPI packages named in `PROF_NVIDIA_PACKAGES` (colon-separated,
//! for instance `target/nvidia-cu12:target/nvidia-cu13`, each a `pip install --target`), this
//! test
//!
//! - writes a C file of `_Static_assert`s and typed function-pointer assignments from the Rust
//!   definitions (every CUPTI record field the code reads, in every kernel record version the
//!   headers have; every enum value and type size it uses; the signature of every CUPTI and NVTX
//!   function it loads and of CUPTI's two callback types; every driver function it checks for
//!   being declared) and compiles it against the packages' headers with the system C compiler
//!   (`$CC`, else `cc`), incompatible pointer types being errors;
//! - opens the packages' CUPTI and NVTX libraries with the same loader and tables the code uses
//!   and resolves every symbol.
//!
//! Without `PROF_NVIDIA_PACKAGES` it prints `SKIPPED` and passes, unless
//! `PROF_REQUIRE_NVIDIA_HEADERS=1` (as in CI), where it fails.

use std::fmt::Write as _;
use std::mem::{offset_of, size_of};
use std::path::{Path, PathBuf};
use std::process::Command;

use std::ffi::{c_char, c_int, c_uint, c_ulonglong};

use cudarc::driver::sys::{
    self, CUcontext, CUdevice, CUdevice_attribute, CUevent, CUresult, CUstream,
};

use super::cupti::{self, ExternalCorrelationRecord, KernelRecord};
use super::loader::Library;
use super::{driver, nvtx};

/// The size of a field, from an accessor (so that the field's type need not be named).
fn field_size<T, F>(_: fn(&T) -> &F) -> usize {
    size_of::<F>()
}

/// A Rust type, as `stringify!` spells it in an [`api!`](super::loader::api) table, in C.
fn c_type(rust: &str) -> String {
    let rust = rust.trim();
    if let Some(rest) = rust.strip_prefix("*mut") {
        return format!("{} *", c_type(rest));
    }
    if let Some(rest) = rust.strip_prefix("*const") {
        return format!("const {} *", c_type(rest));
    }
    match rust {
        "()" => "void",
        "u8" => "uint8_t",
        "u16" => "uint16_t",
        "u32" => "uint32_t",
        "u64" => "uint64_t",
        "i32" => "int32_t",
        "usize" => "size_t",
        "c_int" => "int",
        "c_uint" => "unsigned int",
        "c_ulonglong" => "unsigned long long",
        "f32" => "float",
        "c_char" => "char",
        other => other,
    }
    .to_owned()
}

/// Every file under `root` whose path satisfies `keep`.
pub(super) fn find(root: &Path, keep: &dyn Fn(&Path) -> bool, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            find(&path, keep, found);
        } else if keep(&path) {
            found.push(path);
        }
    }
}

/// The first file under `root` whose path ends with `tail`, or a panic saying what is missing.
pub(super) fn one(root: &Path, tail: &str) -> PathBuf {
    first(root, tail, &|p| p.ends_with(tail))
}

/// The first file under `root` that `keep` accepts, or a panic saying that `what` is missing.
pub(super) fn first(root: &Path, what: &str, keep: &dyn Fn(&Path) -> bool) -> PathBuf {
    let mut found = Vec::new();
    find(root, keep, &mut found);
    found.sort();
    found
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("{}: no {what} (is the package installed?)", root.display()))
}

/// `CHECK(offsetof(T, f) == N)` and the field's size, for each `(C field, offset, size)`.
fn check_fields(c: &mut String, ty: &str, fields: &[(&str, usize, usize)]) {
    for (field, offset, size) in fields {
        let _ = writeln!(c, "CHECK(offsetof({ty}, {field}) == {offset});");
        let _ = writeln!(c, "CHECK(sizeof((({ty} *)0)->{field}) == {size});");
    }
}

/// The kernel record fields the code reads, as `(C field, offset, size)`.
fn kernel_fields() -> Vec<(&'static str, usize, usize)> {
    let grid = offset_of!(KernelRecord, grid);
    let block = offset_of!(KernelRecord, block);
    let start = field_size(|r: &KernelRecord| &r.start);
    let name = field_size(|r: &KernelRecord| &r.name);
    vec![
        ("kind", offset_of!(KernelRecord, kind), 4),
        ("start", offset_of!(KernelRecord, start), start),
        ("end", offset_of!(KernelRecord, end), start),
        ("deviceId", offset_of!(KernelRecord, device_id), 4),
        ("contextId", offset_of!(KernelRecord, context_id), 4),
        ("streamId", offset_of!(KernelRecord, stream_id), 4),
        ("gridX", grid, 4),
        ("gridY", grid + 4, 4),
        ("gridZ", grid + 8, 4),
        ("blockX", block, 4),
        ("blockY", block + 4, 4),
        ("blockZ", block + 8, 4),
        (
            "correlationId",
            offset_of!(KernelRecord, correlation_id),
            field_size(|r: &KernelRecord| &r.correlation_id),
        ),
        ("name", offset_of!(KernelRecord, name), name),
    ]
}

/// Every kernel record version the headers under `cupti_include` declare, from 4 on (CUPTI
/// writes the newest it knows; the code reads the prefix they share).
fn kernel_versions(cupti_include: &Path) -> Vec<u32> {
    let mut versions = Vec::new();
    let mut headers = Vec::new();
    find(
        cupti_include,
        &|p| p.extension().is_some_and(|e| e == "h"),
        &mut headers,
    );
    for header in headers {
        let text = std::fs::read_to_string(&header).unwrap_or_default();
        for part in text.split("} CUpti_ActivityKernel").skip(1) {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            if part[digits.len()..].starts_with(';') {
                if let Ok(v) = digits.parse::<u32>() {
                    versions.push(v);
                }
            }
        }
    }
    versions.retain(|v| *v >= 4);
    versions.sort_unstable();
    versions.dedup();
    assert!(
        versions.len() >= 4,
        "{}: too few kernel records found: {versions:?}",
        cupti_include.display()
    );
    versions
}

/// CUPTI's enum values and type sizes as the Rust side has them.
fn cupti_values(c: &mut String) {
    for (name, value) in [
        ("CUPTI_SUCCESS", cupti::CUPTI_SUCCESS),
        ("CUPTI_ACTIVITY_KIND_KERNEL", cupti::KIND_KERNEL),
        ("CUPTI_ACTIVITY_KIND_DRIVER", cupti::KIND_DRIVER),
        ("CUPTI_ACTIVITY_KIND_RUNTIME", cupti::KIND_RUNTIME),
        (
            "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL",
            cupti::KIND_CONCURRENT_KERNEL,
        ),
        (
            "CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION",
            cupti::KIND_EXTERNAL_CORRELATION,
        ),
        (
            "CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0",
            cupti::EXTERNAL_CUSTOM0,
        ),
        ("CUPTI_ACTIVITY_FLAG_FLUSH_FORCED", cupti::FLUSH_FORCED),
    ] {
        let _ = writeln!(c, "CHECK({name} == {value});");
    }
    for (ty, size) in [
        ("CUptiResult", size_of::<cupti::CUptiResult>()),
        ("CUpti_ActivityKind", size_of::<cupti::CUpti_ActivityKind>()),
        (
            "CUpti_ExternalCorrelationKind",
            size_of::<cupti::CUpti_ExternalCorrelationKind>(),
        ),
        ("CUcontext", size_of::<CUcontext>()),
        ("CUstream", size_of::<CUstream>()),
        ("CUdevice", size_of::<CUdevice>()),
        ("CUresult", size_of::<CUresult>()),
        ("CUdevice_attribute", size_of::<CUdevice_attribute>()),
    ] {
        let _ = writeln!(c, "CHECK(sizeof({ty}) == {size});");
    }
}

/// The CUPTI part of the C program: records, enums, types, functions, callbacks.
fn cupti_checks(c: &mut String, cupti_include: &Path) {
    let versions = kernel_versions(cupti_include);
    let fields = kernel_fields();
    for v in &versions {
        let ty = format!("CUpti_ActivityKernel{v}");
        check_fields(c, &ty, &fields);
        let _ = writeln!(c, "CHECK(sizeof({ty}) >= {});", size_of::<KernelRecord>());
    }
    type E = ExternalCorrelationRecord;
    check_fields(
        c,
        "CUpti_ActivityExternalCorrelation",
        &[
            ("kind", offset_of!(E, kind), 4),
            ("externalKind", offset_of!(E, external_kind), 4),
            ("externalId", offset_of!(E, external_id), 8),
            ("correlationId", offset_of!(E, correlation_id), 4),
            ("reserved", offset_of!(E, reserved), 4),
        ],
    );
    let _ = writeln!(
        c,
        "CHECK(sizeof(CUpti_ActivityExternalCorrelation) == {});",
        size_of::<E>()
    );
    check_fields(c, "CUpti_Activity", &[("kind", 0, 4)]);
    let _ = writeln!(
        c,
        "CHECK(sizeof(CUpti_Activity) == {});",
        size_of::<cupti::CUpti_Activity>()
    );
    cupti_values(c);
}

/// The NVTX part: the attribute structure, its constants, the handle types.
fn nvtx_checks(c: &mut String) {
    type A = nvtx::nvtxEventAttributes_t;
    check_fields(
        c,
        "nvtxEventAttributes_t",
        &[
            ("version", offset_of!(A, version), 2),
            ("size", offset_of!(A, size), 2),
            ("category", offset_of!(A, category), 4),
            ("colorType", offset_of!(A, colorType), 4),
            ("color", offset_of!(A, color), 4),
            ("payloadType", offset_of!(A, payloadType), 4),
            ("reserved0", offset_of!(A, reserved0), 4),
            ("payload", offset_of!(A, payload), 8),
            ("messageType", offset_of!(A, messageType), 4),
            (
                "message",
                offset_of!(A, message),
                size_of::<nvtx::nvtxMessageValue_t>(),
            ),
        ],
    );
    for (name, value) in [
        ("sizeof(nvtxEventAttributes_t)", size_of::<A>()),
        ("NVTX_EVENT_ATTRIB_STRUCT_SIZE", size_of::<A>()),
        ("NVTX_VERSION", usize::from(nvtx::NVTX_VERSION)),
        ("NVTX_COLOR_ARGB", nvtx::NVTX_COLOR_ARGB as usize),
        ("NVTX_PAYLOAD_UNKNOWN", nvtx::NVTX_PAYLOAD_UNKNOWN as usize),
        ("NVTX_MESSAGE_UNKNOWN", nvtx::NVTX_MESSAGE_UNKNOWN as usize),
        (
            "NVTX_MESSAGE_TYPE_ASCII",
            nvtx::NVTX_MESSAGE_TYPE_ASCII as usize,
        ),
        (
            "NVTX_MESSAGE_TYPE_REGISTERED",
            nvtx::NVTX_MESSAGE_TYPE_REGISTERED as usize,
        ),
        (
            "sizeof(nvtxDomainHandle_t)",
            size_of::<nvtx::nvtxDomainHandle_t>(),
        ),
        (
            "sizeof(nvtxStringHandle_t)",
            size_of::<nvtx::nvtxStringHandle_t>(),
        ),
    ] {
        let _ = writeln!(c, "CHECK({name} == {value});");
    }
}

/// The driver part: every function checked for at start-up (for the bindings of this header's
/// CUDA version) is declared, and the result codes compared by value have `cudarc`'s values.
fn driver_checks(c: &mut String, cuda_h: &str) {
    let version: u32 = cuda_h
        .split("#define CUDA_VERSION")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("cuda.h defines CUDA_VERSION");
    // The code resolves either name with the type `driver::EventElapsed`; CUDA 13's headers
    // have only the first.
    let elapsed: Vec<(&str, &str, &[&str])> = driver::EVENT_ELAPSED
        .iter()
        .filter(|name| version < 13000 || name.ends_with("_v2"))
        .map(|name| {
            (
                *name,
                "CUresult",
                ["*mut f32", "CUevent", "CUevent"].as_slice(),
            )
        })
        .collect();
    let elapsed = elapsed.as_slice();
    c.push_str("static void driver_functions(void) {\n");
    typed_pointers(c, &[DRIVER_SIGNATURES, elapsed], false);
    c.push_str("}\n");
    for (name, value) in [
        ("CUDA_SUCCESS", CUresult::CUDA_SUCCESS),
        ("CUDA_ERROR_NOT_READY", CUresult::CUDA_ERROR_NOT_READY),
        (
            "CUDA_ERROR_INVALID_CONTEXT",
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
        ),
        ("CUDA_ERROR_NO_DEVICE", CUresult::CUDA_ERROR_NO_DEVICE),
    ] {
        let _ = writeln!(c, "CHECK({name} == {});", value as u32);
    }
    let _ = writeln!(
        c,
        "CHECK(CU_EVENT_DEFAULT == {});",
        sys::CUevent_flags::CU_EVENT_DEFAULT as u32
    );
}

/// Assigns each function (or a null of each callback type) to a pointer of the type the Rust
/// side declares: a mismatch is an incompatible-pointer-types error.
fn signature_checks(c: &mut String, tables: &[&[(&str, &str, &[&str])]], callbacks: bool) {
    c.push_str("static void signatures(void) {\n");
    typed_pointers(c, tables, callbacks);
    c.push_str("}\n");
}

/// One typed function-pointer initialization per entry of `tables` (see [`signature_checks`]).
fn typed_pointers(c: &mut String, tables: &[&[(&str, &str, &[&str])]], callbacks: bool) {
    for (i, (name, ret, args)) in tables.iter().flat_map(|t| t.iter()).enumerate() {
        let args: Vec<String> = args.iter().map(|a| c_type(a)).collect();
        let args = if args.is_empty() {
            "void".to_owned()
        } else {
            args.join(", ")
        };
        let value = if callbacks && name.starts_with("CUpti_") {
            format!("({name})0")
        } else {
            format!("&{name}")
        };
        let _ = writeln!(
            c,
            "    {} (*f{i})({args}) = {value}; (void)f{i};",
            c_type(ret)
        );
    }
}

/// Declares the driver functions the code calls through `cudarc` with the Rust types it calls
/// them with: each is coerced at compile time from `cudarc`'s own function (so the table is
/// what the code calls), and `DRIVER_SIGNATURES` spells them for the C compiler.
macro_rules! driver_signatures {
    ($( $name:ident: fn($($arg:ty),*) -> $ret:ty; )*) => {
        $( const _: unsafe fn($($arg),*) -> $ret = sys::$name; )*
        /// The driver functions as the code calls them: name, return type, argument types.
        const DRIVER_SIGNATURES: &[(&str, &str, &[&str])] =
            &[$( (stringify!($name), stringify!($ret), &[$(stringify!($arg)),*]) ),*];
    };
}

// The type the code resolves `cuEventElapsedTime(_v2)` with is the one checked in C above.
const _: fn(driver::EventElapsed) -> unsafe extern "C" fn(*mut f32, CUevent, CUevent) -> CUresult =
    |f| f;

driver_signatures! {
    cuInit: fn(c_uint) -> CUresult;
    cuDeviceGetCount: fn(*mut c_int) -> CUresult;
    cuDeviceGet: fn(*mut CUdevice, c_int) -> CUresult;
    cuDeviceGetAttribute: fn(*mut c_int, CUdevice_attribute, CUdevice) -> CUresult;
    cuDevicePrimaryCtxRetain: fn(*mut CUcontext, CUdevice) -> CUresult;
    cuDevicePrimaryCtxRelease_v2: fn(CUdevice) -> CUresult;
    cuCtxGetCurrent: fn(*mut CUcontext) -> CUresult;
    cuCtxSetCurrent: fn(CUcontext) -> CUresult;
    cuCtxSynchronize: fn() -> CUresult;
    cuEventCreate: fn(*mut CUevent, c_uint) -> CUresult;
    cuEventDestroy_v2: fn(CUevent) -> CUresult;
    cuEventRecord: fn(CUevent, CUstream) -> CUresult;
    cuEventQuery: fn(CUevent) -> CUresult;
    cuStreamGetCtx: fn(CUstream, *mut CUcontext) -> CUresult;
    cuGetErrorString: fn(CUresult, *mut *const c_char) -> CUresult;
    cuMemGetInfo_v2: fn(*mut usize, *mut usize) -> CUresult;
    cuStreamGetId: fn(CUstream, *mut c_ulonglong) -> CUresult;
    cuProfilerStart: fn() -> CUresult;
    cuProfilerStop: fn() -> CUresult;
}

/// The C program for one package directory.
fn program(cupti_include: &Path, cuda_h: &str) -> String {
    let mut c = String::from(
        "#include <stddef.h>\n#include <stdint.h>\n#include <cuda.h>\n#include <cudaProfiler.h>\n\
         #include <cupti.h>\n\
         #include <nvtx3/nvToolsExt.h>\n#define CHECK(x) _Static_assert(x, #x)\n",
    );
    cupti_checks(&mut c, cupti_include);
    nvtx_checks(&mut c);
    driver_checks(&mut c, cuda_h);
    signature_checks(
        &mut c,
        &[
            cupti::Api::SIGNATURES,
            cupti::StreamIdApi::SIGNATURES,
            cupti::DroppedApi::SIGNATURES,
            nvtx::Api::SIGNATURES,
            cupti::CALLBACKS,
        ],
        true,
    );
    c
}

/// Compiles the program against one package directory's headers; `Err` is the compiler's
/// complaint.
fn compile(root: &Path, out: &Path) -> Result<(), String> {
    let cuda_h = one(root, "cuda.h");
    let cupti_h = one(root, "cupti.h");
    let nvtx_h = one(root, "nvtx3/nvToolsExt.h");
    let nvtx_include = nvtx_h
        .parent()
        .and_then(Path::parent)
        .expect("nvtx3/ has a parent");
    let cupti_include = cupti_h.parent().expect("a parent");
    // cuProfilerStart/Stop are declared in cudaProfiler.h, a package of its own.
    let profiler_h = one(root, "cudaProfiler.h");
    // `crt/host_defines.h`, which the runtime's headers include, comes with nvcc's package.
    let crt = one(root, "crt/host_defines.h");
    let crt_include = crt
        .parent()
        .and_then(Path::parent)
        .expect("crt/ has a parent");
    let text = std::fs::read_to_string(&cuda_h).expect("cuda.h reads");
    let source = out.join("check.c");
    std::fs::write(&source, program(cupti_include, &text)).expect("write the C file");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let output = Command::new(&cc)
        .args([
            "-std=c11",
            "-fsyntax-only",
            "-Werror=incompatible-pointer-types",
        ])
        .arg("-Werror=int-conversion")
        .arg("-I")
        .arg(cuda_h.parent().expect("a parent"))
        .arg("-I")
        .arg(cupti_include)
        .arg("-I")
        .arg(nvtx_include)
        .arg("-I")
        .arg(crt_include)
        .arg("-I")
        .arg(profiler_h.parent().expect("a parent"))
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run the C compiler `{cc}`: {e}"));
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// Opens the package's CUPTI and NVTX libraries, by the names the code looks for, with the
/// code's loader, and resolves every entry point of its tables.
fn load(root: &Path) -> Result<(), String> {
    let named = |names: &'static [&'static str]| {
        move |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| names.contains(&n))
        }
    };
    let cupti_path = first(root, "CUPTI library", &named(cupti::LIBRARY_NAMES));
    let lib = Library::open("CUPTI", &[&cupti_path])?;
    cupti::Api::load(&lib)?;
    cupti::StreamIdApi::load(&lib)?;
    cupti::DroppedApi::load(&lib)?;
    let nvtx_path = first(root, "NVTX library", &named(nvtx::LIBRARY_NAMES));
    let lib = Library::open("NVTX", &[&nvtx_path])?;
    nvtx::Api::load(&lib)?;
    Ok(())
}

/// The package directories of `PROF_NVIDIA_PACKAGES`, or `None` (after a `SKIPPED` line naming
/// `test`) when there are none and `PROF_REQUIRE_NVIDIA_HEADERS=1` does not require them.
pub(super) fn package_roots(test: &str) -> Option<Vec<PathBuf>> {
    let packages = std::env::var("PROF_NVIDIA_PACKAGES").unwrap_or_default();
    let required = std::env::var("PROF_REQUIRE_NVIDIA_HEADERS").is_ok_and(|v| v == "1");
    let roots: Vec<PathBuf> = std::env::split_paths(&packages)
        .filter(|p| !p.as_os_str().is_empty())
        .collect();
    if roots.is_empty() {
        assert!(
            !required,
            "PROF_REQUIRE_NVIDIA_HEADERS=1 but PROF_NVIDIA_PACKAGES names no package directory"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED (set PROF_NVIDIA_PACKAGES): {test}"
        );
        return None;
    }
    Some(roots)
}

#[test]
fn ffi_matches_the_nvidia_headers_and_libraries() {
    let Some(roots) = package_roots("ffi_matches_the_nvidia_headers_and_libraries") else {
        return;
    };
    let mut failures = Vec::new();
    for (i, root) in roots.iter().enumerate() {
        assert!(root.is_dir(), "{}: not a directory", root.display());
        let out = std::env::temp_dir().join(format!("prof-headers-{}-{i}", std::process::id()));
        std::fs::create_dir_all(&out).expect("a temporary directory");
        if let Err(e) = compile(root, &out) {
            failures.push(format!("{}: the headers disagree:\n{e}", root.display()));
        }
        let _ = std::fs::remove_dir_all(&out);
        if let Err(e) = load(root) {
            failures.push(format!("{}: {e}", root.display()));
        }
        say!("checked against {}", root.display());
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_driver_function_checked_for_has_its_signature() {
    let mut named: Vec<&str> = DRIVER_SIGNATURES.iter().map(|(n, _, _)| *n).collect();
    named.sort_unstable();
    let mut wanted: Vec<&str> = driver::REQUIRED
        .iter()
        .chain(&driver::OPTIONAL)
        .copied()
        .collect();
    wanted.sort_unstable();
    assert_eq!(named, wanted);
}

#[test]
fn rust_types_are_spelled_in_c() {
    assert_eq!(c_type("*mut *mut u8"), "uint8_t * *");
    assert_eq!(c_type("*const c_char"), "const char *");
    assert_eq!(c_type("()"), "void");
    assert_eq!(c_type("CUcontext"), "CUcontext");
}
