//! candle-transformers' llama on the CPU, its `tracing` spans (`block`, `attn`, `mlp`,
//! `linear`, `rms-norm`, ...) turned into probes by profiler-core's bridge: a tiny
//! configuration with random weights (nothing to download), one forward pass over a prompt per
//! iteration. With `PROF_CPU_SAMPLE=HZ` the CPU samples are tagged with the span open on their
//! thread, so `prof pprof` and `go tool pprof -tagfocus event=attn` show candle's functions
//! under each span (`scripts/candle-pprof-check.sh`).
//!
//! ```sh
//! RUSTFLAGS="-C force-frame-pointers=yes" cargo run --release \
//!     --manifest-path integrations/candle/Cargo.toml --features llama --example llama -- --iters 200
//! ```

use std::process::ExitCode;

use candle_core::{DType, Device, Result, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::llama::{Cache, Config, Llama};

/// A llama of 4 blocks of 256 (8 heads of 32, 4 key-value heads), 688 in the MLPs, a vocabulary
/// of 1,000: about 3.4M parameters.
fn config() -> Config {
    Config {
        hidden_size: 256,
        intermediate_size: 688,
        vocab_size: 1000,
        num_hidden_layers: 4,
        num_attention_heads: 8,
        num_key_value_heads: 4,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 512,
        tie_word_embeddings: false,
    }
}

#[profiler_core::main]
fn main() -> ExitCode {
    let mut iters = 200u64;
    let mut seq = 128usize;
    let mut argv = std::env::args().skip(1);
    while let Some(arg) = argv.next() {
        if arg == "--sample-pool" {
            // rayon's worker threads (candle's softmax, and gemm's parallel matmuls, run
            // there) run no probe, so the sampler does not know them: register each. Their
            // samples carry no span: none is open on a worker thread.
            rayon::broadcast(|_| profiler_core::sample_this_thread());
            continue;
        }
        let value = argv
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .filter(|&v| v > 0);
        match (arg.as_str(), value) {
            ("--iters", Some(v)) => iters = v,
            ("--seq", Some(v)) if v <= 512 => seq = v as usize,
            _ => {
                eprintln!(
                    "llama: usage: llama [--iters N] [--seq N (1 to 512)] [--sample-pool]; `{arg}` is not one"
                );
                return ExitCode::from(2);
            }
        }
    }
    tracing::subscriber::set_global_default(profiler_core::TracingBridge::new())
        .expect("no other tracing subscriber is installed");
    match run(iters, seq) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("llama: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `iters` forward passes over a prompt of `seq` tokens, one per iteration.
fn run(iters: u64, seq: usize) -> Result<()> {
    let device = Device::Cpu;
    let cfg = config();
    let varmap = VarMap::new();
    let model = Llama::load(VarBuilder::from_varmap(&varmap, DType::F32, &device), &cfg)?;
    let params: usize = varmap.all_vars().iter().map(|v| v.elem_count()).sum();
    println!("llama: {params} parameters, prompt of {seq} tokens, {iters} iterations at most");
    let tokens: Vec<u32> = (0..seq as u32).map(|i| (i * 7919) % 1000).collect();
    let tokens = Tensor::new(tokens.as_slice(), &device)?.unsqueeze(0)?;
    let mut done = 0;
    for _ in 0..iters {
        let mut cache = Cache::new(false, DType::F32, &cfg, &device)?;
        let logits = model.forward(&tokens, 0, &mut cache)?;
        logits.sum_all()?.to_scalar::<f32>()?;
        profiler_core::step();
        done += 1;
        if profiler_core::finished() {
            break;
        }
    }
    println!("llama: {done} iterations");
    Ok(())
}
