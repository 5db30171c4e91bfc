"""The rootspan vLLM load format without starting an engine: the entry point, the options and their errors,
where a model is found, and the loader class fed a model that keeps every tensor it is given (each stays
valid after the iteration moved on) or misses a parameter. Needs vLLM (tools/test-vllm.sh); elsewhere it
skips, but under tools/test-vllm.sh a skip fails (ROOTSPAN_ENGINE_TESTS=required)."""
import importlib.metadata
import importlib.util
import os
import types

import pytest

import rootspan.vllm

REQUIRED = os.environ.get("ROOTSPAN_ENGINE_TESTS") == "required"
if importlib.util.find_spec("vllm") is None or importlib.util.find_spec("transformers") is None:
    if REQUIRED:
        raise ImportError("ROOTSPAN_ENGINE_TESTS=required, but vllm or transformers is not importable")
    pytest.skip("needs vllm and transformers (tools/test-vllm.sh)", allow_module_level=True)

import torch  # noqa: E402

from models import hf_cache, tiny_llama  # noqa: E402


@pytest.fixture(scope="module")
def llama(tmp_path_factory):
    return tiny_llama(str(tmp_path_factory.mktemp("llama")), seed=0)


def test_entry_point_registers_the_load_format():
    points = [p for p in importlib.metadata.entry_points(group="vllm.general_plugins") if p.name == "rootspan"]
    assert [p.value for p in points] == ["rootspan.vllm:register"], points
    points[0].load()()  # what vLLM does in each of its processes
    from vllm.config.load import LoadConfig
    from vllm.model_executor.model_loader import get_model_loader
    loader = get_model_loader(LoadConfig(load_format="rootspan", model_loader_extra_config={"strategy": "read"}))
    assert type(loader).__name__ == "RootspanModelLoader"
    assert loader.options.strategy == "read"


def test_import_rootspan_does_not_import_vllm():
    import subprocess
    import sys
    code = "import sys, rootspan, rootspan.vllm; print('vllm' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"], out


@pytest.mark.parametrize("extra, words", [
    ({"stratgy": "read"}, "unknown option 'stratgy' in model_loader_extra_config; valid options: strategy, "
                          "verify, digests, tensors, populate"),
    ({"strategy": "fast"}, "model_loader_extra_config['strategy'] must be one of 'auto', 'mmap', 'read', "
                           "'direct'; got 'fast' (str)"),
    ({"verify": "yes"}, "model_loader_extra_config['verify'] must be a bool; got 'yes' (str)"),
    ({"tensors": "model.*"}, "model_loader_extra_config['tensors'] must be a list of shell-style patterns"),
    ({"tensors": []}, "at least one, none empty; got []"),
    ({"digests": 3}, "model_loader_extra_config['digests'] must be the path of a digest manifest"),
    ({"populate": True, "strategy": "read"}, "['populate'] applies to mapped loads (strategy 'mmap' or 'auto'); "
                                             "got strategy 'read'"),
    ({"signature": "model.sig"}, "model_loader_extra_config['signature'] ('model.sig') needs the key it was "
                                 "signed with ('public_key': a PEM file) or the certificates to trust"),
    ({"public_key": "key.pem"}, "model_loader_extra_config['public_key'] checks a model signature, but "
                                "'signature' (the path of the signature bundle) is not given"),
    ({"certificate_chain": ["ca.pem"]}, "model_loader_extra_config['certificate_chain'] checks a model signature"),
    ({"ignore_unsigned_files": True}, "model_loader_extra_config['ignore_unsigned_files'] checks a model "
                                      "signature"),
    ({"signature": 7, "public_key": "key.pem"}, "model_loader_extra_config['signature'] must be the path of a "
                                                "model signature bundle (a string); got 7 (int)"),
    ({"signature": "model.sig", "public_key": ""}, "model_loader_extra_config['public_key'] must be the path of "
                                                   "a PEM public key (a string); got '' (str)"),
    ({"signature": "model.sig", "certificate_chain": []}, "model_loader_extra_config['certificate_chain'] must be "
                                                          "the path of a PEM certificate file, or a list of them"),
    ({"signature": "model.sig", "certificate_chain": ["ca.pem", 3]}, "got ['ca.pem', 3] (list)"),
    ({"signature": "model.sig", "public_key": "key.pem", "ignore_unsigned_files": "yes"},
     "model_loader_extra_config['ignore_unsigned_files'] must be a bool; got 'yes' (str)"),
    ({"signatures": "model.sig"}, "unknown option 'signatures' in model_loader_extra_config; valid options: "
                                  "strategy, verify, digests, tensors, populate, allow_missing, signature, "
                                  "public_key, certificate_chain, ignore_unsigned_files"),
])
def test_bad_options_are_refused_by_name(extra, words):
    from vllm.config.load import LoadConfig
    with pytest.raises(ValueError) as error:
        rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan", model_loader_extra_config=extra))
    assert words in str(error.value)


def test_options_reach_the_load():
    options = rootspan.vllm.parse_options({"strategy": "mmap", "tensors": ["model.*"], "digests": "d.json",
                                           "populate": True})
    assert options.load_arguments() == {"strategy": "mmap", "verify": True, "digests": "d.json",
                                        "tensors": ["model.*"], "populate": True}


def test_signature_options_reach_the_load():
    options = rootspan.vllm.parse_options({"signature": "m.sig", "public_key": "k.pem", "strategy": "read"})
    assert options.load_arguments() == {"strategy": "read", "verify": False, "digests": None, "tensors": None,
                                        "populate": False, "signature": "m.sig", "public_key": "k.pem",
                                        "certificate_chain": None, "ignore_unsigned_files": False}
    options = rootspan.vllm.parse_options({"signature": "m.sig", "certificate_chain": "ca.pem",
                                           "ignore_unsigned_files": True})
    arguments = options.load_arguments()
    assert (arguments["certificate_chain"], arguments["ignore_unsigned_files"], arguments["public_key"]) == \
        (["ca.pem"], True, None), arguments


