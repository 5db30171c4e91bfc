//! Embedding rootspan from Rust with nothing but the standard library: the C
//! ABI declared by hand (`extern "C"`, `#[repr(C)]` structs matching
//! rootspan/rootspan.h and rootspan/weights.h), a context, a checkpoint load,
//! one component found by id and its first elements read through a claim.
//!
//! usage: rootspan-rust-example CHECKPOINT COMPONENT_ID [SCHEMA]
//!
//! Build: rustc --edition 2021 -L <folder of librootspan.so> -l rootspan main.rs

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int, c_void};
use std::process::ExitCode;
use std::ptr;

// ---- the C ABI ------------------------------------------------------------

type Status = i32;
const ROOTSPAN_OK: Status = 0;
const ROOTSPAN_DTYPE_F32: i32 = 12;
const ROOTSPAN_CLAIM_SHARED: i32 = 0;
const ROOTSPAN_LOAD_MMAP: i32 = 0;
const ROOTSPAN_ENCODING_BLOCK_QUANTIZED: i32 = 1;

// Opaque handles: only ever behind pointers.
#[repr(C)]
struct RootspanContext {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanWeights {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanRoot {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanClaim {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanError {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanContextOptions {
    _opaque: [u8; 0],
}
#[repr(C)]
struct RootspanLoadProgress {
    _opaque: [u8; 0],
}

/// rootspan_load_options. struct_size tells the library which fields this
/// program knows; fields added later read as zero.
#[repr(C)]
struct LoadOptions {
    struct_size: usize,
    schema_path: *const c_char,
    provider: *const c_char,
    device: u32,
    strategy: i32,
    progress: Option<unsafe extern "C" fn(*mut c_void, *const RootspanLoadProgress) -> c_int>,
    progress_context: *mut c_void,
}

/// rootspan_component_info, up to `shape`.
#[repr(C)]
struct ComponentInfo {
    struct_size: usize,
    id: *const c_char,
    root: *mut RootspanRoot,
    byte_length: u64,
    segments: u64,
    zero_copy: i32,
    read_only: i32,
    dtype: i32,
    role: i32,
    encoding: i32,
    format_id: *const c_char,
    values_per_block: u64,
    bytes_per_block: u64,
    rank: u32,
    shape: *const u64,
}

extern "C" {
    fn rootspan_status_name(status: Status) -> *const c_char;
    fn rootspan_dtype_name(dtype: i32) -> *const c_char;
    fn rootspan_role_name(role: i32) -> *const c_char;
    fn rootspan_error_message(error: *const RootspanError) -> *const c_char;
    fn rootspan_error_free(error: *mut RootspanError);
    fn rootspan_context_create(
        options: *const RootspanContextOptions,
        context: *mut *mut RootspanContext,
        error: *mut *mut RootspanError,
    ) -> Status;
    fn rootspan_context_destroy(context: *mut RootspanContext, live_roots: *mut u64) -> Status;
    fn rootspan_weights_load(
        context: *mut RootspanContext,
        path: *const c_char,
        options: *const LoadOptions,
        weights: *mut *mut RootspanWeights,
        error: *mut *mut RootspanError,
    ) -> Status;
    fn rootspan_weights_find(weights: *const RootspanWeights, id: *const c_char, index: *mut usize) -> Status;
    fn rootspan_weights_component(weights: *const RootspanWeights, index: usize, info: *mut ComponentInfo) -> Status;
    fn rootspan_weights_free(weights: *mut RootspanWeights, error: *mut *mut RootspanError) -> Status;
    fn rootspan_claim_acquire(
        root: *mut RootspanRoot,
        offset: u64,
        length: u64,
        mode: i32,
        claim: *mut *mut RootspanClaim,
        error: *mut *mut RootspanError,
    ) -> Status;
    fn rootspan_claim_release(claim: *mut RootspanClaim, error: *mut *mut RootspanError) -> Status;
    fn rootspan_copy_to_host(
        claim: *mut RootspanClaim,
        offset: u64,
        destination: *mut c_void,
        length: u64,
        error: *mut *mut RootspanError,
    ) -> Status;
}

// ---- owners that free what the library handed out -------------------------

/// A static or library-owned C string as Rust text ("" for NULL).
fn text(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the library returns NUL-terminated strings that outlive this call.
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// Turns a status and its error object (freed here) into a message.
fn failure(what: &str, status: Status, error: *mut RootspanError) -> String {
    let name = text(unsafe { rootspan_status_name(status) });
    let message = if error.is_null() {
        String::from("(no error object)")
    } else {
        let m = text(unsafe { rootspan_error_message(error) });
        unsafe { rootspan_error_free(error) };
        m
    };
    format!("{what}: {name}: {message}")
}

struct Context(*mut RootspanContext);
impl Drop for Context {
    fn drop(&mut self) {
        let mut live = 0u64;
        unsafe { rootspan_context_destroy(self.0, &mut live) };
        if live != 0 {
            eprintln!("rootspan-rust-example: {live} roots were still live at the end");
        }
    }
}

struct Weights(*mut RootspanWeights);
impl Drop for Weights {
    fn drop(&mut self) {
        let mut error = ptr::null_mut();
        let status = unsafe { rootspan_weights_free(self.0, &mut error) };
        if status != ROOTSPAN_OK {
            eprintln!("rootspan-rust-example: {}", failure("rootspan_weights_free", status, error));
        }
    }
}

struct Claim(*mut RootspanClaim);
impl Drop for Claim {
    fn drop(&mut self) {
        unsafe { rootspan_claim_release(self.0, ptr::null_mut()) };
    }
}

// ---- the program -----------------------------------------------------------

/// How many leading elements (or bytes) are printed.
const FIRST: usize = 8;

fn c_string(what: &str, s: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte: {s:?}"))
}

fn run(checkpoint: &str, id: &str, schema: Option<&str>) -> Result<(), String> {
    let checkpoint = c_string("the checkpoint path", checkpoint)?;
    let wanted = c_string("the component id", id)?;
    let schema = schema.map(|s| c_string("the schema path", s)).transpose()?;

    let mut raw_context = ptr::null_mut();
    let mut error = ptr::null_mut();
    let status = unsafe { rootspan_context_create(ptr::null(), &mut raw_context, &mut error) };
    if status != ROOTSPAN_OK {
        return Err(failure("rootspan_context_create", status, error));
    }
    let context = Context(raw_context);

    let options = LoadOptions {
        struct_size: std::mem::size_of::<LoadOptions>(),
        schema_path: schema.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
        provider: ptr::null(), // "auto": the highest-priority provider with a device
        device: 0,
        strategy: ROOTSPAN_LOAD_MMAP,
        progress: None,
        progress_context: ptr::null_mut(),
    };
    let mut raw_weights = ptr::null_mut();
    let status =
        unsafe { rootspan_weights_load(context.0, checkpoint.as_ptr(), &options, &mut raw_weights, &mut error) };
    if status != ROOTSPAN_OK {
        return Err(failure("rootspan_weights_load", status, error));
    }
    let weights = Weights(raw_weights);

    let mut index = 0usize;
    let status = unsafe { rootspan_weights_find(weights.0, wanted.as_ptr(), &mut index) };
    if status != ROOTSPAN_OK {
        let name = text(unsafe { rootspan_status_name(status) });
        return Err(format!("rootspan_weights_find: {name}: no loaded component has the id \"{id}\""));
    }
    // SAFETY: all-zero is a valid ComponentInfo (NULL pointers, zero numbers).
    let mut info: ComponentInfo = unsafe { std::mem::zeroed() };
    info.struct_size = std::mem::size_of::<ComponentInfo>();
    let status = unsafe { rootspan_weights_component(weights.0, index, &mut info) };
    if status != ROOTSPAN_OK {
        return Err(failure("rootspan_weights_component", status, ptr::null_mut()));
    }
    let shape: &[u64] = if info.rank == 0 || info.shape.is_null() {
        &[]
    } else {
        // SAFETY: rank dimensions that live as long as the weights.
        unsafe { std::slice::from_raw_parts(info.shape, info.rank as usize) }
    };
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let dtype = text(unsafe { rootspan_dtype_name(info.dtype) });
    println!("component {}", text(info.id));
    println!("dtype {dtype}");
    println!("shape [{}]", dims.join(", "));
    println!("bytes {}", info.byte_length);
    println!("role {}", text(unsafe { rootspan_role_name(info.role) }));
    if info.encoding == ROOTSPAN_ENCODING_BLOCK_QUANTIZED {
        println!(
            "encoding block_quantized {} ({} values in {} bytes per block)",
            text(info.format_id),
            info.values_per_block,
            info.bytes_per_block
        );
    } else {
        println!("encoding dense");
    }
    println!("placement {}", if info.zero_copy != 0 { "zero-copy" } else { "copied" });

    // The first elements, copied out under a shared claim.
    let element = if info.dtype == ROOTSPAN_DTYPE_F32 { 4 } else { 1 };
    let length = std::cmp::min(info.byte_length, (FIRST * element) as u64);
    let mut bytes = vec![0u8; length as usize];
    if length > 0 {
        let mut raw_claim = ptr::null_mut();
        let status =
            unsafe { rootspan_claim_acquire(info.root, 0, length, ROOTSPAN_CLAIM_SHARED, &mut raw_claim, &mut error) };
        if status != ROOTSPAN_OK {
            return Err(failure("rootspan_claim_acquire", status, error));
        }
        let claim = Claim(raw_claim);
        let status =
            unsafe { rootspan_copy_to_host(claim.0, 0, bytes.as_mut_ptr().cast::<c_void>(), length, &mut error) };
        if status != ROOTSPAN_OK {
            return Err(failure("rootspan_copy_to_host", status, error));
        }
    }
    if info.dtype == ROOTSPAN_DTYPE_F32 {
        let values: Vec<String> = bytes
            .chunks_exact(4)
            .map(|b| format!("{:e}", f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
            .collect();
        println!("first f32 {}", values.join(" "));
    } else {
        let hex: Vec<String> = bytes.iter().map(|b| format!("{b:02x}")).collect();
        println!("first bytes {}", hex.join(" "));
    }
    drop(weights); // before the context, which owns the providers
    drop(context);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 && args.len() != 4 {
        eprintln!("usage: rootspan-rust-example CHECKPOINT COMPONENT_ID [SCHEMA]");
        return ExitCode::from(2);
    }
    match run(&args[1], &args[2], args.get(3).map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("rootspan-rust-example: {message}");
            ExitCode::FAILURE
        }
    }
}
