#!/usr/bin/env python3
"""One vLLM engine, for the engine tests and the load bench: python vllm_run.py SPEC.json OUT.json

SPEC: {"model", "load_format", "extra" (model_loader_extra_config), "runner" ("generate" or "pooling"),
"prompts" (lists of token ids, for generate) or "sentences" (for pooling), "max_tokens", "logprobs",
"tensor_parallel_size", "dtype", "revision", "in_process" (the engine core and its worker in this process),
"time_load" (with in_process: print the time of the model runner's get_model), "memory" (each worker's resident memory after start-up), "reloads": [{"path", "options", "load_format":
"safetensors" to reload through vLLM's default loader instead}]}.
OUT: {"startup_seconds", "outputs" (tokens and logprobs, or embeddings), "memory": [[rank, VmRSS, VmHWM]],
"reloads": [{"outputs" or "error"}]}.
The engine runs with enforce_eager, gpu_memory_utilization 0.1 and a small max_model_len; vLLM spawns its
workers, hence the __main__ guard. A start-up that fails raises here (exit status 1) with vLLM's output.
"""
import json
import os
import sys
import time


def _reload(worker, path, options, load_format):
    """In each worker: reload the model's weights from path with the rootspan load format and options,
    through vLLM's own in-place reload; with load_format
    "safetensors", through vLLM's default loader instead. Returns the error text, or None."""
    import types
    from vllm.config.load import LoadConfig
    import rootspan.vllm
    try:
        runner = worker.model_runner
        config = types.SimpleNamespace(model=path, model_weights=None, revision=None, quantization=None)
        if load_format == "safetensors":
            from vllm.model_executor.model_loader.default_loader import DefaultModelLoader
            loader = DefaultModelLoader(LoadConfig(load_format="safetensors"))
            config = runner.model_config
        else:
            loader = rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan",
                                                             model_loader_extra_config=options))
        runner.reload_weights(weights_iterator=loader.get_all_weights(config, runner.get_model()))
        return None
    except Exception as error:  # the test compares the words
        return f"{type(error).__name__}: {error}"


def _memory(worker):
    """This worker's rank and resident memory: (rank, VmRSS, VmHWM) in bytes, from /proc/self/status."""
    fields = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) * 1024
    return getattr(worker, "rank", None), fields.get("VmRSS"), fields.get("VmHWM")


def outputs_of(llm, spec):
    if spec.get("runner", "generate") == "pooling":
        return [list(map(float, o.outputs.embedding)) for o in llm.embed(spec["sentences"])]
    from vllm import SamplingParams
    params = SamplingParams(temperature=0.0, max_tokens=spec.get("max_tokens", 8), logprobs=spec.get("logprobs", 2))
    results = llm.generate([{"prompt_token_ids": ids} for ids in spec["prompts"]], params, use_tqdm=False)
    out = []
    for result in results:
        completion = result.outputs[0]
        tokens = list(completion.token_ids)
        chosen = [float(step[token].logprob) for step, token in zip(completion.logprobs, tokens)]
        top = [sorted((int(t), float(lp.logprob)) for t, lp in step.items()) for step in completion.logprobs]
        out.append({"tokens": tokens, "logprobs": chosen, "top": top})
    return out


def main(spec_path, out_path):
    with open(spec_path) as f:
        spec = json.load(f)
    from vllm import LLM
    arguments = dict(model=spec["model"], load_format=spec.get("load_format", "auto"), enforce_eager=True,
                     gpu_memory_utilization=spec.get("gpu_memory_utilization", 0.1),
                     max_model_len=spec.get("max_model_len", 128), seed=0,
                     tensor_parallel_size=spec.get("tensor_parallel_size", 1),
                     model_loader_extra_config=spec.get("extra") or {})
    if spec.get("in_process"):  # the engine core and the worker in this process (run_engine sets the variable)
        arguments["distributed_executor_backend"] = "uni"
    if spec.get("dtype"):
        arguments["dtype"] = spec["dtype"]
    if spec.get("revision"):
        arguments["revision"] = spec["revision"]
    if spec.get("runner", "generate") == "pooling":
        arguments["runner"] = "pooling"
    else:
        arguments["skip_tokenizer_init"] = True
        arguments["max_num_seqs"] = 4
    if spec.get("time_load") and spec.get("in_process"):
        # The bench: the time of the model runner's get_model (the model built, its weights loaded and
        # processed) for every loader alike; vLLM's CPU runner does not log it. In this process only.
        import vllm.v1.worker.cpu_model_runner as cpu_runner
        get_model = cpu_runner.get_model

        def timed_get_model(*args, **kwargs):
            begin = time.perf_counter()
            model = get_model(*args, **kwargs)
            print(f"get_model took {time.perf_counter() - begin:.3f} seconds", flush=True)
            return model
        cpu_runner.get_model = timed_get_model
    started = time.monotonic()
    llm = LLM(**arguments)
    result = {"startup_seconds": time.monotonic() - started, "outputs": outputs_of(llm, spec), "reloads": []}
    if spec.get("memory"):
        result["memory"] = llm.collective_rpc(_memory)
    for reload in spec.get("reloads", []):
        errors = llm.collective_rpc(_reload, args=(reload["path"], reload.get("options") or {},
                                                   reload.get("load_format", "rootspan")))
        error = next((e for e in errors if e), None)
        entry = {"path": reload["path"], "options": reload.get("options") or {}}
        if error is not None:
            entry["error"] = error
        else:
            entry["outputs"] = outputs_of(llm, spec)
        result["reloads"].append(entry)
    with open(out_path, "w") as f:
        json.dump(result, f)
    sys.stdout.flush()
    sys.stderr.flush()
    # Done: no need to wait for vLLM's shutdown (seconds of grace periods); run_engine kills the rest.
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