def _sign_copy(llama, tmp_path):
    """A copy of the model, its P-256 key and public key, and its signature (beside the folder)."""
    import shutil
    import subprocess
    model = str(tmp_path / "model")
    shutil.copytree(llama, model)
    key, public = str(tmp_path / "key.pem"), str(tmp_path / "public.pem")
    subprocess.run(["openssl", "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", key], check=True)
    subprocess.run(["openssl", "ec", "-in", key, "-pubout", "-out", public], check=True, capture_output=True)
    signature = str(tmp_path / "model.sig")
    with open(signature, "w") as f:
        f.write(rootspan.sign(model, key))
    return model, public, signature


def test_a_signed_model_loads_and_a_changed_one_stops_start_up(llama, tmp_path):
    from safetensors.torch import load_file
    from vllm.config.load import LoadConfig
    model, public, signature = _sign_copy(llama, tmp_path)
    shards = sorted(name for name in os.listdir(model) if name.endswith(".safetensors"))
    expected = {}
    for name in shards:
        expected.update(load_file(os.path.join(model, name)))
    extra = {"signature": signature, "public_key": public}
    loaded = KeepingModel(sorted(expected))
    rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan", model_loader_extra_config=extra)) \
        .load_weights(loaded, config_of(model))
    assert sorted(name for name, _ in loaded.kept) == sorted(expected)
    with open(os.path.join(model, shards[-1]), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    with pytest.raises(rootspan.DigestMismatchError) as error:
        rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan", model_loader_extra_config=extra)) \
            .load_weights(KeepingModel(sorted(expected)), config_of(model))
    assert shards[-1] in str(error.value), str(error.value)


def test_locations(llama, tmp_path, monkeypatch):
    assert rootspan.vllm.resolve(llama) == (llama, None)
    index = os.path.join(llama, "model.safetensors.index.json")
    assert rootspan.vllm.resolve(index, "r") == (index, "r")
    repository = hf_cache(llama, str(tmp_path / "hub"), "org/tiny")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    assert rootspan.vllm.resolve("org/tiny", "main", download_dir=str(tmp_path / "hub")) == (repository, "main")
    with pytest.raises(FileNotFoundError) as missing:
        rootspan.vllm.resolve("org/absent", download_dir=str(tmp_path / "hub"))
    assert "models--org--absent" in str(missing.value) and "downloads nothing" in str(missing.value)
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        rootspan.vllm.resolve(str(tmp_path / "nothing"))


class KeepingModel(torch.nn.Module):
    """A model whose load_weights keeps every tensor it is given, as a model that stores views would, and
    claims the names of its parameters it got."""

    def __init__(self, names):
        super().__init__()
        for i, name in enumerate(names):
            self.register_parameter(f"p{i}", torch.nn.Parameter(torch.zeros(1)))
        self.names = {name: f"p{i}" for i, name in enumerate(names)}
        self.kept = []

    def load_weights(self, weights):
        loaded = set()
        for name, tensor in weights:
            self.kept.append((name, tensor))
            if name in self.names:
                loaded.add(self.names[name])
        return loaded


def config_of(path):
    return types.SimpleNamespace(model=path, model_weights=None, revision=None, quantization=None)


@pytest.mark.parametrize("strategy", ["auto", "mmap", "read", "direct"])
def test_tensors_stay_valid_after_the_iteration_moved_on(llama, strategy, caplog):
    from safetensors.torch import load_file
    from vllm.config.load import LoadConfig
    expected = {}
    for name in sorted(os.listdir(llama)):
        if name.endswith(".safetensors"):
            expected.update(load_file(os.path.join(llama, name)))
    model = KeepingModel(sorted(expected))
    loader = rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan",
                                                     model_loader_extra_config={"strategy": strategy}))
    loader.load_weights(model, config_of(llama))
    import gc
    gc.collect()
    assert sorted(name for name, _ in model.kept) == sorted(expected)
    for name, tensor in model.kept:  # read after the iteration ended and the weights were closed
        assert torch.equal(tensor, expected[name]), name


def test_a_parameter_the_checkpoint_lacks_fails_naming_it(llama):
    from vllm.config.load import LoadConfig
    model = KeepingModel(["model.norm.weight", "model.extra.weight"])
    loader = rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan"))
    with pytest.raises(ValueError) as error:
        loader.load_weights(model, config_of(llama))
    assert f"the checkpoint {llama} did not fill every parameter" in str(error.value)
    assert "p1" in str(error.value)  # the parameter model.extra.weight would have filled


def test_tensor_patterns_select(llama):
    from vllm.config.load import LoadConfig
    model = KeepingModel(["model.norm.weight"])
    loader = rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan",
                                                     model_loader_extra_config={"tensors": ["model.norm.*"]}))
    loader.load_weights(model, config_of(llama))
    assert [name for name, _ in model.kept] == ["model.norm.weight"]


def test_download_model_checks_headers_and_downloads_nothing(llama, tmp_path):
    from vllm.config.load import LoadConfig
    loader = rootspan.vllm.loader_class()(LoadConfig(load_format="rootspan"))
    loader.download_model(config_of(llama))
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not json}      ")
    with pytest.raises(rootspan.Error) as error:
        loader.download_model(config_of(str(broken)))
    assert "model.safetensors" in str(error.value)
